package document_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/tiff"

	"github.com/extractq/extractq/document"
)

func encodePNG(t testing.TB, img image.Image) []byte {
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestImage(t *testing.T) {
	t.Parallel()
	small := image.NewRGBA(image.Rect(0, 0, 40, 30))
	draw.Draw(small, small.Bounds(), image.NewUniform(color.RGBA{10, 200, 30, 255}), image.Point{}, draw.Src)
	var tif, jpg bytes.Buffer
	if err := tiff.Encode(&tif, small, nil); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpg, small, nil); err != nil {
		t.Fatal(err)
	}
	webp, err := os.ReadFile("testdata/tiny.webp")
	if err != nil {
		t.Fatal(err)
	}
	// 50 megapixels, gray: downscaled to the limit from its header's size.
	big := image.NewGray(image.Rect(0, 0, 8660, 5774))
	for y := 0; y < big.Rect.Dy(); y += 97 {
		for x := range big.Rect.Dx() {
			big.Pix[y*big.Stride+x] = 0xFF
		}
	}
	bigPNG := encodePNG(t, big)
	tests := []struct {
		name      string
		in        []byte
		format    string
		media     string
		w, h      int
		sameBytes bool
	}{
		{name: "png passes as is", in: encodePNG(t, small), format: "png", media: "image/png", w: 40, h: 30, sameBytes: true},
		{name: "jpeg passes as is", in: jpg.Bytes(), format: "jpeg", media: "image/jpeg", w: 40, h: 30, sameBytes: true},
		{name: "tiff becomes png", in: tif.Bytes(), format: "tiff", media: "image/png", w: 40, h: 30},
		{name: "webp becomes png", in: webp, format: "webp", media: "image/png", w: 64, h: 48},
		{name: "50 megapixels downscaled", in: bigPNG, format: "png", media: "image/png", w: 1920, h: 1280},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), tt.in, document.Options{Name: "scan"})
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || len(doc.Pages) != 1 || doc.Pages[0].Image == nil {
				t.Fatalf("read as %s, %d pages", doc.Format, len(doc.Pages))
			}
			img := doc.Pages[0].Image
			if img.MediaType != tt.media || img.Width != tt.w || img.Height != tt.h {
				t.Errorf("image = %s %d×%d, want %s %d×%d", img.MediaType, img.Width, img.Height, tt.media, tt.w, tt.h)
			}
			if img.Width*img.Height > document.DefaultLimits.MaxImagePixels {
				t.Errorf("image is %d pixels, over the limit", img.Width*img.Height)
			}
			if got := bytes.Equal(img.Data, tt.in); got != tt.sameBytes {
				t.Errorf("image bytes kept as is = %v, want %v", got, tt.sameBytes)
			}
			cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data))
			if err != nil || cfg.Width != img.Width || cfg.Height != img.Height {
				t.Errorf("the image data does not decode to its stated size: %v %+v", err, cfg)
			}
			if doc.Text != "" || len(doc.Scanned()) != 1 {
				t.Errorf("text %q, scanned %v", doc.Text, doc.Scanned())
			}
		})
	}
}

func TestImageBad(t *testing.T) {
	t.Parallel()
	header := encodePNG(t, image.NewGray(image.Rect(0, 0, 20, 20)))
	huge := bytes.Clone(header)
	// IHDR's width and height (bytes 16–23) claim 20,000 × 20,000 pixels.
	copy(huge[16:24], []byte{0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20})
	binary.BigEndian.PutUint32(huge[29:33], crc32.ChecksumIEEE(huge[12:29]))
	tests := []struct {
		name    string
		in      []byte
		wantErr error
	}{
		{name: "truncated png", in: header[:30], wantErr: document.ErrCorrupt},
		{name: "400 megapixels refused from the header", in: huge, wantErr: document.ErrTooLarge},
		{name: "jpeg magic only", in: []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10}, wantErr: document.ErrCorrupt},
		{name: "unknown binary", in: []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0}, wantErr: document.ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := document.ReadBytes(t.Context(), tt.in, document.Options{Name: "bad.bin"})
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), "bad.bin") {
				t.Fatalf("err = %v, want %v naming bad.bin", err, tt.wantErr)
			}
		})
	}
}

