package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const bookSchema = `{"type":"object","properties":{"title":{"type":"string"},"year":{"type":"integer"}},"required":["title"],"additionalProperties":false}`

func TestCompileInputForms(t *testing.T) {
	bare, err := Compile([]byte(bookSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		src      string
		wantName string
		sameAs   bool // same fingerprint as the bare book schema
	}{
		{"bare JSON", bookSchema, "response", true},
		{"whitespace and key order", "{\n \"required\": [\"title\"], \"additionalProperties\": false,\n \"properties\": {\"year\": {\"type\": \"integer\"}, \"title\": {\"type\": \"string\"}}, \"type\": \"object\"}", "response", true},
		{"YAML", "type: object\nproperties:\n  title: {type: string}\n  year: {type: integer}\nrequired: [title]\nadditionalProperties: false\n", "response", true},
		{"response_format wrapper", `{"type":"json_schema","json_schema":{"name":"book","strict":true,"schema":` + bookSchema + `}}`, "book", true},
		{"request with response_format", `{"model":"x","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"book","schema":` + bookSchema + `}}}`, "book", true},
		{"Responses API format", `{"type":"json_schema","name":"book v2","schema":` + bookSchema + `}`, "book_v2", true},
		{"name/schema/strict wrapper", `{"name":"Book","schema":` + bookSchema + `,"strict":true}`, "Book", true},
		{"compact JSON", `{"title":"string","year?":"integer"}`, "response", false},
		{"title names it", `{"title":"Book record","type":"object"}`, "Book_record", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got := s.Name(); got != tc.wantName {
				t.Errorf("Name() = %q, want %q", got, tc.wantName)
			}
			if (s.Fingerprint() == bare.Fingerprint()) != tc.sameAs {
				t.Errorf("fingerprint equal to the bare schema's = %v, want %v\n%s", !tc.sameAs, tc.sameAs, s.JSON())
			}
			if vs, _ := s.ValidateJSON([]byte(`{"title":"Dune","year":1965}`)); vs != nil {
				t.Errorf("a valid book fails: %v", vs)
			}
			if vs, _ := s.ValidateJSON([]byte(`{"year":"1965"}`)); vs == nil && tc.name != "title names it" {
				t.Errorf("an invalid book passes")
			}
		})
	}
}

