package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// quickSchemas are schemas quick takes, and quickRefused ones it must
// leave to the full validator.
var quickSchemas = []string{
	`{"type":"object","properties":{"invoice_number":{"type":"string"},"vendor":{"type":"string"},"total":{"type":"number"},"currency":{"type":"string","enum":["EUR","USD","GBP"]},"paid":{"type":"boolean"},"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"qty":{"type":"integer"}},"required":["name","qty"]}}},"required":["invoice_number","vendor","total","currency","paid"],"additionalProperties":false}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","type":["object","null"],"properties":{"a":{"type":["string","null"],"description":"x"},"b":{"enum":["x","y"],"x-aliases":{"x":["ex"]}},"c":{},"d":{"type":"array"}}}`,
	`{"type":"array","items":{"type":"integer"}}`,
	`{}`,
}

var quickRefused = []string{
	`{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`,
	`{"type":"string","format":"date"}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`,
	`{"enum":["a",1]}`,
	`{"type":"number","maximum":3}`,
	`{"anyOf":[{"type":"string"}]}`,
}

var quickValues = []string{
	`{"invoice_number":"INV-1","vendor":"V","total":12.5,"currency":"EUR","paid":true,"items":[{"name":"w","qty":3}]}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"EUR","paid":false}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"CHF","paid":false}`,
	`{"invoice_number":"INV-1","vendor":"V","total":"12","currency":"EUR","paid":false}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"EUR","paid":false,"extra":1}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"EUR"}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"EUR","paid":false,"items":[{"name":"w","qty":1.0}]}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"EUR","paid":false,"items":[{"name":"w","qty":1.5}]}`,
	`{"invoice_number":"INV-1","vendor":"V","total":12,"currency":"EUR","paid":false,"items":[{"name":"w"}]}`,
	`{"invoice_number":null,"vendor":"V","total":12,"currency":"EUR","paid":false}`,
	`{"a":null,"b":"x","c":[1,{"z":null}],"d":[]}`,
	`{"a":"s","b":"z"}`,
	`{"b":1}`,
	`null`,
	`[1,2,-0,3e2]`,
	`[1,2.5]`,
	`"text"`,
	`12`,
	`true`,
}

// TestQuickAgreesWithValidator checks that quick takes the plain schemas
// and refuses the others, and that every value it calls valid the full
// validator calls valid (and that it does call the usual answer valid).
func TestQuickAgreesWithValidator(t *testing.T) {
	for i, src := range quickRefused {
		if s := mustCompile(t, src); s.quick != nil {
			t.Errorf("refused %d: quick took %s", i, src)
		}
	}
	for i, src := range quickSchemas {
		s := mustCompile(t, src)
		if s.quick == nil {
			t.Fatalf("schema %d: quick refused %s", i, src)
		}
		for _, val := range quickValues {
			checkQuick(t, s, []byte(val))
		}
	}
	s := mustCompile(t, quickSchemas[0])
	if v := decodeNumber(t, []byte(quickValues[0])); !s.quick.valid(v) {
		t.Errorf("quick does not vouch for the usual answer %s", quickValues[0])
	}
}

func mustCompile(t testing.TB, src string) *Schema {
	t.Helper()
	s, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func decodeNumber(t testing.TB, b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err // not JSON: quick must not call an error value valid
	}
	return v
}

func checkQuick(t testing.TB, s *Schema, val []byte) {
	t.Helper()
	v := decodeNumber(t, val)
	if !s.quick.valid(v) {
		return
	}
	if err := s.compiled.Validate(v); err != nil {
		t.Fatalf("quick called %s valid against %s; the validator: %v", val, s.JSON(), err)
	}
}

// FuzzQuickValid checks quick against the full validator on any value.
func FuzzQuickValid(f *testing.F) {
	for _, v := range quickValues {
		f.Add([]byte(v))
	}
	var schemas []*Schema
	for _, src := range quickSchemas {
		schemas = append(schemas, mustCompile(f, src))
	}
	f.Fuzz(func(t *testing.T, val []byte) {
		for _, s := range schemas {
			checkQuick(t, s, val)
		}
	})
}

