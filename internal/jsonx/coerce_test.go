package jsonx

import (
	"reflect"
	"slices"
	"testing"

	"github.com/extractq/extractq/schema"
)

func TestCoerce(t *testing.T) {
	typ := func(ptr string, want ...string) schema.Violation {
		return schema.Violation{Pointer: ptr, Keyword: "type", Want: want}
	}
	enum := func(ptr string, want ...string) schema.Violation {
		return schema.Violation{Pointer: ptr, Keyword: "enum", Want: want}
	}
	tests := []struct {
		name    string
		doc     string
		vs      []schema.Violation
		want    string // "" = unchanged
		kinds   []string
		wherePt []string
	}{
		{"string to integer", `{"age": "42"}`, []schema.Violation{typ("/age", "integer")}, `{"age":42}`, []string{KindCoerceStringToInteger}, []string{"/age"}},
		{"spaced string to number", `{"p": " 3.5 "}`, []schema.Violation{typ("/p", "number")}, `{"p":3.5}`, []string{KindCoerceStringToNumber}, []string{"/p"}},
		{"integer wanted, decimal string", `{"n": "3.5"}`, []schema.Violation{typ("/n", "integer")}, "", nil, nil},
		{"comma decimal read", `{"p": "12,50"}`, []schema.Violation{typ("/p", "number")}, `{"p":12.50}`, []string{KindCoerceStringToNumber}, []string{"/p"}},
		{"overflowing number refused", `{"p": "1e400"}`, []schema.Violation{typ("/p", "number")}, "", nil, nil},
		{"currency dropped", `{"p": "$5"}`, []schema.Violation{typ("/p", "number", "null")}, `{"p":5}`, []string{KindCoerceStringToNumber}, []string{"/p"}},
		{"number to string", `{"zip": 75001, "ok": true}`, []schema.Violation{typ("/zip", "string"), typ("/ok", "string")}, `{"zip":"75001","ok":"true"}`, []string{KindCoerceToString, KindCoerceToString}, []string{"/zip", "/ok"}},
		{"string to boolean", `{"a": "TRUE", "b": " false"}`, []schema.Violation{typ("/a", "boolean"), typ("/b", "boolean")}, `{"a":true,"b":false}`, []string{KindCoerceStringToBool, KindCoerceStringToBool}, []string{"/a", "/b"}},
		{"yes is not a boolean", `{"a": "yes"}`, []schema.Violation{typ("/a", "boolean")}, "", nil, nil},
		{"lone value to array", `{"tags": "red"}`, []schema.Violation{typ("/tags", "array")}, `{"tags":["red"]}`, []string{KindCoerceWrapArray}, []string{"/tags"}},
		{"lone object to array at root", `{"a": 1}`, []schema.Violation{typ("", "array")}, `[{"a":1}]`, []string{KindCoerceWrapArray}, []string{""}},
		{"null member dropped, not wrapped", `{"tags": null, "a": 1}`, []schema.Violation{typ("/tags", "array")}, `{"a":1}`, []string{KindCoerceDropNull}, []string{"/tags"}},
		{"nested null member dropped", `{"v": {"tax_id": null, "name": "N"}}`, []schema.Violation{typ("/v/tax_id", "string")}, `{"v":{"name":"N"}}`, []string{KindCoerceDropNull}, []string{"/v/tax_id"}},
		{"null array element kept", `{"xs": [1, null, 3]}`, []schema.Violation{typ("/xs/1", "integer")}, "", nil, nil},
		{"null root kept", `null`, []schema.Violation{typ("", "object")}, "", nil, nil},
		{"object holding the wanted array", `{"items": [{"a": 1}]}`, []schema.Violation{typ("", "array")}, `[{"a":1}]`, []string{KindCoerceUnwrapObject}, []string{""}},
		{"one-element array to scalar", `{"name": ["Ada"]}`, []schema.Violation{typ("/name", "string")}, `{"name":"Ada"}`, []string{KindCoerceUnwrapArray}, []string{"/name"}},
		{"json text in a string", `{"items": "[1, 2]"}`, []schema.Violation{typ("/items", "array")}, `{"items":[1,2]}`, []string{KindCoerceJSONString}, []string{"/items"}},
		{"enum case and space", `{"s": " Active "}`, []schema.Violation{enum("/s", `"active"`, `"closed"`)}, `{"s":"active"}`, []string{KindCoerceEnum}, []string{"/s"}},
		{"enum ambiguous", `{"s": "Ab"}`, []schema.Violation{enum("/s", `"AB"`, `"ab"`, `"x"`)}, "", nil, nil},
		{"enum exact after trim wins", `{"s": " A"}`, []schema.Violation{enum("/s", `"A"`, `"a"`)}, `{"s":"A"}`, []string{KindCoerceEnum}, []string{"/s"}},
		{"enum number as text", `{"n": "3"}`, []schema.Violation{enum("/n", "1", "2", "3")}, `{"n":3}`, []string{KindCoerceEnum}, []string{"/n"}},
		{"const", `{"v": "V1"}`, []schema.Violation{{Pointer: "/v", Keyword: "const", Want: []string{`"v1"`}}}, `{"v":"v1"}`, []string{KindCoerceEnum}, []string{"/v"}},
		{"enum no match", `{"s": "pending"}`, []schema.Violation{enum("/s", `"active"`)}, "", nil, nil},
		{"nested pointer with escapes", `{"a/b": [{"c~d": "7"}]}`, []schema.Violation{typ("/a~1b/0/c~0d", "integer")}, `{"a/b":[{"c~d":7}]}`, []string{KindCoerceStringToInteger}, []string{"/a~1b/0/c~0d"}},
		{"keyword path", `{"n": "7"}`, []schema.Violation{{Pointer: "/n", Keyword: "properties/n/type", Want: []string{"integer"}}}, `{"n":7}`, []string{KindCoerceStringToInteger}, []string{"/n"}},
		{"missing property not invented", `{}`, []schema.Violation{{Pointer: "", Keyword: "required", Message: "missing a"}, typ("/a", "integer")}, "", nil, nil},
		{"key order kept", `{"z": 1, "a": "2", "m": 3}`, []schema.Violation{typ("/a", "integer")}, `{"z":1,"a":2,"m":3}`, []string{KindCoerceStringToInteger}, []string{"/a"}},
		{"no violations", `{"a": "1"}`, nil, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rs, changed := Coerce([]byte(tt.doc), tt.vs)
			if tt.want == "" {
				if changed || string(out) != tt.doc || len(rs) != 0 {
					t.Fatalf("Coerce changed %s to %s (%v), want unchanged", tt.doc, out, rs)
				}
				return
			}
			if !changed || string(out) != tt.want {
				t.Fatalf("Coerce(%s) = %s (changed %v), want %s", tt.doc, out, changed, tt.want)
			}
			var kinds, where []string
			for _, r := range rs {
				kinds = append(kinds, r.Kind)
				where = append(where, r.Where)
				if r.Detail == "" {
					t.Errorf("repair %+v has no detail", r)
				}
			}
			if !reflect.DeepEqual(kinds, tt.kinds) || !reflect.DeepEqual(where, tt.wherePt) {
				t.Errorf("repairs %v, want kinds %v at %v", rs, tt.kinds, tt.wherePt)
			}
		})
	}
}

