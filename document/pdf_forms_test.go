package document_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFFormFields reads filled-in form fields and annotations: their
// appearances, their values when they have none, inherited through the
// field tree, and what is never shown (hidden annotations, passwords,
// unchecked boxes).
func TestPDFFormFields(t *testing.T) {
	t.Parallel()
	label := []show{{x: 50, y: 700, size: 10, s: "Name:"}}
	box := [4]float64{80, 696, 300, 712} // beside the label, a little above its baseline
	const ada = "BT /F1 10 Tf 2 4 Td (Ada Lovelace) Tj ET"
	tests := []struct {
		name    string
		annots  []genAnnot
		catalog string
		want    string
	}{
		{
			name:   "an appearance stream, on its label's line",
			annots: []genAnnot{{rect: box, dict: "/FT /Tx /V (Ada Lovelace) /DA (/F1 10 Tf 0 g)", ap: ada}},
			want:   "Name: Ada Lovelace",
		},
		{
			name: "an appearance whose matrix scales its box, fitted to the rectangle",
			// The BBox [0 0 100 8] doubled is the rectangle's 200 × 16:
			// the 5-point text is drawn at 10 points, at (104, 702).
			annots: []genAnnot{{rect: box, dict: "/FT /Tx", ap: "BT /F1 5 Tf 2 3 Td (Scaled) Tj ET", apDict: "/BBox [0 0 100 8] /Matrix [2 0 0 2 0 0]"}},
			want:   "Name: Scaled",
		},
		{
			name:   "a value without an appearance",
			annots: []genAnnot{{rect: box, dict: "/FT /Tx /V (Grace Hopper) /DA (/Helv 0 Tf 0 g)"}},
			want:   "Name: Grace Hopper",
		},
		{
			name:   "a UTF-16 value",
			annots: []genAnnot{{rect: box, dict: "/FT /Tx /V <FEFF005A006F00EB> /DA (/Helv 10 Tf 0 g)"}},
			want:   "Name: Zoë",
		},
		{
			name:   "a value inherited through /Parent",
			annots: []genAnnot{{rect: box, parent: "/FT /Tx /T (name) /V (Inherited Value) /DA (/Helv 9 Tf 0 g)"}},
			want:   "Name: Inherited Value",
		},
		{
			name:   "a hidden annotation",
			annots: []genAnnot{{rect: box, dict: "/F 2 /FT /Tx /V (Ada Lovelace)", ap: ada}},
			want:   "Name:",
		},
		{
			name:   "a NoView annotation",
			annots: []genAnnot{{rect: box, dict: "/F 32 /FT /Tx /V (Ada Lovelace)"}},
			want:   "Name:",
		},
		{
			name:   "a password field",
			annots: []genAnnot{{rect: box, dict: "/FT /Tx /Ff 8192 /V (secret)", ap: "BT /F1 10 Tf 2 4 Td (******) Tj ET"}},
			want:   "Name:",
		},
		{
			name:    "appearance and value are written once",
			annots:  []genAnnot{{rect: box, dict: "/FT /Tx /V (Ada Lovelace)", ap: ada}},
			catalog: "/AcroForm << /Fields [] /NeedAppearances true >>",
			want:    "Name: Ada Lovelace",
		},
		{
			name:    "a stale appearance the viewer is asked to redraw",
			annots:  []genAnnot{{rect: box, dict: "/FT /Tx /V (New Value) /DA (/Helv 10 Tf 0 g)", ap: "BT /F1 10 Tf 2 4 Td (Old Value) Tj ET"}},
			catalog: "/AcroForm << /Fields [] /NeedAppearances true >>",
			want:    "Name: New Value",
		},
		{
			name:   "an empty appearance of a filled field",
			annots: []genAnnot{{rect: box, dict: "/FT /Tx /V (Ring twice) /DA (/Helv 10 Tf 0 g)", ap: "/Tx BMC EMC"}},
			want:   "Name: Ring twice",
		},
		{
			name:   "a choice field shows its option's text",
			annots: []genAnnot{{rect: box, dict: "/FT /Ch /Ff 131072 /V (b) /Opt [[(a) (Apple)] [(b) (Banana)]] /DA (/Helv 10 Tf 0 g)"}},
			want:   "Name: Banana",
		},
		{
			name:   "a checked box drawn with a path",
			annots: []genAnnot{{rect: [4]float64{78, 697, 88, 707}, dict: "/FT /Btn /V /Yes /AS /Yes", states: map[string]string{"Yes": "1 1 m 9 9 l S", "Off": "BT ET"}}},
			want:   "Name: ☑",
		},
		{
			name:   "a checked box without an appearance",
			annots: []genAnnot{{rect: [4]float64{78, 697, 88, 707}, dict: "/FT /Btn /V /On"}},
			want:   "Name: ☑",
		},
		{
			name: "a checked box whose appearance draws its mark, and an unchecked one",
			annots: []genAnnot{
				{rect: [4]float64{78, 697, 88, 707}, dict: "/FT /Btn /V /Yes /AS /Yes", states: map[string]string{"Yes": "BT /F1 8 Tf 1 1 Td (X) Tj ET", "Off": "BT ET"}},
				{rect: [4]float64{120, 697, 130, 707}, dict: "/FT /Btn /V /Off /AS /Off", states: map[string]string{"Yes": "BT /F1 8 Tf 1 1 Td (X) Tj ET", "Off": "BT ET"}},
				{rect: [4]float64{140, 697, 150, 707}, dict: "/FT /Btn /V /Off"},
			},
			want: "Name: X",
		},
		{
			name: "a radio button without states of its own cannot tell it is chosen",
			annots: []genAnnot{
				{rect: [4]float64{78, 697, 88, 707}, parent: "/FT /Btn /Ff 32768 /T (size) /V /Large"},
			},
			want: "Name:",
		},
		{
			name: "a FreeText comment, with and without an appearance",
			annots: []genAnnot{
				{subtype: "FreeText", rect: box, dict: "/Contents (Checked by AB)", ap: "BT /F1 10 Tf 2 4 Td (Checked by AB) Tj ET"},
				{subtype: "FreeText", rect: [4]float64{48, 600, 300, 616}, dict: "/Contents (Typed note) /DA (/Helv 10 Tf 0 g)"},
			},
			want: "Name: Checked by AB\n\nTyped note",
		},
		{
			name: "a link and a sticky note draw no text",
			annots: []genAnnot{
				{subtype: "Link", rect: box, dict: "/A << /S /URI /URI (https://example.com) >>"},
				{subtype: "Text", rect: box, dict: "/Contents (A note)", ap: "BT /F1 10 Tf 2 4 Td (icon) Tj ET"},
			},
			want: "Name:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := readPDF(t, makePDFWith([]genPage{{shows: label, annots: tt.annots}}, tt.catalog), document.Options{})
			if got := pageText(doc, 0); got != tt.want {
				t.Errorf("page text %q, want %q", got, tt.want)
			}
			if len(doc.Warnings) > 0 {
				t.Errorf("warnings %q", doc.Warnings)
			}
		})
	}
}

