package audit

import (
	"cmp"
	"slices"

	"github.com/extractq/extractq/llm"
)

// FieldSource is where one value of a result was found, in the shape
// exports and people read: the value's JSON pointer, its page (0 for a
// document without pages), the [Start, End) characters within that page
// (within the whole text when there are no pages), and the snippet.
type FieldSource struct {
	Field     string `json:"field"`
	Page      int    `json:"page,omitempty"`
	PageLabel string `json:"page_label,omitempty"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
	Snippet   string `json:"snippet,omitempty"`
}

// SourceList lists sources in document order (page, then start, then
// field); nil for none.
func SourceList(sources map[string]llm.Source) []FieldSource {
	if len(sources) == 0 {
		return nil
	}
	out := make([]FieldSource, 0, len(sources))
	for ptr, s := range sources {
		f := FieldSource{Field: ptr, Page: s.Page, PageLabel: s.PageLabel, Start: s.Start, End: s.End, Snippet: s.Snippet}
		if s.Page > 0 {
			f.Start, f.End = s.PageStart, s.PageEnd
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b FieldSource) int {
		return cmp.Or(cmp.Compare(a.Page, b.Page), cmp.Compare(a.Start, b.Start), cmp.Compare(a.Field, b.Field))
	})
	return out
}
