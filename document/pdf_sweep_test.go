package document_test

import (
	"strings"
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

// TestPDFProseIsNotATable: in a paragraph of running text, four of six
// lines happen to start a word at the same two places; that is chance, not
// a table's columns (edges after word-sized gaps must be shared by four
// fifths of the lines). It was read as "create an | overlayed symbol |
// from the | …" in a justified TeX paragraph.
func TestPDFProseIsNotATable(t *testing.T) {
	t.Parallel()
	const size = 10.0 // Helvetica as generated: 5 points a letter
	vocab := []string{"the", "symbol", "is", "made", "from", "two", "horizontal", "bars", "and", "the", "letter", "of", "its", "current", "font", "in", "three", "lengths"}
	var shows []show
	var want []string
	for i := range 6 {
		k := 7 * i
		gap := 2.5 + 0.1*float64(i) // each line justified by its own spaces
		y := 700 - 14*float64(i)
		edges := []float64{150, 250}
		if i >= 4 {
			edges = nil
		}
		x, line := 50.0, []string{}
		place := func(w string) {
			shows = append(shows, show{x: x, y: y, size: size, s: w})
			line = append(line, w)
			x += float64(len(w))*size/2 + gap
		}
		for _, e := range append(edges, 400) {
			for {
				w := vocab[k%len(vocab)]
				if x+float64(len(w))*size/2+gap > e-15 {
					break
				}
				k++
				place(w)
			}
			if n := int((e - 2*gap - x) / (size / 2)); n > 0 { // a word that leaves a word-sized gap
				place(strings.Repeat("x", n))
			}
			if e < 400 {
				x = e
			}
		}
		want = append(want, strings.Join(line, " "))
	}
	d := readPDF(t, makePDF([]genPage{{shows: shows}}), document.Options{})
	if got := pageText(d, 0); got != strings.Join(want, "\n") {
		t.Errorf("text\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