// textImage draws s in a bitmap font, scaled up so OCR can read it.
func textImage(s string) image.Image {
	const scale = 4
	small := image.NewGray(image.Rect(0, 0, 7*len(s)+20, 30))
	draw.Draw(small, small.Bounds(), image.White, image.Point{}, draw.Src)
	d := font.Drawer{Dst: small, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(10, 20)}
	d.DrawString(s)
	big := image.NewGray(image.Rect(0, 0, small.Rect.Dx()*scale, small.Rect.Dy()*scale))
	for y := range big.Rect.Dy() {
		for x := range big.Rect.Dx() {
			big.Pix[y*big.Stride+x] = small.Pix[(y/scale)*small.Stride+x/scale]
		}
	}
	return big
}

func TestTesseract(t *testing.T) {
	t.Parallel()
	ocr, err := document.NewTesseract()
	if err != nil {
		if !errors.Is(err, document.ErrNoOCR) || !strings.Contains(err.Error(), "apt-get install tesseract-ocr") || !strings.Contains(err.Error(), "--input native") {
			t.Fatalf("err = %v, want ErrNoOCR naming both remedies", err)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("tesseract is required under CI (.ci/run installs tesseract-ocr): %v", err)
		}
		t.Skipf("tesseract is not installed: %v", err)
	}
	doc, err := document.ReadBytes(t.Context(), encodePNG(t, textImage("INVOICE 4217 TOTAL")), document.Options{OCR: ocr})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Text, "4217 TOTAL") || doc.Pages[0].End != len(doc.Text) {
		t.Errorf("OCR text = %q, page %+v", doc.Text, doc.Pages[0])
	}
	if _, err := (&document.Tesseract{Path: ocr.Path, Languages: "xx-none"}).Recognize(t.Context(), doc.Pages[0].Image); err == nil || !strings.Contains(err.Error(), "tesseract-ocr-xx-none") {
		t.Errorf("missing language: err = %v, want the package to install", err)
	}
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Fatal("NewTesseract found a command LookPath does not")
	}
}

// requireTesseract returns the OCR, skipping outside CI when tesseract is
// not installed (.ci/run installs it, so CI never skips).
func requireTesseract(t *testing.T) *document.Tesseract {
	t.Helper()
	ocr, err := document.NewTesseract()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tesseract is required under CI (.ci/run installs tesseract-ocr): %v", err)
		}
		t.Skipf("tesseract is not installed: %v", err)
	}
	return ocr
}

// TestScans reads scans as scanners and phones make them
// (testdata/scans/make-scans.sh): every page of a multi-page CCITT TIFF,
// pages turned upright by their TIFF Orientation, and a phone photo by its
// EXIF Orientation, a BMP and a GIF, each page's picture upright (900×220)
// and, by OCR, its text in order.
func TestScans(t *testing.T) {
	t.Parallel()
	page1 := []string{"Invoice 2026-0042", "1,234.50 EUR"}
	page2 := []string{"Delivery note", "Harbour Street"}
	tests := []struct {
		file  string
		media string
		pages [][]string
	}{
		{"scan.tif", "image/png", [][]string{page1, page2}},
		{"scanrot.tif", "image/png", [][]string{page1, page2}},
		{"photo6.jpg", "image/jpeg", [][]string{page1}},
		{"scan.bmp", "image/png", [][]string{page1}},
		{"scan.gif", "image/png", [][]string{page1}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			b := testdata(t, "scans/"+tc.file)
			doc, err := document.ReadBytes(t.Context(), b, document.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Pages) != len(tc.pages) {
				t.Fatalf("%d pages, want %d", len(doc.Pages), len(tc.pages))
			}
			for _, p := range doc.Pages {
				if p.Image == nil || p.Image.Width != 900 || p.Image.Height != 220 || p.Image.MediaType != tc.media {
					t.Fatalf("page %d: picture %+v, want an upright 900×220 %s", p.Number, p.Image, tc.media)
				}
				if cfg, _, err := image.DecodeConfig(bytes.NewReader(p.Image.Data)); err != nil || cfg.Width != 900 || cfg.Height != 220 {
					t.Fatalf("page %d: its encoded picture is %d×%d (%v), want 900×220", p.Number, cfg.Width, cfg.Height, err)
				}
			}
			doc, err = document.ReadBytes(t.Context(), b, document.Options{OCR: requireTesseract(t)})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.pages {
				p := doc.Pages[i]
				for _, w := range want {
					if !strings.Contains(doc.Text[p.Start:p.End], w) {
						t.Errorf("page %d reads %q, want %q in it", p.Number, doc.Text[p.Start:p.End], w)
					}
				}
			}
		})
	}
}