// TestPDFDamagedAnnotation: an annotation whose appearance stream is
// damaged loses only itself, with a warning; the page and the other
// annotations are read.
func TestPDFDamagedAnnotation(t *testing.T) {
	t.Parallel()
	doc := readPDF(t, makePDF([]genPage{{
		shows: []show{{x: 50, y: 700, size: 10, s: "Name:"}, {x: 50, y: 650, size: 10, s: "City:"}},
		annots: []genAnnot{
			{rect: [4]float64{80, 696, 300, 712}, dict: "/FT /Tx", ap: "not zlib data at all", apDict: "/Filter /FlateDecode"},
			{rect: [4]float64{80, 646, 300, 662}, dict: "/FT /Tx /V (Paris) /DA (/Helv 10 Tf 0 g)"},
		},
	}}), document.Options{})
	if got, want := pageText(doc, 0), "Name:\n\nCity: Paris"; got != want {
		t.Errorf("page text %q, want %q", got, want)
	}
	if len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "1 annotations") {
		t.Errorf("warnings %q, want one about the damaged annotation", doc.Warnings)
	}
}

// TestPDFFilledForms reads a LibreOffice form filled by pdftk (with and
// without need_appearances), by pypdf (values only, empty appearances)
// and with its appearances removed, and a form ReportLab filled as it
// made it: every value is read, beside its label
// (testdata/forms/README.md says how they were made).
func TestPDFFilledForms(t *testing.T) {
	t.Parallel()
	pdftk := []string{"Customer name: Ada Lovelace", "Order number: PO-48213", "City: Zürich", "Express delivery: ✓", "Colour: Green", "Notes: Leave at the back door"}
	tests := []struct {
		file      string
		want      []string
		unchecked string // the line of an unchecked box, alone
	}{
		{"filled-pdftk.pdf", pdftk, "Gift wrap:"},
		{"filled-pdftk-na.pdf", pdftk, "Gift wrap:"},
		{"filled-noap.pdf", append(slices.Clone(pdftk[:3]), "Express delivery: ☑", "Colour: Green", "Notes: Leave at the back door"), "Gift wrap:"},
		{"filled-pypdf.pdf", []string{"Customer name: Grace Hopper", "Order number: PO-77031", "City: Málaga", "Colour: Blue", "Notes: Ring twice"}, "Gift wrap:"},
		// Labels set at a fixed column read as a table's cells; the
		// chosen radio button is before its caption.
		{"reportlab-form.pdf", []string{"Policy number: HX-2291-B", "Claimant: | Mary Somerville", "Damage: | Water", "Police report filed: ☑", "Contact by: | phone ☑ e-mail"}, "Photos attached:"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("testdata", "forms", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			doc := readPDF(t, b, document.Options{})
			lines := strings.Split(doc.Text, "\n")
			for _, w := range tt.want {
				if !slices.Contains(lines, w) {
					t.Errorf("no line %q in\n%s", w, doc.Text)
				}
			}
			if !slices.Contains(lines, tt.unchecked) {
				t.Errorf("the unchecked box shows something, or its label is missing:\n%s", doc.Text)
			}
		})
	}
}

