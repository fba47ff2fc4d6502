package document

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registers GIF with image.Decode
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"slices"

	_ "golang.org/x/image/bmp" // registers BMP with image.Decode
	"golang.org/x/image/draw"
	"golang.org/x/image/tiff"   // also registers TIFF with image.Decode
	_ "golang.org/x/image/webp" // registers WebP with image.Decode
)

// MaxDecodePixels is the largest image (width × height, from its header)
// the reader decodes at all: decoding takes 1 to 4 bytes a pixel before the
// image is downscaled to Limits.MaxImagePixels, so this bounds memory.
const MaxDecodePixels = 120_000_000

func init() {
	for _, f := range []struct {
		name, media, version string
		ext                  []string
		magic                [][]byte
	}{
		// Version 2 of png, jpeg, tiff and webp: OCR reads the picture at
		// its own resolution (Limits.MaxOCRPixels), not the one fitted for
		// a model; a JPEG is also turned upright by its EXIF orientation,
		// a TIFF gives every page, each upright by its orientation. One
		// more for each: a picture too small to hold a line of text
		// (tooSmallForText) is not read by OCR.
		{"png", "image/png", "3", []string{".png"}, [][]byte{[]byte("\x89PNG\r\n\x1a\n")}},
		// jpeg 3: a CMYK JPEG's picture is encoded again as RGB.
		{"jpeg", "image/jpeg", "4", []string{".jpg", ".jpeg", ".jpe", ".jfif"}, [][]byte{{0xFF, 0xD8, 0xFF}}},
		{"tiff", "image/tiff", "3", []string{".tif", ".tiff"}, [][]byte{[]byte("II*\x00"), []byte("MM\x00*")}},
		{"webp", "image/webp", "3", []string{".webp"}, nil},
		// A GIF's first frame; a BMP as Windows scanning tools save it.
		{"gif", "image/gif", "2", []string{".gif"}, [][]byte{[]byte("GIF87a"), []byte("GIF89a")}},
		{"bmp", "image/bmp", "2", []string{".bmp", ".dib"}, nil},
		// JPEG 2000: a JP2 file or a bare codestream (jpx.go).
		{"jp2", "image/jp2", "2", []string{".jp2", ".j2k", ".j2c", ".jpf"}, [][]byte{[]byte("\x00\x00\x00\x0cjP  \r\n\x87\n"), {0xFF, 0x4F, 0xFF, 0x51}}},
	} {
		magic := f.magic
		match := func(head []byte, _ io.ReaderAt, _ int64) bool {
			for _, m := range magic {
				if bytes.HasPrefix(head, m) {
					return true
				}
			}
			return false
		}
		switch f.name {
		case "webp":
			match = func(head []byte, _ io.ReaderAt, _ int64) bool {
				return len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP"
			}
		case "bmp": // "BM" alone starts words too: the DIB header's size must be one of the known
			match = func(head []byte, _ io.ReaderAt, _ int64) bool {
				if len(head) < 18 || string(head[:2]) != "BM" {
					return false
				}
				switch binary.LittleEndian.Uint32(head[14:]) {
				case 12, 40, 52, 56, 64, 108, 124:
					return true
				}
				return false
			}
		}
		Register(Format{Name: f.name, MediaType: f.media, Extensions: f.ext, Version: f.version, Match: match, Priority: 90, Decoder: DecoderFunc(decodeImage)})
	}
}

// decodeImage reads an image input as pages carrying the image (within
// Limits.MaxImagePixels), turned upright by its EXIF or TIFF orientation,
// their text from OCR when opts.OCR is set: one page, or one per page of a
// multi-page TIFF (a scanner's or a fax's usual output).
func decodeImage(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	if _, _, err := tiffHeader(b); err == nil {
		return decodeTIFF(ctx, b, opts)
	}
	img, full, err := fitForOCR(b, opts.Limits.MaxImagePixels, ocrPixels(opts), jpegOrientation(b))
	if err != nil {
		return nil, err
	}
	doc := &Document{Pages: []Page{{Number: 1, Image: img}}}
	ocrPage(ctx, doc, 0, opts, full)
	return doc, nil
}

