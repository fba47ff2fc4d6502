package schema

import (
	"errors"
	"testing"
)

// FuzzCompileValidate feeds arbitrary schema and instance text through
// every entry point: nothing may panic or overflow the stack, and whatever
// Example returns must validate.
func FuzzCompileValidate(f *testing.F) {
	seeds := []struct{ schema, instance string }{
		{bookSchema, `{"title":"Dune","year":1965}`},
		{`{"title":"string","topics":["string","1..3 unique"],"year?":"integer 1900..2100","status":"enum(open,closed)"}`, `{"title":1}`},
		{"title: string -- t\nyear?: integer >0\n", `{"title":"x","year":0}`},
		{`{"$defs":{"n":{"type":"object","properties":{"k":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`, `{"k":[{"k":[{}]}]}`},
		{`{"type":"object","properties":{"next":{"$ref":"#"}}}`, `{"next":{"next":1}}`},
		{`{"anyOf":[{"type":"string","pattern":"^a+$"},{"type":"null"}],"not":{"const":"aa"}}`, `"aaa"`},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array","items":{"type":"integer","multipleOf":0.5}}}}`, `[1,1.5,"2"]`},
		{`{"oneOf":[{"required":["a"]},{"required":["b"]}],"if":{"required":["a"]},"then":{"maxProperties":1}}`, `{"a":1,"b":2}`},
		{`{"$ref":"https://example.com/x.json"}`, `1`},
		{`[{"name":"string"}]`, `[{"name":"x"},{}]`},
		{`{"type":"string","format":"date-time","minLength":30}`, `"2024-01-01T00:00:00Z"`},
		{`{"allOf":[{"type":"integer"},{"minimum":5,"exclusiveMaximum":5}]}`, `5`},
	}
	for _, s := range seeds {
		f.Add([]byte(s.schema), []byte(s.instance))
	}
	f.Fuzz(func(t *testing.T, schemaSrc, instance []byte) {
		s, err := Compile(schemaSrc)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("compile error %v does not match ErrInvalidSchema", err)
			}
			return
		}
		vs, err := s.ValidateJSON(instance)
		if err == nil {
			_ = RenderFeedback(vs, 500)
		}
		if ex, err := s.Example(); err == nil {
			if vs, err := s.ValidateJSON(ex); err != nil || vs != nil {
				t.Fatalf("Example %s is invalid: %v %v", ex, vs, err)
			}
		} else if !errors.Is(err, ErrNoExample) {
			t.Fatalf("Example error %v does not match ErrNoExample", err)
		}
		for _, form := range []Form{FormOpenAI, FormAnthropic, FormGemini, FormOllama} {
			if _, err := s.ProviderForm(form); err != nil && !errors.Is(err, ErrProviderForm) {
				t.Fatalf("%s: error %v does not match ErrProviderForm", form, err)
			}
		}
	})
}
