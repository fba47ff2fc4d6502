package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

// answerPath is one way a schema reaches the simulator: the API's own
// schema field in a provider's form, the JSON Schema in the prompt, or an
// example with its field guide in the prompt.
type answerPath struct {
	name string
	src  source
	raw  []byte
	wrap string // the wire property of a wrapped root
	// dropNulls: OpenAI's form makes optional fields nullable; the engine
	// drops such nulls before validating.
	dropNulls bool
}

// answerPaths lists every path s can take; forms s cannot take faithfully
// are left out (the engine does not use them).
func answerPaths(t testing.TB, s *schema.Schema) []answerPath {
	t.Helper()
	var paths []answerPath
	for _, f := range []schema.Form{schema.FormOpenAI, schema.FormAnthropic, schema.FormGemini, schema.FormOllama} {
		body, err := s.ProviderForm(f)
		if err != nil {
			continue
		}
		src := srcNative
		if f == schema.FormGemini {
			src = srcGemini
		}
		prop, _ := s.WireWrapped(f)
		paths = append(paths, answerPath{name: string(f), src: src, raw: body, wrap: prop, dropNulls: f == schema.FormOpenAI})
	}
	paths = append(paths, answerPath{name: "prompt schema", src: srcPrompt, raw: s.JSON()})
	if ex, err := s.Example(); err == nil {
		paths = append(paths, answerPath{name: "example and field guide", src: srcExample, raw: []byte(string(ex) + exampleGuideSep + s.FieldGuide())})
	}
	return paths
}

// cleanAnswer is what the clean profile answers for doc on this path, as
// the engine would validate it.
func (p answerPath) cleanAnswer(t testing.TB, c *shapeCache, seed uint64, doc string) (any, error) {
	t.Helper()
	sh := c.get(p.src, p.raw)
	if sh.err != nil {
		return nil, sh.err
	}
	v, err := sh.value(seed, fnv64a(doc), doc)
	if err != nil {
		return nil, err
	}
	if p.wrap != "" {
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("answer %s is not wrapped in %q", jsonOf(v), p.wrap)
		}
		v = m[p.wrap]
	}
	return v, nil
}

// validFor validates v as the engine would (nulls in OpenAI's form
// dropped where the schema wants none) and returns the violations.
func validFor(s *schema.Schema, v any, dropNulls bool) []schema.Violation {
	plain := toPlainNumbers(v)
	for range 64 {
		vs := s.Validate(plain)
		if vs == nil || !dropNulls {
			return vs
		}
		dropped := false
		for _, x := range vs {
			if x.Keyword == "type" && x.Value == "null" {
				dropped = dropAt(plain, x.Pointer) || dropped
			}
		}
		if !dropped {
			return vs
		}
	}
	return s.Validate(plain)
}

// toPlainNumbers re-decodes v so numbers are json.Number, as Validate wants.
func toPlainNumbers(v any) any {
	b, _ := json.Marshal(v)
	out, _ := decodeJSON(b)
	return out
}

func dropAt(v any, ptr string) bool {
	i := strings.LastIndex(ptr, "/")
	if i < 0 {
		return false
	}
	parent := v
	for _, tok := range strings.Split(ptr[:i], "/")[1:] {
		switch x := parent.(type) {
		case map[string]any:
			parent = x[tok]
		case []any:
			var n int
			fmt.Sscan(tok, &n)
			if n < 0 || n >= len(x) {
				return false
			}
			parent = x[n]
		}
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	key := strings.ReplaceAll(strings.ReplaceAll(ptr[i+1:], "~1", "/"), "~0", "~")
	if _, ok := m[key]; !ok {
		return false
	}
	delete(m, key)
	return true
}

// exampleDocuments are the repository's example documents, plus variants
// with fewer words (short documents repeat phrases more often).
func exampleDocuments(t testing.TB) []string {
	t.Helper()
	var docs []string
	for _, dir := range []string{"../../examples/abstracts", "../../examples/invoices"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
			words := strings.Fields(string(b))
			docs = append(docs, strings.Join(words[:min(12, len(words))], " "), strings.Join(words[:min(3, len(words))], " "))
		}
	}
	return docs
}

