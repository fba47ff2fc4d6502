package document

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestPDFRightToLeft reads one HTML page (testdata/bidi.html; bidi.svg for
// cairo) printed to PDF by three producers, each drawing right-to-left
// text its own way: Chromium left to right with presentation forms in its
// Unicode map and brackets mapped to the shape drawn, LibreOffice left to
// right with brackets mapped to the character written, cairo (rsvg-convert)
// in logical order, each glyph left of the one before, its words split
// into items drawn out of order. All read in logical order. pdftotext
// prints the Hebrew name in the English line backwards on these pages
// (it takes the page's majority direction for every line) and wraps runs
// in embedding controls.
//
//	chromium --headless --print-to-pdf=bidi-chromium.pdf bidi.html
//	soffice --convert-to odt bidi.html; soffice --convert-to pdf bidi.odt
//	rsvg-convert -f pdf -o bidi-cairo.pdf bidi.svg
func TestPDFRightToLeft(t *testing.T) {
	t.Parallel()
	want := []string{
		"שלום עולם, זהו משפט בעברית.",
		"مرحبا بالعالم، هذه جملة عربية.",
		"המחיר הוא 2024 שקלים לפי PDF (גרסה 3).",
		"صدر الإصدار 3.5 من Linux في عام 2024.",
		"The author (דוד בן גוריון) wrote in 1948.",
	}
	for _, name := range []string{"bidi-chromium.pdf", "bidi-libreoffice.pdf", "bidi-cairo.pdf"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadFile(t.Context(), filepath.Join("testdata", name), Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantLines(t, d.Text, want)
		})
	}
}

// TestPDFPoints: Hebrew points and Arabic vowels (marks drawn as glyphs
// of their own) stay with their letters, and Arabic vowels raised or
// lowered off the baseline stay on its line. Chromium draws marks before
// their letter, cairo after it; both place them from the letter's left
// edge, inside the letter on its left. testdata/bidi-points.html and .svg,
// printed as above. pdftotext scatters these marks over five lines.
// Compared in NFC: the two order a letter's marks differently.
func TestPDFPoints(t *testing.T) {
	t.Parallel()
	const hebrew, arabic = "בְּרֵאשִׁית בָּרָא אֱלֹהִים", "بِسْمِ اللَّهِ الرَّحْمَٰنِ"
	tests := []struct{ name, want string }{
		// Chromium maps its glyph of a shadda and a fatha to U+0000, but
		// gives each cluster of letter and marks as ActualText: read, the
		// marks are kept.
		{"bidi-points-chromium.pdf", hebrew + "\n\n" + arabic},
		{"bidi-points-cairo.pdf", hebrew + "\n" + arabic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadFile(t.Context(), filepath.Join("testdata", tt.name), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := norm.NFC.String(d.Text); got != norm.NFC.String(tt.want) {
				t.Errorf("text %q, want %q", d.Text, tt.want)
			}
		})
	}
}

// TestPDFIndic: Devanagari, Bengali and Tamil as LibreOffice writes them:
// a cluster's glyphs under an ActualText, some mapped to nothing (a
// Tamil letter's whole cluster), and the line's spaces drawn apart in
// the paragraph's Latin font. testdata/indic.txt printed to PDF by
// `soffice --headless --convert-to pdf` (LibreOffice 7.4, Debian's
// fonts-lohit-deva, -beng-bengali and -taml: SIL OFL 1.1, embedded as
// subsets). pdftotext reads it word for word, as the reader now does.
func TestPDFIndic(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("testdata", "indic.txt"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "indic-libreoffice.pdf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, w := strings.TrimSpace(d.Text), strings.TrimSpace(string(want)); got != w {
		t.Errorf("text\n%s\nwant\n%s", got, w)
	}
}

