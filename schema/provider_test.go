package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// walkSchemas calls fn for every subschema object of a decoded form.
func walkSchemas(v any, ptr string, fn func(ptr string, m map[string]any)) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	fn(ptr, m)
	for _, k := range []string{"properties", "$defs"} {
		if props, ok := m[k].(map[string]any); ok {
			for name, p := range props {
				walkSchemas(p, ptr+"/"+k+"/"+name, fn)
			}
		}
	}
	if it, ok := m["items"]; ok {
		walkSchemas(it, ptr+"/items", fn)
	}
	for _, k := range []string{"anyOf", "allOf"} {
		if list, ok := m[k].([]any); ok {
			for i, e := range list {
				walkSchemas(e, fmt.Sprintf("%s/%s/%d", ptr, k, i), fn)
			}
		}
	}
}

func decodeForm(t *testing.T, s *Schema, f Form) map[string]any {
	t.Helper()
	raw, err := s.ProviderForm(f)
	if err != nil {
		t.Fatalf("ProviderForm(%s): %v", f, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("form is not JSON: %v\n%s", err, raw)
	}
	return m
}

const richSchema = `{
  "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}, "email": {"type": "string", "format": "email"}}, "required": ["name"]}},
  "type": "object",
  "properties": {
    "title": {"type": "string", "maxLength": 200, "default": "untitled"},
    "year": {"type": "integer", "minimum": 1900, "exclusiveMaximum": 2100},
    "authors": {"type": "array", "items": {"$ref": "#/$defs/person"}, "minItems": 1, "maxItems": 10, "uniqueItems": true},
    "status": {"enum": ["open", "closed"]},
    "note": {"type": ["string", "null"]},
    "meta": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
    "kind": {"oneOf": [{"const": "book"}, {"const": "film"}]},
    "site": {"type": "string", "format": "uri"}
  },
  "required": ["title", "authors"]
}`

func TestOpenAIForm(t *testing.T) {
	s, err := Compile([]byte(richSchema))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeForm(t, s, FormOpenAI)
	raw, _ := s.ProviderForm(FormOpenAI)
	for _, bad := range []string{`"$ref"`, `"allOf"`, `"oneOf"`, `"minLength"`, `"maxLength"`, `"uniqueItems"`, `"default"`, `"$defs"`, `"uri"`} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("OpenAI form keeps %s:\n%s", bad, raw)
		}
	}
	objects := 0
	walkSchemas(m, "", func(ptr string, o map[string]any) {
		props, isObj := o["properties"].(map[string]any)
		if !isObj {
			return
		}
		objects++
		if o["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties = %v, want false", ptr, o["additionalProperties"])
		}
		req, _ := o["required"].([]any)
		if len(req) != len(props) {
			t.Errorf("%s: required %v does not list all of %d properties", ptr, req, len(props))
		}
	})
	if objects != 3 {
		t.Errorf("found %d objects, want 3 (root, person, meta)", objects)
	}
	props := m["properties"].(map[string]any)
	if typ := props["year"].(map[string]any)["type"]; fmt.Sprint(typ) != "[integer null]" {
		t.Errorf("optional year not nullable: %v", typ)
	}
	if typ := props["title"].(map[string]any)["type"]; typ != "string" {
		t.Errorf("required title made nullable: %v", typ)
	}
	title := props["title"].(map[string]any)["description"].(string)
	if !strings.Contains(title, "at most 200 characters") || !strings.Contains(title, `default "untitled"`) {
		t.Errorf("unsupported keywords not described: %q", title)
	}
	if d := props["site"].(map[string]any)["description"]; !strings.Contains(fmt.Sprint(d), "format: uri") {
		t.Errorf("unsupported format not described: %v", d)
	}
	meta := props["meta"].(map[string]any)
	if _, ok := meta["anyOf"]; !ok { // optional object: nullable through anyOf or type list
		if fmt.Sprint(meta["type"]) != "[object null]" {
			t.Errorf("meta = %v", meta)
		}
	}
	mp := meta["properties"].(map[string]any)
	if _, ok := mp["a"]; !ok {
		t.Errorf("allOf not merged: %v", meta)
	}
	if fmt.Sprint(mp["a"].(map[string]any)["type"]) != "[string null]" || mp["b"].(map[string]any)["type"] != "integer" {
		t.Errorf("merged allOf: a should be nullable, b required: %v", mp)
	}
	if _, ok := props["kind"].(map[string]any)["anyOf"]; !ok {
		t.Errorf("oneOf not turned into anyOf: %v", props["kind"])
	}
}

