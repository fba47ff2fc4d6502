package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExampleAndInstanceValidate(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// want, if set, is the exact typical example.
		want string
	}{
		{"compact book", `{"title":"string","topics":["string","1..3 unique"],"year?":"integer 1900..2100","status":"enum(open,closed)","isbn":"string /^97[89][0-9]{10}$/"}`,
			`{"title":"example","topics":["example"],"year":1900,"status":"open","isbn":"9780000000000"}`},
		{"author's example wins", `{"type":"object","properties":{"a":{"type":"string","examples":["Ada Lovelace"]}},"required":["a"]}`, `{"a":"Ada Lovelace"}`},
		{"invalid author example skipped", `{"type":"integer","minimum":10,"examples":[3],"default":2}`, `10`},
		{"recursive tree", `{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["v","kids"]}},"$ref":"#/$defs/n"}`, ""},
		{"anyOf with null", `{"anyOf":[{"type":"string","minLength":3},{"type":"null"}]}`, `"example"`},
		{"oneOf required variants", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"oneOf":[{"required":["a"]},{"required":["b"]}],"additionalProperties":false}`, ""},
		{"if/then", `{"type":"object","properties":{"k":{"enum":["a","b"]},"z":{"type":"boolean"}},"required":["k"],"if":{"properties":{"k":{"const":"a"}}},"then":{"required":["z"]}}`, ""},
		{"multipleOf and exclusive bounds", `{"type":"number","exclusiveMinimum":0,"maximum":1,"multipleOf":0.25}`, `0.25`},
		{"integer multipleOf decimal", `{"type":"integer","multipleOf":2.5,"minimum":1}`, `5`},
		{"formats", `{"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uuid"},"e":{"type":"string","format":"email"},"h":{"type":"string","format":"ipv6"}},"required":["d","t","u","e","h"]}`, ""},
		{"tuple and contains", `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"contains":{"type":"string"}}`, ""},
		{"draft 7 tuple", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":false,"minItems":2}`, `[1,true]`},
		{"allOf merge", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer","minimum":5}},"required":["b"]}]}`, ""},
		{"dependentRequired", `{"type":"object","properties":{"card":{"type":"string"},"cvv":{"type":"string","pattern":"^[0-9]{3}$"}},"dependentRequired":{"card":["cvv"]}}`, ""},
		{"minProperties with open object", `{"type":"object","minProperties":2}`, ""},
		{"pattern properties", `{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`, "{}"},
		{"unique enum items", `{"type":"array","items":{"enum":["a","b","c"]},"minItems":3,"uniqueItems":true}`, ""},
		{"nullable type list", `{"type":["string","null"],"maxLength":4}`, ""},
		{"top-level compact list", `[{"name":"string","qty":"integer >=1"}]`, `[{"name":"example","qty":1}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			ex, err := s.Example()
			if err != nil {
				t.Fatalf("Example: %v", err)
			}
			if vs, err := s.ValidateJSON(ex); err != nil || vs != nil {
				t.Errorf("example %s is invalid: %v %v", ex, vs, err)
			}
			if tc.want != "" && string(ex) != tc.want {
				t.Errorf("example = %s, want %s", ex, tc.want)
			}
			distinct := map[string]bool{}
			for seed := range uint64(20) {
				in, err := s.Instance(seed)
				if err != nil {
					t.Fatalf("Instance(%d): %v", seed, err)
				}
				if vs, err := s.ValidateJSON(in); err != nil || vs != nil {
					t.Fatalf("instance %s is invalid: %v %v", in, vs, err)
				}
				distinct[string(in)] = true
				again, _ := s.Instance(seed)
				if string(again) != string(in) {
					t.Fatalf("Instance(%d) is not deterministic: %s then %s", seed, in, again)
				}
			}
			if tc.want != `10` && tc.want != "{}" && len(distinct) < 2 && !strings.Contains(tc.name, "tuple") {
				t.Errorf("20 seeds gave %d distinct instances", len(distinct))
			}
		})
	}
}

func TestExampleKeepsPropertyOrder(t *testing.T) {
	s, err := Compile([]byte(`{"zeta":"string","alpha":"integer","mid?":"boolean"}`))
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := s.Example()
	if string(ex) != `{"zeta":"example","alpha":1,"mid":true}` {
		t.Errorf("example = %s", ex)
	}
}

func TestNoExample(t *testing.T) {
	tests := []struct{ name, src, contains string }{
		{"length", `{"type":"string","minLength":5,"maxLength":3}`, "minLength 5 is greater than maxLength 3"},
		{"bounds", `{"type":"object","properties":{"n":{"type":"integer","minimum":5,"maximum":3}},"required":["n"]}`, "at /properties/n: the lower bound 5 is not below the upper bound 3"},
		{"types", `{"allOf":[{"type":"string"},{"type":"integer"}]}`, "allowed types"},
		{"false property", `{"type":"object","properties":{"x":false},"required":["x"]}`, "at /properties/x: no value is allowed"},
		{"required but closed", `{"type":"object","required":["x"],"additionalProperties":false}`, `property "x" is required but not allowed`},
		{"items", `{"type":"array","minItems":3,"maxItems":1}`, "minItems 3 is greater than maxItems 1"},
		{"enum vs type", `{"type":"integer","enum":["a","b"]}`, "none of the enum values"},
		{"const vs bound", `{"const":3,"minimum":5}`, "const value 3"},
		{"multipleOf", `{"type":"integer","minimum":1,"maximum":4,"multipleOf":5}`, "multiple of 5"},
		{"false", `false`, "no value is allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			ex, err := s.Example()
			if err == nil {
				t.Fatalf("Example() = %s, want an error", ex)
			}
			if !errors.Is(err, ErrNoExample) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %v, want ErrNoExample containing %q", err, tc.contains)
			}
			if _, err := s.Instance(3); err == nil {
				t.Error("Instance succeeded where Example cannot")
			}
		})
	}
}

// TestExamplesOverTheSuite builds an example for every schema of the
// JSON-Schema-Test-Suite (a broad sample of real constructs): each one is
// either valid or an ErrNoExample saying why; the share is reported.
func TestExamplesOverTheSuite(t *testing.T) {
	suite := suiteDir(t)
	total, built := 0, 0
	for _, d := range []struct {
		dir   string
		draft Draft
	}{{"draft7", Draft7}, {"draft2020-12", Draft2020}} {
		for _, f := range suiteFiles(t, filepath.Join(suite, "tests", d.dir), true) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var groups []suiteGroup
			if err := json.Unmarshal(data, &groups); err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				s, err := Compile(g.Schema, WithDraft(d.draft), WithJSONSchema(), WithRefDir("http://localhost:1234/", filepath.Join(suite, "remotes")))
				if err != nil {
					continue
				}
				total++
				ex, err := s.Example()
				if err != nil {
					if !errors.Is(err, ErrNoExample) {
						t.Errorf("%s %q: error %v does not match ErrNoExample", f, g.Description, err)
					}
					continue
				}
				if vs, _ := s.ValidateJSON(ex); vs != nil {
					t.Errorf("%s %q: example %s is invalid: %v", f, g.Description, ex, vs)
				}
				built++
			}
		}
	}
	t.Logf("valid examples for %d of %d suite schemas (%.1f%%)", built, total, 100*float64(built)/float64(total))
}
