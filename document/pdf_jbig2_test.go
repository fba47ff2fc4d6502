package document_test

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// jbig2Fixture reads a JBIG2 fixture of document/internal/jbig2/testdata
// (made by its make-fixtures.sh; jbig2dec decodes each to the picture
// beside it).
func jbig2Fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("internal/jbig2/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPDFJBIG2Scans: scanned pages stored as JBIG2 — a generic region as
// multifunction printers and jbig2enc write, symbols and a text region
// with the dictionary in JBIG2Globals as OCRmyPDF's jbig2enc -s does —
// are decoded: each page keeps its picture (black on white, or inverted by
// /Decode [1 0]) and OCR reads its words.
func TestPDFJBIG2Scans(t *testing.T) {
	t.Parallel()
	invoice := &genJBIG2{data: jbig2Fixture(t, "invoice-generic.jb2"), w: 900, h: 220}
	octave := &genJBIG2{data: jbig2Fixture(t, "text.jb2"), globals: jbig2Fixture(t, "text.globals.jb2"), w: 600, h: 420}
	inverted := *invoice
	inverted.dict = "/ImageMask true /Decode [1 0]"
	flated := *octave
	flated.flateGlobals = true
	tests := []struct {
		name  string
		img   *genJBIG2
		dark  bool // the picture mostly black
		words []string
	}{
		{"generic region", invoice, false, []string{"Invoice 2026-0042", "1,234.50 EUR"}},
		{"symbols and globals", octave, false, []string{"Octave Quick Reference", "Starting Octave"}},
		{"mask with Decode [1 0]", &inverted, true, nil},
		{"Flate-compressed globals", &flated, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := makePDF([]genPage{{jbig2: tc.img}})
			doc := readPDF(t, b, document.Options{})
			p := doc.Pages[0]
			if p.Unreadable != "" || p.Image == nil {
				t.Fatalf("page 1: unreadable %q, picture %v; want its JBIG2 picture", p.Unreadable, p.Image != nil)
			}
			img, err := png.Decode(bytes.NewReader(p.Image.Data))
			if err != nil {
				t.Fatal(err)
			}
			if got := img.Bounds().Size(); got != image.Pt(tc.img.w, tc.img.h) {
				t.Errorf("picture %v, want %d×%d", got, tc.img.w, tc.img.h)
			}
			if dark := meanGray(img) < 128; dark != tc.dark {
				t.Errorf("picture of mean gray %.0f, want dark %v", meanGray(img), tc.dark)
			}
			if tc.words == nil {
				return
			}
			doc = readPDF(t, b, document.Options{OCR: requireTesseract(t)})
			for _, w := range tc.words {
				if !strings.Contains(doc.Text, w) {
					t.Errorf("OCR reads %q, want %q in it", doc.Text, w)
				}
			}
		})
	}
}

// TestPDFJBIG2SharedGlobals: two pages as OCRmyPDF stores them with
// jbig2enc -s -p — the symbols both use in one JBIG2Globals stream the
// pages share, each page's own symbols in its page's stream — each read by
// OCR.
func TestPDFJBIG2SharedGlobals(t *testing.T) {
	t.Parallel()
	globals := jbig2Fixture(t, "ocrmypdf-1.globals.jb2")
	if !bytes.Equal(globals, jbig2Fixture(t, "ocrmypdf-2.globals.jb2")) {
		t.Fatal("the pages' fixtures have different globals")
	}
	b := makePDF([]genPage{
		{jbig2: &genJBIG2{data: jbig2Fixture(t, "ocrmypdf-1.jb2"), globals: globals, w: 600, h: 195}},
		{jbig2: &genJBIG2{data: jbig2Fixture(t, "ocrmypdf-2.jb2"), globals: globals, w: 600, h: 225}},
	})
	if refs := regexp.MustCompile(`/JBIG2Globals \d+ 0 R`).FindAll(b, -1); len(refs) != 2 || !bytes.Equal(refs[0], refs[1]) {
		t.Fatalf("the pages' globals: %q, want one stream for both", refs)
	}
	doc := readPDF(t, b, document.Options{OCR: requireTesseract(t)})
	for i, want := range []string{"Octave Quick Reference", "Getting Help"} {
		p := doc.Pages[i]
		if got := doc.Text[p.Start:p.End]; p.Unreadable != "" || !strings.Contains(got, want) {
			t.Errorf("page %d reads %q (unreadable %q), want %q in it", p.Number, got, p.Unreadable, want)
		}
	}
}

func meanGray(img image.Image) float64 {
	var sum, n float64
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			g, _, _, _ := img.At(x, y).RGBA()
			sum += float64(g >> 8)
			n++
		}
	}
	return sum / n
}
