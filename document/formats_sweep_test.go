package document

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEMLAttachmentCharsets: text attachments keep the charset their MIME
// part declares, and a Windows-1252 CSV sent without one (as Excel and
// Outlook send it) is still a table. The fixture (testdata/formats/
// legacy-charsets.eml) was found in the real-documents sweep, where both
// came back as "not UTF-8" errors.
func TestEMLAttachmentCharsets(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "legacy-charsets.eml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, format string
		want         []string
	}{
		{"notiz.txt", "text", []string{"Grüße aus Köln: Lieferung für Señor Muñoz bestätigt."}},
		{"preise.csv", "csv", []string{"A1: Artikel | Menge | Preis", "A2: Widget Ä | 40 | 12,50 €", "A3: Gadget Ö | 3 | 99,00 €"}},
		{"seite.html", "html", []string{"Straße und Gebühr: 5 €"}},
	}
	if len(d.Attachments) != len(tests) {
		t.Fatalf("%d attachments, want %d", len(d.Attachments), len(tests))
	}
	for i, tc := range tests {
		a := d.Attachments[i]
		if a.Err != nil {
			t.Errorf("%s: %v", tc.name, a.Err)
			continue
		}
		if a.Name != tc.name || a.Format != tc.format {
			t.Errorf("attachment %d is %s read as %s, want %s as %s", i, a.Name, a.Format, tc.name, tc.format)
		}
		for _, w := range tc.want {
			if !strings.Contains(a.Text, w) {
				t.Errorf("%s: text %q lacks %q", tc.name, a.Text, w)
			}
		}
		// Its original, read again on its own, gives the same text.
		again, err := ReadBytes(t.Context(), a.Original, Options{Name: a.Name})
		if err != nil {
			t.Errorf("%s re-read: %v", tc.name, err)
		} else if again.Text != a.Text {
			t.Errorf("%s re-read: text %q, want %q", tc.name, again.Text, a.Text)
		}
	}
}

