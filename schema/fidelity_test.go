package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestJSONSchemaWrapperWithoutType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		wantName  string
		wantProps []string // the compiled schema's top-level properties
	}{
		{"json_schema without type", `{"json_schema":{"name":"invoice","strict":true,"schema":{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}}}`, "invoice", []string{"total"}},
		{"json_schema with a boolean schema", `{"json_schema":{"name":"anything","schema":true}}`, "anything", nil},
		{"with type (as before)", `{"type":"json_schema","json_schema":{"name":"inv","schema":{"type":"object","properties":{"a":{"type":"string"}}}}}`, "inv", []string{"a"}},
		// A compact field called json_schema is not a wrapper: its value holds
		// field specs, not a "schema".
		{"compact field named json_schema", `{"json_schema":{"name":"string","version":"integer"}}`, "response", []string{"json_schema"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tc.wantName {
				t.Errorf("Name() = %q, want %q", s.Name(), tc.wantName)
			}
			var doc map[string]any
			if err := json.Unmarshal(s.JSON(), &doc); err != nil {
				if string(s.JSON()) != "true" {
					t.Errorf("JSON() = %s, want the wrapped schema", s.JSON())
				}
				return
			}
			props, _ := doc["properties"].(map[string]any)
			got := sortedNames(props)
			if !reflect.DeepEqual(got, tc.wantProps) {
				t.Errorf("properties %v, want %v (schema %s)", got, tc.wantProps, s.JSON())
			}
		})
	}
}