// TestCoerceWithSchema runs Find, the real validator and Coerce together, as
// the engine does, and checks that the coerced answer validates.
func TestCoerceWithSchema(t *testing.T) {
	s, err := schema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"age": {"type": "integer"},
			"price": {"type": "number"},
			"ok": {"type": "boolean"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"status": {"enum": ["active", "closed"]},
			"zip": {"type": "string"},
			"name": {"type": ["string", "null"]},
			"note": {"type": "string"}
		},
		"required": ["age", "price", "ok", "tags", "status", "zip", "name"]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	answer := "Here you go:\n```json\n{'age': '42', 'price': ' 3.5 ', 'ok': 'TRUE', 'tags': 'red', 'status': ' Active ', 'zip': 75001, 'name': ['Ada'],}\n```"
	cs := Find(answer, PolicyCoerce)
	if len(cs) != 1 {
		t.Fatalf("found %d candidates, want 1", len(cs))
	}
	doc := cs[0].JSON
	vs, err := s.ValidateJSON(doc)
	if err != nil || len(vs) == 0 {
		t.Fatalf("want violations before coercion, got %v (err %v)", vs, err)
	}
	var kinds []string
	for round := 0; round < 3 && len(vs) > 0; round++ {
		out, rs, changed := Coerce(doc, vs)
		if !changed {
			break
		}
		for _, r := range rs {
			kinds = append(kinds, r.Kind+" "+r.Where)
		}
		doc = out
		if vs, err = s.ValidateJSON(doc); err != nil {
			t.Fatalf("Coerce wrote invalid JSON %s: %v", doc, err)
		}
	}
	if len(vs) != 0 {
		t.Fatalf("still invalid after coercion: %s: %v", doc, vs)
	}
	want := `{"age":42,"price":3.5,"ok":true,"tags":["red"],"status":"active","zip":"75001","name":"Ada"}`
	if string(doc) != want {
		t.Errorf("coerced to %s, want %s", doc, want)
	}
	wantKinds := []string{
		KindCoerceStringToInteger + " /age", KindCoerceStringToNumber + " /price", KindCoerceStringToBool + " /ok",
		KindCoerceWrapArray + " /tags", KindCoerceEnum + " /status", KindCoerceToString + " /zip", KindCoerceUnwrapArray + " /name",
	}
	slices.Sort(kinds)
	slices.Sort(wantKinds)
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("coercions %v, want %v", kinds, wantKinds)
	}
}

// TestCoerceDropNullOnlyHelpsOptional checks the null-dropping coercion against
// the real validator: an optional null (what strict provider forms invite)
// becomes valid, a required null stays invalid, so re-validation rejects it.
func TestCoerceDropNullOnlyHelpsOptional(t *testing.T) {
	s, err := schema.Compile([]byte(`{
		"type": "object",
		"additionalProperties": false,
		"properties": {"name": {"type": "string"}, "tax_id": {"type": "string"}},
		"required": ["name"]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc       string
		wantValid bool
	}{
		{`{"name": "Acme", "tax_id": null}`, true},
		{`{"name": null, "tax_id": "X1"}`, false},
	}
	for _, tt := range tests {
		vs, err := s.ValidateJSON([]byte(tt.doc))
		if err != nil || len(vs) == 0 {
			t.Fatalf("%s: want violations before coercion, got %v (%v)", tt.doc, vs, err)
		}
		out, rs, changed := Coerce([]byte(tt.doc), vs)
		if !changed || len(rs) != 1 || rs[0].Kind != KindCoerceDropNull {
			t.Fatalf("%s: Coerce = %s %v %v, want one %s", tt.doc, out, rs, changed, KindCoerceDropNull)
		}
		after, err := s.ValidateJSON(out)
		if err != nil {
			t.Fatal(err)
		}
		if valid := len(after) == 0; valid != tt.wantValid {
			t.Errorf("%s -> %s: valid = %v, want %v (%v)", tt.doc, out, valid, tt.wantValid, after)
		}
	}
}
