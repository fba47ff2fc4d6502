package document_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFProducers reads PDFs made by the producers of business documents
// (Chromium, WeasyPrint, Ghostscript, ReportLab) from text written for the tests
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
			// after a short cell ("Cable duct", "12") is a cell too, and so
			// is the amount of a totals block, right-aligned at the table's
			// right edge.
			name: "Chromium: an invoice's item table between a title and a paragraph",
			file: "chromium-table.pdf",
			want: []string{
				"No. | Item | Qty | Price | Amount\n",
				"2 | Office chair | 1 | 1249.00 | 1249.00\n",
				"3 | Cable duct | 12 | 7.45 | 89.40\n",
				"Subtotal | 1,438.20\nVAT 20 % | 287.64\nTotal due | 1,725.84\n", "All amounts in euro. Items are listed in the order they were shipped.\n",
			},
		},
		{
			// A totals block is a table of its own (label, amount); its
			// lines meet no edge of the item table but its right one.
			name: "Chromium: an invoice's totals block",
			file: "chromium-invoice.pdf",
			want: []string{"Zwischensumme | 1.691,20 €\nUSt. 20 % | 338,24 €\nGesamtbetrag | 2.029,44 €\n", "2 | Bürostuhl Ergonomic Plus | 1 | 1.249,00 € | 1.249,00 €\n"},
		},
		{
			// The paragraph above the ledger, pooled with its rows, was cut
			// into cells at the table's column edges.
			name: "Chromium: a paragraph above a table is no row",
			file: "chromium-ledger.pdf",
			want: []string{"All amounts in euro (€). Entries are listed in the order they were booked.\n", "No. | Date | Employee | Category | Amount €\n"},
		},
		{
			// ReportLab's header row is set in bold, the rows in regular
			// type of one size; the title above, in another size, ends the
			// pool of blocks.
			name: "ReportLab: an invoice's item table and totals",
			file: "reportlab-invoice.pdf",
			want: []string{"Pos. | Description | Qty | Unit price | Amount\n", "Subtotal | 1,691.20 €\nVAT 20 % | 338.24 €\nTotal due | 2,029.44 €\n"},
		},
		{
			// A grid of labels and values whose first value wraps: that block
			// has three lines and was left out of the pool of short blocks
			// whose shared column edges make a table; the heading and table
			// below it, in other sizes, are not pooled with it.
			name: "Chromium: a ticket's grid with a wrapped value",
			file: "chromium-grid.pdf",
			want: []string{"PASSENGER | BOOKING | TICKET\nKOWALSKA/MARIA | QX7R4P | 157 2401\n", "06:45 | 08:55 | 14C\n", "Base fare | EUR 212.00\n"},
		},
		{
			// Chromium raises a <sup> by more than a third of the font size;
			// the mark came out as a line of its own above its line. A mark
			// before the footnote's text is a word of its own, as in TeX's
			// footnotes.
			name:    "Chromium: a footnote mark stays in its word",
			file:    "chromium-columns.pdf",
			want:    []string{"shipments by\nMarch1. Staff costs", "British contracts2.", "Germany3 and", "\n3 Rounded to the nearest"},
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
			// A description and an address that wrap in their cells: WeasyPrint
			// and Chromium set the row's other cells middle, so its line had
			// the wrapped cells' lines above and below it ("Consulting
			// services for the" / "1 | Head office | …" / "migration
			// project"), a cell of the last column on two lines ("89.40 €",
			// "net") one line above and one below. A row with one filled
			// cell, the totals and the paragraph after the table stay lines
			// of their own.
			name: "WeasyPrint: cells that wrap onto several lines",
			file: "weasyprint-wrapped.pdf",
			want: []string{
				"\n1 | Consulting services for the migration project | Head office | 2 | 450.00 € | 900.00 €\n",
				"\n2 | Server rack 42U, assembled and tested on site | Warehouse 3, Industriestraße 14, 4020 Linz | 1 | 1,180.00 € | 1,180.00 €\n",
				"\n3 | Cable set | Head office | 12 | 7.45 € | 89.40 € net\n",
				"\nTravel included\n", "\nSubtotal | 2,169.40 €\nVAT 20 % | 433.88 €\nTotal due | 2,603.28 €\n",
				"\nPayable within 14 days to IBAN AT61 1904 3002 3457 3201.",
			},
		},
		{
			name: "Chromium: cells that wrap onto several lines",
			file: "chromium-wrapped.pdf",
			want: []string{
				"\n1 | Consulting services for the migration project | Head office | 2 | 450.00 € | 900.00 €\n",
				"\n2 | Server rack 42U, assembled and tested on site | Warehouse 3, Industriestraße 14, 4020 Linz | 1 | 1,180.00 € | 1,180.00 €\n",
				"\n3 | Cable set | Head office | 12 | 7.45 € | 89.40 € net\n", "\nTravel included\n",
			},
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

// TestPDFCodeWithSideComments: blocks of code, each with a comment beside
// its first line (METAFONT's modes.mf in TeX Live's documentation), are no
// two columns: joined, the blocks read all the code first and the comments
// after it.
func TestPDFCodeWithSideComments(t *testing.T) {
	t.Parallel()
	shows := lines(50, 760, "% A user selects a particular mode when running METAFONT by assigning to the variable mode.")
	for i, mode := range []string{"agfa", "canon", "linotype"} {
		top := 700 - 100*float64(i)
		shows = append(shows, lines(50, top, "mode def "+mode+" =", "mode param(pixels per inch, 406);", "mode param(blacker, .2);", "enddef;")...)
		shows = append(shows, show{x: 380, y: top, size: 10, s: "% the " + mode + " printer at 406 dpi"})
	}
	d := readPDF(t, makePDF([]genPage{{shows: shows}}), document.Options{})
	for _, mode := range []string{"agfa", "canon", "linotype"} {
		if want := "mode def " + mode + " = | % the " + mode + " printer"; !strings.Contains(d.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, d.Text)
		}
	}
}

