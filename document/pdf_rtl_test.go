package document

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/pdf"
)

// rtlLine is one line of makeRTLPDF: its glyphs' texts (what the Unicode
// map gives each: a letter, a presentation form, a digit) left to right as
// they stand on the page, and the line in logical order, as it should read.
type rtlLine struct {
	visual  []string
	logical string
	// space, when not 0, draws no space glyphs: a space is a gap this
	// many font sizes wide (a justified line's shrunk word space).
	space float64
}

// glyphs splits s into one glyph a rune.
func glyphs(s string) []string {
	var g []string
	for _, r := range s {
		g = append(g, string(r))
	}
	return g
}

// rev reverses s rune by rune: a right-to-left word as it stands on the
// page, read left to right (the words here have no marks).
func rev(s string) string {
	rs := []rune(s)
	slices.Reverse(rs)
	return string(rs)
}

// rtlFont is the font of makeRTLPDF: by default a Type 3 font whose glyphs
// are boxes half an em wide, one code a glyph text, named g32, g33…, with
// a ToUnicode map naming each code's text, the only way to read it.
type rtlFont struct {
	// type1 makes it a Type 1 font, not embedded, its glyphs half an em
	// wide, with /Differences (as pdfTeX writes arabi's fonts).
	type1 bool
	// names names each glyph text's glyph in /Differences (names[" "]
	// too) instead of g32, g33…
	names map[string]string
	// noMap leaves the ToUnicode map out: the names are all there is.
	noMap bool
}

// makeRTLPDF writes a one-page PDF of lines in font. Each line is drawn
// one glyph at a time at its place (x growing left to right, as on the
// page), in the order order gives: "visual", left to right (XeTeX, LuaTeX,
// Chromium); "decreasing-x", right to left, each glyph left of the one
// before (every glyph of the line, Latin and digits too: content order
// must not decide the reading).
func makeRTLPDF(t *testing.T, lines []rtlLine, order string, font rtlFont) []byte {
	t.Helper()
	codes := map[string]int{" ": 0x20}
	var texts []string // by code - 0x21
	for _, ln := range lines {
		for _, g := range ln.visual {
			if _, ok := codes[g]; !ok {
				codes[g] = 0x21 + len(texts)
				texts = append(texts, g)
			}
		}
	}
	if len(texts) > 0x7E-0x20 {
		t.Fatalf("%d glyphs: more than codes 0x21–0x7E hold", len(texts))
	}
	var c strings.Builder
	for i, ln := range lines {
		y := 700 - 20*i
		idx := make([]int, len(ln.visual))
		for k := range idx {
			idx[k] = k
		}
		if order == "decreasing-x" {
			slices.Reverse(idx)
		}
		xs := make([]float64, len(ln.visual)) // each glyph's place
		x := 72.0
		for k, g := range ln.visual {
			xs[k] = x
			x += 5
			if g == " " && ln.space != 0 {
				x += 10*ln.space - 5
			}
		}
		c.WriteString("BT /R 10 Tf\n")
		for _, k := range idx {
			if ln.visual[k] == " " && ln.space != 0 {
				continue
			}
			fmt.Fprintf(&c, "1 0 0 1 %g %d Tm <%02X> Tj\n", xs[k], y, codes[ln.visual[k]])
		}
		c.WriteString("ET\n")
	}
	var cmap strings.Builder
	cmap.WriteString("/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /RTL def 1 begincodespacerange <00> <FF> endcodespacerange\n")
	fmt.Fprintf(&cmap, "%d beginbfchar\n<20> <0020>\n", len(texts)+1)
	for i, s := range texts {
		fmt.Fprintf(&cmap, "<%02X> <", 0x21+i)
		for _, r := range s {
			fmt.Fprintf(&cmap, "%04X", r)
		}
		cmap.WriteString(">\n")
	}
	cmap.WriteString("endbfchar endcmap CMapName currentdict /CMap defineresource pop end end")

	var b bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
		return len(offsets)
	}
	stream := func(s string) int { return obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s)) }
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	const box = "50 0 d0 5 0 40 60 re f"
	proc := stream(box)
	var diffs, procs []string
	for code := 0x20; code < 0x21+len(texts); code++ {
		name := fmt.Sprintf("g%d", code)
		if font.names != nil {
			text := " "
			if code > 0x20 {
				text = texts[code-0x21]
			}
			if name = font.names[text]; name == "" {
				t.Fatalf("no glyph name for %q", text)
			}
		}
		diffs = append(diffs, "/"+name)
		procs = append(procs, fmt.Sprintf("/%s %d 0 R", name, proc))
	}
	tounicode := ""
	if !font.noMap {
		tounicode = fmt.Sprintf(" /ToUnicode %d 0 R", stream(cmap.String()))
	}
	last, n := 0x20+len(texts), len(texts)+1
	dict := fmt.Sprintf("/Type /Font /Subtype /Type3 /FontBBox [0 0 50 60] /FontMatrix [0.01 0 0 0.01 0 0] /CharProcs << %s >> /Resources << >> /Widths [%s]",
		strings.Join(procs, " "), strings.TrimSpace(strings.Repeat("50 ", n)))
	if font.type1 {
		dict = fmt.Sprintf("/Type /Font /Subtype /Type1 /BaseFont /RTLTest /Widths [%s]", strings.TrimSpace(strings.Repeat("500 ", n)))
	}
	fontObj := obj(fmt.Sprintf("<< %s /Encoding << /Type /Encoding /Differences [32 %s] >> /FirstChar 32 /LastChar %d%s >>", dict, strings.Join(diffs, " "), last, tounicode))
	content := stream(c.String())
	page := obj(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /R %d 0 R >> >> /Contents %d 0 R >>", len(offsets)+2, fontObj, content))
	pages := obj(fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page))
	root := obj(fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, root, xref)
	return b.Bytes()
}

