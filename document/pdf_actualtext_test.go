package document_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// makeContentPDF writes a one-page PDF of the content stream given, with
// resources F1 (Helvetica, WinAnsi, every glyph 500 units wide), F5 (a
// Type 0 font, Identity-H, of a custom collection, whose Unicode map
// names only CIDs 1 and 2: A and B) and the page's /Properties entries
// props.
func makeContentPDF(content, props string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
		return len(offsets)
	}
	stream := func(dict, data string) int {
		return obj(fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(data), dict, data))
	}
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	widths := strings.TrimSpace(strings.Repeat("500 ", 224))
	f1 := obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /FirstChar 32 /LastChar 255 /Widths [" + widths + "] >>")
	const cm = "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Custom def 1 begincodespacerange <0000> <FFFF> endcodespacerange 2 beginbfchar <0001> <0041> <0002> <0042> endbfchar endcmap CMapName currentdict /CMap defineresource pop end end"
	tu := stream("", cm)
	cid := obj("<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Custom /CIDSystemInfo << /Registry (Custom) /Ordering (Glyphs) /Supplement 0 >> /DW 500 >>")
	f5 := obj(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Custom /Encoding /Identity-H /DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>", cid, tu))
	contents := stream("", content)
	page := obj(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R /F5 %d 0 R >> /Properties << %s >> >> /Contents %d 0 R >>", len(offsets)+2, f1, f5, props, contents))
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

// utf16Text is s as a PDF hex string in UTF-16BE with its byte order mark.
func utf16Text(s string) string {
	var b strings.Builder
	b.WriteString("<FEFF")
	for _, r := range s {
		if r > 0xFFFF {
			r -= 0x10000
			fmt.Fprintf(&b, "%04X%04X", 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			continue
		}
		fmt.Fprintf(&b, "%04X", r)
	}
	return b.String() + ">"
}

// TestPDFActualText: marked content's /ActualText (PDF 32000-1 §14.9.4)
// stands for the span's glyphs, where they were drawn: Word's and
// Acrobat's ligatures, symbols and hyphens, accsupp's, complex scripts'.
func TestPDFActualText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content, props string
		want                 []string // in the page's text, in order
		not                  []string // not in it
	}{{
		// A ligature glyph (code 0xAD of this font, "-" in WinAnsi)
		// that the text spells "fi".
		name:    "ligature",
		content: "BT /F1 10 Tf 72 700 Td (The ) Tj /Span << /ActualText (fi) >> BDC (\xad) Tj EMC (le is here.) Tj ET",
		want:    []string{"The file is here."},
		not:     []string{"-"},
	}, {
		// Word's hyphen at a line's end: a span whose ActualText is
		// empty. The word goes on on the next line, in capitals.
		name: "hyphen",
		content: "BT /F1 10 Tf 72 700 Td (SEE THE INTER) Tj /Span << /ActualText () >> BDC (-) Tj EMC ET\n" +
			"BT /F1 10 Tf 72 686 Td (NATIONAL OFFICE NOW) Tj ET",
		want: []string{"SEE THE INTERNATIONAL OFFICE NOW"},
		not:  []string{"-", "\u00ad"},
	}, {
		// The property list by name, from the page's /Properties.
		name:    "named",
		content: "BT /F1 10 Tf 72 700 Td (Total ) Tj /Span /MC0 BDC (x) Tj EMC ( 12) Tj ET",
		props:   "/MC0 << /ActualText (\\(sum\\)) >>",
		want:    []string{"Total (sum) 12"},
		not:     []string{"Total x"},
	}, {
		// Shaped Devanagari: the glyphs spell nothing, the ActualText
		// (UTF-16BE) is the word.
		name:    "utf16",
		content: "BT /F1 10 Tf 72 700 Td (Word: ) Tj /Span << /ActualText " + utf16Text("हिन्दी") + " >> BDC (\x80\x81\x82) Tj EMC ( end) Tj ET",
		want:    []string{"Word: हिन्दी end"},
		not:     []string{"€"},
	}, {
		// Nested spans: the outermost ActualText stands for all.
		name:    "nested",
		content: "BT /F1 10 Tf 72 700 Td (A ) Tj /Span << /ActualText (outer) >> BDC (x) Tj /Span << /ActualText (inner) >> BDC (y) Tj EMC (z) Tj EMC ( B) Tj ET",
		want:    []string{"A outer B"},
		not:     []string{"inner", "xyz", "y"},
	}, {
		// A span without glyphs adds nothing (as pdftotext); UTF-8 with
		// its byte order mark (PDF 2.0) is read as UTF-8.
		name:    "empty span, UTF-8",
		content: "BT /F1 10 Tf 72 700 Td (One ) Tj /Span << /ActualText (ghost) >> BDC EMC /Span << /ActualText (\xef\xbb\xbfna\xc3\xafve) >> BDC (n) Tj EMC ( two) Tj ET",
		want:    []string{"One naïve two"},
		not:     []string{"ghost", "ï»¿"},
	}, {
		// LibreOffice's Bengali: the ActualText of a cluster over its
		// glyphs, the vowel sign's mapped, the consonant's not. The span
		// reaches as far as all of them, up to the next cluster.
		name:    "glyphs without text",
		content: "BT /F5 10 Tf 72 700 Td /Span << /ActualText " + utf16Text("কি") + " >> BDC <00010003> Tj EMC /Span << /ActualText " + utf16Text("তাব") + " >> BDC <0002> Tj EMC ET",
		want:    []string{"কিতাব"},
		not:     []string{"কি তাব"},
	}, {
		// LibreOffice's Tamil: a span whose only glyph maps to nothing
		// is its ActualText still.
		name:    "a span of glyphs without text",
		content: "BT /F5 10 Tf 72 700 Td /Span << /ActualText " + utf16Text("க") + " >> BDC <0003> Tj EMC /Span << /ActualText " + utf16Text("வும்") + " >> BDC <0001> Tj EMC ET",
		want:    []string{"கவும்"},
	}, {
		// An empty ActualText over glyphs without text adds nothing.
		name:    "empty over glyphs without text",
		content: "BT /F1 10 Tf 72 700 Td (ab) Tj ET BT /F5 10 Tf 82 700 Td /Span << /ActualText () >> BDC <0003> Tj EMC ET BT /F1 10 Tf 87 700 Td (cd) Tj ET",
		want:    []string{"ab"},
		not:     []string{"\u00ad"},
	}, {
		// Indic letters of a word touch: 0.1 of the font size between
		// two is a word space (LibreOffice's Devanagari beside its spaces
		// in another font), 0.05 is not; Latin letters 0.1 apart stay one
		// word.
		name: "Indic word gap",
		content: "BT /F1 10 Tf 72 700 Td /Span << /ActualText " + utf16Text("है।") + " >> BDC (x) Tj EMC 6 0 Td /Span << /ActualText " + utf16Text("प्रिय") + " >> BDC (x) Tj EMC ET\n" +
			"BT /F1 10 Tf 72 680 Td /Span << /ActualText " + utf16Text("हिन्") + " >> BDC (x) Tj EMC 5.5 0 Td /Span << /ActualText " + utf16Text("दी") + " >> BDC (x) Tj EMC ET\n" +
			"BT /F1 10 Tf 72 660 Td (ab) Tj 11 0 Td (cd) Tj ET\n" +
			"BT /F1 10 Tf 72 640 Td /Span << /ActualText " + utf16Text("य") + " >> BDC (x) Tj EMC 6 0 Td /Span << /ActualText " + utf16Text("ुक्त") + " >> BDC (x) Tj EMC ET",
		want: []string{"है। प्रिय", "हिन्दी", "abcd", "युक्त"},
	}, {
		// Codes nothing reads are left out, not U+FFFD each.
		name:    "unknown codes",
		content: "BT /F5 10 Tf 72 700 Td <0001000300040005> Tj <0002> Tj ET",
		want:    []string{"A", "B"},
		not:     []string{"\uFFFD"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := readPDF(t, makeContentPDF(tt.content, tt.props), document.Options{})
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

// TestPDFUnknownCodesUnreadable: a page whose glyphs no font reads as
// text, or mostly so, is unreadable (OCR's to read), not a page of blanks
// or of U+FFFD.
func TestPDFUnknownCodesUnreadable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content string
		unreadable    bool
	}{
		{"none read", "BT /F5 10 Tf 72 700 Td <000300040005> Tj ET", true},
		{"most unknown", "BT /F5 10 Tf 72 700 Td <0001000300040005> Tj ET", true},
		{"most read", "BT /F5 10 Tf 72 700 Td <0001000200010003> Tj ET", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := readPDF(t, makeContentPDF(tt.content, ""), document.Options{})
			if got := d.Pages[0].Unreadable != ""; got != tt.unreadable || strings.ContainsRune(d.Text, '\uFFFD') {
				t.Errorf("unreadable %q, text %q; want unreadable %v and no U+FFFD", d.Pages[0].Unreadable, d.Text, tt.unreadable)
			}
		})
	}
}