// TestPDFSmallTextBesideAnIcon: a note in small type beside a large glyph
// (an "i" icon, in caption's manual) is raised above the icon's baseline
// like a superscript, but it is a line of its own: joined to the icon as
// superscripts are, it took the icon's baseline and was interleaved with
// the note's next line.
func TestPDFSmallTextBesideAnIcon(t *testing.T) {
	t.Parallel()
	shows := []show{{x: 50, y: 689, size: 20, s: "i"}}
	shows = append(shows, show{x: 66, y: 700, size: 9, s: "Please note that you need to surround them"})
	shows = append(shows, show{x: 66, y: 689, size: 9, s: "with care and see the manual for details."})
	d := readPDF(t, makePDF([]genPage{{shows: shows}}), document.Options{})
	for _, want := range []string{"Please note that you need to surround them\n", "with care and see the manual for details."} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, d.Text)
		}
	}
}

// TestPDFContentsWithLeaders: in a table of contents whose page numbers
// end at one right edge after dot leaders, the page number is no cell of
// its own (as the amount of a totals block is): leaders never make cells.
func TestPDFContentsWithLeaders(t *testing.T) {
	t.Parallel()
	var shows []show
	var want []string
	for i, entry := range [][2]string{{"1", "Introduction"}, {"1.1", "Related work"}, {"1.1.1", "Method"}, {"2", "Results"}} {
		y := 600 - 14*float64(i)
		x := 50 + 5*float64(len(entry[0])) + 12 // Helvetica as generated: 5 points a glyph
		shows = append(shows, show{x: 50, y: y, size: 10, s: entry[0]}, show{x: x, y: y, size: 10, s: entry[1]})
		for x := 200.0; x <= 300; x += 10 {
			shows = append(shows, show{x: x, y: y, size: 10, s: "."})
		}
		page := string(rune('3' + 2*i))
		shows = append(shows, show{x: 320, y: y, size: 10, s: page})
		want = append(want, entry[0]+" "+entry[1]+" . . . . . . . . . . . "+page)
	}
	d := readPDF(t, makePDF([]genPage{{shows: shows}}), document.Options{})
	if got := pageText(d, 0); got != strings.Join(want, "\n") {
		t.Errorf("text\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