// rtlLines are the lines of TestPDFRightToLeftGenerated, each as it stands
// on the page (left to right) and as it reads.
var rtlLines = []rtlLine{
	// An invoice's total: an Arabic word in presentation forms (what
	// XeTeX's and Chromium's Unicode maps give for shaped glyphs), a
	// number with its separators, a Latin currency code.
	{
		visual:  glyphs("SAR 1,250.00 " + "\uFEC9\uFEEE\uFEE4\uFEA0\uFEE4\uFEDF\uFE8D"),
		logical: "المجموع 1,250.00 SAR",
	},
	// A TeX command in a Persian sentence (xepersian's manual): the
	// backslash touches the Latin letters and keeps to their side; the
	// full stop ends the right-to-left sentence, at its left.
	{
		visual:  glyphs("." + rev("کنید") + " " + rev("استفاده") + ` \ref{eq:1} ` + rev("فرمان") + " " + rev("از")),
		logical: `از فرمان \ref{eq:1} استفاده کنید.`,
	},
	// Hebrew with a number and a comma.
	{
		visual:  glyphs(".12 " + rev("פרק") + " ," + rev("עולם") + " " + rev("שלום")),
		logical: "שלום עולם, פרק 12.",
	},
	// A lam-alef ligature (one glyph, two letters) in "السلام".
	{
		visual:  append(glyphs("\uFEE1\uFEFC"), glyphs("\uFEB4\uFEDF\uFE8D")...),
		logical: "السلام",
	},
	// A justified Persian line (lshort-persian): no space glyphs, word
	// spaces shrunk to 0.11 of the font size, closer than Latin words
	// ever are.
	{
		visual:  glyphs(rev("یا قضیه نمایش می دهد")),
		logical: "یا قضیه نمایش می دهد",
		space:   0.11,
	},
	// A left-to-right line is left as it is.
	{
		visual:  glyphs("Total: 1,250.00 SAR (net)"),
		logical: "Total: 1,250.00 SAR (net)",
	},
}

