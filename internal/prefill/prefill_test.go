package prefill

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// turn is one scripted completion: the prefix must end with want (when
// set), and the model answers text.
type turn struct {
	want   string
	text   string
	finish llm.FinishReason
	err    *llm.Error
	// overrun: the server ignores the stop sequences for this turn (a
	// model that runs past them where stops are only a hint).
	overrun bool
}

// scripted is a Completer playing turns in order and recording requests.
type scripted struct {
	mu    sync.Mutex
	turns []turn
	reqs  []llm.CompletionRequest
	t     *testing.T
	modes []llm.Mode
	// stops: the server cuts each text at the request's first stop
	// sequence, leaving the stop out, as vLLM, llama.cpp and OpenAI do; the
	// turns then hold what the model writes, running on past its value.
	stops bool
}

func newScripted(t *testing.T, turns ...turn) *scripted {
	return &scripted{t: t, turns: turns, modes: []llm.Mode{llm.ModeText, llm.ModePrefill}}
}

func (s *scripted) Name() string                   { return "script:test" }
func (s *scripted) Model() string                  { return "test" }
func (s *scripted) Capabilities() llm.Capabilities { return llm.Capabilities{Modes: s.modes} }
func (s *scripted) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return nil, &llm.Error{Class: llm.ClassInvalidRequest, Message: "chat is not scripted"}
}

func (s *scripted) Complete(_ context.Context, req llm.CompletionRequest) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.reqs)
	s.reqs = append(s.reqs, req)
	if i >= len(s.turns) {
		s.t.Errorf("call %d not scripted; prefix %q", i+1, req.Prefix)
		return nil, &llm.Error{Class: llm.ClassInvalidRequest, Message: "script ran out"}
	}
	tn := s.turns[i]
	if tn.want != "" && !strings.HasSuffix(req.Prefix, tn.want) {
		s.t.Errorf("call %d: prefix %q does not end with %q", i+1, req.Prefix, tn.want)
	}
	if tn.err != nil {
		return nil, tn.err
	}
	f := tn.finish
	if f == "" {
		f = llm.FinishStop
	}
	text := tn.text
	if s.stops && !tn.overrun {
		best := -1
		for _, st := range req.Stop {
			if i := strings.Index(text, st); i >= 0 && (best < 0 || i < best) {
				best = i
			}
		}
		if best >= 0 {
			text, f = text[:best], llm.FinishStop
		}
	}
	return &llm.Response{Text: text, FinishReason: f, Usage: llm.Usage{PromptTokens: (len(req.Instructions) + len(req.Prefix)) / 4, CompletionTokens: len(text)/4 + 1}}, nil
}

func testConfig() Config {
	return Config{
		MaxReasks: 2, Retries: 2, Base: time.Millisecond, Cap: time.Millisecond, MaxRetryAfter: time.Second,
		Sleep: func(context.Context, time.Duration) error { return nil },
		Rand:  func(n int64) int64 { return 0 },
		Now:   time.Now,
	}
}

func compile(t *testing.T, src string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(src))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

func TestValueKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		schema string
		turns  []turn
		want   string // the value, compact JSON
		feed   string // text the last request's instructions must hold
	}{
		{"string", `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
			[]turn{{want: `{"name":"`, text: `Acme Corp`}}, `{"name":"Acme Corp"}`, ""},
		{"string raw text is escaped", `{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`,
			[]turn{{want: `{"s":"`, text: "line one\nline\ttwo"}}, `{"s":"line one\nline\ttwo"}`, ""},
		{"string past an escaped quote", `{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`,
			[]turn{{want: `{"s":"`, text: `He said \`}, {want: `{"s":"He said \"`, text: `hi\`}, {want: `hi\"`, text: `.`}},
			`{"s":"He said \"hi\"."}`, ""},
		{"string overrunning its stop is cut", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","b"]}`,
			[]turn{{want: `{"a":"`, text: `x", "b": 99}`}, {want: `"x","b":`, text: ` 7`}}, `{"a":"x","b":7}`, ""},
		{"string format re-asked", `{"type":"object","properties":{"d":{"type":"string","format":"date"}},"required":["d"]}`,
			[]turn{{text: `March 3rd`}, {want: `{"d":"`, text: `2024-03-03`}}, `{"d":"2024-03-03"}`, ""},
		{"number", `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
			[]turn{{want: `{"n":`, text: ` 12.50`}}, `{"n":12.50}`, ""},
		{"number auto-quoted", `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
			[]turn{{text: `"42"`}}, `{"n":42}`, ""},
		{"number as words re-asked", `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
			[]turn{{text: `forty-two`}, {text: `42`}}, `{"n":42}`, "digits only"},
		{"number below its minimum re-asked", `{"type":"object","properties":{"n":{"type":"number","minimum":0}},"required":["n"]}`,
			[]turn{{text: `-5`}, {text: `5`}}, `{"n":5}`, "/n was rejected"},
		{"integer", `{"type":"object","properties":{"y":{"type":"integer","maximum":2100}},"required":["y"]}`,
			[]turn{{text: `3.5`}, {text: `20240`}, {text: `2024.0`}}, `{"y":2024}`, ""},
		{"enum", `{"type":"object","properties":{"c":{"enum":["EUR","USD"]}},"required":["c"]}`,
			[]turn{{want: `{"c":`, text: `"USD"`}}, `{"c":"USD"}`, ""},
		{"enum unquoted", `{"type":"object","properties":{"c":{"type":"string","enum":["EUR","USD"]}},"required":["c"]}`,
			[]turn{{text: `EUR`}}, `{"c":"EUR"}`, ""},
		{"enum outside re-asked with the allowed values", `{"type":"object","properties":{"c":{"enum":["EUR","USD"]}},"required":["c"]}`,
			[]turn{{text: `"euro"`}, {text: `"EUR"`}}, `{"c":"EUR"}`, `write exactly one of: "EUR", "USD"`},
		{"enum cut at its comma", `{"type":"object","properties":{"a":{"enum":["Smith, J.","Doe, A."]}},"required":["a"]}`,
			[]turn{{text: `"Smith`}}, `{"a":"Smith, J."}`, ""},
		{"boolean", `{"type":"object","properties":{"b":{"type":"boolean"},"c":{"type":"boolean"}},"required":["b","c"]}`,
			[]turn{{text: `true`}, {want: `true,"c":`, text: `False`}}, `{"b":true,"c":false}`, ""},
		{"null and const cost no call", `{"type":"object","properties":{"v":{"const":"1.0"},"z":{"type":"null"},"n":{"type":"integer"}},"required":["v","z","n"]}`,
			[]turn{{want: `{"v":"1.0","z":null,"n":`, text: `1`}}, `{"v":"1.0","z":null,"n":1}`, ""},
		{"optional absent", `{"type":"object","properties":{"a":{"type":"string"},"tax":{"type":"number"},"b":{"type":"integer"}},"required":["a","b"]}`,
			[]turn{{text: `x`}, {want: `"x","tax":`, text: ` null`}, {want: `{"a":"x","b":`, text: `2`}}, `{"a":"x","b":2}`, ""},
		{"optional number kept from the presence step", `{"type":"object","properties":{"tax":{"type":"number"}}}`,
			[]turn{{want: `{"tax":`, text: `4.5`}}, `{"tax":4.5}`, ""},
		{"optional string present", `{"type":"object","properties":{"note":{"type":"string"}}}`,
			[]turn{{want: `{"note":`, text: ` "Paid`}, {want: `{"note":"`, text: `Paid in full`}}, `{"note":"Paid in full"}`, ""},
		{"optional nullable answered null is left out", `{"type":"object","properties":{"due":{"type":["string","null"]}}}`,
			[]turn{{text: `null`}}, `{}`, ""},
		{"required nullable answered null", `{"type":"object","properties":{"due":{"type":["string","null"]}},"required":["due"]}`,
			[]turn{{want: `{"due":`, text: ` null`}}, `{"due":null}`, ""},
		{"nested object", `{"type":"object","properties":{"vendor":{"type":"object","properties":{"name":{"type":"string"},"id":{"type":"integer"}},"required":["name","id"]}},"required":["vendor"]}`,
			[]turn{{want: `{"vendor":{"name":"`, text: `Acme`}, {want: `{"vendor":{"name":"Acme","id":`, text: `7`}}, `{"vendor":{"name":"Acme","id":7}}`, ""},
		{"array element then decisions", `{"type":"object","properties":{"tags":{"type":"array","minItems":1,"items":{"type":"string"}}},"required":["tags"]}`,
			[]turn{{want: `{"tags":["`, text: `a`}, {want: `["a"`, text: `, "`}, {want: `["a","`, text: `b`}, {want: `["a","b"`, text: `]}`}},
			`{"tags":["a","b"]}`, ""},
		{"array empty", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}},"required":["tags"]}`,
			[]turn{{want: `{"tags":[`, text: `]`}}, `{"tags":[]}`, ""},
		{"array stops at maxItems", `{"type":"object","properties":{"n":{"type":"array","maxItems":2,"items":{"type":"integer"}}},"required":["n"]}`,
			[]turn{{text: `1`}, {want: `[`, text: `1`}, {want: `[1`, text: `,`}, {want: `[1,`, text: `2`}}, `{"n":[1,2]}`, ""},
		{"array of objects", `{"type":"array","items":{"type":"object","properties":{"q":{"type":"number"}},"required":["q"]}}`,
			[]turn{{want: `[`, text: `{`}, {want: `[{"q":`, text: `1`}, {want: `[{"q":1}`, text: `,{`}, {want: `[{"q":1},{"q":`, text: `2`}, {text: `]`}},
			`[{"q":1},{"q":2}]`, ""},
		{"array unique re-asked as a whole", `{"type":"array","uniqueItems":true,"minItems":2,"maxItems":2,"items":{"type":"integer"}}`,
			[]turn{{text: `1`}, {text: `1`}, {text: `1`}, {text: `2`}}, `[1,2]`, "rejected"},
		{"anyOf picked by first token: number", `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}},"required":["v"]}`,
			[]turn{{want: `{"v":`, text: ` 12`}}, `{"v":12}`, ""},
		{"anyOf picked by first token: string", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`,
			[]turn{{text: `"twel`}, {want: `{"v":"`, text: `twelve`}}, `{"v":"twelve"}`, ""},
		{"anyOf of objects generated whole", `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"type":"string"}]}},"required":["v"]}`,
			[]turn{{want: `{"v":`, text: ` {"a": 3} and more`}}, `{"v":{"a":3}}`, ""},
		{"free-form object generated whole", `{"type":"object","properties":{"meta":{"type":"object"}},"required":["meta"]}`,
			[]turn{{text: `not json`}, {text: `{"k":[1,2]}`}}, `{"meta":{"k":[1,2]}}`, "complete JSON value"},
		{"ref into defs", `{"$defs":{"money":{"type":"number","minimum":0}},"type":"object","properties":{"total":{"$ref":"#/$defs/money"}},"required":["total"]}`,
			[]turn{{text: `-1`}, {text: `10`}}, `{"total":10}`, "rejected"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newScripted(t, tc.turns...)
			res, err := Run(t.Context(), p, "the document", compile(t, tc.schema), testConfig())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Value) != tc.want {
				t.Errorf("value %s, want %s", res.Value, tc.want)
			}
			if len(p.reqs) != len(tc.turns) {
				t.Errorf("%d calls, want %d", len(p.reqs), len(tc.turns))
			}
			if len(res.Attempts) != len(p.reqs) {
				t.Errorf("%d attempts recorded for %d calls", len(res.Attempts), len(p.reqs))
			}
			if tc.feed != "" && !strings.Contains(p.reqs[len(p.reqs)-1].Instructions, tc.feed) {
				t.Errorf("last instructions lack %q:\n%s", tc.feed, p.reqs[len(p.reqs)-1].Instructions)
			}
			for _, r := range p.reqs {
				if !strings.Contains(r.Instructions, "the document") || !strings.HasSuffix(r.Instructions, AnswerMarker) {
					t.Errorf("instructions miss the document or the marker: %q", r.Instructions)
				}
			}
		})
	}
}

func TestAttemptsRecordFieldSteps(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"type":"object","properties":{"c":{"enum":["EUR","USD"]},"xs":{"type":"array","items":{"type":"integer"}}},"required":["c","xs"]}`)
	p := newScripted(t, turn{text: `"euro"`}, turn{text: `"EUR"`}, turn{text: `1`}, turn{text: `1`}, turn{text: `]`})
	var seen []llm.Attempt
	cfg := testConfig()
	cfg.Observers = append(cfg.Observers, func(_ context.Context, a llm.Attempt) { seen = append(seen, a) })
	res, err := Run(t.Context(), p, "doc", s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ptr, step string
		class     llm.AttemptClass
	}{{"/c", stepValue, llm.ClassSchema}, {"/c", stepValue, ""}, {"/xs", stepMore, ""}, {"/xs/0", stepValue, ""}, {"/xs", stepMore, ""}}
	if len(res.Attempts) != len(want) || len(seen) != len(want) {
		t.Fatalf("%d attempts (%d observed), want %d", len(res.Attempts), len(seen), len(want))
	}
	for i, w := range want {
		a := res.Attempts[i]
		if a.N != i+1 || a.Pointer != w.ptr || a.Step != w.step || a.Class != w.class || a.Mode != llm.ModePrefill {
			t.Errorf("attempt %d = {N %d %s %s %q %s}, want {%s %s %q}", i, a.N, a.Pointer, a.Step, a.Class, a.Mode, w.ptr, w.step, w.class)
		}
		if a.Usage.PromptTokens == 0 || a.FinishReason != llm.FinishStop || a.Raw == "" {
			t.Errorf("attempt %d lacks usage, finish reason or text: %+v", i, a)
		}
	}
	if v := res.Attempts[0].Violations; len(v) != 1 || v[0].Pointer != "/c" || v[0].Keyword != "enum" {
		t.Errorf("violations of the rejected enum: %+v", v)
	}
	if got := res.Usage.Total(); got == 0 {
		t.Error("usage not summed")
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	enum := `{"type":"object","properties":{"name":{"type":"string"},"c":{"enum":["EUR","USD"]}},"required":["name","c"]}`
	cases := []struct {
		name    string
		turns   []turn
		cfg     func(*Config)
		outcome llm.Outcome
		reason  string
	}{
		{"per-field budget spent", []turn{{text: `Ann`}, {text: `"euro"`}, {text: `"dollar"`}},
			func(c *Config) { c.MaxReasks = 1 }, llm.OutcomeExhausted, "no valid value at /c after 2 tries"},
		{"token budget", []turn{{text: `Ann`}}, func(c *Config) { c.TokenBudget = 300 }, llm.OutcomeBudgetExceeded, "token budget exceeded at"},
		{"fatal provider error", []turn{{err: &llm.Error{Class: llm.ClassAuth, Status: 401, Message: "bad key"}}}, nil, llm.OutcomeFatal, "fatal provider error on the call for /name"},
		{"transport retries run out", []turn{{err: &llm.Error{Class: llm.ClassServer, Status: 500}}, {err: &llm.Error{Class: llm.ClassServer, Status: 500}}},
			func(c *Config) { c.Retries = 1 }, llm.OutcomeTransport, "failed 2 times"},
		{"validator rejects the whole", []turn{{text: `Ann`}, {text: `"EUR"`}},
			func(c *Config) {
				c.Validators = append(c.Validators, func(context.Context, json.RawMessage) []llm.Violation {
					return []llm.Violation{{Pointer: "/c", Message: "not for Ann"}}
				})
			}, llm.OutcomeExhausted, "not for Ann"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if tc.name == "token budget" {
				// The first call fits; the second (the prompt sent again) does not.
				cfg.TokenBudget = len(instructions("doc", compile(t, enum)))/3 + 40
			}
			res, err := Run(t.Context(), newScripted(t, tc.turns...), "doc", compile(t, enum), cfg)
			var xe *llm.ExtractionError
			if !errors.As(err, &xe) || res == nil {
				t.Fatalf("err %v, want an ExtractionError", err)
			}
			if res.Outcome != tc.outcome || !strings.Contains(res.Reason, tc.reason) || res.Value != nil {
				t.Errorf("outcome %s %q value %s, want %s containing %q", res.Outcome, res.Reason, res.Value, tc.outcome, tc.reason)
			}
			if !errors.Is(err, tc.outcome.Err()) {
				t.Errorf("error %v does not match %v", err, tc.outcome.Err())
			}
		})
	}
}

func TestTransportRetryThenValue(t *testing.T) {
	t.Parallel()
	p := newScripted(t, turn{err: &llm.Error{Class: llm.ClassRateLimited, Status: 429}}, turn{text: `5`})
	res, err := Run(t.Context(), p, "doc", compile(t, `{"type":"integer"}`), testConfig())
	if err != nil || string(res.Value) != "5" {
		t.Fatalf("value %v err %v", res, err)
	}
	if len(res.Attempts) != 1 || res.Attempts[0].TransportRetries != 1 {
		t.Errorf("attempts %+v, want one with one transport retry", res.Attempts)
	}
}

func TestCannotPrefill(t *testing.T) {
	t.Parallel()
	p := newScripted(t)
	p.modes = []llm.Mode{llm.ModeText}
	res, err := Run(t.Context(), p, "doc", compile(t, `{"type":"integer"}`), testConfig())
	if res != nil || !errors.Is(err, ErrCannotPrefill) || !strings.Contains(err.Error(), "script:test") {
		t.Fatalf("res %v err %v, want ErrCannotPrefill naming the provider", res, err)
	}
}

func TestCompactSchema(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte("year: integer 1950..2100\nkeywords?: [string, \"1..3 unique\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := newScripted(t, turn{want: `{"year":`, text: `1949`}, turn{text: `2001`}, turn{want: `,"keywords":`, text: ` ["a`},
		turn{want: `"keywords":["`, text: `a`}, turn{text: `,`}, turn{text: `a`}, turn{text: `]`},
		turn{want: `"keywords":["`, text: `a`}, turn{text: `,`}, turn{text: `b`}, turn{text: `]`})
	res, err := Run(t.Context(), p, "doc", s, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"year":2001,"keywords":["a","b"]}` {
		t.Errorf("value %s", res.Value)
	}
}
