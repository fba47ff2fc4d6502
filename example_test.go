package extractq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// A model answers with prose, a code fence and a number in quotes; then,
// told exactly what is wrong, with the missing field. Extract returns only
// the valid value, and every attempt.
func ExampleExtract() {
	s, err := schema.Compile([]byte(`{
	  "type": "object",
	  "properties": {"vendor": {"type": "string"}, "total": {"type": "number"}},
	  "required": ["vendor", "total"],
	  "additionalProperties": false
	}`))
	if err != nil {
		panic(err)
	}
	// In real use: p, err := extractq.NewProvider("openai:gpt-4o-mini").
	p := extractqtest.New([]extractqtest.Reply{
		extractqtest.Text("Here you go:\n```json\n{\"total\": \"12.50\"}\n```"),
		extractqtest.Text(`{"vendor": "ACME", "total": 12.5}`),
	})
	res, err := extractq.Extract(context.Background(), "ACME Ltd. Invoice total: 12.50 EUR", s,
		extractq.WithProvider(p), extractq.WithMaxReasks(2))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	for _, a := range res.Attempts {
		fmt.Printf("attempt %d: class %q, %d violations, %d repairs\n", a.N, a.Class, len(a.Violations), len(a.Repairs))
	}
	// Output:
	// {"vendor":"ACME","total":12.5}
	// attempt 1: class "schema", 1 violations, 1 repairs
	// attempt 2: class "", 0 violations, 0 repairs
}

// A failed extraction is an *llm.ExtractionError carrying every attempt; its
// sentinel tells callers what to do next.
func ExampleError() {
	s, _ := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`))
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"_unextractable": "this is a recipe"}`)})
	_, err := extractq.Extract(context.Background(), "Pancakes: flour, eggs, milk.", s, extractq.WithProvider(p))
	var e *llm.ExtractionError
	switch {
	case errors.Is(err, extractq.ErrUnextractable) && errors.As(err, &e):
		fmt.Println(e.Result.Outcome, "after", len(e.Result.Attempts), "attempt:", err)
	case errors.Is(err, extractq.ErrTransport):
		fmt.Println("provider down: retry later")
	}
	// Output:
	// unextractable after 1 attempt: unextractable: "this is a recipe" (attempt 1); no re-ask, as the model says the data is not there
}

// ExtractInto derives the schema from a Go type and decodes the valid value
// into it.
func ExampleExtractInto() {
	type Contact struct {
		Name  string `json:"name"`
		Email string `json:"email" jsonschema:"format=email"`
	}
	p := extractqtest.New([]extractqtest.Reply{
		extractqtest.Text(`{"name": "Ada Lovelace", "email": "ada at example.org"}`),
		extractqtest.Text(`{"name": "Ada Lovelace", "email": "ada@example.org"}`),
	})
	c, res, err := extractq.ExtractInto[Contact](context.Background(), "Write to Ada Lovelace, ada@example.org.", extractq.WithProvider(p))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v after %d attempts; the first failed at %s\n", c, len(res.Attempts), res.Attempts[0].Violations[0].Pointer)
	// Output:
	// {Name:Ada Lovelace Email:ada@example.org} after 2 attempts; the first failed at /email
}

// A validator checks what JSON Schema cannot say: here, that the total is
// the sum of the line items. Its violation is fed back like a schema
// violation, and only a value passing both is accepted.
func ExampleWithValidator() {
	s, _ := schema.Compile([]byte(`{"type":"object","properties":{
	  "items":{"type":"array","items":{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}},
	  "total":{"type":"number"}},"required":["items","total"]}`))
	totalIsSum := func(_ context.Context, value json.RawMessage) []llm.Violation {
		var inv struct {
			Items []struct{ Amount float64 }
			Total float64
		}
		if err := json.Unmarshal(value, &inv); err != nil {
			return []llm.Violation{{Pointer: "", Message: err.Error()}}
		}
		sum := 0.0
		for _, it := range inv.Items {
			sum += it.Amount
		}
		if math.Abs(sum-inv.Total) > 0.005 {
			return []llm.Violation{{Pointer: "/total", Message: fmt.Sprintf("is %.2f but the items add up to %.2f", inv.Total, sum)}}
		}
		return nil
	}
	p := extractqtest.New([]extractqtest.Reply{
		extractqtest.Text(`{"items":[{"amount":10},{"amount":2.5}],"total":10}`),
		extractqtest.Text(`{"items":[{"amount":10},{"amount":2.5}],"total":12.5}`),
	})
	res, err := extractq.Extract(context.Background(), "Invoice: 10.00 + 2.50 = 12.50", s,
		extractq.WithProvider(p), extractq.WithValidator(totalIsSum))
	if err != nil {
		panic(err)
	}
	v := res.Attempts[0].Violations[0]
	fmt.Printf("attempt 1 failed at %s (%s): %s\n", v.Pointer, v.Keyword, v.Message)
	fmt.Println("accepted:", string(res.Value))
	// Output:
	// attempt 1 failed at /total (validator): is 10.00 but the items add up to 12.50
	// accepted: {"items":[{"amount":10},{"amount":2.5}],"total":12.5}
}

// An observer sees each attempt as it completes: for progress, logs or
// tracing.
func ExampleWithObserver() {
	s, _ := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`))
	p := extractqtest.New([]extractqtest.Reply{
		extractqtest.Text(`{"total": "twelve"}`),
		extractqtest.Text(`{"total": 12}`),
	})
	logAttempt := func(_ context.Context, a llm.Attempt) {
		fmt.Printf("attempt %d: class %q, %d violations\n", a.N, a.Class, len(a.Violations))
	}
	if _, err := extractq.Extract(context.Background(), "Total: 12", s, extractq.WithProvider(p), extractq.WithObserver(logAttempt)); err != nil {
		panic(err)
	}
	// Output:
	// attempt 1: class "schema", 1 violations
	// attempt 2: class "", 0 violations
}

// Score a value against its label: which fields came back right.
func ExampleScore() {
	s, _ := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"},"date":{"type":"string","format":"date"},"vendor":{"type":"string"}}}`))
	sc, _ := extractq.Score(
		json.RawMessage(`{"total": 1250, "date": "2026-03-19", "vendor": "Acme Ltd"}`),
		json.RawMessage(`{"total": 1250.00, "date": "19 March 2026", "vendor": "ACME LTD."}`), s)
	for _, f := range sc.Fields {
		fmt.Printf("%s exact=%v match=%v\n", f.Pointer, f.Exact, f.Match)
	}
	fmt.Println("correct:", sc.Correct)
	// Output:
	// /date exact=false match=true
	// /total exact=true match=true
	// /vendor exact=false match=false
	// correct: false
}
