package console

import (
	"reflect"
	"testing"

	"github.com/extractq/extractq/internal/audit"
)

func TestSplitPages(t *testing.T) {
	t.Parallel()
	const text = "cover\f€ page two\fthree"
	// Byte ranges as a reader records them: the form feeds lie between pages.
	pages := []audit.PageRange{{0, 5}, {6, 18}, {19, 24}}
	tests := []struct {
		name      string
		text      string
		pages     []audit.PageRange
		max       int
		want      []textPage
		truncated bool
	}{
		{name: "no pages", text: text, max: 100, want: []textPage{{Text: text}}},
		{name: "pages", text: text, pages: pages, max: 100,
			want: []textPage{{N: 1, Text: "cover\f"}, {N: 2, Text: "€ page two\f"}, {N: 3, Text: "three"}}},
		{name: "cut inside page two, by characters", text: text, pages: pages, max: 8,
			want: []textPage{{N: 1, Text: "cover\f"}, {N: 2, Text: "€ "}}, truncated: true},
		{name: "cut at a page's end", text: text, pages: pages, max: 6,
			want: []textPage{{N: 1, Text: "cover\f"}}, truncated: true},
		{name: "a range inside a character leaves the text whole", text: text, pages: []audit.PageRange{{0, 7}, {7, 24}}, max: 100,
			want: []textPage{{Text: text}}},
		{name: "a range past the end leaves the text whole", text: text, pages: []audit.PageRange{{0, 5}, {6, 99}}, max: 100,
			want: []textPage{{Text: text}}},
		{name: "ranges out of order leave the text whole", text: text, pages: []audit.PageRange{{6, 18}, {0, 5}}, max: 100,
			want: []textPage{{Text: text}}},
		{name: "empty text", text: "", pages: []audit.PageRange{{0, 0}}, max: 100, want: []textPage{{N: 1, Text: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, truncated := splitPages(tt.text, tt.pages, tt.max)
			if !reflect.DeepEqual(got, tt.want) || truncated != tt.truncated {
				t.Errorf("splitPages = %+v, %v; want %+v, %v", got, truncated, tt.want, tt.truncated)
			}
		})
	}
}
