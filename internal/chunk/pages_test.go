package chunk

import (
	"slices"
	"strings"
	"testing"
)

// TestSplitAtPages checks that a paged document is cut where its pages
// start rather than at a paragraph, and within a page only when that page
// alone exceeds the size.
func TestSplitAtPages(t *testing.T) {
	t.Parallel()
	para := strings.Repeat("word ", 30) + "\n\n" // ~30 tokens, ending in a blank line
	page := func(n int) string { return strings.Repeat(para, n) }
	tests := []struct {
		name  string
		pages []string
		size  int
		// wantCuts are the page indexes whose start must be a chunk end.
		wantCuts []int
		// within says a page larger than size must be cut inside it too.
		within bool
	}{
		{name: "three pages, two per chunk would not fit", pages: []string{page(2), page(2), page(2)}, size: 100, wantCuts: []int{1, 2}},
		{name: "short pages share a chunk", pages: []string{page(1), page(1), page(1), page(1)}, size: 75, wantCuts: []int{2}},
		{name: "a long page is cut inside", pages: []string{page(1), page(6)}, size: 80, wantCuts: []int{1}, within: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := strings.Join(tc.pages, "")
			var breaks []int
			off := 0
			for _, p := range tc.pages[:len(tc.pages)-1] {
				off += len(p)
				breaks = append(breaks, off)
			}
			chunks := SplitAt("openai", doc, tc.size, 0, breaks)
			ends := map[int]bool{}
			for _, c := range chunks {
				ends[c.ByteEnd] = true
				if got := Tokens("openai", c.Text); got > tc.size {
					t.Errorf("chunk %d has %d tokens, above %d", c.Index, got, tc.size)
				}
			}
			for _, i := range tc.wantCuts {
				if !ends[breaks[i-1]] {
					t.Errorf("no chunk ends where page %d starts (byte %d); chunks end at %v", i+1, breaks[i-1], ends)
				}
			}
			inside := 0
			for end := range ends {
				if end != len(doc) && !slices.Contains(breaks, end) {
					inside++
				}
			}
			if (inside > 0) != tc.within {
				t.Errorf("%d cuts inside pages, want them only when a page exceeds the size (%v)", inside, tc.within)
			}
		})
	}
}