// The clean profile promises that every answer is valid: for the
// repository's example schemas, on every path a schema reaches the
// simulator, over every example document and several server seeds.
func TestCleanAnswersAreValidForTheExampleSchemas(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.schema.*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example schemas: %v", err)
	}
	docs := exampleDocuments(t)
	for _, f := range files {
		s, err := schema.CompileFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range answerPaths(t, s) {
			t.Run(filepath.Base(f)+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				c := newShapeCache()
				n := 0
				for seed := range uint64(4) {
					for _, doc := range docs {
						v, err := p.cleanAnswer(t, c, seed, doc)
						if err != nil {
							t.Fatalf("seed %d: %v", seed, err)
						}
						if vs := validFor(s, v, p.dropNulls); vs != nil {
							t.Fatalf("seed %d, document %.40q: invalid answer %s:\n%s", seed, doc, jsonOf(v), schema.RenderFeedback(vs, 400))
						}
						n++
					}
				}
				t.Logf("%d answers, all valid", n)
			})
		}
	}
}

// The JSON-Schema-Test-Suite's schemas (those with a valid instance): the
// share the simulator cannot build an answer for is reported, and every
// answer it does build validates.
func TestCleanAnswersAreValidForTheSuiteSchemas(t *testing.T) {
	t.Parallel()
	suite := testenv.SharedTestdata(t, "json-schema-test-suite")
	docs := []string{testDoc, "", "a", "Order 7 of 2024-03-01 by Ada Lovelace, ada@example.com, 3 items at 4.50 EUR."}
	for _, d := range []struct {
		dir   string
		draft schema.Draft
	}{{"draft2020-12", schema.Draft2020}, {"draft7", schema.Draft7}} {
		t.Run(d.dir, func(t *testing.T) {
			t.Parallel()
			cases, unbuilt, answers := 0, 0, 0
			var unbuiltNames []string
			c := newShapeCache()
			err := filepath.WalkDir(filepath.Join(suite, "tests", d.dir), func(path string, e os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if e.IsDir() && e.Name() == "optional" {
					return filepath.SkipDir
				}
				if e.IsDir() || !strings.HasSuffix(path, ".json") {
					return nil
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				var groups []struct {
					Description string          `json:"description"`
					Schema      json.RawMessage `json:"schema"`
					Tests       []struct {
						Valid bool `json:"valid"`
					} `json:"tests"`
				}
				if err := json.Unmarshal(raw, &groups); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				for _, g := range groups {
					if !slicesAny(g.Tests, func(tc struct {
						Valid bool `json:"valid"`
					}) bool {
						return tc.Valid
					}) {
						continue
					}
					cases++
					name := filepath.Base(path) + ": " + g.Description
					s, err := schema.Compile(g.Schema, schema.WithDraft(d.draft), schema.WithJSONSchema(),
						schema.WithRefDir("http://localhost:1234/", filepath.Join(suite, "remotes")))
					if err != nil {
						t.Errorf("%s: does not compile: %v", name, err)
						continue
					}
					// The schema in the prompt, or where the simulator cannot
					// resolve its references (remote documents), the bundled
					// form with the references resolved and the dialect kept.
					p := answerPath{src: srcPrompt, raw: s.JSON()}
					if sh := c.get(p.src, p.raw); sh.schema == nil {
						body, err := s.ProviderForm(schema.FormOllama)
						if err != nil {
							unbuilt++
							unbuiltNames = append(unbuiltNames, name+": "+err.Error())
							continue
						}
						prop, _ := s.WireWrapped(schema.FormOllama)
						p = answerPath{src: srcNative, raw: body, wrap: prop}
					}
					for i, doc := range docs {
						v, err := p.cleanAnswer(t, c, uint64(i), doc)
						if err != nil {
							unbuilt++
							unbuiltNames = append(unbuiltNames, name+": "+err.Error())
							break
						}
						if vs := validFor(s, v, false); vs != nil {
							t.Errorf("%s: invalid answer %s: %s", name, jsonOf(v), schema.RenderFeedback(vs, 300))
							break
						}
						answers++
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if cases == 0 {
				t.Fatal("no suite cases found")
			}
			sort.Strings(unbuiltNames)
			for _, n := range unbuiltNames {
				t.Logf("cannot build: %s", n)
			}
			t.Logf("%s: %d schemas with a valid instance; %d answers built, all valid; %d schemas (%.1f%%) without an answer",
				d.dir, cases, answers, unbuilt, 100*float64(unbuilt)/float64(cases))
			if float64(unbuilt) > 0.05*float64(cases) {
				t.Errorf("%d of %d schemas get no answer: more than 5%%", unbuilt, cases)
			}
		})
	}
}

func slicesAny[T any](list []T, f func(T) bool) bool {
	for _, e := range list {
		if f(e) {
			return true
		}
	}
	return false
}

func TestRestoreNotes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		desc string
		want map[string]any // keywords restored beside the description
	}{
		{"lengths and uniqueness", "keywords (at least 1 character; at most 10 items; items must be unique)", map[string]any{"minLength": json.Number("1"), "maxItems": json.Number("10"), "uniqueItems": true}},
		{"non-empty", "keywords (non-empty; at most 10 items)", map[string]any{"minLength": json.Number("1"), "maxItems": json.Number("10")}},
		{"bounds", "(minimum 1950; maximum 2100; greater than 0.5; less than 3; a multiple of 0.25)", map[string]any{"minimum": json.Number("1950"), "maximum": json.Number("2100"), "exclusiveMinimum": json.Number("0.5"), "exclusiveMaximum": json.Number("3"), "multipleOf": json.Number("0.25")}},
		{"pattern with parentheses and a semicolon", `the code (must match "^(a|b); c$"; format: uri)`, map[string]any{"pattern": "^(a|b); c$", "format": "uri"}},
		{"generic keyword", `(not: {"const":"x"}; dependentRequired: {"a":["b"]})`, map[string]any{"not": map[string]any{"const": "x"}, "dependentRequired": map[string]any{"a": []any{"b"}}}},
		{"gemini enum and const", `(exactly 5; one of [1,2,3])`, map[string]any{"const": json.Number("5"), "enum": []any{json.Number("1"), json.Number("2"), json.Number("3")}}},
		{"a user's own parentheses", "the amount (in euros)", nil},
		{"a cut note is left alone", `(not: {"anyOf":[{"const":"aaaa…)`, nil},
		{"aliases and defaults say nothing to restore", `(default "x"; write "open" for "opened")`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			node := map[string]any{"description": tc.desc}
			raw, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"f": node}})
			out := restoreNotes(raw)
			var doc map[string]any
			if err := decodeInto(string(out), new(any)); err != nil {
				t.Fatalf("not JSON: %s", out)
			}
			v, _ := decodeJSON(out)
			doc = v.(map[string]any)
			got := doc["properties"].(map[string]any)["f"].(map[string]any)
			delete(got, "description")
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("restored %v, want %v", got, tc.want)
			}
		})
	}
}