func sortedNames(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out { // tiny: insertion sort keeps the helper dependency-free
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestScalarRootsAndWireWrapping(t *testing.T) {
	t.Parallel()
	type wrap map[Form]string // form -> wire property ("" = not wrapped)
	scalarWrap := wrap{FormOpenAI: "value", FormAnthropic: "value", FormGemini: "value", FormOllama: "value"}
	tests := []struct {
		name   string
		src    string
		scalar bool
		wrap   wrap
	}{
		{"integer", `{"type":"integer","minimum":1}`, true, scalarWrap},
		{"boolean", `{"type":"boolean"}`, true, scalarWrap},
		{"string with format", `{"type":"string","format":"date"}`, true, scalarWrap},
		{"enum", `{"enum":["yes","no"]}`, true, scalarWrap},
		{"const", `{"const":42}`, true, scalarWrap},
		{"nullable number", `{"type":["number","null"]}`, true, scalarWrap},
		{"anyOf of scalars", `{"anyOf":[{"type":"integer"},{"type":"string","maxLength":3}]}`, true, scalarWrap},
		{"compact scalar", `integer 1..5 -- the rating`, true, scalarWrap},
		{"compact enum with aliases", `enum(yes "paid", no "unpaid")`, true, scalarWrap},
		{"ref to a scalar", `{"$defs":{"n":{"type":"integer"}},"$ref":"#/$defs/n"}`, true, scalarWrap},
		{"array", `{"type":"array","items":{"type":"string"}}`, false, wrap{FormOpenAI: "items", FormAnthropic: "items"}},
		{"object with anyOf at the root", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`, false, wrap{FormOpenAI: "value", FormAnthropic: "value"}},
		{"mixed anyOf", `{"anyOf":[{"type":"string"},{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}]}`, false, wrap{FormOpenAI: "value", FormAnthropic: "value"}},
		{"plain object", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false, wrap{}},
		{"object through a ref", `{"$defs":{"o":{"type":"object","properties":{"a":{"type":"string"}}}},"$ref":"#/$defs/o"}`, false, wrap{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.ScalarRoot(); got != tc.scalar {
				t.Errorf("ScalarRoot() = %v, want %v", got, tc.scalar)
			}
			ex, err := s.Example()
			if err != nil {
				t.Fatalf("Example: %v", err)
			}
			if p, ok := s.WireWrapped(FormJSONSchema); ok || p != "" {
				t.Errorf("the JSON Schema form is wrapped in %q", p)
			}
			for _, f := range []Form{FormOpenAI, FormAnthropic, FormGemini, FormOllama} {
				body, err := s.ProviderForm(f)
				if err != nil {
					t.Fatalf("ProviderForm(%s): %v", f, err)
				}
				prop, ok := s.WireWrapped(f)
				if prop != tc.wrap[f] || ok != (tc.wrap[f] != "") {
					t.Errorf("WireWrapped(%s) = %q, %v; want %q", f, prop, ok, tc.wrap[f])
				}
				var form map[string]any
				if err := json.Unmarshal(body, &form); err != nil {
					t.Fatalf("%s form is not an object: %s", f, body)
				}
				props, _ := form["properties"].(map[string]any)
				if ok {
					if len(props) != 1 || props[prop] == nil {
						t.Errorf("%s form does not wrap the root in %q: %s", f, prop, body)
					}
				}
				if f == FormGemini {
					continue // not JSON Schema
				}
				// What the model answers in this form ({prop: value}, or the
				// value itself) validates against the form.
				fs, err := Compile(body, WithJSONSchema())
				if err != nil {
					t.Fatalf("%s form does not compile: %v\n%s", f, err, body)
				}
				answer := ex
				if ok {
					answer = json.RawMessage(fmt.Sprintf(`{%q:%s}`, prop, ex))
				}
				if vs, _ := fs.ValidateJSON(answer); vs != nil {
					t.Errorf("%s: the example %s fails the form: %v\n%s", f, answer, vs, body)
				}
			}
		})
	}
}

func TestFaithful(t *testing.T) {
	t.Parallel()
	strictForms := []Form{FormOpenAI, FormAnthropic, FormGemini}
	tests := []struct {
		name string
		src  string
		want []string // reason prefixes ("pointer: start of the reason"), for every strict form
	}{
		{"free-form root", `{"type":"object"}`, []string{"(root): a free-form object"}},
		{"free-form nested", `{"type":"object","properties":{"title":{"type":"string"},"meta":{"type":"object","description":"anything else"}},"required":["title"]}`, []string{"/properties/meta: a free-form object"}},
		{"empty properties", `{"type":"object","properties":{"m":{"type":"object","properties":{}}}}`, []string{"/properties/m: a free-form object"}},
		{"additionalProperties true", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, []string{"(root): allows properties besides those listed (additionalProperties true)"}},
		{"map", `{"type":"object","properties":{"counts":{"type":"object","additionalProperties":{"type":"integer"}}}}`, []string{`/properties/counts: allows properties besides those listed (additionalProperties {"type":"integer"})`}},
		{"map of anything", `{"type":"object","properties":{"extra":{"additionalProperties":{}}}}`, []string{"/properties/extra: allows properties besides those listed"}},
		{"patternProperties", `{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x-":{"type":"string"}}}`, []string{"(root): patternProperties cannot be expressed"}},
		{"unevaluatedProperties", `{"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":{"type":"string"}}`, []string{"(root): allows unevaluated properties"}},
		{"property only under then", `{"type":"object","properties":{"kind":{"enum":["a","b"]}},"if":{"properties":{"kind":{"const":"a"}}},"then":{"properties":{"extra":{"type":"string"}}}}`, []string{`/then/properties/extra: property "extra" is declared only here`}},
		{"any value", `{"type":"object","properties":{"payload":{"description":"whatever the document says"}}}`, []string{"/properties/payload: accepts any value"}},
		{"true schema", `{"type":"object","properties":{"payload":true}}`, []string{"/properties/payload: accepts any value"}},
		{"array of anything", `{"type":"object","properties":{"list":{"type":"array"}}}`, []string{"/properties/list: an array whose items may be anything"}},
		{"tuple", `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`, []string{"/properties/pair: items by position"}},
		{"through a ref", `{"$defs":{"meta":{"type":"object"}},"type":"object","properties":{"m":{"$ref":"#/$defs/meta"}}}`, []string{"/properties/m: a free-form object"}},
		{"in an array of objects", `{"type":"array","items":{"type":"object","properties":{"a":{"type":"object","additionalProperties":true}}}}`, []string{"/items/properties/a: allows properties besides those listed"}},
		// Faithful: objects with properties are closed to what they list, which
		// an extraction asks for anyway.
		{"properties without additionalProperties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}}}}}`, nil},
		{"closed empty object", `{"type":"object","properties":{"none":{"type":"object","additionalProperties":false}}}`, nil},
		{"required-variants anyOf", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`, nil},
		{"rich", richSchema, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []Form{FormJSONSchema, FormOllama} {
				if r := s.Faithful(f); r != nil {
					t.Errorf("Faithful(%s) = %v, want nil", f, r)
				}
				if _, err := s.ProviderForm(f); err != nil {
					t.Errorf("ProviderForm(%s): %v", f, err)
				}
			}
			for _, f := range strictForms {
				reasons := s.Faithful(f)
				if len(reasons) != len(tc.want) {
					t.Errorf("Faithful(%s) = %q, want %d reasons like %q", f, reasons, len(tc.want), tc.want)
					continue
				}
				for i, w := range tc.want {
					if !strings.HasPrefix(reasons[i], w) {
						t.Errorf("Faithful(%s)[%d] = %q, want it to start with %q", f, i, reasons[i], w)
					}
				}
				body, err := s.ProviderForm(f)
				if len(tc.want) == 0 {
					if err != nil {
						t.Errorf("ProviderForm(%s): %v", f, err)
					}
					continue
				}
				var ue *UnfaithfulError
				if !errors.As(err, &ue) || !errors.Is(err, ErrProviderForm) {
					t.Fatalf("ProviderForm(%s) err = %v, want an *UnfaithfulError matching ErrProviderForm", f, err)
				}
				if body != nil || ue.Form != f || !reflect.DeepEqual(ue.Reasons, reasons) || !json.Valid(ue.BestEffort) {
					t.Errorf("ProviderForm(%s) = %s, %+v", f, body, ue)
				}
				if !strings.Contains(err.Error(), tc.want[0]) || !strings.Contains(err.Error(), "JSON mode") {
					t.Errorf("error %q does not name the reason and the fix", err)
				}
			}
		})
	}
}

func TestAliasesCompile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		wantErr string // "" when the schema compiles
		ptr     string
	}{
		{"list and single string", `{"enum":["open","closed"],"x-aliases":{"open":["opened","active"],"closed":"done"}}`, "", ""},
		{"not an object", `{"enum":["a"],"x-aliases":["a"]}`, "x-aliases must be an object", "/x-aliases"},
		{"no enum beside it", `{"type":"object","properties":{"s":{"type":"string","x-aliases":{"a":"b"}}}}`, "needs an enum beside it", "/properties/s/x-aliases"},
		{"unknown value", `{"enum":["open"],"x-aliases":{"opn":["x"]}}`, `names "opn", which is not one of the enum's values`, "/x-aliases"},
		{"alias is another value", `{"enum":["open","closed"],"x-aliases":{"open":["Closed"]}}`, `alias "Closed" of "open" is itself the enum value "closed"`, "/x-aliases"},
		{"alias of two values", `{"enum":["open","closed"],"x-aliases":{"open":["x"],"closed":["X "]}}`, `stands for both "closed" and "open"`, "/x-aliases"},
		{"non-string alias", `{"enum":["open"],"x-aliases":{"open":[1]}}`, "must be strings", "/x-aliases"},
		{"empty alias", `{"enum":["open"],"x-aliases":{"open":" "}}`, "is empty", "/x-aliases"},
		{"compact duplicate alias", `{"s":"enum(open \"x\", closed \"x\")"}`, "stands for both", "/properties/s/x-aliases"},
		// A property called x-aliases is a field, not the keyword.
		{"property named x-aliases", `{"type":"object","properties":{"x-aliases":{"type":"string"}}}`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile([]byte(tc.src))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("err = %v, want a schema *Error", err)
			}
			if !strings.Contains(se.Message, tc.wantErr) || se.Pointer != tc.ptr {
				t.Errorf("err at %q: %q; want %q at %q", se.Pointer, se.Message, tc.wantErr, tc.ptr)
			}
		})
	}
}

func TestAliasesInViolationsAndForms(t *testing.T) {
	t.Parallel()
	status := map[string][]string{"open": {"opened", "active"}, "closed": {"done"}}
	tests := []struct {
		name, src, answer string
		ptr, keyword      string
		want              map[string][]string
	}{
		{"x-aliases", `{"type":"object","properties":{"status":{"enum":["open","closed"],"x-aliases":{"open":["opened","active"],"closed":"done"}}}}`, `{"status":"active"}`, "/status", "enum", status},
		{"compact", `{"status":"enum(open \"opened\" \"active\", closed \"done\")"}`, `{"status":"active"}`, "/status", "enum", status},
		{"nullable enum (type list)", `{"type":"object","properties":{"status":{"type":["string","null"],"enum":["open","closed",null],"x-aliases":{"open":["opened","active"],"closed":["done"]}}}}`, `{"status":"active"}`, "/status", "enum", status},
		{"nullable enum (anyOf with null)", `{"type":"object","properties":{"status":{"anyOf":[{"enum":["open","closed"],"x-aliases":{"open":["opened","active"],"closed":["done"]}},{"type":"null"}]}}}`, `{"status":"active"}`, "/status", "anyOf", status},
		{"in an array through a ref", `{"$defs":{"st":{"enum":["open","closed"],"x-aliases":{"closed":"done"}}},"type":"array","items":{"$ref":"#/$defs/st"}}`, `["open","finished"]`, "/1", "enum", map[string][]string{"closed": {"done"}}},
		{"no aliases", `{"type":"object","properties":{"status":{"enum":["open","closed"]}}}`, `{"status":"active"}`, "/status", "enum", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			vs, err := s.ValidateJSON([]byte(tc.answer))
			if err != nil || len(vs) != 1 {
				t.Fatalf("violations %+v, %v; want one", vs, err)
			}
			v := vs[0]
			if v.Pointer != tc.ptr || v.Keyword != tc.keyword || !reflect.DeepEqual(v.Aliases, tc.want) {
				t.Errorf("violation %+v, want %s at %s with aliases %v", v, tc.keyword, tc.ptr, tc.want)
			}
			js, _ := json.Marshal(v)
			if has := strings.Contains(string(js), `"aliases"`); has != (tc.want != nil) {
				t.Errorf("JSON %s: aliases present %v, want %v", js, has, tc.want != nil)
			}
			if tc.want == nil {
				return
			}
			// Forms that reject unknown keywords say it in the description.
			for _, f := range []Form{FormOpenAI, FormAnthropic, FormGemini} {
				body, err := s.ProviderForm(f)
				if err != nil {
					t.Fatalf("ProviderForm(%s): %v", f, err)
				}
				if strings.Contains(string(body), AliasesKeyword) || !strings.Contains(string(body), `\"closed\" for \"done\"`) {
					t.Errorf("%s form does not move the aliases into the description: %s", f, body)
				}
			}
			if body, _ := s.ProviderForm(FormOllama); !strings.Contains(string(body), AliasesKeyword) {
				t.Errorf("Ollama form drops x-aliases: %s", body)
			}
		})
	}
}

func TestCompactEnumAliases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		enum    []any
		aliases map[string]any
		wantErr string
	}{
		{`enum(open, closed)`, []any{"open", "closed"}, nil, ""},
		{`enum(open "active" "opened", closed "done")`, []any{"open", "closed"}, map[string]any{"open": []any{"active", "opened"}, "closed": []any{"done"}}, ""},
		{`enum("in print" "available", out of print "oop")`, []any{"in print", "out of print"}, map[string]any{"in print": []any{"available"}, "out of print": []any{"oop"}}, ""},
		{`enum(a "x, y", b)`, []any{"a", "b"}, map[string]any{"a": []any{"x, y"}}, ""},
		{`enum(a "x" junk, b)`, nil, nil, "expected a comma or a quoted alias"},
		{`enum(a "x)`, nil, nil, "bad quoted"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			doc, _ := json.Marshal(map[string]string{"s": tc.spec})
			s, err := Compile(doc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Properties struct {
					S struct {
						Enum    []any          `json:"enum"`
						Aliases map[string]any `json:"x-aliases"`
					} `json:"s"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(s.JSON(), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Properties.S.Enum, tc.enum) || !reflect.DeepEqual(got.Properties.S.Aliases, tc.aliases) {
				t.Errorf("got enum %v aliases %v, want %v %v", got.Properties.S.Enum, got.Properties.S.Aliases, tc.enum, tc.aliases)
			}
		})
	}
}

func TestFieldGuide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"nothing to say", `{"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"},"l":{"type":"array","items":{"type":"boolean"}}},"required":["a","n","l"]}`, ""},
		{"compact", `{"title":"string 1..300 -- the title as printed","year?":"integer 1950..2100","status":"enum(open \"opened\" \"active\", closed)","isbn":"string /^97[89]\\d{10}$/","tags":["string","1..5 unique"],"due":"date"}`,
			`- /title: 1..300 characters — the title as printed
- /year: optional; 1950..2100
- /status: one of "open" (or "opened", "active"), "closed"
- /isbn: matches "^97[89]\\d{10}$"
- /tags: 1..5 items; unique items
- /due: format date (YYYY-MM-DD)`},
		{"nesting, nulls, bounds, maps", `{"type":"object","description":"An order.","properties":{
			"lines":{"type":"array","minItems":1,"items":{"type":"object","properties":{"qty":{"type":"integer","exclusiveMinimum":0},"price":{"type":"number","minimum":0,"multipleOf":0.01}},"required":["qty","price"]}},
			"note":{"anyOf":[{"type":"string","maxLength":200},{"type":"null"}]},
			"code":{"type":["string","integer"]},
			"counts":{"type":"object","additionalProperties":{"type":"integer","minimum":1}},
			"kind":{"const":"order"},
			"card":{"type":"string"}},"required":["lines","note","code","counts","kind"],"dependentRequired":{"card":["note"]}}`,
			`- (root): dependentRequired: {"card":["note"]} — An order.
- /lines: at least 1 item
- /lines/*/qty: > 0
- /lines/*/price: >= 0; multiple of 0.01
- /note: or null; at most 200 characters
- /code: string or integer
- /counts: other keys allowed
- /counts/*: >= 1
- /kind: exactly "order"
- /card: optional`},
		{"scalar root", `{"enum":["yes","no",null],"description":"Is the invoice paid?"}`, `- (root): or null; one of "yes", "no" — Is the invoice paid?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.FieldGuide(); got != tc.want {
				t.Errorf("FieldGuide() =\n%s\nwant\n%s", got, tc.want)
			}
			again, _ := Compile([]byte(tc.src))
			if again.FieldGuide() != s.FieldGuide() {
				t.Error("FieldGuide is not deterministic")
			}
		})
	}
}

func TestFieldGuideIsBounded(t *testing.T) {
	t.Parallel()
	var fields []string
	for i := range 200 {
		fields = append(fields, fmt.Sprintf(`"field_%03d":"string 1..%d -- the %d-th value of the form, as printed"`, i, 10+i, i))
	}
	var values []string
	for i := range 300 {
		values = append(values, fmt.Sprintf("value-%03d", i))
	}
	fields = append(fields, `"many":"enum(`+strings.Join(values, ", ")+`)"`)
	s, err := Compile([]byte("{" + strings.Join(fields, ",") + "}"))
	if err != nil {
		t.Fatal(err)
	}
	g := s.FieldGuide()
	lines := strings.Split(g, "\n")
	last := lines[len(lines)-1]
	if len(g) > guideMaxChars+40 || !strings.HasPrefix(last, "- … ") || !strings.HasSuffix(last, " more fields") {
		t.Fatalf("guide of %d characters ends %q", len(g), last)
	}
	var n int
	if _, err := fmt.Sscanf(last, "- … %d more fields", &n); err != nil || n+len(lines)-1 != 201 {
		t.Errorf("%d lines shown + %d more, want 201 fields in all", len(lines)-1, n)
	}
	// A long enum is cut with its count.
	s2, _ := Compile([]byte(`{"many":"enum(` + strings.Join(values, ", ") + `)"}`))
	if g2 := s2.FieldGuide(); !strings.Contains(g2, ", … (300 values)") || len(g2) > guideMaxLine {
		t.Errorf("long enum line: %d characters: %.120s…", len(g2), g2)
	}
}
