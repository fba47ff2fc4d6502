package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestEveryOutputFaultAppearsWhenForced(t *testing.T) {
	inv, raw := invoiceSchema(t)
	hasViolation := func(keyword string) func(*testing.T, string, string, string) {
		return func(t *testing.T, text, _, _ string) {
			vs := validate(t, inv, text)
			for _, v := range vs {
				if strings.HasSuffix(v.Keyword, keyword) {
					return
				}
			}
			t.Errorf("want a %q violation, got %s\n%s", keyword, keywords(vs), text)
		}
	}
	notJSON := func(t *testing.T, text string) {
		var v any
		if json.Unmarshal([]byte(text), &v) == nil {
			t.Errorf("answer is valid JSON; the fault did nothing: %s", text)
		}
	}
	tests := []struct {
		fault Fault
		check func(t *testing.T, text, refusal, finish string)
	}{
		{FaultCodeFence, func(t *testing.T, text, _, _ string) {
			if !strings.HasPrefix(text, "```json\n") || !strings.HasSuffix(text, "\n```") {
				t.Errorf("no code fence: %s", text)
			}
		}},
		{FaultProse, func(t *testing.T, text, _, _ string) {
			i := strings.IndexByte(text, '{')
			if i <= 0 || !strings.HasSuffix(text, "anything else.") {
				t.Errorf("no prose around the JSON: %s", text)
			}
		}},
		{FaultTrailingComma, func(t *testing.T, text, _, _ string) {
			notJSON(t, text)
			if !strings.HasSuffix(text, ",}") {
				t.Errorf("no trailing comma: %s", text)
			}
		}},
		{FaultSingleQuotes, func(t *testing.T, text, _, _ string) {
			notJSON(t, text)
			if !strings.HasPrefix(text, "{'") {
				t.Errorf("no single quotes: %s", text)
			}
		}},
		{FaultMissingRequired, hasViolation("required")},
		{FaultWrongType, hasViolation("type")},
		{FaultEnumOutside, hasViolation("enum")},
		{FaultExtraField, hasViolation("additionalProperties")},
		{FaultTruncation, func(t *testing.T, text, _, finish string) {
			notJSON(t, text)
			if finish != "length" {
				t.Errorf("finish_reason %q, want length", finish)
			}
		}},
		{FaultRefusal, func(t *testing.T, text, refusal, _ string) {
			if refusal == "" || text != "" {
				t.Errorf("want the refusal field and no content, got refusal %q content %q", refusal, text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			p := mustProfile(t, "faults: {"+string(tt.fault)+": 1}")
			s := New(p, WithSeed(3))
			for i := range 3 { // three tries of the same document: every one faulty
				resp, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				text, refusal, finish := openAIAnswer(t, body)
				tt.check(t, text, refusal, finish)
				if got := s.Stats().Faults[tt.fault]; got != int64(i+1) {
					t.Errorf("stats count %d %s faults after %d requests", got, tt.fault, i+1)
				}
			}
		})
	}
}

func TestRefusalWithoutARefusalField(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(mustProfile(t, "faults: {refusal: 1}"))
	seen := map[string]bool{}
	for i := range 12 {
		doc := testDoc + strings.Repeat(" again", i)
		_, body := call(t, s, "/v1/messages", map[string]any{
			"model": "claude", "max_tokens": 4096,
			"messages": []any{map[string]any{"role": "user", "content": promptWithSchema(raw, doc)}},
		})
		text := str(dig(obj(t, body), "content", 0, "text"))
		switch {
		case strings.HasPrefix(text, `{"_unextractable":`):
			seen["unextractable"] = true
		case strings.HasPrefix(text, "I'm sorry"):
			seen["sorry"] = true
		default:
			t.Errorf("not a refusal: %s", text)
		}
	}
	if len(seen) != 2 {
		t.Errorf("refusals seen: %v; want both the _unextractable object and an apology", seen)
	}
}

func TestRealisticModesKeepTheirPromises(t *testing.T) {
	inv, raw := invoiceSchema(t)
	every := "faults: {code_fence: 1, prose: 1, trailing_comma: 1, single_quotes: 1, missing_required: 1, wrong_type: 1, enum_outside: 1, extra_field: 1}"
	strict := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": fence(testDoc)}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "invoice", "strict": true, "schema": json.RawMessage(raw)}}}
	jsonMode := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": promptWithSchema(raw, testDoc)}},
		"response_format": map[string]any{"type": "json_object"}}

	t.Run("strict schema is obeyed", func(t *testing.T) {
		s := New(mustProfile(t, every))
		_, body := call(t, s, "/v1/chat/completions", strict)
		text, _, _ := openAIAnswer(t, body)
		if vs := validate(t, inv, text); vs != nil {
			t.Errorf("strict answer invalid: %s", keywords(vs))
		}
		for f, n := range s.Stats().Faults {
			if n != 0 {
				t.Errorf("%s injected %d times under a strict schema", f, n)
			}
		}
	})
	t.Run("json mode is valid JSON", func(t *testing.T) {
		s := New(mustProfile(t, every))
		_, body := call(t, s, "/v1/chat/completions", jsonMode)
		text, _, _ := openAIAnswer(t, body)
		if vs := validate(t, inv, text); vs == nil {
			t.Errorf("semantic faults should still hit JSON mode: %s", text)
		}
		st := s.Stats()
		if st.Faults[FaultCodeFence]+st.Faults[FaultTrailingComma]+st.Faults[FaultSingleQuotes]+st.Faults[FaultProse] != 0 {
			t.Errorf("syntax faults in JSON mode: %v", st.Faults)
		}
	})
	t.Run("fault_modes all breaks strict", func(t *testing.T) {
		s := New(mustProfile(t, every+"\nfault_modes: all"))
		_, body := call(t, s, "/v1/chat/completions", strict)
		text, _, _ := openAIAnswer(t, body)
		if strings.HasPrefix(text, "{") {
			t.Errorf("answer not spoilt: %s", text)
		}
	})
}

func TestReaskFixProbability(t *testing.T) {
	inv, raw := invoiceSchema(t)
	reask := func(first string) map[string]any {
		return map[string]any{"model": "m", "messages": []any{
			map[string]any{"role": "user", "content": promptWithSchema(raw, testDoc)},
			map[string]any{"role": "assistant", "content": first},
			map[string]any{"role": "user", "content": "Your answer was invalid: /currency must be one of ... Answer again."},
		}}
	}
	for _, tt := range []struct {
		fix       float64
		wantClean bool
	}{{1, true}, {0, false}} {
		p := mustProfile(t, "faults: {missing_required: 1}")
		p.FixProbability = tt.fix
		s := New(p)
		_, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
		first, _, _ := openAIAnswer(t, body)
		if validate(t, inv, first) == nil {
			t.Fatalf("first answer should be faulty")
		}
		_, body = call(t, s, "/v1/chat/completions", reask(first))
		second, _, _ := openAIAnswer(t, body)
		if clean := validate(t, inv, second) == nil; clean != tt.wantClean {
			t.Errorf("fix_probability %v: re-ask clean = %v, want %v", tt.fix, clean, tt.wantClean)
		}
		if st := s.Stats(); st.Reasks != 1 {
			t.Errorf("reasks = %d, want 1", st.Reasks)
		}
	}
}

func TestTransportFaults(t *testing.T) {
	_, raw := invoiceSchema(t)
	anthropicReq := map[string]any{"model": "claude", "max_tokens": 4096,
		"messages": []any{map[string]any{"role": "user", "content": promptWithSchema(raw, testDoc)}}}
	tests := []struct {
		fault      Fault
		path       string
		body       any
		wantStatus int
		wantType   string // error type (OpenAI/Anthropic) at error.type
	}{
		{FaultStatus500, "/v1/chat/completions", openAIChat(raw, testDoc), 500, "server_error"},
		{FaultStatus503, "/v1/chat/completions", openAIChat(raw, testDoc), 503, "server_error"},
		{FaultStatus529, "/v1/messages", anthropicReq, 529, "overloaded_error"},
		{FaultStatus529, "/v1/chat/completions", openAIChat(raw, testDoc), 503, "server_error"},
		{FaultStatus500, "/v1/messages", anthropicReq, 500, "api_error"},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault)+tt.path, func(t *testing.T) {
			s := New(mustProfile(t, "errors: {"+string(tt.fault)+": 1}"))
			resp, body := call(t, s, tt.path, tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if got := dig(obj(t, body), "error", "type"); got != tt.wantType {
				t.Errorf("error.type %v, want %s", got, tt.wantType)
			}
			if st := s.Stats(); st.Faults[tt.fault] != 1 || st.ByStatus[tt.wantStatus] != 1 || st.CompletionTokens != 0 {
				t.Errorf("stats = %+v", st)
			}
		})
	}

	t.Run("timeout until the client gives up", func(t *testing.T) {
		s := New(mustProfile(t, "errors: {timeout: 1, timeout_cap: 1m}"))
		client := &http.Client{Transport: s.Transport(), Timeout: 50 * time.Millisecond}
		_, err := client.Post("http://sim/v1/chat/completions", "application/json", strings.NewReader(jsonOf(openAIChat(raw, testDoc))))
		if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "Timeout") {
			t.Errorf("want a client timeout, got %v", err)
		}
		if s.Stats().Faults[FaultTimeout] != 1 {
			t.Errorf("timeout not counted: %+v", s.Stats())
		}
	})
	t.Run("timeout cap answers 504", func(t *testing.T) {
		s := New(mustProfile(t, "errors: {timeout: 1, timeout_cap: 20ms}"))
		resp, body := call(t, s, "/v1/messages", anthropicReq)
		if resp.StatusCode != 504 || dig(obj(t, body), "error", "type") != "timeout_error" {
			t.Errorf("status %d body %s, want 504 timeout_error", resp.StatusCode, body)
		}
	})
	t.Run("close releases a hanging request", func(t *testing.T) {
		s := New(mustProfile(t, "errors: {timeout: 1, timeout_cap: 1h}"))
		time.AfterFunc(20*time.Millisecond, s.Close)
		resp, _ := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
		if resp.StatusCode != 503 {
			t.Errorf("status %d after Close, want 503", resp.StatusCode)
		}
	})
	t.Run("drop in-process is a reset", func(t *testing.T) {
		s := New(mustProfile(t, "errors: {drop: 1}"))
		client := &http.Client{Transport: s.Transport()}
		_, err := client.Post("http://sim/v1/chat/completions", "application/json", strings.NewReader(jsonOf(openAIChat(raw, testDoc))))
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("want ECONNRESET, got %v", err)
		}
		if s.Stats().Faults[FaultDrop] != 1 {
			t.Errorf("drop not counted")
		}
	})
	t.Run("drop over HTTP closes the connection", func(t *testing.T) {
		s := New(mustProfile(t, "errors: {drop: 1}"))
		srv := httptest.NewServer(s.Handler())
		defer srv.Close()
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(jsonOf(openAIChat(raw, testDoc))))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got status %d, want a connection error", resp.StatusCode)
		}
		if s.Stats().Faults[FaultDrop] != 1 {
			t.Errorf("drop not counted")
		}
	})
}