// Every form's notes restore what the form moved out of the schema, so an
// instance of the restored form meets the original constraints.
func TestRestoreNotesRoundTripsTheForms(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","properties":{
		"tags":{"type":"array","items":{"type":"string","minLength":2,"maxLength":8,"format":"uri-reference"},"minItems":2,"maxItems":4,"uniqueItems":true},
		"n":{"type":"integer","minimum":10,"exclusiveMaximum":13},
		"code":{"type":"string","not":{"const":"ab"},"pattern":"^[a-c]{2}$"}},
		"required":["tags","n","code"],"additionalProperties":false}`)
	for _, f := range []schema.Form{schema.FormOpenAI, schema.FormAnthropic, schema.FormGemini} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			body, err := s.ProviderForm(f)
			if err != nil {
				t.Fatal(err)
			}
			text := body
			if f == schema.FormGemini {
				if text, err = fromGeminiSchema(body); err != nil {
					t.Fatal(err)
				}
			}
			plain := mustCompile(t, string(text))
			restored := mustCompile(t, string(restoreNotes(text)))
			invalid := 0
			for seed := range uint64(40) {
				for i, form := range []*schema.Schema{plain, restored} {
					raw, err := form.Instance(seed)
					if err != nil {
						t.Fatalf("Instance: %v", err)
					}
					var v any
					if err := decodeInto(string(raw), &v); err != nil {
						t.Fatal(err)
					}
					vs := validFor(s, v, f == schema.FormOpenAI)
					if i == 1 && vs != nil {
						t.Fatalf("an instance of the restored %s form fails the schema: %s\n%s", f, raw, schema.RenderFeedback(vs, 300))
					}
					if i == 0 && vs != nil {
						invalid++
					}
				}
			}
			if invalid == 0 {
				t.Errorf("every instance of the bare %s form was valid: the test shows nothing", f)
			}
		})
	}
}

func TestGuidedSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		example string
		guide   string
		valid   []string // answers the inferred schema must accept
		invalid []string // and refuse
	}{
		{"constraints from the guide", `{"title":"example","year":1950,"field":"agriculture","tags":["example"],"note":"example"}`,
			"- /title: 1..30 characters — the title\n- /year: 1950..2100\n- /field: one of \"agriculture\" (or \"farming\"), \"databases\", … (24 values)\n- /tags: optional; 1..3 items; unique items\n- /note: or null; matches \"^ex\"",
			[]string{`{"title":"A","year":2000,"field":"databases","note":null}`, `{"title":"A","year":2100,"field":"agriculture","tags":["a","b"],"note":"exa"}`},
			[]string{`{"title":"","year":2000,"field":"databases","note":null}`, `{"title":"A","year":1949,"field":"databases","note":null}`, `{"title":"A","year":2000,"field":"farming","note":null}`,
				`{"title":"A","year":2000,"field":"databases","note":null,"tags":["a","a"]}`, `{"title":"A","year":2000,"field":"databases","note":"x"}`, `{"year":2000,"field":"databases","note":null}`, `{"title":"A","year":2000,"field":"databases","note":null,"extra":1}`}},
		{"unknown clause pins the value", `{"kind":"a","when":"2024-01-31"}`, "- /kind: if: {\"const\":\"a\"}\n- /when: format date (YYYY-MM-DD)",
			[]string{`{"kind":"a","when":"2025-02-01"}`}, []string{`{"kind":"b","when":"2025-02-01"}`, `{"kind":"a","when":"soon"}`}},
		{"array items and maps", `{"lines":[{"qty":1,"price":0}],"map":{}}`, "- /lines: at least 1 item\n- /lines/*/qty: > 0\n- /lines/*/price: >= 0; multiple of 0.01\n- /map: other keys allowed",
			[]string{`{"lines":[{"qty":3,"price":1},{"qty":1,"price":0}],"map":{}}`}, []string{`{"lines":[],"map":{}}`, `{"lines":[{"qty":0,"price":1}],"map":{}}`, `{"lines":[{"qty":1,"price":-1}],"map":{}}`, `{"lines":[{"qty":1,"price":1}],"map":{"k":1}}`}},
		{"cut guide pins what it does not show", `{"a":"x","b":"y","c":[1,2]}`, "- /a: at most 3 characters\n- … 2 more fields",
			[]string{`{"a":"abc","b":"y","c":[1,2]}`}, []string{`{"a":"abc","b":"z","c":[1,2]}`, `{"a":"abc","b":"y","c":[2,1]}`}},
		{"no guide: enum-like words and list lengths kept", `{"status":"open","name":"Ada","tags":["Red Tag"],"codes":["a","b"]}`, "",
			[]string{`{"status":"open","name":"Grace","tags":["Blue"],"codes":["b","b"]}`},
			[]string{`{"status":"closed","name":"Grace","tags":["y"],"codes":["a","b"]}`, `{"status":"open","name":"Grace","tags":[],"codes":["a","b"]}`, `{"status":"open","name":"Grace","tags":["y"],"codes":["a","c"]}`}},
		{"scalar root", `42`, "- (root): 1..99", []string{`7`}, []string{`100`, `"7"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ex, err := decodeJSON([]byte(tc.example))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := guidedSchema(ex, tc.guide)
			if err != nil {
				t.Fatal(err)
			}
			s := mustCompile(t, string(raw))
			for _, a := range tc.valid {
				if vs := validate(t, s, a); vs != nil {
					t.Errorf("refuses %s: %s\nschema %s", a, schema.RenderFeedback(vs, 200), raw)
				}
			}
			for _, a := range tc.invalid {
				if vs := validate(t, s, a); vs == nil {
					t.Errorf("accepts %s\nschema %s", a, raw)
				}
			}
		})
	}
}

