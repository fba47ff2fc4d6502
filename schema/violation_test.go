package schema

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestViolations(t *testing.T) {
	const src = `{
	  "type": "object",
	  "properties": {
	    "title": {"type": "string", "minLength": 2},
	    "year": {"type": "integer", "minimum": 1900},
	    "status": {"enum": ["open", "closed"]},
	    "kind": {"const": "book"},
	    "isbn": {"type": "string", "pattern": "^[0-9]{13}$"},
	    "date": {"type": "string", "format": "date"},
	    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
	    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
	    "author": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}
	  },
	  "required": ["title", "year"],
	  "additionalProperties": false
	}`
	s, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200)
	tests := []struct {
		name     string
		instance string
		want     []Violation
	}{
		{"valid", `{"title":"Dune","year":1965}`, nil},
		{"type", `{"title":42,"year":1965}`, []Violation{{Pointer: "/title", Keyword: "type", Message: "must be string, not integer", Value: "42", Want: []string{"string"}}}},
		{"missing required", `{"title":"Dune"}`, []Violation{{Pointer: "/year", Keyword: "required", Message: "required property is missing", Want: []string{"integer"}}}},
		{"enum", `{"title":"Dune","year":1965,"status":"Open"}`, []Violation{{Pointer: "/status", Keyword: "enum", Message: `must be one of "open", "closed"`, Value: `"Open"`, Want: []string{`"open"`, `"closed"`}}}},
		{"const", `{"title":"Dune","year":1965,"kind":"film"}`, []Violation{{Pointer: "/kind", Keyword: "const", Message: `must be exactly "book"`, Value: `"film"`, Want: []string{`"book"`}}}},
		{"minimum", `{"title":"Dune","year":1200}`, []Violation{{Pointer: "/year", Keyword: "minimum", Message: "must be >= 1900", Value: "1200"}}},
		{"pattern", `{"title":"Dune","year":1965,"isbn":"12"}`, []Violation{{Pointer: "/isbn", Keyword: "pattern", Message: "must match the pattern ^[0-9]{13}$", Value: `"12"`}}},
		{"format", `{"title":"Dune","year":1965,"date":"May 1st"}`, []Violation{{Pointer: "/date", Keyword: "format", Message: "must be a valid date (YYYY-MM-DD)", Value: `"May 1st"`}}},
		{"anyOf merged into one type violation", `{"title":"Dune","year":1965,"note":5}`, []Violation{{Pointer: "/note", Keyword: "type", Message: "must be string or null, not integer", Value: "5", Want: []string{"string", "null"}}}},
		{"additional property names the allowed ones", `{"title":"Dune","year":1965,"author":{"name":"F","nmae":"x"}}`, []Violation{{Pointer: "/author/nmae", Keyword: "additionalProperties", Message: "property is not allowed (allowed: name)", Value: `"x"`, Want: []string{"name"}}}},
		{"unique", `{"title":"Dune","year":1965,"tags":["a","b","a"]}`, []Violation{{Pointer: "/tags", Keyword: "uniqueItems", Message: "items must be unique, but items 0 and 2 are equal", Value: `["a","b","a"]`}}},
		{"value truncated", `{"title":"Dune","year":"` + long + `"}`, []Violation{{Pointer: "/year", Keyword: "type", Message: "must be integer, not string", Value: `"` + strings.Repeat("x", 78) + "…", Want: []string{"integer"}}}},
		{"sorted by pointer, several", `{"year":"x","title":1,"extra":true}`, []Violation{
			{Pointer: "/extra", Keyword: "additionalProperties", Message: "property is not allowed (allowed: author, date, isbn, kind, note, status, tags, title, year)", Value: "true",
				Want: []string{"author", "date", "isbn", "kind", "note", "status", "tags", "title", "year"}},
			{Pointer: "/title", Keyword: "type", Message: "must be string, not integer", Value: "1", Want: []string{"string"}},
			{Pointer: "/year", Keyword: "type", Message: "must be integer, not string", Value: `"x"`, Want: []string{"integer"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ValidateJSON([]byte(tc.instance))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestViolationOrderIsNumericAndStable(t *testing.T) {
	s, err := Compile([]byte(`{"type":"array","items":{"type":"integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, 12)
	for i := range items {
		items[i] = `"x"`
	}
	inst := []byte("[" + strings.Join(items, ",") + "]")
	first, _ := s.ValidateJSON(inst)
	if len(first) != 12 {
		t.Fatalf("got %d violations, want 12", len(first))
	}
	for i, v := range first {
		if want := "/" + strconv.Itoa(i); v.Pointer != want {
			t.Fatalf("violation %d at %s, want %s", i, v.Pointer, want)
		}
	}
	for range 20 {
		again, _ := s.ValidateJSON(inst)
		if !reflect.DeepEqual(first, again) {
			t.Fatal("order changes between runs")
		}
	}
}

func TestNormalizeDeduplicates(t *testing.T) {
	vs := normalize([]Violation{
		{Pointer: "/b", Keyword: "type", Message: "m"},
		{Pointer: "/a", Keyword: "type", Message: "m"},
		{Pointer: "/b", Keyword: "type", Message: "m"},
		{Pointer: "/items/10", Keyword: "type", Message: "m"},
		{Pointer: "/items/2", Keyword: "type", Message: "m"},
	})
	var ptrs []string
	for _, v := range vs {
		ptrs = append(ptrs, v.Pointer)
	}
	if want := []string{"/a", "/b", "/items/2", "/items/10"}; !reflect.DeepEqual(ptrs, want) {
		t.Errorf("pointers = %v, want %v", ptrs, want)
	}
}

func TestRenderFeedback(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"enum":["x","y"]},"n":{"type":"array","items":{"type":"number"}}},"required":["a","b","d"]}`))
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := s.ValidateJSON([]byte(`{"a":"1","b":"z","n":[1,"2",true,{}]}`))
	full := RenderFeedback(vs, 0)
	lines := strings.Split(full, "\n")
	if len(lines) != len(vs) {
		t.Fatalf("%d lines for %d violations:\n%s", len(lines), len(vs), full)
	}
	for _, want := range []string{
		`- /a: must be integer, not string; got "1"`,
		`- /b: must be one of "x", "y"; got "z"`,
		`- /d: required property is missing`,
		`- /n/1: must be number, not string; got "2"`,
	} {
		if !strings.Contains(full, want) {
			t.Errorf("feedback lacks %q:\n%s", want, full)
		}
	}
	for _, bad := range []string{"http", "jsonschema", "map[", "*", "kind.", "mem:"} {
		if strings.Contains(full, bad) {
			t.Errorf("feedback contains %q:\n%s", bad, full)
		}
	}
	for _, max := range []int{10, 60, 100, 150} {
		got := RenderFeedback(vs, max)
		if n := utf8.RuneCountInString(got); n > max && len(got) > max {
			t.Errorf("maxChars %d: got %d characters:\n%s", max, n, got)
		}
		if max >= 100 && !strings.Contains(got, "more problem") {
			t.Errorf("maxChars %d: cut without saying so:\n%s", max, got)
		}
	}
	if RenderFeedback(nil, 100) != "" {
		t.Error("no violations, non-empty feedback")
	}
	root := RenderFeedback([]Violation{{Keyword: "type", Message: "must be object, not array", Value: "[]"}}, 0)
	if root != "- (root): must be object, not array; got []" {
		t.Errorf("root feedback = %q", root)
	}
}
