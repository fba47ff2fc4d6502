package jsonx

import (
	"reflect"
	"slices"
	"strings"
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

// TestCoerceAligned covers the coercions of schema-aligned parsing:
// numbers written for people, keys and enum values matched loosely,
// missing arrays, single objects, and when each is lossy.
func TestCoerceAligned(t *testing.T) {
	t.Parallel()
	typ := func(ptr string, want ...string) schema.Violation {
		return schema.Violation{Pointer: ptr, Keyword: "type", Want: want}
	}
	enum := func(ptr string, want ...string) schema.Violation {
		return schema.Violation{Pointer: ptr, Keyword: "enum", Want: want}
	}
	req := func(ptr string, types ...string) schema.Violation {
		return schema.Violation{Pointer: ptr, Keyword: "required", Want: types}
	}
	extra := func(ptr string, allowed ...string) schema.Violation {
		return schema.Violation{Pointer: ptr, Keyword: "additionalProperties", Want: allowed}
	}
	tests := []struct {
		name  string
		doc   string
		vs    []schema.Violation
		want  string // "" = unchanged
		kinds []string
		lossy bool // some repair is lossy
	}{
		// Numbers.
		{"dollars with grouping", `{"p": "$1,234.50"}`, []schema.Violation{typ("/p", "number")}, `{"p":1234.50}`, []string{KindCoerceStringToNumber}, false},
		{"euros, space grouping, decimal comma", `{"p": "1 234,50 €"}`, []schema.Violation{typ("/p", "number")}, `{"p":1234.50}`, []string{KindCoerceStringToNumber}, false},
		{"no-break space grouping", "{\"p\": \"1\u00a0234\u202f567,5\"}", []schema.Violation{typ("/p", "number")}, `{"p":1234567.5}`, []string{KindCoerceStringToNumber}, false},
		{"currency before, spaced", `{"p": "€ 12"}`, []schema.Violation{typ("/p", "number")}, `{"p":12}`, []string{KindCoerceStringToNumber}, false},
		{"currency code after", `{"p": "1,299.00 USD"}`, []schema.Violation{typ("/p", "number")}, `{"p":1299.00}`, []string{KindCoerceStringToNumber}, false},
		{"negative with currency", `{"p": "-$5.25", "q": "−12"}`, []schema.Violation{typ("/p", "number"), typ("/q", "integer")}, `{"p":-5.25,"q":-12}`, []string{KindCoerceStringToNumber, KindCoerceStringToInteger}, false},
		{"swiss apostrophes", `{"n": "1'000'000"}`, []schema.Violation{typ("/n", "integer")}, `{"n":1000000}`, []string{KindCoerceStringToInteger}, false},
		{"dots as grouping", `{"n": "1.234.567"}`, []schema.Violation{typ("/n", "integer")}, `{"n":1234567}`, []string{KindCoerceStringToInteger}, false},
		{"indian grouping", `{"p": "₹1,23,456.78"}`, []schema.Violation{typ("/p", "number")}, `{"p":123456.78}`, []string{KindCoerceStringToNumber}, false},
		{"decimal comma, not three digits", `{"p": "0,5", "q": "1234,567"}`, []schema.Violation{typ("/p", "number"), typ("/q", "number")}, `{"p":0.5,"q":1234.567}`, []string{KindCoerceStringToNumber}, false},
		{"lone comma before three digits: ambiguous", `{"p": "1,234"}`, []schema.Violation{typ("/p", "number")}, "", nil, false},
		{"lone dot before three digits: ambiguous", `{"p": "2.500"}`, []schema.Violation{typ("/p", "number")}, "", nil, false},
		{"ambiguous, integer wanted: grouping", `{"n": "1,234", "m": "2.500"}`, []schema.Violation{typ("/n", "integer"), typ("/m", "integer")}, `{"n":1234,"m":2500}`, []string{KindCoerceStringToInteger}, false},
		{"ambiguous, settled by a dot-decimal neighbour", `{"a": "1,234", "b": "1,234.56"}`, []schema.Violation{typ("/a", "number"), typ("/b", "number")}, `{"a":1234,"b":1234.56}`, []string{KindCoerceStringToNumber}, false},
		{"ambiguous, settled by a comma-decimal neighbour", `{"a": "1,234", "b": "12,50"}`, []schema.Violation{typ("/a", "number"), typ("/b", "number")}, `{"a":1.234,"b":12.50}`, []string{KindCoerceStringToNumber}, false},
		{"both conventions: nothing guessed", `{"a": "1.234,56", "b": "1,234.56", "c": "7"}`, []schema.Violation{typ("/a", "number"), typ("/b", "number"), typ("/c", "number")}, `{"a":"1.234,56","b":"1,234.56","c":7}`, []string{KindCoerceStringToNumber}, false},
		{"both conventions, plain decimals too", `{"a": "3.5", "b": "12,50"}`, []schema.Violation{typ("/a", "number"), typ("/b", "number")}, "", nil, false},
		{"percent where an integer is wanted", `{"n": "12%"}`, []schema.Violation{typ("/n", "integer")}, `{"n":12}`, []string{KindCoerceStringToInteger}, false},
		{"percent where a number is wanted: 12.5 or 0.125", `{"n": "12.5%"}`, []schema.Violation{typ("/n", "number")}, "", nil, false},
		{"fraction where an integer is wanted", `{"n": "12,5"}`, []schema.Violation{typ("/n", "integer")}, "", nil, false},
		{"exponent is JSON already", `{"p": "1.5e3", "n": "2e2"}`, []schema.Violation{typ("/p", "number"), typ("/n", "integer")}, `{"p":1.5e3,"n":"2e2"}`, []string{KindCoerceStringToNumber}, false},
		{"units and words stay", `{"a": "12 kg", "b": "about 12", "c": "007", "d": "(5)", "e": "1,2,3"}`, []schema.Violation{typ("/a", "number"), typ("/b", "number"), typ("/c", "integer"), typ("/d", "number"), typ("/e", "number")}, "", nil, false},
		// Keys.
		{"key differs in case, space and separators", `{"First Name": "Ada", "age": 36}`, []schema.Violation{req("/first_name", "string")}, `{"first_name":"Ada","age":36}`, []string{KindCoerceKey}, false},
		{"key in a closed object", `{"v": {"Tax-ID": "X1"}}`, []schema.Violation{extra("/v/Tax-ID", "name", "tax_id"), req("/v/tax_id")}, `{"v":{"tax_id":"X1"}}`, []string{KindCoerceKey}, false},
		{"optional key named by the allowed list", `{"E-Mail": "a@b.c", "name": "A"}`, []schema.Violation{extra("/E-Mail", "email", "name")}, `{"email":"a@b.c","name":"A"}`, []string{KindCoerceKey}, false},
		{"two keys match: no guess", `{"First Name": "A", "first-name": "B"}`, []schema.Violation{req("/first_name")}, "", nil, false},
		{"two properties match: no guess", `{"E-Mail": "a"}`, []schema.Violation{extra("/E-Mail", "email", "e_mail")}, "", nil, false},
		{"declared property is not renamed", `{"Name": "A"}`, []schema.Violation{extra("/other"), req("/name")}, "", nil, false},
		{"accents matter in keys", `{"Année": 1943}`, []schema.Violation{req("/annee", "integer")}, "", nil, false},
		// Enums.
		{"enum ignoring accents", `{"s": "Cafe"}`, []schema.Violation{enum("/s", `"café"`, `"thé"`)}, `{"s":"café"}`, []string{KindCoerceEnum}, false},
		{"enum ignoring punctuation", `{"s": "in-progress"}`, []schema.Violation{enum("/s", `"In Progress"`, `"Done"`)}, `{"s":"In Progress"}`, []string{KindCoerceEnum}, false},
		{"enum ambiguous after folding", `{"s": "inprogress"}`, []schema.Violation{enum("/s", `"in_progress"`, `"In-Progress"`)}, "", nil, false},
		{"enum case beats folding", `{"s": "IN_PROGRESS"}`, []schema.Violation{enum("/s", `"in_progress"`, `"InProgress"`)}, `{"s":"in_progress"}`, []string{KindCoerceEnum}, false},
		// Arrays.
		{"missing array becomes empty, lossy", `{"name": "A"}`, []schema.Violation{req("/tags", "array")}, `{"name":"A","tags":[]}`, []string{KindCoerceEmptyArray}, true},
		{"missing string is not invented", `{"name": "A"}`, []schema.Violation{req("/note", "string")}, "", nil, false},
		{"renamed rather than emptied", `{"Line Items": [1]}`, []schema.Violation{req("/line_items", "array")}, `{"line_items":[1]}`, []string{KindCoerceKey}, false},
		{"single object where an array of objects is wanted", `{"items": {"sku": "A"}}`, []schema.Violation{typ("/items", "array")}, `{"items":[{"sku":"A"}]}`, []string{KindCoerceWrapArray}, false},
		{"list-like string wrapped whole is lossy", `{"tags": "red, green"}`, []schema.Violation{typ("/tags", "array")}, `{"tags":["red, green"]}`, []string{KindCoerceWrapArray}, true},
		{"object holding an array wrapped whole is lossy", `{"data": {"rows": [{"a": 1}], "count": 1}}`, []schema.Violation{typ("/data", "array")}, `{"data":[{"rows":[{"a":1}],"count":1}]}`, []string{KindCoerceWrapArray}, true},
		// Objects wrapping a scalar.
		{"answer object where an integer is wanted", `{"answer": 42}`, []schema.Violation{typ("", "integer")}, `42`, []string{KindCoerceUnwrapObject}, false},
		{"two members are not a wrapper", `{"answer": 42, "unit": "kg"}`, []schema.Violation{typ("", "integer")}, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, rs, changed := Coerce([]byte(tt.doc), tt.vs)
			if tt.want == "" {
				if changed || string(out) != tt.doc || len(rs) != 0 {
					t.Fatalf("Coerce changed %s to %s (%v), want unchanged", tt.doc, out, rs)
				}
				return
			}
			if !changed || string(out) != tt.want {
				t.Fatalf("Coerce(%s) = %s (changed %v, %v), want %s", tt.doc, out, changed, rs, tt.want)
			}
			if got := kindsOf(rs); !reflect.DeepEqual(got, tt.kinds) {
				t.Errorf("repairs %v, want kinds %v", rs, tt.kinds)
			}
			if AnyLossy(rs) != tt.lossy {
				t.Errorf("repairs %v: lossy %v, want %v", rs, AnyLossy(rs), tt.lossy)
			}
			for _, r := range rs {
				if r.Detail == "" || !strings.HasPrefix(r.Where, "/") && r.Where != "" {
					t.Errorf("repair %+v lacks a detail or a pointer", r)
				}
			}
		})
	}
}