func TestDistinct(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, v, template, want string
	}{
		{"repeat goes back to the template", `{"k":["a","a","b"]}`, `{"k":["x","y","z"]}`, `{"k":["a","y","b"]}`},
		{"still repeating: the template's list", `{"k":["a","y","a"]}`, `{"k":["x","y","z"]}`, `{"k":["a","y","z"]}`},
		{"nested objects", `[{"n":1},{"n":1}]`, `[{"n":1},{"n":2}]`, `[{"n":1},{"n":2}]`},
		{"no repeats: unchanged", `{"k":["a","b"]}`, `{"k":["x","y"]}`, `{"k":["a","b"]}`},
		{"repeating after the repair: the template's list", `{"k":["b","b"]}`, `{"k":["x","b"]}`, `{"k":["x","b"]}`},
		{"not from this template: unchanged", `{"k":["a","a"]}`, `{"k":["x"]}`, `{"k":["a","a"]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, _ := decodeJSON([]byte(tc.v))
			tmpl, _ := decodeJSON([]byte(tc.template))
			if got := jsonOf(distinct(v, tmpl)); got != tc.want {
				t.Errorf("distinct = %s, want %s", got, tc.want)
			}
		})
	}
}

// An engine-style prompt in JSON mode shows an example and the schema's
// field guide: every clean answer honours the guide (the example alone
// does not say which currencies the invoice schema allows, nor the
// abstract's bounds).
func TestFieldGuideInThePromptIsHonoured(t *testing.T) {
	t.Parallel()
	docs := exampleDocuments(t)
	for _, file := range []string{"../../examples/abstract.schema.yaml", "../../examples/invoice.schema.json"} {
		s, err := schema.CompileFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := s.Example()
		if err != nil {
			t.Fatal(err)
		}
		guide := s.FieldGuide()
		if guide == "" {
			t.Fatalf("%s has an empty field guide", file)
		}
		srv := New(builtins["clean"])
		for i, doc := range docs {
			system := "You extract data from a document into JSON.\nThe answer must have exactly the structure of this example:\n<example>\n" +
				string(ex) + "\n</example>\nWhat the example cannot show:\n<field-guide>\n" + guide + "\n</field-guide>"
			_, body := call(t, srv, "/v1/chat/completions", map[string]any{
				"model":           "m",
				"response_format": map[string]any{"type": "json_object"},
				"messages": []any{
					map[string]any{"role": "system", "content": system},
					map[string]any{"role": "user", "content": "Extract the data from this document:\n\n" + fence(doc)},
				},
			})
			text, _, _ := openAIAnswer(t, body)
			if vs := validate(t, s, text); vs != nil {
				t.Fatalf("%s, document %d: invalid answer %s:\n%s", file, i, text, schema.RenderFeedback(vs, 400))
			}
			if text == string(ex) {
				t.Fatalf("%s, document %d: the answer repeats the example", file, i)
			}
		}
	}
}

// TestLabelIs: the in-place comparison agrees with building the key.
func TestLabelIs(t *testing.T) {
	for _, label := range []string{"Invoice number", " Total-Due ", "TOTAL DUE", "total_due", "Totaldue", "Ünit price", "unit price", "Status\t", "", "a-b c"} {
		for _, key := range []string{"invoice_number", "total_due", "ünit_price", "unit_price", "status", "", "a_b_c"} {
			want := labelKey.Replace(strings.ToLower(strings.TrimSpace(label))) == key
			if got := labelIs(label, key); got != want {
				t.Errorf("labelIs(%q, %q) = %v, want %v", label, key, got, want)
			}
		}
	}
}