// BenchmarkQuickValidate validates the usual answer against the fleet's
// schema: through Validate (quick) and through the full validator alone.
func BenchmarkQuickValidate(b *testing.B) {
	s := mustCompile(b, quickSchemas[0])
	v := decodeNumber(b, []byte(quickValues[0]))
	b.Run("quick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.Validate(v) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("jsonschema", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.compiled.Validate(v) != nil {
				b.Fatal("invalid")
			}
		}
	})
}

// walkValid is quick.valid as it was before validObject, read from the
// schema's own document (doc) rather than from q's fields: an object's
// required names looked up, then its map walked and each member looked up
// among the properties. Values of no other kind go to q.valid, whose code
// for them did not change. FuzzQuickFieldsMatchWalk compares the two.
func walkValid(q *quick, doc map[string]any, v any) bool {
	switch t := v.(type) {
	case []any:
		if q.items == nil {
			return q.valid(v)
		}
		items, _ := doc["items"].(map[string]any)
		for _, e := range t {
			if !walkValid(q.items, items, e) {
				return false
			}
		}
		return q.types == 0 || q.types&qArray != 0
	case map[string]any:
		required, _ := doc["required"].([]any)
		for _, r := range required {
			if _, ok := t[r.(string)]; !ok {
				return false
			}
		}
		props, _ := doc["properties"].(map[string]any)
		for k, e := range t {
			sub, ok := props[k].(map[string]any)
			switch {
			case ok:
				if !walkValid(q.props[k], sub, e) {
					return false
				}
			case doc["additionalProperties"] == false:
				return false
			case !plainJSON(e, 0):
				return false
			}
		}
		return !q.hasEnum && (q.types == 0 || q.types&qObject != 0)
	}
	return q.valid(v)
}

// quickFieldSchemas add to quickSchemas required names that are not
// properties and open objects with extra members.
var quickFieldSchemas = []string{
	`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","z"]}`,
	`{"properties":{"a":{"type":"object","properties":{"x":{"type":"null"}},"required":["x"],"additionalProperties":false}},"additionalProperties":true}`,
	`{"type":"array","items":{"type":"object","properties":{"n":{"enum":["p","q"]}},"required":["n"]}}`,
}

// FuzzQuickFieldsMatchWalk checks that quick's look-up per property
// (validObject) says what the walk of the object's members said.
func FuzzQuickFieldsMatchWalk(f *testing.F) {
	for _, v := range quickValues {
		f.Add([]byte(v))
	}
	for _, v := range []string{`{"a":"s","z":1}`, `{"a":"s","b":1}`, `{"a":{"x":null},"y":[{}]}`, `{"a":{"x":null,"y":1}}`, `[{"n":"p"},{"n":"r"}]`, `[{"n":"q","m":{"k":[1e5]}}]`, `{"a":1,"z":{"q":1.5e-3}}`} {
		f.Add([]byte(v))
	}
	var (
		qs   []*quick
		docs []map[string]any
	)
	for _, src := range append(slices.Clone(quickSchemas), quickFieldSchemas...) {
		s := mustCompile(f, src)
		if s.quick == nil {
			f.Fatalf("quick refused %s", src)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(src), &doc); err != nil {
			f.Fatal(err)
		}
		qs, docs = append(qs, s.quick), append(docs, doc)
	}
	f.Fuzz(func(t *testing.T, val []byte) {
		v := decodeNumber(t, val)
		for i, q := range qs {
			if got, want := q.valid(v), walkValid(q, docs[i], v); got != want {
				t.Fatalf("schema %d, %s: valid %v, the walk %v", i, val, got, want)
			}
		}
	})
}

// FuzzIntegerLiteral compares isIntegerLiteral's loop with the
// strings.ContainsAny test it replaced.
func FuzzIntegerLiteral(f *testing.F) {
	for _, s := range []string{"", "1", "-0", "1.5", "1e2", "1E2", "12345678901234567890", ".", "e", "E", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isIntegerLiteral(s), s != "" && !strings.ContainsAny(s, ".eE"); got != want {
			t.Fatalf("isIntegerLiteral(%q) = %v, want %v", s, got, want)
		}
	})
}
