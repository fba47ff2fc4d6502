package extractq_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
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

// A failed extraction is an *extractq.Error carrying every attempt; its
// sentinel tells callers what to do next.
func ExampleError() {
	s, _ := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`))
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"_unextractable": "this is a recipe"}`)})
	_, err := extractq.Extract(context.Background(), "Pancakes: flour, eggs, milk.", s, extractq.WithProvider(p))
	var e *extractq.Error
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