// TestLogicalLine turns lines as read left to right into logical order.
func TestLogicalLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, visual, want string }{
		{"Latin untouched", "The cost is 4.50 (net).", "The cost is 4.50 (net)."},
		{"Hebrew", "םלוע םולש", "שלום עולם"},
		{"numbers keep their digits", "2024 תנשב 3.5 אוה", "הוא 3.5 בשנת 2024"},
		{"Latin words keep their order in an RTL line", "GNU Linux תכרעמ לש הנושארה הסרגה", "הגרסה הראשונה של מערכת GNU Linux"},
		{"a Hebrew name in an English line", "The author ןוירוג ןב דוד wrote", "The author דוד בן גוריון wrote"},
		{"a number between Hebrew words in an English line", "as in רפס ,5 קרפ above", "as in פרק 5, ספר above"},
		{"brackets drawn as shapes mirrored", ".(3 הסרג) PDF", "PDF (גרסה 3)."},
		{"brackets mapped to characters kept", ".)3 הסרג( PDF", "PDF (גרסה 3)."},
		{"points stay after their letter", "\u05dd\u05d5\u05b9\u05dc\u05e9\u05c1", "\u05e9\u05c1\u05dc\u05d5\u05b9\u05dd"},
		{"Arabic with Arabic-Indic digits", "١٢٣ مقر", "رقم ١٢٣"},
		{"table cells in an RTL row", "12 | ריחמ", "מחיר | 12"},
		{"percent joins its number", "50% החנה", "הנחה 50%"},
		{"a TeX command keeps its backslash and braces", ".دینک هدافتسا \\ref{eq:1} نامرف زا", "از فرمان \\ref{eq:1} استفاده کنید."},
		{"a Latin word ending an RTL sentence", ".Linux הלעפהה תכרעמ םע", "עם מערכת ההפעלה Linux."},
		{"a path in an RTL line", "/usr/share/doc ךותב םיאצמנ םיצבקה", "הקבצים נמצאים בתוך /usr/share/doc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := logicalLine(tt.visual); got != tt.want {
				t.Errorf("logicalLine(%q) = %q, want %q", tt.visual, got, tt.want)
			}
		})
	}
}

// TestArabicForms: presentation forms are spelled as letters, as pdftotext
// does; a lam-alef ligature glyph reads as two letters, kept in logical
// order through the reversal of its line.
func TestArabicForms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"\uFEFB", "\u0644\u0627"},                         // lam-alef ligature
		{"\uFEE3\uFEAE", "\u0645\u0631"},                   // initial meem, final reh
		{"\uFE77", "\u064E"},                               // medial fatha: no tatweel
		{"x\u00B2 \uFB01 \uFEE1", "x\u00B2 \uFB01 \u0645"}, // only Arabic forms
	} {
		if got := arabicForms(tt.in); got != tt.want {
			t.Errorf("arabicForms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got, want := logicalLine("\u0645"+visualGlyph("\u0644\u0627")+"\u0633"), "\u0633\u0644\u0627\u0645"; got != want { // سلام
		t.Errorf("got %q, want %q", got, want)
	}
}

// BenchmarkLogicalLine measures the check every line of a page goes
// through: a Latin line is not copied.
func BenchmarkLogicalLine(b *testing.B) {
	const line = "A paragraph of running text on the page, with naïve accents."
	b.ReportAllocs()
	for b.Loop() {
		if logicalLine(line) != line {
			b.Fatal("changed")
		}
	}
}

// FuzzLogicalLine: any line comes back with its characters, reordered.
func FuzzLogicalLine(f *testing.F) {
	f.Add("The author (ןוירוג ןב דוד) wrote in 1948.")
	f.Add(".(3 הסרג) PDF 2024 ,50% \u05dd\u05d5\u05b9 ١٢٣ مقر")
	f.Fuzz(func(t *testing.T, s string) {
		if got := logicalLine(s); utf8.RuneCountInString(got) != utf8.RuneCountInString(s) {
			t.Fatalf("logicalLine(%q) = %q: characters lost or added", s, got)
		}
	})
}

// wantLines compares text's lines (blank lines between paragraphs left
// out) with want, line by line.
func wantLines(t *testing.T, text string, want []string) {
	t.Helper()
	got := strings.Split(strings.ReplaceAll(text, "\n\n", "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("text %q, want the lines %q", text, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
		}
	}
}
