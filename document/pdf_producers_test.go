package document_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFProducers reads PDFs made by the producers of business documents
// (Chromium, Ghostscript, ReportLab) from text written for the tests
// (testdata/producers, rebuilt by its make.sh), each showing a fault the
// producers' sweep found (doc/documents-pdf.md, "Producers of business
// documents").
func TestPDFProducers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		want       []string
		notWant    []string
	}{
		{
			// Each row is its own block (its cells' padding and border set it
			// apart); the title above and the paragraph below the table
			// diluted the column edges the rows share, and the title's size
			// set the gaps, so no column was found. A right-aligned number
			// after a short cell ("Cable duct", "12") is a cell too.
			name: "Chromium: an invoice's item table between a title and a paragraph",
			file: "chromium-table.pdf",
			want: []string{
				"No. | Item | Qty | Price | Amount\n",
				"2 | Office chair | 1 | 1249.00 | 1249.00\n",
				"3 | Cable duct | 12 | 7.45 | 89.40\n",
			},
		},
		{
			// Chromium raises a <sup> by more than a third of the font size;
			// the mark came out as a line of its own above its line.
			name:    "Chromium: a footnote mark stays in its word",
			file:    "chromium-columns.pdf",
			want:    []string{"shipments by\nMarch1. Staff costs", "British contracts2."},
			notWant: []string{"March ."},
		},
		{
			// A heading's margin in the left column and a paragraph's in the
			// right one leave a gap across the page: the columns were cut
			// into bands and read left, right, left, right.
			name: "Chromium: two columns cut by a chance gap across both",
			file: "chromium-columns.pdf",
			want: []string{"Regional results\n\nPoland contributed", "whose\n\nvolumes alone", "contracts2.\n\nOutlook"},
		},
		{
			// Justified lines of a narrow column have spaces wider than two
			// font sizes; they are not table cells.
			name:    "Chromium: a justified line of a narrow column",
			file:    "chromium-columns.pdf",
			want:    []string{"customers, among them a\n"},
			notWant: []string{" | "},
		},
		{
			// Ghostscript kerns "Inv" "estment" with a space shrunk to nothing
			// by a negative word spacing (-1.85 Tw).
			name: "Ghostscript: a space glyph that does not move the pen",
			file: "groff-kern.pdf",
			want: []string{"full year. Investment will"},
		},
		{
			// The standard Symbol and ZapfDingbats fonts, not embedded and
			// without /Encoding, decode by their own encodings, not as
			// Latin letters ("nódn", "a + b £ 2p").
			name: "ReportLab: Symbol and ZapfDingbats by their built-in encodings",
			file: "reportlab-dingbats.pdf",
			want: []string{"Ship to: ■ód■ warehouse", "α + β ≤ 2π"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("testdata", "producers", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			doc := readPDF(t, b, document.Options{Name: tt.file})
			for _, w := range tt.want {
				if !strings.Contains(doc.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, doc.Text)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(doc.Text, w) {
					t.Errorf("text has %q:\n%s", w, doc.Text)
				}
			}
		})
	}
}
