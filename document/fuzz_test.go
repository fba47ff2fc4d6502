package document_test

import (
	"bytes"
	"errors"
	"image"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/extractq/extractq/document"
)

// checkDocument asserts what every document read must hold, whatever the
// input: valid UTF-8, pages in order within the text, blocks within their
// page, and failures typed.
func checkDocument(t *testing.T, doc *document.Document, err error) {
	t.Helper()
	if err != nil {
		var de *document.Error
		if !errors.As(err, &de) {
			t.Fatalf("error %v (%T) is not a *document.Error", err, err)
		}
		return
	}
	if !utf8.ValidString(doc.Text) {
		t.Fatalf("text is not UTF-8: %q", doc.Text)
	}
	end := 0
	for i, p := range doc.Pages {
		if p.Number != i+1 || p.Start < end || p.End < p.Start || p.End > len(doc.Text) {
			t.Fatalf("page %d [%d,%d) out of order or outside the text (%d bytes, previous end %d)", p.Number, p.Start, p.End, len(doc.Text), end)
		}
		for _, b := range p.Blocks {
			if b.Start < p.Start || b.End > p.End || b.End < b.Start {
				t.Fatalf("page %d: block [%d,%d) outside [%d,%d)", p.Number, b.Start, b.End, p.Start, p.End)
			}
		}
		for _, s := range []document.Span{p.Header, p.Footer} {
			if !s.Empty() && (s.Start < p.Start || s.End > p.End) {
				t.Fatalf("page %d: running span %v outside the page", p.Number, s)
			}
		}
		if p.Image != nil {
			cfg, _, err := image.DecodeConfig(bytes.NewReader(p.Image.Data))
			if err != nil || cfg.Width != p.Image.Width || cfg.Height != p.Image.Height {
				t.Fatalf("page %d: image does not decode to its %d×%d: %v", p.Number, p.Image.Width, p.Image.Height, err)
			}
		}
		end = p.End
	}
}

func addFiles(f *testing.F, glob string) {
	files, _ := filepath.Glob(glob)
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
}

func FuzzPDF(f *testing.F) {
	f.Add(makePDF([]genPage{{shows: lines(50, 700, "Hello, fuzz.", "A second line-", "continued.")}}))
	f.Add(makePDF(runningPages(3)))
	f.Add(makePDF([]genPage{{jpeg: grayJPEG(f, 16, 16), jw: 16, jh: 16}}))
	f.Add(makePDF([]genPage{{rotate: 90, shows: []show{{x: 100, y: 50, size: 10, s: "rotated", rot: 1}}}}))
	// TeX's accents drawn over their letters, one raised over a capital.
	f.Add(makeContentPDF("BT /F1 10 Tf 72 702.5 Td (\xb4) Tj ET BT /F1 10 Tf 72 700 Td [(Ecole rep\x60) 500 (ere fa\xb8) 500 (cade)] TJ ET", ""))
	addFiles(f, "testdata/*.pdf")
	addFiles(f, "testdata/unreadable/*.pdf")
	addFiles(f, "testdata/producers/*.pdf")
	addFiles(f, "testdata/pdfimages/*.pdf") // page images in each encoding, bands, an inline image
	// Form fields: an appearance, a value inherited without one, a
	// checkbox's states, a FreeText comment.
	f.Add(makePDFWith([]genPage{{shows: lines(50, 700, "Name:"), annots: []genAnnot{
		{rect: [4]float64{80, 696, 300, 712}, dict: "/FT /Tx /V (Ada)", ap: "BT /F1 10 Tf 2 4 Td (Ada) Tj ET", apDict: "/Matrix [0 1 -1 0 16 0]"},
		{rect: [4]float64{80, 670, 300, 686}, parent: "/FT /Ch /V [(a) (b)] /Opt [[(a) (Apple)] (b)] /DA (/Helv 0 Tf)"},
		{rect: [4]float64{80, 650, 90, 660}, dict: "/FT /Btn /V /Yes /AS /Yes", states: map[string]string{"Yes": "1 1 m 9 9 l S", "Off": ""}},
		{subtype: "FreeText", rect: [4]float64{80, 600, 300, 640}, dict: "/Contents (Line one\rLine two)"},
	}}}, "/AcroForm << /Fields [] /NeedAppearances true /DA (/Helv 10 Tf 0 g) >>"))
	addFiles(f, "testdata/forms/*.pdf")
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := document.ReadBytes(t.Context(), b, document.Options{Format: "pdf", Limits: document.Limits{MaxPages: 50}})
		checkDocument(t, doc, err)
	})
}

func FuzzText(f *testing.F) {
	f.Add([]byte("plain text"))
	f.Add(utf16le("UTF-16 text"))
	f.Add(utf32be("UTF-32 text"))
	f.Add([]byte("caf\xe9"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, transcode := range []bool{false, true} {
			doc, err := document.ReadBytes(t.Context(), b, document.Options{Format: "text", Transcode: transcode})
			checkDocument(t, doc, err)
			if err == nil && doc.Text == "" {
				t.Fatal("an empty text read without ErrEmpty")
			}
		}
	})
}

func FuzzImage(f *testing.F) {
	f.Add(encodePNG(f, textImage("fuzz")))
	f.Add(grayJPEG(f, 20, 10))
	addFiles(f, "testdata/*.webp")
	addFiles(f, "testdata/scans/*.tif")
	addFiles(f, "testdata/scans/*.jpg")
	addFiles(f, "testdata/scans/*.bmp")
	addFiles(f, "testdata/scans/*.gif")
	addFiles(f, "internal/jpx/testdata/grey-lossless.jp2")
	f.Fuzz(func(t *testing.T, b []byte) {
		// With OCR, every page's picture for OCR is made too: it must be
		// within MaxOCRPixels and decode as the size it says.
		ocr := &seenOCR{}
		doc, err := document.ReadBytes(t.Context(), b, document.Options{OCR: ocr, Limits: document.Limits{MaxImagePixels: 64 * 64, MaxOCRPixels: 128 * 128, MaxPages: 8}})
		checkDocument(t, doc, err)
		for _, img := range ocr.imgs {
			cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data))
			if img.Width*img.Height > 128*128 || err != nil || cfg.Width != img.Width || cfg.Height != img.Height {
				t.Fatalf("OCR got a %s of %d×%d that decodes as %d×%d (%v): want it within MaxOCRPixels", img.MediaType, img.Width, img.Height, cfg.Width, cfg.Height, err)
			}
		}
		if err != nil || doc.Format == "text" {
			return
		}
		if len(doc.Pages) == 0 || len(doc.Pages) > 8 || (doc.Format != "tiff" && len(doc.Pages) != 1) {
			t.Fatalf("a %s image read as %d pages", doc.Format, len(doc.Pages))
		}
		for _, p := range doc.Pages {
			if (p.Image == nil) == (p.Unreadable == "") || (p.Image != nil && p.Image.Width*p.Image.Height > 64*64) {
				t.Fatalf("page %d: picture %v, unreadable %q: want one of them, within the pixel limit", p.Number, p.Image != nil, p.Unreadable)
			}
		}
	})
}
