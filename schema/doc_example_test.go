package schema_test

import (
	"fmt"

	"github.com/extractq/extractq/schema"
)

// A schema in compact notation, an answer that fails it, and the feedback
// the engine would send back to the model.
func Example() {
	s, err := schema.Compile([]byte(`
title: string -- the book's title
year?: integer 1900..2100
status: enum(open, closed)
`))
	if err != nil {
		panic(err)
	}
	vs, err := s.ValidateJSON([]byte(`{"title": 42, "year": 1850, "status": "Open"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(schema.RenderFeedback(vs, 500))
	ex, _ := s.Example()
	fmt.Println(string(ex))
	// Output:
	// - /status: must be one of "open", "closed"; got "Open"
	// - /title: must be string, not integer; got 42
	// - /year: must be >= 1900; got 1850
	// {"title":"example","year":1900,"status":"open"}
}

// The OpenAI strict form closes objects and makes optional fields
// nullable (the engine drops such nulls from an answer before validating).
func ExampleSchema_ProviderForm() {
	s, err := schema.Compile([]byte(`{"title": "string", "year?": "integer"}`))
	if err != nil {
		panic(err)
	}
	form, err := s.ProviderForm(schema.FormOpenAI)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(form))
	// Output:
	// {"type":"object","properties":{"title":{"type":"string"},"year":{"type":["integer","null"]}},"required":["title","year"],"additionalProperties":false}
}