func TestCompactAndJSONSchemaShareFingerprint(t *testing.T) {
	compact, err := Compile([]byte("title: string\nyear?: integer\n"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := Compile(compact.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if compact.Fingerprint() != full.Fingerprint() {
		t.Errorf("compact %s != its JSON Schema %s", compact.Fingerprint(), full.Fingerprint())
	}
	if !strings.HasPrefix(compact.Fingerprint(), "sha256:") || len(compact.Fingerprint()) != 71 {
		t.Errorf("fingerprint %q is not sha256:<64 hex>", compact.Fingerprint())
	}
}

func TestDraftOption(t *testing.T) {
	// In draft 7 "$defs" is not a keyword but a $ref sibling is ignored;
	// the observable difference used here: dependentRequired exists only
	// in 2020-12.
	src := `{"dependentRequired":{"a":["b"]}}`
	s2020, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s7, err := Compile([]byte(src), WithDraft(Draft7))
	if err != nil {
		t.Fatal(err)
	}
	if vs, _ := s2020.ValidateJSON([]byte(`{"a":1}`)); vs == nil {
		t.Error("2020-12: dependentRequired not applied")
	}
	if vs, _ := s7.ValidateJSON([]byte(`{"a":1}`)); vs != nil {
		t.Errorf("draft 7: dependentRequired applied: %v", vs)
	}
	if s7.Fingerprint() == s2020.Fingerprint() {
		t.Error("the same text under two drafts has one fingerprint")
	}
	for _, in := range []string{"7", "draft7", "2020-12", "draft2020-12"} {
		if _, err := ParseDraft(in); err != nil {
			t.Errorf("ParseDraft(%q): %v", in, err)
		}
	}
	if _, err := ParseDraft("5"); err == nil {
		t.Error("ParseDraft(5) accepted")
	}
}

func TestFormatAssertedByDefault(t *testing.T) {
	src := `{"type":"string","format":"date"}`
	s, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.ValidateJSON([]byte(`"yesterday"`)); len(vs) != 1 || vs[0].Keyword != "format" {
		t.Errorf("format not asserted: %v", vs)
	}
	off, err := Compile([]byte(src), WithFormatAssertion(false))
	if err != nil {
		t.Fatal(err)
	}
	if vs, _ := off.ValidateJSON([]byte(`"yesterday"`)); vs != nil {
		t.Errorf("format asserted with WithFormatAssertion(false): %v", vs)
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRefsResolveFromLocalFolders(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"defs/person.json": `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
		"defs/money.yaml":  "type: number\nminimum: 0\n",
		"order.json":       `{"type":"object","properties":{"buyer":{"$ref":"https://example.com/s/person.json"},"total":{"$ref":"defs/money.yaml"}},"required":["buyer","total"]}`,
	})
	s, err := CompileFile(filepath.Join(dir, "order.json"), WithRefDir("https://example.com/s/", filepath.Join(dir, "defs")))
	if err != nil {
		t.Fatalf("CompileFile: %v", err)
	}
	if vs, _ := s.ValidateJSON([]byte(`{"buyer":{"name":"Ada"},"total":3}`)); vs != nil {
		t.Errorf("valid order fails: %v", vs)
	}
	vs, _ := s.ValidateJSON([]byte(`{"buyer":{},"total":-1}`))
	if len(vs) != 2 || vs[0].Pointer != "/buyer/name" || vs[1].Pointer != "/total" {
		t.Errorf("violations = %+v, want /buyer/name and /total", vs)
	}
	if s.Name() != "order" {
		t.Errorf("Name() = %q, want the file's base name", s.Name())
	}

	// Changing a referenced file changes the fingerprint.
	before := s.Fingerprint()
	if err := os.WriteFile(filepath.Join(dir, "defs", "money.yaml"), []byte("type: number\nminimum: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := CompileFile(filepath.Join(dir, "order.json"), WithRefDir("https://example.com/s/", filepath.Join(dir, "defs")))
	if err != nil {
		t.Fatal(err)
	}
	if s2.Fingerprint() == before {
		t.Error("fingerprint ignores the content of a referenced file")
	}
}

func TestSchemaErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{"inner/x.json": `{"type":"string"}`, "secret.json": `{"type":"string"}`})
	deep := strings.Repeat(`{"items":`, 600) + `{}` + strings.Repeat(`}`, 600)
	tests := []struct {
		name    string
		src     string
		opts    []Option
		ptr     string   // want Error.Pointer
		ref     string   // want Error.Ref
		contain []string // in the message
	}{
		{"invalid JSON", `{"type": "object",}`, nil, "", "", []string{"line 1, column 19"}},
		{"invalid YAML", "a: [1, 2\n", nil, "", "", []string{"not valid JSON or YAML"}},
		{"unknown type", `{"type":"object","properties":{"a":{"type":"strin"}}}`, nil, "/properties/a/type", "", []string{`"string"`}},
		{"bad regex", `{"type":"object","properties":{"a":{"type":"string","pattern":"(unclosed"}}}`, nil, "/properties/a/pattern", "", []string{"regex"}},
		{"draft 3 required", `{"type":"object","properties":{"a":{"type":"string","required":true}}}`, nil, "/properties/a/required", "", []string{"must be array, not boolean (got true)"}},
		{"bad range", `{"properties":{"a":{"pattern":"[z-a]"}}}`, nil, "/properties/a/pattern", "", []string{"regular expression"}},
		{"network ref", `{"properties":{"a":{"$ref":"https://example.com/x.json"}}}`, nil, "/properties/a/$ref", "https://example.com/x.json", []string{"--ref-dir", "never fetches"}},
		{"missing local pointer", `{"properties":{"a":{"$ref":"#/$defs/nope"}}}`, nil, "/properties/a/$ref", "", []string{"#/$defs/nope"}},
		{"ref escaping its folder", `{"$ref":"https://example.com/s/../secret.json"}`, []Option{WithRefDir("https://example.com/s/", filepath.Join(dir, "inner"))}, "", "", []string{"cannot resolve", "secret.json"}},
		{"wrapped schema error", `{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"a":{"minLength":-1}}}}}`, nil, "/json_schema/schema/properties/a/minLength", "", nil},
		{"compact unknown type", `{"title":"string","year":"integr"}`, nil, "/year", "", []string{`unknown type "integr"`}},
		{"compact empty range", `{"year":"integer 10..1"}`, nil, "/year", "", []string{"empty"}},
		{"compact nested error", `{"author":{"name":"strng"}}`, nil, "/author/name", "", []string{"unknown type"}},
		{"not a schema", `[1, 2]`, nil, "/0", "", []string{"compact notation"}},
		{"too deep", deep, nil, "", "", []string{"nested more than"}},
		{"too deep YAML", "a: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000), nil, "", "", []string{"nested more than"}},
		{"empty", "  \n", nil, "", "", []string{"empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]byte(tc.src), append([]Option{WithFileName("s.json")}, tc.opts...)...)
			if err == nil {
				t.Fatal("compiled, want an error")
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("errors.Is(err, ErrInvalidSchema) = false for %v", err)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not *Error", err)
			}
			if se.File != "s.json" || !strings.HasPrefix(err.Error(), "s.json: ") {
				t.Errorf("error %q does not name the file", err)
			}
			if se.Pointer != tc.ptr {
				t.Errorf("Pointer = %q, want %q (%v)", se.Pointer, tc.ptr, err)
			}
			if tc.ref != "" && se.Ref != tc.ref {
				t.Errorf("Ref = %q, want %q", se.Ref, tc.ref)
			}
			for _, c := range tc.contain {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q lacks %q", err, c)
				}
			}
		})
	}
}

func TestECMAScriptPatterns(t *testing.T) {
	// RE2 has no lookahead; such patterns still compile and match.
	s, err := Compile([]byte(`{"type":"string","pattern":"^(?=.*[0-9])(?=.*[a-z]).{8,}$"}`))
	if err != nil {
		t.Fatal(err)
	}
	for in, valid := range map[string]bool{`"abcdefg1"`: true, `"abcdefgh"`: false, `"12345678"`: false, `"a1"`: false} {
		vs, _ := s.ValidateJSON([]byte(in))
		if (vs == nil) != valid {
			t.Errorf("%s: valid = %v, want %v (%v)", in, vs == nil, valid, vs)
		}
	}
	// A catastrophic pattern is cut off by the match timeout, not hung.
	s, err = Compile([]byte(`{"type":"string","pattern":"^(?=a)(a+)+$"}`))
	if err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.ValidateJSON([]byte(`"` + strings.Repeat("a", 40) + `!"`)); vs == nil {
		t.Error("catastrophic backtracking input reported valid")
	}
}

func TestCompileFileMissing(t *testing.T) {
	_, err := CompileFile(filepath.Join(t.TempDir(), "nope.json"))
	if err == nil || !strings.Contains(err.Error(), "nope.json") || !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("err = %v", err)
	}
}

func TestRecursiveSchemas(t *testing.T) {
	tests := []struct{ name, src, valid, invalid string }{
		{"tree", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"}`,
			`{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`, `{"v":1,"kids":[{"v":2,"kids":[{"v":"x"}]}]}`},
		{"self at root", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, `{"next":{"next":{}}}`, `{"next":{"next":3}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if vs, _ := s.ValidateJSON([]byte(tc.valid)); vs != nil {
				t.Errorf("valid instance fails: %v", vs)
			}
			if vs, _ := s.ValidateJSON([]byte(tc.invalid)); vs == nil {
				t.Error("invalid instance passes")
			}
			// A deeply nested instance returns (no stack overflow).
			deep := strings.Repeat(`{"next":`, 5000) + `{}` + strings.Repeat(`}`, 5000)
			if tc.name == "self at root" {
				if vs, err := s.ValidateJSON([]byte(deep)); err != nil || vs != nil {
					t.Errorf("deep instance: %v %v", vs, err)
				}
			}
		})
	}
}

func TestWantsArray(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{`{"type":"array","items":{"type":"string"}}`, true},
		{`[{"name":"string"}]`, true},
		{`{"type":["array","null"]}`, true},
		{`{"$defs":{"l":{"type":"array"}},"$ref":"#/$defs/l"}`, true},
		{bookSchema, false},
		{`{"title":"string"}`, false},
	}
	for _, tc := range tests {
		s, err := Compile([]byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.WantsArray(); got != tc.want {
			t.Errorf("%s: WantsArray() = %v, want %v", tc.src, got, tc.want)
		}
	}
}

func TestFromStruct(t *testing.T) {
	type Author struct {
		Name string `json:"name" jsonschema:"minLength=1"`
	}
	type Book struct {
		Title   string   `json:"title" jsonschema:"description=the title"`
		Year    int      `json:"year,omitempty"`
		Authors []Author `json:"authors"`
		Status  string   `json:"status" jsonschema:"enum=open,enum=closed"`
	}
	s, err := FromStruct(&Book{})
	if err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.ValidateJSON([]byte(`{"title":"Dune","authors":[{"name":"Frank"}],"status":"open"}`)); vs != nil {
		t.Errorf("valid book fails: %v", vs)
	}
	vs, _ := s.ValidateJSON([]byte(`{"title":"Dune","authors":[{"name":""}],"status":"lost","extra":1}`))
	got := map[string]string{}
	for _, v := range vs {
		got[v.Pointer] = v.Keyword
	}
	want := map[string]string{"/authors/0/name": "minLength", "/status": "enum", "/extra": "additionalProperties"}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("violation at %s = %q, want %q (all: %+v)", p, got[p], k, vs)
		}
	}
	if _, err := FromStruct(nil); err == nil {
		t.Error("FromStruct(nil) succeeded")
	}
}

func TestJSONKeepsOrder(t *testing.T) {
	s, err := Compile([]byte(`{"zeta":"string","alpha":"integer","mid":{"b":"string","a":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body := string(s.JSON())
	if !(strings.Index(body, `"zeta"`) < strings.Index(body, `"alpha"`) && strings.Index(body, `"b"`) < strings.Index(body, `"a"`)) {
		t.Errorf("key order lost: %s", body)
	}
	var v any
	if err := json.Unmarshal(s.JSON(), &v); err != nil {
		t.Errorf("JSON() is not JSON: %v", err)
	}
}
