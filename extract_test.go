package extractq_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/schema"
)

const invoice = `{"type":"object","properties":{"vendor":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"price":{"type":"number"}},"required":["name","price"]}}},"required":["vendor","items"]}`

func compile(t *testing.T, src string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExtractErrors(t *testing.T) {
	s := compile(t, invoice)
	bad := `{"vendor":"ACME","items":[{"name":"a","price":1},{"name":"b","price":2},{"name":"c","price":"1,250"}]}`
	tests := []struct {
		name     string
		script   []extractqtest.Reply
		opts     []extractq.Option
		sentinel error
		message  string
	}{
		{"exhausted", []extractqtest.Reply{extractqtest.Text(bad[:len(bad)-1]), extractqtest.Text(bad), extractqtest.Text(bad[:len(bad)-1]), extractqtest.Text(bad)}, nil,
			extractq.ErrExhausted, `no valid answer after 4 attempts; the last failed at /items/2/price: expected number, got "1,250"; 2 syntax repairs applied`},
		{"budget", nil, []extractq.Option{extractq.WithTokenBudget(10)}, extractq.ErrBudgetExceeded, "token budget exceeded"},
		{"fatal", []extractqtest.Reply{extractqtest.Fail(llm.ClassAuth, 0)}, nil, extractq.ErrFatal, "HTTP 401"},
		{"transport", []extractqtest.Reply{extractqtest.Fail(llm.ClassServer, 0), extractqtest.Fail(llm.ClassServer, 0)},
			[]extractq.Option{extractq.WithTransport(extractq.Transport{Retries: 1, Jitter: extractq.JitterNone})}, extractq.ErrTransport, "failed 2 times (1 transport retry)"},
		{"unextractable", []extractqtest.Reply{extractqtest.Refused("no")}, nil, extractq.ErrUnextractable, "unextractable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := extractqtest.New(tt.script)
			opts := append([]extractq.Option{extractq.WithProvider(p), extractq.WithSleeper(func(context.Context, time.Duration) error { return nil })}, tt.opts...)
			res, err := extractq.Extract(context.Background(), "ACME: a 1, b 2, c 1,250", s, opts...)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err %v does not match %v", err, tt.sentinel)
			}
			var e *llm.ExtractionError
			if !errors.As(err, &e) || e.Result != res || res.Value != nil {
				t.Fatalf("error does not carry the result: %#v", err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("message %q lacks %q", err, tt.message)
			}
		})
	}
}

func TestExtractConfig(t *testing.T) {
	s := compile(t, invoice)
	tests := []struct {
		name string
		opts []extractq.Option
		s    *schema.Schema
		hint string
	}{
		{"no provider", nil, s, "WithProvider"},
		{"no schema", []extractq.Option{extractq.WithProvider(extractqtest.New(nil))}, nil, "schema.Compile"},
		{"bad history", []extractq.Option{extractq.WithProvider(extractqtest.New(nil)), extractq.WithHistory("most")}, s, "use last or full"},
		{"negative re-asks", []extractq.Option{extractq.WithProvider(extractqtest.New(nil)), extractq.WithMaxReasks(-2)}, s, "max re-asks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := extractq.Extract(context.Background(), "doc", tt.s, tt.opts...)
			if res != nil || !errors.Is(err, extractq.ErrConfig) || !strings.Contains(err.Error(), tt.hint) {
				t.Fatalf("got %v, %v; want ErrConfig mentioning %q", res, err, tt.hint)
			}
		})
	}
}

func TestOptionsReachTheRequest(t *testing.T) {
	s := compile(t, invoice)
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor":"A","items":[]}`)}, extractqtest.WithModes(llm.ModeJSON, llm.ModeStrict))
	_, err := extractq.Extract(context.Background(), "doc", s, extractq.WithProvider(p),
		extractq.WithMode(llm.ModeJSON), extractq.WithTemperature(0.3), extractq.WithMaxTokens(321),
		extractq.WithCallTimeout(7*time.Second), extractq.WithSchemaIn(extractq.SchemaInSchema))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Requests()[0]
	if r.Mode != llm.ModeJSON || r.Temperature != 0.3 || r.MaxTokens != 321 || r.Timeout != 7*time.Second || !strings.Contains(r.Messages[0].Content, "<json-schema>") {
		t.Errorf("request does not reflect the options: %+v", r)
	}
}

type Invoice struct {
	Vendor string  `json:"vendor"`
	Total  float64 `json:"total"`
	Lines  []struct {
		Name string `json:"name"`
	} `json:"lines,omitempty"`
}