func TestLatency(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(mustProfile(t, "latency: {ttft: 30ms, per_token: 100us}"))
	start := time.Now()
	_, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
	took := time.Since(start)
	n := dig(obj(t, body), "usage", "completion_tokens").(float64)
	want := 30*time.Millisecond + time.Duration(n)*100*time.Microsecond
	if took < want {
		t.Errorf("answered in %v; ttft + %v tokens × per_token is %v", took, n, want)
	}
}

func TestMaxTokensTruncates(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(builtins["clean"])
	req := openAIChat(raw, testDoc)
	req["max_tokens"] = 10
	_, body := call(t, s, "/v1/chat/completions", req)
	text, _, finish := openAIAnswer(t, body)
	if finish != "length" || len(text) > 40 {
		t.Errorf("finish %q, %d chars; want length and at most 40 chars", finish, len(text))
	}
	if n := dig(obj(t, body), "usage", "completion_tokens"); n != 10.0 {
		t.Errorf("completion_tokens = %v, want 10", n)
	}
}

func TestEncodeJSONRoundTrips(t *testing.T) {
	for _, src := range []string{
		`{"b":[1,2.5,-3e2],"a":{"z":null,"y":true,"x":false},"s":"q\"uote\\ back\nline\ttab\u0001 é <&>"}`,
		`[]`, `{}`, `"x"`, `[{"k":"v"},[]]`,
	} {
		v, err := decodeJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeJSON([]byte(got))
		if err != nil {
			t.Fatalf("%s encodes to invalid JSON %s: %v", src, got, err)
		}
		want, _ := json.Marshal(v)
		again, _ := json.Marshal(back)
		if string(want) != string(again) {
			t.Errorf("%s: round trip gives %s", src, got)
		}
		if strings.Contains(got, `\u003c`) {
			t.Errorf("HTML-escaped: %s", got)
		}
	}
}