func TestOpenAILimits(t *testing.T) {
	deep := `"string"`
	for range 11 {
		deep = `{"x":` + deep + `}`
	}
	manyProps := make([]string, 5001)
	for i := range manyProps {
		manyProps[i] = fmt.Sprintf(`"p%d":"boolean"`, i)
	}
	bigEnum := make([]string, 1001)
	for i := range bigEnum {
		bigEnum[i] = fmt.Sprintf(`"v%d"`, i)
	}
	longEnum := make([]string, 260)
	for i := range longEnum {
		longEnum[i] = fmt.Sprintf(`"%s%03d"`, strings.Repeat("x", 60), i)
	}
	tests := []struct{ name, src, contains string }{
		{"depth", deep, "at most 10 levels"},
		{"properties", `{` + strings.Join(manyProps, ",") + `}`, "at most 5000 object properties"},
		{"enum values", `{"type":"object","properties":{"e":{"enum":[` + strings.Join(bigEnum, ",") + `]}}}`, "at most 1000 enum values"},
		{"large enum length", `{"type":"object","properties":{"e":{"enum":[` + strings.Join(longEnum, ",") + `]}}}`, "15000 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.ProviderForm(FormOpenAI)
			if !errors.Is(err, ErrProviderForm) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %v, want ErrProviderForm with %q", err, tc.contains)
			}
		})
	}
	// Exactly at the limits is accepted.
	ok := `"string"`
	for range 9 {
		ok = `{"x":` + ok + `}`
	}
	s, err := Compile([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ProviderForm(FormOpenAI); err != nil {
		t.Errorf("10 levels rejected: %v", err)
	}
}

func TestRecursiveForms(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v","kids"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Form{FormOpenAI, FormOllama} {
		m := decodeForm(t, s, f)
		defs, ok := m["$defs"].(map[string]any)
		if !ok || defs["node"] == nil {
			t.Errorf("%s: recursion not kept in $defs: %v", f, m)
		}
	}
	for _, f := range []Form{FormAnthropic, FormGemini} {
		_, err := s.ProviderForm(f)
		if !errors.Is(err, ErrProviderForm) || !strings.Contains(err.Error(), "recursive") {
			t.Errorf("%s: err = %v, want a recursion error", f, err)
		}
	}
}

func TestGeminiForm(t *testing.T) {
	s, err := Compile([]byte(richSchema))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeForm(t, s, FormGemini)
	raw, _ := s.ProviderForm(FormGemini)
	for _, bad := range []string{`"$ref"`, `"$defs"`, `"additionalProperties"`, `"oneOf"`, `"allOf"`, `"null"`, `"const"`, `"exclusiveMaximum"`} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("Gemini form keeps %s:\n%s", bad, raw)
		}
	}
	walkSchemas(m, "", func(ptr string, o map[string]any) {
		if typ, ok := o["type"].(string); ok && typ != strings.ToUpper(typ) {
			t.Errorf("%s: type %q is not upper-case", ptr, typ)
		}
	})
	props := m["properties"].(map[string]any)
	if note := props["note"].(map[string]any); note["nullable"] != true || note["type"] != "STRING" {
		t.Errorf("note = %v, want nullable STRING", note)
	}
	if order := fmt.Sprint(m["propertyOrdering"]); order != "[title year authors status note meta kind site]" {
		t.Errorf("propertyOrdering = %s", order)
	}
}