// TestTIFFMaxPages checks that a TIFF with more pages than
// Limits.MaxPages is refused naming the limit.
func TestTIFFMaxPages(t *testing.T) {
	t.Parallel()
	_, err := document.ReadBytes(t.Context(), testdata(t, "scans/scan.tif"), document.Options{Limits: document.Limits{MaxPages: 1}})
	if !errors.Is(err, document.ErrTooLarge) || !strings.Contains(err.Error(), "Limits.MaxPages") {
		t.Fatalf("err = %v, want ErrTooLarge naming Limits.MaxPages", err)
	}
}

// seenOCR is an OCR that records the pictures it is given.
type seenOCR struct{ imgs []*document.Image }

func (s *seenOCR) Recognize(_ context.Context, img *document.Image) (string, error) {
	s.imgs = append(s.imgs, img)
	return "text", nil
}

// TestOCRFullResolution checks which picture OCR gets: the scan at its own
// resolution, not the page's picture fitted for a model (which stays as
// it was): the original bytes when tesseract reads them and they need no
// turning, else the decoded page as PNG, upright, downscaled only past
// Limits.MaxOCRPixels.
func TestOCRFullResolution(t *testing.T) {
	t.Parallel()
	// PDF scans made here: a JPEG (DCTDecode) passes as it is, Flate
	// samples go as PNG at their own size.
	scanJPEG := grayJPEG(t, 1800, 2000)
	flate := image.NewGray(image.Rect(0, 0, 1800, 2000))
	for i := range flate.Pix {
		flate.Pix[i] = 0xFF
	}
	tests := []struct {
		name   string
		in     []byte
		maxOCR int
		media  string
		w, h   int    // 0: within maxOCR, above MaxImagePixels, the page's aspect
		orig   []byte // what OCR gets as it is, nil: a picture encoded again
	}{
		{"fineprint.png", testdata(t, "scans/fineprint.png"), 0, "image/png", 2550, 3300, testdata(t, "scans/fineprint.png")},
		{"fineprint.png within 4 MP", testdata(t, "scans/fineprint.png"), 4_000_000, "image/png", 0, 0, nil},
		{"fineprint.tif", testdata(t, "scans/fineprint.tif"), 0, "image/png", 2550, 3300, nil},
		{"fineprint.pdf", testdata(t, "scans/fineprint.pdf"), 0, "image/png", 2550, 3300, nil},
		{"photo6.jpg upright", testdata(t, "scans/photo6.jpg"), 0, "image/png", 900, 220, nil},
		{"scan.bmp", testdata(t, "scans/scan.bmp"), 0, "image/bmp", 900, 220, testdata(t, "scans/scan.bmp")},
		{"scan.gif", testdata(t, "scans/scan.gif"), 0, "image/gif", 900, 220, testdata(t, "scans/scan.gif")},
		{"pdf jpeg", makePDF([]genPage{{jpeg: scanJPEG, jw: 1800, jh: 2000}}), 0, "image/jpeg", 1800, 2000, scanJPEG},
		{"pdf flate", makePDF([]genPage{{flate: flate}}), 0, "image/png", 1800, 2000, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ocr := &seenOCR{}
			doc, err := document.ReadBytes(t.Context(), tc.in, document.Options{OCR: ocr, Limits: document.Limits{MaxOCRPixels: tc.maxOCR}})
			if err != nil {
				t.Fatal(err)
			}
			if len(ocr.imgs) != 1 || len(doc.Pages) != 1 {
				t.Fatalf("OCR read %d pictures of %d pages, want 1 of 1", len(ocr.imgs), len(doc.Pages))
			}
			got, page := ocr.imgs[0], doc.Pages[0].Image
			if page == nil || page.Width*page.Height > document.DefaultLimits.MaxImagePixels {
				t.Fatalf("the page's picture is %+v, want one within MaxImagePixels", page)
			}
			if got.MediaType != tc.media {
				t.Errorf("OCR got %s, want %s", got.MediaType, tc.media)
			}
			if tc.w != 0 && (got.Width != tc.w || got.Height != tc.h) {
				t.Errorf("OCR got %d×%d, want %d×%d", got.Width, got.Height, tc.w, tc.h)
			}
			if tc.w == 0 {
				if px := got.Width * got.Height; px > tc.maxOCR || px <= document.DefaultLimits.MaxImagePixels || got.Width*3300/2550 != got.Height {
					t.Errorf("OCR got %d×%d, want within %d pixels, above MaxImagePixels, the page's aspect", got.Width, got.Height, tc.maxOCR)
				}
			}
			if cfg, _, err := image.DecodeConfig(bytes.NewReader(got.Data)); err != nil || cfg.Width != got.Width || cfg.Height != got.Height {
				t.Errorf("OCR's picture decodes as %d×%d (%v), want %d×%d", cfg.Width, cfg.Height, err, got.Width, got.Height)
			}
			if (tc.orig != nil) != bytes.Equal(got.Data, tc.orig) {
				t.Errorf("OCR got the original bytes: %v, want %v", tc.orig == nil, tc.orig != nil)
			}
		})
	}
}