func TestReaskIsRecognisedInEveryAPI(t *testing.T) {
	inv, raw := invoiceSchema(t)
	prompt := promptWithSchema(raw, testDoc)
	const feedback = "Your answer failed the schema: /currency: value must be one of EUR, USD. Answer again."
	tests := []struct {
		name   string
		path   string
		body   map[string]any
		answer func(t *testing.T, body []byte) string
	}{
		{"openai tool call and tool message", "/v1/chat/completions", map[string]any{"model": "m",
			"tools":       []any{map[string]any{"type": "function", "function": map[string]any{"name": "record_invoice", "parameters": json.RawMessage(raw)}}},
			"tool_choice": "required",
			"messages": []any{
				map[string]any{"role": "system", "content": "Extract."},
				map[string]any{"role": "user", "content": fence(testDoc)},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "record_invoice", "arguments": `{"currency":"eur"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": "call_1", "content": feedback},
			}},
			func(t *testing.T, body []byte) string { text, _, _ := openAIAnswer(t, body); return text }},
		{"anthropic tool_use and tool_result", "/v1/messages", map[string]any{"model": "c", "max_tokens": 4096,
			"tools":       []any{map[string]any{"name": "record_invoice", "input_schema": json.RawMessage(raw)}},
			"tool_choice": map[string]any{"type": "tool", "name": "record_invoice"},
			"messages": []any{
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": fence(testDoc)}}},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "record_invoice", "input": map[string]any{"currency": "eur"}}}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": []any{map[string]any{"type": "text", "text": feedback}}},
				}},
			}},
			func(t *testing.T, body []byte) string { return str(dig(obj(t, body), "content", 0, "input")) }},
		{"ollama", "/api/chat", map[string]any{"model": "m", "stream": false, "messages": []any{
			map[string]any{"role": "user", "content": prompt},
			map[string]any{"role": "assistant", "content": `{"currency":"eur"}`},
			map[string]any{"role": "user", "content": feedback},
		}}, func(t *testing.T, body []byte) string { return str(dig(obj(t, body), "message", "content")) }},
		{"gemini", "/v1beta/models/g:generateContent", map[string]any{"contents": []any{
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}},
			map[string]any{"role": "model", "parts": []any{map[string]any{"text": `{"currency":"eur"}`}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": feedback}}},
		}}, func(t *testing.T, body []byte) string {
			return str(dig(obj(t, body), "candidates", 0, "content", "parts", 0, "text"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every first answer is faulty; every re-ask is fixed.
			p := mustProfile(t, "faults: {missing_required: 1}\nfix_probability: 1")
			s := New(p)
			resp, body := call(t, s, tt.path, tt.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if vs := validate(t, inv, tt.answer(t, body)); vs != nil {
				t.Errorf("re-ask answer not fixed: %s", keywords(vs))
			}
			if st := s.Stats(); st.Reasks != 1 || st.Faults[FaultMissingRequired] != 0 {
				t.Errorf("stats = %+v, want one re-ask and no fault", st)
			}
		})
	}
}
