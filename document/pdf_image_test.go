package document_test

import (
	"bytes"
	"image"
	"image/color"
	_ "image/jpeg" // a page image may stay a JPEG
	"image/png"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestPDFPageImages reads scanned pages stored in the encodings scanners
// and converters write (testdata/pdfimages/make-pdfimages.sh: one text
// page in each, and its CMYK JPEG as an image file): the page's picture must match the page as drawn, as
// poppler's pdftoppm renders it within a few percent, and OCR read its
// words.
func TestPDFPageImages(t *testing.T) {
	t.Parallel()
	want, err := png.Decode(bytes.NewReader(testdata(t, "pdfimages/expect.png")))
	if err != nil {
		t.Fatal(err)
	}
	ocr := requireTesseract(t)
	for _, file := range []string{
		"indexed4-lzw.pdf",        // palette, 4-bit indexes, LZW
		"indexed8-stream.pdf",     // palette in a stream, PNG predictor
		"gray8-rle.pdf",           // RunLength
		"rgb8-a85-flate.pdf",      // [/ASCII85Decode /FlateDecode]
		"calgray2-hex-lzw.pdf",    // CalGray 2-bit, [/ASCIIHexDecode /LZWDecode], EarlyChange 0
		"gray4-flate.pdf",         // 4-bit gray
		"calrgb16-flate.pdf",      // CalRGB 16-bit
		"cmyk8-flate-png.pdf",     // CMYK samples, PNG predictor of 4 colours
		"cmyk-jpeg.pdf",           // Adobe CMYK JPEG, Decode [1 0 1 0 1 0 1 0]
		"cmyk.jpg",                // the same JPEG as an image file
		"gray-flate-jpeg.pdf",     // [/FlateDecode /DCTDecode]
		"gray-flate-jpeg-rc4.pdf", // the same, encrypted
		"gray1-decode.pdf",        // 1-bit, Decode [1 0]
		"mask-decode.pdf",         // ImageMask, Decode [1 0]
		"lab8-flate.pdf",          // Lab
		"separation8-flate.pdf",   // one ink's tints
		"rgb8-lzw-tiff.pdf",       // LZW with the TIFF predictor
		"inline-indexed.pdf",      // an inline image, palette named in the resources
		"bands2.pdf",              // two bands, each half the page
		"bands.pdf",               // four bands, none a third of the page
		"jpx-gray.pdf",            // JPEG 2000 (JPXDecode), lossless, colours from its JP2 header
		"jpx-rgb97.pdf",           // JPEG 2000 9/7 codestream, tiles, precincts, RPCL, DeviceRGB
		"page.jp2",                // JPEG 2000 as an image file
	} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			b := testdata(t, "pdfimages/"+file)
			doc, err := document.ReadBytes(t.Context(), b, document.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := doc.Pages[0]
			if p.Image == nil {
				t.Fatalf("no page image (warnings %q)", doc.Warnings)
			}
			got, _, err := image.Decode(bytes.NewReader(p.Image.Data))
			if err != nil {
				t.Fatal(err)
			}
			if got.Bounds() != want.Bounds() {
				t.Fatalf("page image of %v, want %v", got.Bounds(), want.Bounds())
			}
			// A CMYK JPEG goes on as RGB: readers of images take RGB.
			if got.ColorModel() == color.CMYKModel {
				t.Errorf("page image is %s CMYK, want RGB or gray", p.Image.MediaType)
			}
			if d := meanGrayDiff(got, want); d > 0.03 {
				t.Errorf("page image differs from the page by %.3f of the gray scale, want at most 0.03", d)
			}
			doc, err = document.ReadBytes(t.Context(), b, document.Options{OCR: ocr})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{"Receipt 7731", "Lindenweg", "88.20"} {
				if !strings.Contains(doc.Text, w) {
					t.Errorf("OCR reads %q, want %q in it", doc.Text, w)
				}
			}
		})
	}
}

// meanGrayDiff is how far two pictures' gray levels are apart on average,
// 0 to 1.
func meanGrayDiff(a, b image.Image) float64 {
	r := a.Bounds()
	var sum float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ga := color.GrayModel.Convert(a.At(x, y)).(color.Gray).Y
			gb := color.GrayModel.Convert(b.At(x, y)).(color.Gray).Y
			sum += float64(max(ga, gb) - min(ga, gb))
		}
	}
	return sum / 255 / float64(r.Dx()*r.Dy())
}