// TestHTMLSelfClosedRawText: an XHTML page's self-closed <script/>,
// <iframe/> and <textarea/> end where they stand. The HTML parser reads
// the rest of the page as their raw text, which left 126 pages of the
// ImageMagick manual as Debian ships it empty (testdata/formats/
// xhtml-selfclosed.html is a hand-written page of the same shape).
func TestHTMLSelfClosedRawText(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "xhtml-selfclosed.html"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Widget Works\n\nWidget Works builds widgets in Springfield since 1999.\n\nOrder number WW-4711 ships on Monday."
	if got := strings.TrimSpace(d.Text); got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if d.Meta.Title != "Widget Works" {
		t.Errorf("title %q", d.Meta.Title)
	}
	// Everything but those tags is left as it was.
	for _, in := range []string{
		`<p>a <br/> b</p><script>if (a</b) {}</script>`,
		`<svg><title/><circle r="1"/></svg><p>kept</p>`,
		`<IFRAME SRC="x" />tail`,
	} {
		got := string(closeSelfClosedRaw([]byte(in)))
		want := strings.NewReplacer(`<title/>`, `<title></title>`, `<IFRAME SRC="x" />`, `<IFRAME SRC="x"></iframe>`).Replace(in)
		if got != want {
			t.Errorf("closeSelfClosedRaw(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestODPSlides: an Impress presentation is read as slides, as a PPTX is
// (one page each, "Slide N", lists, tables, speaker notes after "Notes:",
// page-number placeholders dropped); it used to be a plain zip whose text
// was its part list and raw XML. testdata/formats/slides.odp is
// slides.pptx converted by LibreOffice.
func TestODPSlides(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "slides.odp"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "odp" || len(d.Pages) != 4 {
		t.Fatalf("read as %s with %d pages, want odp with 4", d.Format, len(d.Pages))
	}
	want := []string{
		"Slide 1\n\nSupplier Review",
		"Slide 2\n\nRevenue grew\n\n- Globex ordered 400 widgets\n- Initech renewed the contract",
		"Notes:\nMention the late delivery penalty of 200 EUR.",
		"Slide 3\n\nNext steps\n\nSign the renewal before the end of April.\n\nNotes:\nAsk legal about clause seven.",
		"Slide 4\n\nPrices\n\nProduct | Price\nWidget | 100\nGadget | 50",
	}
	rest := d.Text
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("text lacks %q (in order) in:\n%s", w, d.Text)
		}
		rest = rest[i+len(w):]
	}
	if strings.Contains(d.Text, "<number>") || strings.Contains(d.Text, "content.xml") {
		t.Errorf("placeholder or container listing in the text:\n%s", d.Text)
	}
	for i, p := range d.Pages {
		if !strings.HasPrefix(d.Text[p.Start:p.End], fmt.Sprintf("Slide %d\n", i+1)) {
			t.Errorf("page %d starts %q", i+1, d.Text[p.Start:min(p.End, p.Start+20)])
		}
	}
}

// TestPDFOddLengthUnicodeMap: a Unicode map whose ligature strings have
// an odd length (LuaTeX 0.7x: <540068> for "Th") reads as the letters
// meant; it panicked, and the page lost everything from that glyph on.
// testdata/odd-tounicode.pdf is written by make-sweep-pdfs.py.
func TestPDFOddLengthUnicodeMap(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "odd-tounicode.pdf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "The patterns after the fault\nSecond line stays."; d.Text != want {
		t.Errorf("text %q, want %q (warnings %q)", d.Text, want, d.Warnings)
	}
	if len(d.Warnings) > 0 {
		t.Errorf("warnings %q", d.Warnings)
	}
}

// TestPDFLigaturesSpelledOut: the Latin ligature characters a font's
// Unicode map gives (TeX maps its fi glyph to U+FB01) are spelled out, so
// that a value the model writes as "file" is found in the text.
func TestPDFLigaturesSpelledOut(t *testing.T) {
	t.Parallel()
	if got := ligatures.Replace("\uFB01le \uFB02ow o\uFB00er e\uFB03cient ba\uFB04e"); got != "file flow offer efficient baffle" {
		t.Errorf("got %q", got)
	}
}

// TestPDFUnknownEscape: a backslash before a character that is no escape
// is ignored, as the PDF standard says; it failed the page's content from
// there (microtype.pdf lost 40% of its words to pdfTeX's
// "/Span<</ActualText(\\protect <)>>BDC"). testdata/actualtext-escape.pdf
// is written by make-sweep-pdfs.py.
func TestPDFUnknownEscape(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "actualtext-escape.pdf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Text, "After the span") || len(d.Warnings) > 0 {
		t.Errorf("text %q, warnings %q", d.Text, d.Warnings)
	}
}

// TestPDFInlineImage: an inline image's data is passed over as bytes;
// lexed as tokens, its first '<' byte failed the page from there
// (LilyPond's essay.pdf). testdata/inline-image.pdf is written by
// make-sweep-pdfs.py.
func TestPDFInlineImage(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "inline-image.pdf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Before the image\n\nAfter the image"; d.Text != want || len(d.Warnings) > 0 {
		t.Errorf("text %q, want %q; warnings %q", d.Text, want, d.Warnings)
	}
}

// TestPDFBuiltinEncoding: a Type 1 font without /Encoding or a Unicode
// map is read by the encoding its program carries, as TeX's CMMI10 puts
// its period at code 58 (":" in ASCII). testdata/builtin-encoding.pdf is
// written by make-sweep-pdfs.py.
func TestPDFBuiltinEncoding(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "builtin-encoding.pdf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Index ... 8\nα,"; d.Text != want {
		t.Errorf("text %q, want %q", d.Text, want)
	}
}