// decodeTIFF reads each page of a TIFF (its IFDs; thumbnails left out). A
// page that does not decode is kept as Unreadable, naming why, so the
// document is not read as if it had one page fewer; when none decodes,
// the first page's error is the document's.
func decodeTIFF(ctx context.Context, b []byte, opts *Options) (*Document, error) {
	maxPages := opts.Limits.withDefaults().MaxPages
	ifds, bo, err := tiffIFDs(b, maxPages)
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	var firstErr error
	for _, ifd := range ifds {
		if ifd.thumbnail {
			continue
		}
		if len(doc.Pages) == maxPages {
			return nil, fmt.Errorf("%w: more than %d pages (raise Limits.MaxPages, or split the document)", ErrTooLarge, maxPages)
		}
		// full, the page at its own resolution for OCR, is dropped after
		// this page's OCR: only the fitted picture stays in the document.
		img, full, err := fitTIFFPage(newTIFFPage(b, bo, ifd.off), opts.Limits.MaxImagePixels, ocrPixels(opts), ifd.orientation)
		doc.Pages = append(doc.Pages, Page{Number: len(doc.Pages) + 1, Image: img, Start: len(doc.Text), End: len(doc.Text)})
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			doc.Pages[len(doc.Pages)-1].Unreadable = "its image does not decode: " + err.Error()
			continue
		}
		ocrPage(ctx, doc, len(doc.Pages)-1, opts, full)
	}
	if !slices.ContainsFunc(doc.Pages, func(p Page) bool { return p.Image != nil }) {
		return nil, cmp.Or(firstErr, fmt.Errorf("%w: the TIFF holds only thumbnails", ErrCorrupt))
	}
	return doc, nil
}

// ocrPixels is the largest picture made for OCR: 0 when the options have
// no OCR, so no full-resolution picture is made at all.
func ocrPixels(opts *Options) int {
	if opts.OCR == nil {
		return 0
	}
	return opts.Limits.withDefaults().MaxOCRPixels
}

// minContentPixels is the size from which a picture an e-mail shows
// inline is taken for content: logos, signature banners and icons are
// smaller (a 600×200 banner is 120,000 pixels), a photographed receipt or
// a pasted page is larger.
const minContentPixels = 500 * 500

// pictureSize is a picture's size in pixels, from its header; ok is false
// when data is no picture this package decodes.
func pictureSize(data []byte) (pixels int, ok bool) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	return cfg.Width * cfg.Height, err == nil
}

// ocrPage fills an image page's text by OCR when the options have one,
// reading full (the page at its own resolution) or, when nil, the page's
// image; an OCR failure is a warning, the image stays for a model to read.
// Pages are apart by a blank line, as every reader's are.
func ocrPage(ctx context.Context, doc *Document, i int, opts *Options, full *Image) {
	p := &doc.Pages[i]
	if opts.OCR == nil || p.Image == nil {
		if p.Image != nil {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("page %d has no text layer: its image is kept for a model that reads images, or for OCR (Options.OCR)", p.Number))
		}
		p.Start, p.End = len(doc.Text), len(doc.Text)
		return
	}
	if pic := cmp.Or(full, p.Image); tooSmallForText(pic.Width, pic.Height) {
		// An icon, a logo's mark or a tracking pixel: tesseract reads no
		// line in it (garbage at best) and costs a process each, which a
		// zip of 4,000 icons turned into minutes. The image stays.
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("page %d: a %d×%d picture, too small to hold a line of text: not read by OCR; its image is kept", p.Number, pic.Width, pic.Height))
		p.Start, p.End = len(doc.Text), len(doc.Text)
		return
	}
	text, err := opts.OCR.Recognize(ctx, cmp.Or(full, p.Image))
	if err != nil {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("page %d: OCR failed: %v", p.Number, err))
		p.Start, p.End = len(doc.Text), len(doc.Text)
		return
	}
	if doc.Text != "" && text != "" {
		doc.Text += "\n\n"
	}
	p.Start = len(doc.Text)
	doc.Text += text
	p.End = len(doc.Text)
}

// tooSmallForText reports a picture no line of text fits in: both sides
// at most 32 pixels (icon sizes) or either under 8.
func tooSmallForText(w, h int) bool {
	return w <= 32 && h <= 32 || w < 8 || h < 8
}

// fitForOCR checks an encoded image's size from its header, then returns
// it as is when it is a PNG or JPEG within maxPixels and needs no turning,
// else decoded, scaled down to fit, turned upright by an EXIF orientation
// (1–8; 1 leaves it as it is; a PDF's image is placed by the page, so 1)
// and encoded again (JPEG stays JPEG, anything else PNG).
//
// When ocrPixels > 0 it also returns the picture OCR reads: the image at
// its own resolution, downscaled only past ocrPixels, upright. The original
// bytes serve as they are when tesseract reads their format and they need
// no turning or scaling (no decoding, no encoding); otherwise the one
// decoded image is encoded again as PNG.
func fitForOCR(b []byte, maxPixels, ocrPixels, orientation int) (fit, full *Image, err error) {
	cfg, kind, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the image header does not decode (%v): convert it to PNG or JPEG", ErrCorrupt, err)
	}
	if err := checkDecodeSize(cfg); err != nil {
		return nil, nil, err
	}
	px := cfg.Width * cfg.Height
	original := &Image{MediaType: "image/" + kind, Data: b, Width: cfg.Width, Height: cfg.Height}
	// A CMYK JPEG (Adobe's, as print workflows and PDFs keep them) is
	// encoded again as RGB: models that read images take RGB JPEGs.
	cmyk := kind == "jpeg" && cfg.ColorModel == color.CMYKModel
	if orientation == 1 && px <= maxPixels && (kind == "png" || kind == "jpeg") && !cmyk {
		fit = original
	}
	// tesseract (leptonica) reads these from its standard input; WebP only
	// when built with libwebp, so WebP is encoded as PNG.
	switch kind {
	case "png", "jpeg", "gif", "bmp":
		if ocrPixels > 0 && orientation == 1 && px <= ocrPixels && !cmyk {
			full = original
		}
	}
	if fit != nil && (full != nil || ocrPixels <= 0) {
		return fit, full, nil
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the %s image does not decode: %v", ErrCorrupt, kind, err)
	}
	return fitDecoded(img, kind == "jpeg", maxPixels, ocrPixels, orientation, fit, full)
}

