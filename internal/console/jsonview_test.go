package console

import (
	"strings"
	"testing"
)

func TestBuildJSONViewPinsViolations(t *testing.T) {
	t.Parallel()
	value := []byte(`{"total":"12,50","items":[{"qty":"2"}],"a/b":1}`)
	tests := []struct {
		name      string
		v         Violation
		wantLine  string // the line the marker is on: its pointer and text
		wantKind  string
		unplaced  bool
		wantLines int // lines after the view is built
	}{
		{"scalar member", Violation{Pointer: "/total", Keyword: "type"}, `/total "12,50"`, "str", false, 9},
		{"inside an array", Violation{Pointer: "/items/0/qty", Keyword: "type"}, `/items/0/qty "2"`, "str", false, 9},
		{"escaped pointer", Violation{Pointer: "/a~1b", Keyword: "maximum"}, `/a~1b 1`, "num", false, 9},
		{"container", Violation{Pointer: "/items", Keyword: "minItems"}, `/items [`, "open", false, 9},
		{"root", Violation{Pointer: "", Keyword: "additionalProperties"}, ` {`, "open", false, 9},
		{"missing member gets a line in its parent", Violation{Pointer: "/vendor", Keyword: "required"}, `/vendor missing`, "missing", false, 10},
		{"missing member of a nested object", Violation{Pointer: "/items/0/name", Keyword: "required"}, `/items/0/name missing`, "missing", false, 10},
		{"pointer into nothing", Violation{Pointer: "/nope/deeper", Keyword: "required"}, "", "", true, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			jv := buildJSONView(value, []Violation{tc.v}, nil)
			if len(jv.Lines) != tc.wantLines {
				t.Errorf("%d lines, want %d", len(jv.Lines), tc.wantLines)
			}
			if tc.unplaced {
				if len(jv.Unplaced) != 1 {
					t.Errorf("unplaced %+v, want the violation", jv.Unplaced)
				}
				return
			}
			var got []string
			for _, l := range jv.Lines {
				if len(l.Marks) > 0 {
					got = append(got, l.Pointer+" "+l.Text)
					if l.Kind != tc.wantKind || !l.Bad || l.Marks[0].Label != tc.v.Keyword {
						t.Errorf("line %q: kind %s bad %v marks %+v", l.Pointer, l.Kind, l.Bad, l.Marks)
					}
				}
			}
			if len(got) != 1 || got[0] != tc.wantLine {
				t.Errorf("marked lines %q, want [%q]", got, tc.wantLine)
			}
		})
	}
	// Key order and commas are the answer's.
	jv := buildJSONView(value, nil, []Repair{{Kind: "coerce_string_to_integer", Where: "/items/0/qty", Detail: `"2" -> 2`}, {Kind: "trailing_comma", Where: "@12"}})
	var b strings.Builder
	for _, l := range jv.Lines {
		b.WriteString(strings.Repeat(" ", l.Indent) + l.Key)
		if l.Key != "" {
			b.WriteString(":")
		}
		b.WriteString(l.Text)
		if l.Comma {
			b.WriteString(",")
		}
		for _, m := range l.Marks {
			b.WriteString(" <" + m.Label + ">")
		}
		b.WriteString("\n")
	}
	want := "{\n \"total\":\"12,50\",\n \"items\":[\n  {\n   \"qty\":\"2\" <coerce_string_to_integer>\n  }\n ],\n \"a/b\":1\n}\n"
	if b.String() != want {
		t.Errorf("layout:\n%s\nwant:\n%s", b.String(), want)
	}
	if jv := buildJSONView([]byte(`{"a":1} trailing`), nil, nil); !jv.Invalid || len(jv.Lines) != 0 {
		t.Errorf("a value that is not JSON: %+v", jv)
	}
}

func TestRawSegmentsMarkRepairs(t *testing.T) {
	t.Parallel()
	raw := "{'a': 1,}é"
	segs := rawSegments(raw, []Repair{
		{Kind: "single_quotes", Where: "@1"},
		{Kind: "single_quotes", Where: "@3", Detail: "closing"},
		{Kind: "trailing_comma", Where: "@7"},
		{Kind: "inside a character", Where: "@10"}, // the second byte of é
		{Kind: "close_truncated", Where: "@11"},    // the end
		{Kind: "coerce", Where: "/a"},              // a pointer: not in the raw text
		{Kind: "bad", Where: "@99"},
	})
	var joined strings.Builder
	var marked []string
	for _, s := range segs {
		joined.WriteString(s.Text)
		if s.Mark {
			marked = append(marked, s.Text+"="+s.Title)
		}
	}
	if joined.String() != raw {
		t.Errorf("segments join to %q, want the raw text", joined.String())
	}
	want := []string{"'=single_quotes", "'=single_quotes: closing", ",=trailing_comma", "é=inside a character", "=close_truncated"}
	if strings.Join(marked, "|") != strings.Join(want, "|") {
		t.Errorf("marked %q, want %q", marked, want)
	}
	if segs := rawSegments("plain", nil); len(segs) != 1 || segs[0].Mark {
		t.Errorf("no repairs: %+v", segs)
	}
}

func TestDiffLines(t *testing.T) {
	t.Parallel()
	got := diffLines("a\nb\nc\nd", "a\nc\nd\ne")
	var b strings.Builder
	for _, l := range got {
		b.WriteString(l.OpString() + l.Text + "\n")
	}
	if want := " a\n-b\n c\n d\n+e\n"; b.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestInModelOrder: a value stored as jsonb (keys sorted by length) is
// shown with its members in the order of the model's answer, nested ones
// too; members the answer does not name come last, and a value that is not
// JSON or has no answer is left as it is.
func TestInModelOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value, raw, want string
	}{
		{"answer order", `{"total": 12.50, "vendor": "A&B <x>", "invoice_number": "7"}`,
			`Sure: {"invoice_number": "7", "vendor": "A&B <x>", "total": 12.50}`, `{"invoice_number":"7","vendor":"A&B <x>","total":12.50}`},
		{"nested", `{"b": [{"y": 1, "x": 2}], "a": true}`, `{"a": true, "b": [{"x": 2, "y": 1}]}`, `{"a":true,"b":[{"x":2,"y":1}]}`},
		{"added by a repair", `{"z": null, "a": 1}`, `{"a": 1`, `{"a":1,"z":null}`},
		{"no answer", `{"b": 1, "a": 2}`, ``, `{"b": 1, "a": 2}`},
		{"not JSON", `{"b": 1,`, `{"a": 1}`, `{"b": 1,`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(inModelOrder([]byte(tc.value), tc.raw)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
