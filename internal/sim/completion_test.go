package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		prefix  string
		path    []step
		want    wantKind
		partial string
	}{
		{`{"name":`, []step{{key: "name"}}, wantValue, ""},
		{`{"name":"Ac`, []step{{key: "name"}}, wantString, "Ac"},
		{`{"s":"He said \"`, []step{{key: "s"}}, wantString, `He said \"`},
		{`{"a":"x, y","b":{"c":`, []step{{key: "b"}, {key: "c"}}, wantValue, ""},
		{`{"items":[`, []step{{key: "items"}, {index: 0, array: true}}, wantFirst, ""},
		{`{"items":[{"q":1},{"q":`, []step{{key: "items"}, {index: 1, array: true}, {key: "q"}}, wantValue, ""},
		{`{"items":[{"q":1}`, []step{{key: "items"}, {index: 0, array: true}}, wantSep, ""},
		{`{"tags":["a","b"`, []step{{key: "tags"}, {index: 1, array: true}}, wantSep, ""},
		{`{"n":[1,2`, []step{{key: "n"}, {index: 1, array: true}}, wantSep, ""},
	}
	for _, tc := range cases {
		got := locate(tc.prefix)
		if got.want != tc.want || got.partial != tc.partial || !reflect.DeepEqual(got.path, tc.path) {
			t.Errorf("locate(%s) = %+v, want path %+v want %d partial %q", tc.prefix, got, tc.path, tc.want, tc.partial)
		}
	}
}

func TestNumberWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"42": "forty-two", "1900": "one thousand nine hundred", "12.50": "twelve point five zero", "7": "seven", "300": "three hundred"} {
		if got, ok := numberWords(json.Number(in)); !ok || got != want {
			t.Errorf("numberWords(%s) = %q, want %q", in, got, want)
		}
	}
}

// completion asks the simulator to continue prefix for the invoice schema
// and test document, through /v1/completions or raw /api/generate.
func completion(t *testing.T, s *Server, route, prefix string, stop []string) (string, string) {
	t.Helper()
	_, raw := invoiceSchema(t)
	prompt := promptWithSchema(raw, testDoc) + completionMarker + prefix
	if route == "ollama" {
		resp, body := call(t, s, "/api/generate", map[string]any{"model": "m", "prompt": prompt, "raw": true, "stream": false, "options": map[string]any{"stop": stop, "num_predict": 64}})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		o := obj(t, body)
		return o["response"].(string), o["done_reason"].(string)
	}
	resp, body := call(t, s, "/v1/completions", map[string]any{"model": "m", "prompt": prompt, "stop": stop, "max_tokens": 64})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	c := obj(t, body)["choices"].([]any)[0].(map[string]any)
	return c["text"].(string), c["finish_reason"].(string)
}

func TestCompletionContinuesTheValue(t *testing.T) {
	t.Parallel()
	s := New(Profile{Name: "clean"}, WithSeed(3))
	// What the model means for the whole document: the chat answer to the
	// same schema and document.
	_, raw := invoiceSchema(t)
	_, body := call(t, s, "/v1/chat/completions", map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": promptWithSchema(raw, testDoc)}}})
	var truth map[string]any
	content := obj(t, body)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	if err := json.Unmarshal([]byte(content), &truth); err != nil {
		t.Fatal(err)
	}
	items := truth["line_items"].([]any)
	first, _ := json.Marshal(items[0])
	sep := "]"
	if len(items) > 1 {
		sep = ","
	}
	for _, route := range []string{"openai", "ollama"} {
		cases := []struct {
			prefix string
			stop   []string
			want   string
		}{
			{`{"invoice_number":"`, []string{`"`}, truth["invoice_number"].(string)},
			{`{"invoice_number":"x","issue_date":"2026-01-01","vendor":{"name":"v"},"customer":"c","currency":`, []string{",", "}", "]", "\n"}, ` "` + truth["currency"].(string) + `"`},
			{`{"line_items":[` + string(first), nil, sep},
			{`{"line_items":[`, nil, "{"},
		}
		for _, tc := range cases {
			text, finish := completion(t, s, route, tc.prefix, tc.stop)
			if tc.stop == nil {
				text = strings.TrimSpace(text)[:1]
			}
			if text != tc.want || finish != "stop" {
				t.Errorf("%s %s: %q (%s), want %q", route, tc.prefix, text, finish, tc.want)
			}
		}
	}
}

func TestCompletionFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		faults CompletionFaults
		prefix string
		check  func(string) bool
		fault  Fault
	}{
		{"overrun", CompletionFaults{OverrunStop: 1}, `{"invoice_number":"`, func(s string) bool { return strings.Contains(s, `"`) }, FaultOverrunStop},
		{"number as words", CompletionFaults{NumberWords: 1}, `{"invoice_number":"x","issue_date":"2026-01-01","vendor":{"name":"v"},"customer":"c","currency":"EUR","line_items":[{"description":"d","quantity":1,"unit_price":1,"amount":1}],"total":`,
			func(s string) bool { return strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") }, FaultNumberWords},
		{"enum outside", CompletionFaults{EnumOutside: 1}, `{"invoice_number":"x","issue_date":"2026-01-01","vendor":{"name":"v"},"customer":"c","currency":`,
			func(s string) bool {
				return !strings.Contains(`"EUR","USD","GBP","SEK","INR","CAD","JPY"`, strings.TrimSpace(s))
			}, FaultEnumOutside},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(Profile{Name: tc.name, Completion: tc.faults})
			stop := []string{",", "}", "]", "\n"}
			if tc.fault == FaultOverrunStop {
				stop = []string{`"`}
			}
			text, _ := completion(t, s, "openai", tc.prefix, stop)
			if !tc.check(text) {
				t.Errorf("continuation %q does not show the fault", text)
			}
			if n := s.Stats().Faults[tc.fault]; n != 1 {
				t.Errorf("stats count %d %s faults, want 1", n, tc.fault)
			}
		})
	}
}

// TestCompletionReproducible: the fence's nonce differs on every call the
// engine makes; what the model writes must not.
func TestCompletionReproducible(t *testing.T) {
	t.Parallel()
	_, raw := invoiceSchema(t)
	prefix := `{"invoice_number":"x","issue_date":"2026-01-01","vendor":{"name":"v"},"customer":"c","currency":`
	answers := map[string]bool{}
	for _, nonce := range []string{"0123456789abcdef", "fedcba9876543210"} {
		s := New(Profile{Name: "spoilt", Completion: CompletionFaults{EnumOutside: 0.5, OverrunStop: 0.5}}, WithSeed(9))
		prompt := "Extract.\n<json-schema>\n" + string(raw) + "\n</json-schema>\n<document-" + nonce + ">\n" + testDoc + "\n</document-" + nonce + ">\n" + completionMarker + prefix
		_, body := call(t, s, "/v1/completions", map[string]any{"model": "m", "prompt": prompt, "max_tokens": 16})
		c := obj(t, body)["choices"].([]any)[0].(map[string]any)
		answers[c["text"].(string)+"|"+c["finish_reason"].(string)] = true
	}
	if len(answers) != 1 {
		t.Errorf("the same request with another nonce got another answer: %v", answers)
	}
}
