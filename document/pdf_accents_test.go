package document_test

import (
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFSpacingAccents: TeX's \accent (every LaTeX document in the OT1
// encoding, the default without fontenc: "\'e", "\c c", "\"o") draws a
// spacing accent glyph (grave, acute, dieresis, cedilla…) and its letter
// over one another, the accent first; the text is the accented letter
// ("repère"), as pdftotext reads it, not "rep`ere". A spacing accent that
// overlaps no letter (code, a caret between two letters) stays as drawn.
// F1 is WinAnsi, every glyph 5 points wide at 10: a TJ kern of 500 moves
// the pen back over the glyph just drawn.
func TestPDFSpacingAccents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content string
		want          []string // in the page's text, in order
		not           []string // not in it
	}{{
		name:    "grave before its letter",
		content: "BT /F1 10 Tf 72 700 Td [(Le rep\x60) 500 (ere est fix\xb4) 500 (e.)] TJ ET",
		want:    []string{"Le repère est fixé."},
		not:     []string{"`", "´"},
	}, {
		name:    "accent after its letter",
		content: "BT /F1 10 Tf 72 700 Td [(un caf) (e) 500 (\xb4 na) (i) 500 (\xa8ve) ] TJ ET",
		want:    []string{"un café naïve"},
		not:     []string{"´", "¨"},
	}, {
		name:    "cedilla, circumflex and tilde",
		content: "BT /F1 10 Tf 72 700 Td [(fa\xb8) 500 (cade, t\x88) 500 (ete, se\x98) 500 (nor)] TJ ET",
		want:    []string{"façade, tête, señor"},
	}, {
		// A capital's accent is raised over it; it is drawn on a
		// baseline of its own, 2.5 points up.
		name:    "raised over a capital",
		content: "BT /F1 10 Tf 72 702.5 Td (\xb4) Tj ET BT /F1 10 Tf 72 700 Td (Ecole normale) Tj ET",
		want:    []string{"École normale"},
		not:     []string{"´"},
	}, {
		// A wide letter under a narrow accent: the accent is drawn
		// centred over it, more than half the font size from its end.
		name:    "wide letter",
		content: "BT /F1 10 Tf 72 700 Td [(Schr\xa8) 650 (O) 50 (dinger)] TJ ET",
		want:    []string{"SchrÖdinger"},
		not:     []string{"¨"},
	}, {
		name:    "text turned a quarter",
		content: "BT /F1 10 Tf 0 1 -1 0 300 100 Tm [(Le rep\x60) 500 (ere)] TJ ET",
		want:    []string{"Le repère"},
	}, {
		// cmmi's vector arrow, which its built-in encoding reads as an
		// ASCII tilde, over a letter: not an accent of a letter.
		name:    "vector arrow",
		content: "BT /F1 10 Tf 72 700 Td [(point ~) 500 (v and ^) 500 (x)] TJ ET",
		want:    []string{"point ~v and ^x"},
	}, {
		name:    "no overlap",
		content: "BT /F1 10 Tf 72 700 Td (run `ls` and x^2 or a\xb4b) Tj ET",
		want:    []string{"run `ls` and x^2 or a´b"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := readPDF(t, makeContentPDF(tt.content, ""), document.Options{})
			got := strings.Join(strings.Fields(pageText(d, 0)), " ")
			document.InOrder(t, got, tt.want...)
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("text %q holds %q", got, n)
				}
			}
		})
	}
}