// TestPDFFieldsOverScan: fields filled in over a scanned form leave the
// page a scan (its image kept, or read by OCR) and their values follow
// its text.
func TestPDFFieldsOverScan(t *testing.T) {
	t.Parallel()
	b := makePDF([]genPage{{
		jpeg: grayJPEG(t, 120, 160), jw: 120, jh: 160,
		annots: []genAnnot{{rect: [4]float64{80, 696, 300, 712}, dict: "/FT /Tx /V (Grace Hopper) /DA (/Helv 10 Tf 0 g)"}},
	}})
	tests := []struct {
		name string
		opts document.Options
		want string
	}{
		{"without OCR", document.Options{}, "Grace Hopper"},
		{"with OCR", document.Options{OCR: fakeOCR{"Name:"}}, "Name:\n\nGrace Hopper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := readPDF(t, b, tt.opts)
			if got := doc.Scanned(); len(got) != 1 || got[0] != 1 {
				t.Errorf("Scanned() = %v, want [1]", got)
			}
			if got := pageText(doc, 0); got != tt.want {
				t.Errorf("page text %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPDFAnnotationCap: past 10,000 annotations a page's others are left
// out, with a warning.
func TestPDFAnnotationCap(t *testing.T) {
	t.Parallel()
	annots := make([]genAnnot, 10_001)
	for i := range annots {
		annots[i] = genAnnot{subtype: "Link", rect: [4]float64{10, 10, 20, 20}}
	}
	annots[len(annots)-1] = genAnnot{rect: [4]float64{80, 696, 300, 712}, dict: "/FT /Tx /V (Past the cap)"}
	doc := readPDF(t, makePDF([]genPage{{shows: []show{{x: 50, y: 700, size: 10, s: "Name:"}}, annots: annots}}), document.Options{})
	if got := pageText(doc, 0); got != "Name:" {
		t.Errorf("page text %q, want the field past the cap left out", got)
	}
	if len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "only the first 10000 of its 10001 annotations") {
		t.Errorf("warnings %q", doc.Warnings)
	}
}