// fitDecoded makes from a decoded image whichever of the fitted picture
// and the OCR picture (when ocrPixels > 0) is not made yet.
func fitDecoded(img image.Image, photo bool, maxPixels, ocrPixels, orientation int, fit, full *Image) (*Image, *Image, error) {
	var err error
	if fit == nil {
		if fit, err = encodeFitted(img, photo, maxPixels, orientation); err != nil {
			return nil, nil, err
		}
	}
	if full == nil && ocrPixels > 0 {
		// PNG even for a photo: JPEG would blur the strokes OCR reads.
		if full, err = encodeFitted(img, false, ocrPixels, orientation); err != nil {
			return nil, nil, err
		}
	}
	return fit, full, nil
}

// fitTIFFPage decodes one page of a TIFF and fits it as fitForOCR does.
// The OCR picture is always encoded again: tesseract reads a TIFF page
// only out of a file, and the page is one IFD of many.
func fitTIFFPage(r *tiffPage, maxPixels, ocrPixels, orientation int) (fit, full *Image, err error) {
	cfg, err := tiff.DecodeConfig(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the image header does not decode: %v", ErrCorrupt, err)
	}
	if err := checkDecodeSize(cfg); err != nil {
		return nil, nil, err
	}
	r.pos = 0
	img, err := tiff.Decode(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the tiff image does not decode: %v", ErrCorrupt, err)
	}
	return fitDecoded(img, false, maxPixels, ocrPixels, orientation, nil, nil)
}

// checkDecodeSize refuses an image too large to decode (MaxDecodePixels).
func checkDecodeSize(cfg image.Config) error {
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return fmt.Errorf("%w: the image is %d×%d pixels", ErrCorrupt, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxDecodePixels {
		return fmt.Errorf("%w: the image is %d×%d pixels (%.0f MP), the most decoded is %d MP: scale it down first", ErrTooLarge, cfg.Width, cfg.Height, float64(px)/1e6, MaxDecodePixels/1_000_000)
	}
	return nil
}

// encodeFitted scales img down to maxPixels (keeping its aspect), turns it
// upright by an EXIF orientation (1: as it is) and encodes it: JPEG for a
// photo, else PNG at its fastest compression (a 1-bit scan decodes as
// gray, and stays gray).
func encodeFitted(img image.Image, photo bool, maxPixels, orientation int) (*Image, error) {
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	if w*h > maxPixels {
		s := math.Sqrt(float64(maxPixels) / float64(w*h))
		nw, nh := max(1, int(float64(w)*s)), max(1, int(float64(h)*s))
		var dst draw.Image
		if isGray(img) {
			dst = image.NewGray(image.Rect(0, 0, nw, nh))
		} else {
			dst = image.NewRGBA(image.Rect(0, 0, nw, nh))
		}
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
		img = dst
	}
	img = orient(img, orientation) // after scaling: fewer pixels to move
	switch img.(type) {
	case *image.Gray, *image.RGBA, *image.NRGBA, *image.Paletted:
	default:
		if !photo {
			// PNG encodes other layouts (a WebP's YCbCr) a pixel at a time
			// through At: one bulk conversion is many times faster on a
			// full-resolution page.
			c := image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
			draw.Draw(c, c.Bounds(), img, img.Bounds().Min, draw.Src)
			img = c
		}
	}
	w, h = img.Bounds().Dx(), img.Bounds().Dy()
	var out bytes.Buffer
	media := "image/png"
	if photo {
		media = "image/jpeg"
		if err := jpeg.Encode(&out, img, &jpeg.Options{Quality: 88}); err != nil {
			return nil, fmt.Errorf("encode the page image: %w", err)
		}
	} else if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, img); err != nil {
		return nil, fmt.Errorf("encode the page image: %w", err)
	}
	return &Image{MediaType: media, Data: out.Bytes(), Width: w, Height: h}, nil
}

func isGray(img image.Image) bool {
	switch img.ColorModel() {
	case color.GrayModel, color.Gray16Model:
		return true
	}
	return false
}
