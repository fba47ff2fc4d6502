package document_test

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFType3Fonts: a Type 3 font's text is read through its ToUnicode map
// or its glyph names (Differences), its advances through its FontMatrix;
// one that names its glyphs nothing readable makes its page unreadable,
// never a page of wrong letters.
func TestPDFType3Fonts(t *testing.T) {
	t.Parallel()
	// "now" starts a word gap after "Payable" when the glyphs advance by
	// the FontMatrix (7 × 0.5 em), and a table cell's width after it when
	// they advance by 1/1000 as other fonts' do.
	text := []show{{x: 72, y: 700, size: 12, s: "Invoice 42", font: "F3"}, {x: 72, y: 680, size: 12, s: "Total: 9.50 EUR", font: "F3"},
		{x: 72, y: 660, size: 12, s: "Payable", font: "F3"}, {x: 118, y: 660, size: 12, s: "now", font: "F3"}}
	tests := []struct {
		kind       string
		want       string
		unreadable []int
	}{
		{t3ToUnicode, "Invoice 42\nTotal: 9.50 EUR\nPayable now", nil},
		{t3Differences, "Invoice 42\nTotal: 9.50 EUR\nPayable now", nil},
		{t3Unnamed, "", []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			doc := readPDF(t, makeType3PDF([]genPage{{shows: text}}, "", tc.kind), document.Options{})
			if got := strings.TrimSpace(doc.Text); got != tc.want || !slices.Equal(doc.Unreadable(), tc.unreadable) {
				t.Errorf("text %q, unreadable pages %v; want %q, %v", got, doc.Unreadable(), tc.want, tc.unreadable)
			}
			if tc.unreadable != nil && !strings.Contains(doc.Pages[0].Unreadable, "Type 3 font without a Unicode map") {
				t.Errorf("page 1 unreadable: %q, want the Type 3 font named", doc.Pages[0].Unreadable)
			}
		})
	}
}

// TestPDFUnreadablePages: a page the reader can turn into neither text nor
// a picture says so (Page.Unreadable), with OCR or without; a page with a
// few rules only is blank, not unreadable; a document of such pages only is
// still read (a model shown the PDF reads it), and UnreadableError names
// each page, why, and the remedies.
func TestPDFUnreadablePages(t *testing.T) {
	t.Parallel()
	cover := genPage{shows: lines(72, 700, "Cover letter from ACME Ltd")}
	tests := []struct {
		name  string
		pages []genPage
		ocr   document.OCR
		want  map[int]string // unreadable pages and a word of why
	}{
		{"JBIG2 scan of refined Huffman symbols", []genPage{cover, {undecoded: "JBIG2Decode"}}, nil, map[int]string{2: "JBIG2Decode image: jbig2: segment 1 (symbol dictionary, type 0): Huffman coding with refinement and aggregation (SDHUFF and SDREFAGG) is not supported"}},
		{"JPEG 2000 scan", []genPage{cover, {undecoded: "JPXDecode"}}, nil, map[int]string{2: "JPXDecode"}},
		{"JBIG2 scan of refined Huffman symbols and OCR", []genPage{cover, {undecoded: "JBIG2Decode"}}, fakeOCR{"never called"}, map[int]string{2: "Huffman"}},
		{"outlines only", []genPage{cover, {vector: 400}}, nil, map[int]string{2: "vector outlines"}},
		{"a few rules are a blank page", []genPage{cover, {vector: 12}}, nil, map[int]string{}},
		{"only a JBIG2 scan of refined Huffman symbols", []genPage{{undecoded: "JBIG2Decode"}}, nil, map[int]string{1: "JBIG2Decode"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := readPDF(t, makePDF(tc.pages), document.Options{OCR: tc.ocr})
			got := map[int]string{}
			for _, p := range doc.Pages {
				if p.Unreadable != "" {
					got[p.Number] = p.Unreadable
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("unreadable pages %v, want %v", got, tc.want)
			}
			for n, why := range tc.want {
				if !strings.Contains(got[n], why) {
					t.Errorf("page %d unreadable: %q, want it to name %q", n, got[n], why)
				}
			}
			err := document.UnreadableError(doc)
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Errorf("UnreadableError = %v, want nil", err)
			case len(tc.want) > 0 && (!errors.Is(err, document.ErrNoText) || !strings.Contains(err.Error(), "--input native") || !strings.Contains(err.Error(), "pdftoppm")):
				t.Errorf("UnreadableError = %v, want ErrNoText naming the page and both remedies", err)
			}
		})
	}
	// Nothing on any page: blank, as before.
	if _, err := document.ReadBytes(t.Context(), makePDF([]genPage{{vector: 3}}), document.Options{}); !errors.Is(err, document.ErrNoText) {
		t.Errorf("a blank PDF: %v, want ErrNoText", err)
	}
}

// unreadableFixtures are the committed PDFs of document/testdata/unreadable
// (for the packages that read them through the fleet and the commands),
// made here: EXTRACTQ_UPDATE_FIXTURES=1 go test -run TestUnreadableFixtures
// ./document/ writes them again.
func unreadableFixtures() map[string][]byte {
	cover := lines(72, 700, "Invoice INV-0077 from ACME Ltd", "Total due: 12.00 EUR", "Status: unpaid")
	return map[string][]byte{
		"jbig2-page.pdf":    makePDF([]genPage{{shows: cover}, {undecoded: "JBIG2Decode"}}),
		"jpx-page.pdf":      makePDF([]genPage{{shows: cover}, {undecoded: "JPXDecode"}}),
		"outlines-page.pdf": makePDF([]genPage{{shows: cover}, {vector: 400}}),
		"type3-unicode.pdf": makeType3PDF([]genPage{{shows: []show{{x: 72, y: 700, size: 12, s: "Invoice INV-0077 from ACME Ltd", font: "F3"}}}}, "", t3ToUnicode),
		"type3-unnamed.pdf": makeType3PDF([]genPage{{shows: cover}, {shows: []show{{x: 72, y: 700, size: 12, s: "Invoice INV-0077", font: "F3"}}}}, "", t3Unnamed),
	}
}

// TestUnreadableFixtures: the committed fixtures are what the generator
// makes, and read as their names say.
func TestUnreadableFixtures(t *testing.T) {
	t.Parallel()
	for name, want := range unreadableFixtures() {
		path := "testdata/unreadable/" + name
		if os.Getenv("EXTRACTQ_UPDATE_FIXTURES") == "1" {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; the generator makes %d bytes: run EXTRACTQ_UPDATE_FIXTURES=1 go test -run TestUnreadableFixtures ./document/", path, len(got), err, len(want))
			continue
		}
		doc := readPDF(t, got, document.Options{})
		if wantUnread := !strings.HasPrefix(name, "type3-unicode"); (len(doc.Unreadable()) > 0) != wantUnread {
			t.Errorf("%s: unreadable pages %v, want some: %v", name, doc.Unreadable(), wantUnread)
		}
	}
}