func TestAnthropicForm(t *testing.T) {
	s, err := Compile([]byte(richSchema))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeForm(t, s, FormAnthropic)
	walkSchemas(m, "", func(ptr string, o map[string]any) {
		if _, isObj := o["properties"]; isObj && o["additionalProperties"] != false {
			t.Errorf("%s: object not closed", ptr)
		}
		for _, k := range []string{"minimum", "maximum", "minLength", "maxLength", "maxItems", "uniqueItems"} {
			if _, ok := o[k]; ok {
				t.Errorf("%s: keeps %s", ptr, k)
			}
		}
		if n, ok := o["minItems"].(float64); ok && n > 1 {
			t.Errorf("%s: minItems %v > 1", ptr, n)
		}
	})
	req := fmt.Sprint(m["required"])
	if req != "[title authors]" {
		t.Errorf("required = %s, want the original (optional fields stay optional)", req)
	}
}

func TestOllamaFormInlinesExternalRefs(t *testing.T) {
	dir := writeFiles(t, map[string]string{"money.json": `{"type":"number","minimum":0}`})
	s, err := Compile([]byte(`{"type":"object","properties":{"price":{"$ref":"https://example.com/money.json","description":"in EUR"}}}`), WithRefDir("https://example.com/", dir))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeForm(t, s, FormOllama)
	price := m["properties"].(map[string]any)["price"].(map[string]any)
	if price["type"] != "number" || price["minimum"] != float64(0) || price["description"] != "in EUR" {
		t.Errorf("price = %v, want the referenced schema inlined with its description", price)
	}
	if raw, _ := s.ProviderForm(FormJSONSchema); string(raw) != string(s.JSON()) {
		t.Error("FormJSONSchema is not the normalised schema")
	}
}

func TestProviderFormsOverTheSuiteDoNotPanic(t *testing.T) {
	suite := suiteDir(t)
	n := 0
	for _, f := range suiteFiles(t, suite+"/tests/draft2020-12", true) {
		var groups []suiteGroup
		data := mustRead(t, f)
		if err := json.Unmarshal(data, &groups); err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			s, err := Compile(g.Schema, WithJSONSchema(), WithRefDir("http://localhost:1234/", suite+"/remotes"))
			if err != nil {
				continue
			}
			for _, form := range []Form{FormOpenAI, FormAnthropic, FormGemini, FormOllama} {
				out, err := s.ProviderForm(form)
				if err != nil {
					if !errors.Is(err, ErrProviderForm) {
						t.Errorf("%s %q %s: error %v is not ErrProviderForm", f, g.Description, form, err)
					}
					continue
				}
				if !json.Valid(out) {
					t.Errorf("%s %q %s: not JSON", f, g.Description, form)
				}
				n++
			}
		}
	}
	t.Logf("%d provider forms built", n)
}

func TestSharedDefinitionsStayShared(t *testing.T) {
	// Each level uses the one below twice: inlining would copy 2^30 times.
	d := `{"$defs":{"d0":{"type":"string"}`
	for i := 1; i < 30; i++ {
		d += fmt.Sprintf(`,"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}},"required":["a","b"]}`, i, i-1, i-1)
	}
	d += `},"type":"object","properties":{"top":{"$ref":"#/$defs/d29"}},"required":["top"]}`
	s, err := Compile([]byte(d))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Form{FormOpenAI, FormAnthropic, FormOllama} {
		m := decodeForm(t, s, f)
		defs, _ := m["$defs"].(map[string]any)
		if len(defs) != 29 { // d0 is used twice too, d29 once (inlined)
			t.Errorf("%s: %d definitions kept, want 29", f, len(defs))
		}
	}
	if _, err := s.ProviderForm(FormGemini); !errors.Is(err, ErrProviderForm) || !strings.Contains(err.Error(), "inlined") {
		t.Errorf("Gemini: err = %v, want a size error (it cannot use references)", err)
	}
}