// TestMatchEnumAliases checks alias matching, which Coerce uses when the
// enum violation carries the schema's x-aliases.
func TestMatchEnumAliases(t *testing.T) {
	t.Parallel()
	allowed := []string{`"open"`, `"closed"`, `3`}
	aliases := map[string][]string{"open": {"Active", "in progress"}, "closed": {"done", "résolu"}}
	tests := []struct {
		in, want string
	}{
		{"open", `"open"`},
		{" OPEN ", `"open"`},
		{"active", `"open"`},
		{"In-Progress", `"open"`},
		{"Resolu", `"closed"`},
		{"3", `3`},
		{"pending", ""},
	}
	for _, tt := range tests {
		got, ok := matchEnum(tt.in, allowed, aliases)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("matchEnum(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	// An alias that two values share decides nothing.
	if got, ok := matchEnum("x", []string{`"a"`, `"b"`}, map[string][]string{"a": {"x"}, "b": {"X"}}); ok {
		t.Errorf("shared alias matched %s", got)
	}
}

// TestCoerceAlignedWithSchema runs Find, the real validator and Coerce
// together, as the engine does, on an answer that needs the
// schema-aligned coercions; the violations come from the validator, so
// this also checks what they carry (Want on required and
// additionalProperties).
func TestCoerceAlignedWithSchema(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(`{
		"type": "object",
		"additionalProperties": false,
		"properties": {
			"invoice_number": {"type": "string"},
			"total": {"type": "number"},
			"subtotal": {"type": "number"},
			"quantity": {"type": "integer"},
			"status": {"enum": ["paid", "overdue", "en attente"]},
			"line_items": {"$ref": "#/$defs/items"},
			"notes": {"type": "array", "items": {"type": "string"}}
		},
		"required": ["invoice_number", "total", "subtotal", "quantity", "status", "line_items", "notes"],
		"$defs": {"items": {"type": "array", "items": {"type": "object"}}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	answer := "Voici les données extraites :\n\n```json\n{\n  \"Invoice Number\": \"F-2024-007\",\n  \"total\": \"1 234,50 €\",\n  \"subtotal\": \"1 030,00 €\",\n  \"quantity\": \"1.200\",\n  \"status\": \"En-Attente\",\n  \"line_items\": {\"sku\": \"A1\", \"qty\": 1200}\n}\n```"
	cs := Find(answer, PolicyCoerce)
	if len(cs) == 0 {
		t.Fatal("no candidate")
	}
	doc := cs[0].JSON
	vs, err := s.ValidateJSON(doc)
	if err != nil || len(vs) == 0 {
		t.Fatalf("want violations before coercion, got %v (err %v)", vs, err)
	}
	var all []string
	lossy := false
	for round := 0; round < 3 && len(vs) > 0; round++ {
		out, rs, changed := Coerce(doc, vs)
		if !changed {
			break
		}
		for _, r := range rs {
			all = append(all, r.Kind+" "+r.Where)
			lossy = lossy || r.Lossy
		}
		doc = out
		if vs, err = s.ValidateJSON(doc); err != nil {
			t.Fatalf("Coerce wrote invalid JSON %s: %v", doc, err)
		}
	}
	if len(vs) != 0 {
		t.Fatalf("still invalid after coercion: %s: %v", doc, vs)
	}
	want := `{"invoice_number":"F-2024-007","total":1234.50,"subtotal":1030.00,"quantity":1200,"status":"en attente","line_items":[{"sku":"A1","qty":1200}],"notes":[]}`
	if string(doc) != want {
		t.Errorf("coerced to\n %s\nwant\n %s", doc, want)
	}
	wantKinds := []string{
		KindCoerceStringToNumber + " /total", KindCoerceStringToNumber + " /subtotal", KindCoerceStringToInteger + " /quantity",
		KindCoerceEnum + " /status", KindCoerceWrapArray + " /line_items", KindCoerceKey + " /invoice_number", KindCoerceEmptyArray + " /notes",
	}
	slices.Sort(all)
	slices.Sort(wantKinds)
	if !reflect.DeepEqual(all, wantKinds) {
		t.Errorf("coercions %v, want %v", all, wantKinds)
	}
	if !lossy {
		t.Error("the invented empty notes array is not marked lossy")
	}
}