// TestPDFRightToLeftGenerated reads lines of Arabic, Persian and Hebrew
// mixed with numbers and Latin words from a PDF made here, whose only
// text is its glyphs' Unicode map, drawn left to right (visual order, as
// XeTeX does) and right to left (each glyph left of the one before): both
// read in logical order, as pdftotext gives it, presentation forms as the
// letters they stand for.
func TestPDFRightToLeftGenerated(t *testing.T) {
	t.Parallel()
	var want []string
	for _, ln := range rtlLines {
		want = append(want, ln.logical)
	}
	for _, order := range []string{"visual", "decreasing-x"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), makeRTLPDF(t, rtlLines, order, rtlFont{}), Options{Name: "rtl-" + order + ".pdf"})
			if err != nil {
				t.Fatal(err)
			}
			wantLines(t, d.Text, want)
		})
	}
}

// TestPDFArabicGlyphNames reads Arabic from a font without a Unicode map
// whose glyphs are named as Arabic fonts name their contextual forms and
// ligatures ("afii57444.ini", "afii57444_afii57415.fin": the Adobe Glyph
// List's rules), as the Dad font of TeX Live's dad package does; the
// page read as no text before.
func TestPDFArabicGlyphNames(t *testing.T) {
	t.Parallel()
	// "السلام عليكم" ("peace be upon you"), each glyph by its name.
	names := map[string]string{
		" ": "space",
		"م": "afii57445.fin", "ا": "afii57415.iso", "ل": "afii57444.ini", "س": "afii57427.med",
		"لا": "afii57444_afii57415.fin", "ع": "afii57433.ini", "ي": "afii57450.med", "ك": "afii57443.med",
	}
	lines := []rtlLine{{
		visual:  []string{"م", "ك", "ي", "ل", "ع", " ", "م", "لا", "س", "ل", "ا"},
		logical: "السلام عليكم",
	}}
	d, err := ReadBytes(t.Context(), makeRTLPDF(t, lines, "visual", rtlFont{names: names, noMap: true}), Options{Name: "glyph-names.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(d.Text); got != lines[0].logical {
		t.Errorf("text %q, want %q", got, lines[0].logical)
	}
}

// TestGlyphText reads glyph names by the Adobe Glyph List's rules.
func TestGlyphText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"afii57444", "\u0644", true},
		{"afii57444.ini4", "\u0644", true},
		{"uni0627.fina", "\u0627", true},
		{"afii57444_afii57415.fin", "\u0644\u0627", true},
		{"f_f_i", "ffi", true},
		{"a.sc", "a", true},
		{".notdef", "", false},
		{"glyph12.alt", "", false},
		{"f_glyph12", "", false},
	} {
		if got, ok := pdf.GlyphText(tt.name); got != tt.want || ok != tt.ok {
			t.Errorf("GlyphText(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestPDFUnicodeMapBeforeDifferences: a Type 1 font with /Differences
// naming glyphs outside the glyph list ("laminitial") and a ToUnicode map
// naming their letters, as pdfTeX writes the arabi package's fonts
// (samplebook.pdf): the map is read. The Differences alone were before:
// each code came out as its byte, a control character (dropped) or ASCII
// ("CAhn HmJ" for "شمس النهار").
func TestPDFUnicodeMapBeforeDifferences(t *testing.T) {
	t.Parallel()
	names := map[string]string{
		" ":      "space",
		"\uFEB2": "seenfinal", "\uFEE4": "meemmedial", "\uFEB7": "sheeninitial",
		"\uFEAE": "rehfinal", "\uFE8E": "aleffinal", "\uFEEC": "hehmedial", "\uFEE8": "noonmedial", "\uFEDF": "laminitial", "\uFE8D": "alefisolated",
	}
	lines := []rtlLine{{
		visual:  glyphs("\uFEAE\uFE8E\uFEEC\uFEE8\uFEDF\uFE8D \uFEB2\uFEE4\uFEB7"),
		logical: "شمس النهار",
	}}
	d, err := ReadBytes(t.Context(), makeRTLPDF(t, lines, "visual", rtlFont{type1: true, names: names}), Options{Name: "differences-tounicode.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(d.Text); got != lines[0].logical {
		t.Errorf("text %q, want %q", got, lines[0].logical)
	}
}