// TestHTMLFragmentAndCGIHeader: a page saved as a fragment (Ghostscript's
// News.htm: a comment, then <h1>, <p>, <ul>) and a page behind a CGI
// header (man2html's bash.html: "Content-type: text/html" and a blank
// line) are HTML; both were read as plain text, tags and all. The fixtures
// are hand-written in the shape of those two.
func TestHTMLFragmentAndCGIHeader(t *testing.T) {
	t.Parallel()
	tests := []struct{ file, want string }{
		{"fragment.htm", "Recent Changes in Widget Works\n\nVersion 2.0 (2026-03-02)\n\nHighlights in this release include:\n\n- Widgets ship on Mondays."},
		{"man2html.html", "WIDGET\n\nSection: User Commands (1)\nNAME\n\nwidget - assemble widgets in Springfield"},
	}
	for _, tc := range tests {
		d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", tc.file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Format != "html" || d.Text != tc.want {
			t.Errorf("%s: read as %s, text %q, want html and %q", tc.file, d.Format, d.Text, tc.want)
		}
	}
	// XML that shares tags with HTML is not taken for a fragment.
	if matchHTML([]byte("<?xml version=\"1.0\"?>\n<article><title>T</title><para>text</para><table><row/></table></article>"), nil, 0) {
		t.Error("DocBook matched as HTML")
	}
}

// TestPDFFontEncodingFallbacks: codes a simple font's Unicode map does not
// name are read by the font's encoding (xdvipdfmx maps only VnTeX's
// accented letters: the rest of babel-vietnamese's listings read as
// U+FFFD), and a CFF font program (FontFile3 /Type1C) without /Encoding
// or a Unicode map is read by its own Encoding and charset (Ghostscript
// 7's embedding of the Cyrillic LH fonts in eskd.pdf: 76 U+FFFD), and a
// CJK font named but not embedded, Identity-H without a Unicode map, is
// read by Adobe's map of its character collection (pTeX's Ryumin-Light in
// jlshort.pdf: "への道" came out as "�†�w"), and an /Encoding's
// /Differences naming letters uniXXXX are read (pdfTeX's VnTeX fonts in
// lshort-vi.pdf: "của" as "cõa"). The fixtures are written by
// make-sweep-pdfs.py; pdftotext reads all but cid-japan1.pdf as wanted
// here (it drops that one's の, which Adobe's map names).
func TestPDFFontEncodingFallbacks(t *testing.T) {
	t.Parallel()
	tests := []struct{ file, want string }{
		{"partial-tounicode.pdf", "Việt Nam và Lao"},
		{"cff-encoding.pdf", "Мир.\nend."},
		{"cid-japan1.pdf", "日本語の文書\nABCD"},
		{"differences-uni.pdf", "của một"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			d, err := ReadFile(t.Context(), filepath.Join("testdata", tc.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Text != tc.want {
				t.Errorf("text %q, want %q", d.Text, tc.want)
			}
		})
	}
}

// TestCFFEncoding reads the built-in encodings of CFF programs: the
// fixture's (format 0 with a supplement, charset ranges), the same with a
// format 1 encoding, and damaged programs (an error, no panic).
func TestCFFEncoding(t *testing.T) {
	t.Parallel()
	prog, err := os.ReadFile(filepath.Join("testdata", "cff-encoding.cff"))
	if err != nil {
		t.Fatal(err)
	}
	fixture := map[byte]string{0xed: "afii10030", 0xc9: "afii10074", 0xd2: "afii10082", 0x3a: "period", 0x2e: "period"}
	// The same program with its Encoding rewritten as format 1: one
	// range, codes 0xC0-0xC3 for glyphs 1-4, no supplement.
	ranged := slices.Clone(prog)
	enc := bytes.Index(ranged, []byte{0x80, 0x04, 0xed})
	if enc < 0 {
		t.Fatal("the fixture's encoding is not where make-sweep-pdfs.py puts it")
	}
	copy(ranged[enc:], []byte{0x01, 0x01, 0xc0, 0x03})
	tests := []struct {
		name    string
		prog    []byte
		want    map[byte]string
		wantErr bool
	}{
		{"format 0 and supplement", prog, fixture, false},
		{"format 1", ranged, map[byte]string{0xc0: "afii10030", 0xc1: "afii10074", 0xc2: "afii10082", 0xc3: "period"}, false},
		{"truncated", prog[:len(prog)-9], nil, true},
		{"not CFF", []byte("%!PS-AdobeFont-1.0"), nil, true},
		{"empty", nil, nil, true},
	}
	for _, tc := range tests {
		got, err := cffEncoding(tc.prog)
		if (err != nil) != tc.wantErr || !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %q, %v; want %q, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
