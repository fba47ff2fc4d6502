package audit

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestAppendSources: the hand-written encoding of results.sources reads
// back as llm.Source reads it, for every field and for strings that need
// escaping; NUL and invalid UTF-8 become U+FFFD.
func TestAppendSources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   map[string]llm.Source
		want map[string]llm.Source // nil: the same as in
	}{
		{"every field", map[string]llm.Source{"/total": {Start: 812, End: 820, Chunk: 3, Match: "normalized", Page: 2, PageLabel: "ii",
			PageStart: 95, PageEnd: 103, Box: &llm.Box{X0: 72.5, Y0: 640, X1: 540.25, Y1: 652}, Snippet: "Total due: 1,234.50 €"}}, nil},
		{"no page", map[string]llm.Source{"/a": {Start: 0, End: 3, Match: "exact", Snippet: "abc"}, "/b": {Start: 5, End: 6}}, nil},
		{"escapes", map[string]llm.Source{"/x~1y/\"q\"": {Start: 1, End: 2, Snippet: "tab\there \"quoted\" back\\slash\nline\x01\u2028"}}, nil},
		{"NUL and invalid UTF-8", map[string]llm.Source{"/a": {Start: 1, End: 2, Snippet: "a\x00b\xffc"}},
			map[string]llm.Source{"/a": {Start: 1, End: 2, Snippet: "a\uFFFDb\uFFFDc"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := appendSources(nil, tt.in)
			if !json.Valid(b) {
				t.Fatalf("not JSON: %s", b)
			}
			var got map[string]llm.Source
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = tt.in
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back:\n got %+v\nwant %+v\nfrom %s", got, want, b)
			}
		})
	}
}

// TestSourceList: document order, ranges within the page where there is
// one.
func TestSourceList(t *testing.T) {
	t.Parallel()
	got := SourceList(map[string]llm.Source{
		"/total":    {Start: 900, End: 908, Page: 2, PageStart: 95, PageEnd: 103, Snippet: "Total 12"},
		"/customer": {Start: 10, End: 20, Page: 1, PageStart: 10, PageEnd: 20, PageLabel: "i"},
		"/number":   {Start: 850, End: 855, Page: 2, PageStart: 45, PageEnd: 50},
	})
	want := []FieldSource{
		{Field: "/customer", Page: 1, PageLabel: "i", Start: 10, End: 20},
		{Field: "/number", Page: 2, Start: 45, End: 50},
		{Field: "/total", Page: 2, Start: 95, End: 103, Snippet: "Total 12"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SourceList:\n got %+v\nwant %+v", got, want)
	}
	if SourceList(nil) != nil {
		t.Error("SourceList(nil) is not nil")
	}
	if l := SourceList(map[string]llm.Source{"/a": {Start: 7, End: 9}}); l[0].Start != 7 || l[0].Page != 0 {
		t.Errorf("without pages the range is the text's: %+v", l)
	}
}
