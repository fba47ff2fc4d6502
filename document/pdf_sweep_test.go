package document_test

import (
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFTightWordSpaces: TeX places words by position alone, and a tight
// justified line shrinks its spaces to 0.18 of the font size; they are
// still spaces (they were dropped below 0.2, joining a whole line into one
// word), while a kern of a few hundredths inside a word is not.
func TestPDFTightWordSpaces(t *testing.T) {
	t.Parallel()
	const size = 10.0
	// Helvetica as generated: every glyph half the font size wide.
	var shows []show
	x := 50.0
	for _, w := range []string{"adds", "the", "code", "clo"} {
		shows = append(shows, show{x: x, y: 700, size: size, s: w})
		x += float64(len(w))*size/2 + 0.18*size
	}
	shows = append(shows, show{x: x - 0.18*size + 0.04*size, y: 700, size: size, s: "ser"}) // kerned: "closer"
	d := readPDF(t, makePDF([]genPage{{shows: shows}}), document.Options{})
	if got, want := pageText(d, 0), "adds the code closer"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}