func TestExtractInto(t *testing.T) {
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor":"ACME"}`), extractqtest.Text(`{"vendor":"ACME","total":"9.5"}`)})
	inv, res, err := extractq.ExtractInto[Invoice](context.Background(), "ACME 9.50", extractq.WithProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Vendor != "ACME" || inv.Total != 9.5 || len(res.Attempts) != 2 {
		t.Fatalf("got %+v after %d attempts", inv, len(res.Attempts))
	}
	// The struct's schema was enforced: the first answer lacked "total".
	if vs := res.Attempts[0].Violations; len(vs) == 0 || !strings.Contains(vs[0].Pointer+vs[0].Message, "total") {
		t.Errorf("first attempt violations %+v do not name total", vs)
	}
}

func TestValidatorsAndObservers(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"type":"object","properties":{"total":{"type":"number"},"date":{"type":"string"}},"required":["total","date"]}`)
	var validated []string
	positive := func(_ context.Context, v json.RawMessage) []llm.Violation {
		validated = append(validated, string(v))
		if strings.Contains(string(v), `"total":-`) {
			return []llm.Violation{{Pointer: "/total", Message: "must be positive"}}
		}
		return nil
	}
	notFuture := func(_ context.Context, v json.RawMessage) []llm.Violation {
		if strings.Contains(string(v), "2999") {
			return []llm.Violation{{Pointer: "/date", Keyword: "future", Message: "is in the future"}}
		}
		return nil
	}
	var seen []llm.Attempt
	tamper := func(_ context.Context, a llm.Attempt) {
		seen = append(seen, a)
		if len(a.Violations) > 0 {
			a.Violations[0].Message = "changed by an observer"
		}
		if len(a.Value) > 0 {
			a.Value[0] = 'X'
		}
	}
	p := extractqtest.New([]extractqtest.Reply{
		extractqtest.Text(`{"total": "x"}`),                      // schema-invalid: validators must not run
		extractqtest.Text(`{"total": -5, "date": "2999-01-01"}`), // both validators fail
		extractqtest.Text(`{"total": 5, "date": "2024-01-01"}`),  // passes
	})
	res, err := extractq.Extract(t.Context(), "Total 5 on 2024-01-01", s, extractq.WithProvider(p),
		extractq.WithValidator(positive), extractq.WithValidator(notFuture), extractq.WithObserver(tamper))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"total":5,"date":"2024-01-01"}` || len(res.Attempts) != 3 {
		t.Fatalf("value %s after %d attempts", res.Value, len(res.Attempts))
	}
	if len(validated) != 2 {
		t.Fatalf("validators ran on %q; they must run only on schema-valid values", validated)
	}
	vs := res.Attempts[1].Violations
	if len(vs) != 2 || vs[0].Keyword != "validator" || vs[0].Message != "must be positive" || vs[1].Keyword != "future" || res.Attempts[1].Class != llm.ClassSchema {
		t.Fatalf("attempt 2 violations %+v class %q", vs, res.Attempts[1].Class)
	}
	fb := p.Requests()[2].Messages
	if last := fb[len(fb)-1].Content; !strings.Contains(last, "/total") || !strings.Contains(last, "must be positive") || !strings.Contains(last, "is in the future") {
		t.Fatalf("the feedback must carry the validators' violations: %q", last)
	}
	if len(seen) != 3 || seen[2].N != 3 || seen[2].Class != llm.ClassNone {
		t.Fatalf("observer saw %d attempts: %+v", len(seen), seen)
	}
	if res.Attempts[1].Violations[0].Message != "must be positive" || res.Attempts[2].Value[0] != '{' {
		t.Fatal("an observer changed the result")
	}
}

// TestWithAcceptLossy: a value that needs a guessed closing quote is never
// accepted while re-asks remain; once they are spent it fails by default
// and is returned as llm.OutcomeLossy when the caller opts in.
func TestWithAcceptLossy(t *testing.T) {
	t.Parallel()
	s := compile(t, invoice)
	lossy := `{"vendor": "ACME Ltd, "items": [{"name": "a", "price": 1}]}`
	for _, accept := range []bool{false, true} {
		p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(lossy), extractqtest.Text(lossy)})
		res, err := extractq.Extract(t.Context(), "ACME Ltd: a 1", s, extractq.WithProvider(p), extractq.WithMaxReasks(1), extractq.WithAcceptLossy(accept))
		if p.Calls() != 2 {
			t.Fatalf("accept %v: %d calls, want 2", accept, p.Calls())
		}
		switch {
		case !accept && (!errors.Is(err, extractq.ErrExhausted) || res.Value != nil):
			t.Errorf("default: got %v, value %s", err, res.Value)
		case accept && (err != nil || res.Outcome != llm.OutcomeLossy || !strings.Contains(string(res.Value), `"ACME Ltd"`)):
			t.Errorf("opted in: got %v, %s %s", err, res.Outcome, res.Value)
		}
	}
}

// TestPrefillNeedsACompleter: prefill asked of a provider that cannot
// continue a prefix is a configuration error before any call.
func TestPrefillNeedsACompleter(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"n": 1}`)})
	res, err := extractq.Extract(t.Context(), "doc", s, extractq.WithProvider(p), extractq.WithMode(llm.ModePrefill))
	if res != nil || !errors.Is(err, extractq.ErrConfig) || !strings.Contains(err.Error(), "cannot continue a prefix") {
		t.Fatalf("res %v err %v, want ErrConfig saying the provider cannot continue a prefix", res, err)
	}
	if len(p.Requests()) != 0 {
		t.Errorf("%d calls made before the error", len(p.Requests()))
	}
}

// TestExtractorWithProvider checks that the copy asks the new provider
// with the original's options (its re-ask limit), leaves the original
// asking its own, and refuses a nil provider as New does.
func TestExtractorWithProvider(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	bad := extractqtest.Text(`{"b": 1}`)
	first := extractqtest.New([]extractqtest.Reply{bad, bad, bad})
	x, err := extractq.New(extractq.WithProvider(first), extractq.WithMaxReasks(1))
	if err != nil {
		t.Fatal(err)
	}
	second := extractqtest.New([]extractqtest.Reply{bad, bad, bad})
	y, err := x.WithProvider(second)
	if err != nil {
		t.Fatal(err)
	}
	if y.Provider() != second || x.Provider() != first {
		t.Fatalf("providers: copy %v, original %v", y.Provider(), x.Provider())
	}
	if _, err := y.Extract(t.Context(), "doc", s); !errors.Is(err, extractq.ErrExhausted) {
		t.Fatalf("copy: %v", err)
	}
	if first.Calls() != 0 || second.Calls() != 2 {
		t.Errorf("calls: original's provider %d, copy's %d; want 0 and 2 (one re-ask)", first.Calls(), second.Calls())
	}
	if _, err := x.WithProvider(nil); !errors.Is(err, extractq.ErrConfig) {
		t.Errorf("nil provider: %v, want ErrConfig", err)
	}
}