// TestOCRFinePrint reads a letter page of 4.5 pt lines scanned at 300 dpi
// (testdata/scans/make-fineprint.sh) by tesseract: every amount, as the
// scan holds it. Scaled down to the model's picture (about 160 dpi),
// tesseract 5 misread 1 of the 40 amounts of the PNG and 4 of the TIFF's.
func TestOCRFinePrint(t *testing.T) {
	t.Parallel()
	amounts := strings.Fields(string(testdata(t, "scans/fineprint.txt")))
	if len(amounts) != 40 {
		t.Fatalf("fineprint.txt lists %d amounts, want 40", len(amounts))
	}
	for _, file := range []string{"fineprint.png", "fineprint.tif", "fineprint.pdf"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), testdata(t, "scans/"+file), document.Options{OCR: requireTesseract(t)})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range amounts {
				if !strings.Contains(doc.Text, a) {
					t.Errorf("the OCR text has no amount %s", a)
				}
			}
		})
	}
}

// countOCR counts the pictures it is asked to read.
type countOCR struct{ n *atomic.Int32 }

func (c countOCR) Recognize(_ context.Context, img *document.Image) (string, error) {
	c.n.Add(1)
	return "read", nil
}

// TestOCRSkipsTinyPictures: a picture no line of text fits in (an icon, a
// tracking pixel) is not sent to OCR, which cost a tesseract process each
// (LibreOffice's icon-theme zip of 4,493 PNGs passed 60 s in
// TestDocumentSurvey); its image stays, a warning says why. A strip of one
// line of text and a page are read.
func TestOCRSkipsTinyPictures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		w, h int
		read bool
	}{
		{16, 16, false},
		{32, 32, false},
		{1, 1, false},
		{300, 6, false},
		{120, 20, true}, // a button or a line of text
		{33, 33, true},
		{200, 300, true},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, tc.w, tc.h))); err != nil {
			t.Fatal(err)
		}
		var n atomic.Int32
		d, err := document.ReadBytes(t.Context(), buf.Bytes(), document.Options{Name: "pic.png", OCR: countOCR{&n}})
		if err != nil {
			t.Fatalf("%d×%d: %v", tc.w, tc.h, err)
		}
		if read := n.Load() == 1; read != tc.read || len(d.Pages) != 1 || d.Pages[0].Image == nil {
			t.Errorf("%d×%d: read by OCR %v (want %v), pages %d, warnings %q", tc.w, tc.h, read, tc.read, len(d.Pages), d.Warnings)
		}
		if !tc.read && (d.Text != "" || !strings.Contains(strings.Join(d.Warnings, "\n"), "too small to hold a line of text")) {
			t.Errorf("%d×%d: text %q, warnings %q", tc.w, tc.h, d.Text, d.Warnings)
		}
	}
}
