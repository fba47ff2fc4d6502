package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCompactConversion(t *testing.T) {
	obj := func(props, required string) string {
		return `{"type":"object","properties":{` + props + `},"required":[` + required + `],"additionalProperties":false}`
	}
	tests := []struct {
		name string
		src  string
		want string // the JSON Schema, without "$schema"
	}{
		{"scalars", `{"a":"string","b":"integer","c":"number","d":"boolean","e":"int","f":"bool"}`,
			obj(`"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"number"},"d":{"type":"boolean"},"e":{"type":"integer"},"f":{"type":"boolean"}`, `"a","b","c","d","e","f"`)},
		{"optional", `{"a":"string","b?":"string"}`, obj(`"a":{"type":"string"},"b":{"type":"string"}`, `"a"`)},
		{"formats", `{"d":"date","t":"datetime","e":"email","u":"url","i":"uuid"}`,
			obj(`"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uri"},"i":{"type":"string","format":"uuid"}`, `"d","t","e","u","i"`)},
		{"ranges", `{"y":"integer 1900..2100","p":"number >0","q":"number <=1.5","r":"integer 3..","s":"number ..-2"}`,
			obj(`"y":{"type":"integer","minimum":1900,"maximum":2100},"p":{"type":"number","exclusiveMinimum":0},"q":{"type":"number","maximum":1.5},"r":{"type":"integer","minimum":3},"s":{"type":"number","maximum":-2}`, `"y","p","q","r","s"`)},
		{"string length and pattern", `{"code":"string 3..3 /^[A-Z]+$/"}`, obj(`"code":{"type":"string","minLength":3,"maxLength":3,"pattern":"^[A-Z]+$"}`, `"code"`)},
		{"pattern with spaces and a description", `{"p":"string /^a b$/ -- two words"}`, obj(`"p":{"type":"string","pattern":"^a b$","description":"two words"}`, `"p"`)},
		{"enum", `{"s":"enum(open, closed, \"on, hold\") -- state"}`, obj(`"s":{"type":"string","enum":["open","closed","on, hold"],"description":"state"}`, `"s"`)},
		{"list", `{"tags":["string"]}`, obj(`"tags":{"type":"array","items":{"type":"string"}}`, `"tags"`)},
		{"list options", `{"tags":["string", "1..5 unique -- keywords"]}`, obj(`"tags":{"type":"array","description":"keywords","minItems":1,"maxItems":5,"uniqueItems":true,"items":{"type":"string"}}`, `"tags"`)},
		{"nested object with description", `{"author":{"--":"who wrote it","name":"string"}}`,
			obj(`"author":{"type":"object","description":"who wrote it","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`, `"author"`)},
		{"list of objects", `{"items":[{"sku":"string","qty":"integer >=1"}]}`,
			obj(`"items":{"type":"array","items":`+obj(`"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}`, `"sku","qty"`)+`}`, `"items"`)},
		{"top-level list", `[{"name":"string"}]`, `{"type":"array","items":` + obj(`"name":{"type":"string"}`, `"name"`) + `}`},
		{"field called type", `{"type":"string","name":"string"}`, obj(`"type":{"type":"string"},"name":{"type":"string"}`, `"type","name"`)},
		{"YAML", "title: string -- the title\nyear?: integer 1900..2100\ntopics: [string]\n",
			obj(`"title":{"type":"string","description":"the title"},"year":{"type":"integer","minimum":1900,"maximum":2100},"topics":{"type":"array","items":{"type":"string"}}`, `"title","topics"`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.src))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			var got, want any
			if err := json.Unmarshal(s.JSON(), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if m, ok := got.(map[string]any); !ok || m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("no 2020-12 $schema: %s", s.JSON())
			} else {
				delete(m, "$schema")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %s\nwant %s", s.JSON(), tc.want)
			}
			// Key order follows the source.
			if tc.name == "scalars" && !(strings.Index(string(s.JSON()), `"a"`) < strings.Index(string(s.JSON()), `"f"`)) {
				t.Errorf("order lost: %s", s.JSON())
			}
		})
	}
}

func TestCompactErrors(t *testing.T) {
	tests := []struct {
		src, ptr, contains string
	}{
		{`{"a":"strng"}`, "/a", `unknown type "strng"`},
		{`{"a":"integer 5..1"}`, "/a", "is empty"},
		{`{"a":"string abc"}`, "/a", `unexpected "abc"`},
		{`{"a":"integer /x/"}`, "/a", "pattern applies to strings"},
		{`{"a":"string /(/"}`, "/a", "bad pattern"},
		{`{"a":"string /abc"}`, "/a", "not closed"},
		{`{"a":"enum()"}`, "/a", "at least one value"},
		{`{"a":"enum(x, x)"}`, "/a", "listed twice"},
		{`{"a":["string","1..x"]}`, "/a/1", "not a number"},
		{`{"a":["string","sorted"]}`, "/a/1", "unknown list option"},
		{`{"a":["string","integer","x"]}`, "/a", "3 elements"},
		{`{"a":{}}`, "/a", "at least one field"},
		{`{"a":{"b":{"c":42}}}`, "/a/b/c", "got 42"},
		{`{"a":"string","a?":"integer"}`, "/a?", "defined twice"},
		{`{"a":"date 1..3"}`, "/a", "takes no range"},
		{`{"a":"string 1.5..3"}`, "/a", "not a count"},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			_, err := Compile([]byte(tc.src))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if se.Pointer != tc.ptr || !strings.Contains(se.Message, tc.contains) {
				t.Errorf("got %q at %q, want %q at %q", se.Message, se.Pointer, tc.contains, tc.ptr)
			}
		})
	}
}

func TestLooksLikeJSONSchema(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{`true`, true},
		{`{}`, true},
		{`{"description":"anything"}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		{`{"$ref":"#/x"}`, true},
		{`{"type":"object","javaType":"com.x.Y"}`, true},
		{`{"anyOf":[{"type":"string"}]}`, true},
		{`{"title":"string"}`, false},
		{`{"name":"string","age":"integer"}`, false},
		{`{"type":"string","name":"string"}`, false},
		{`[{"a":"string"}]`, false},
	}
	for _, tc := range tests {
		doc, err := decodeOrdered([]byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		if got := looksLikeJSONSchema(doc); got != tc.want {
			t.Errorf("%s: looksLikeJSONSchema = %v, want %v", tc.src, got, tc.want)
		}
	}
}
