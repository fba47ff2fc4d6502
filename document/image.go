package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/tiff" // registers TIFF with image.Decode
	_ "golang.org/x/image/webp" // registers WebP with image.Decode
)

// MaxDecodePixels is the largest image (width × height, from its header)
// the reader decodes at all: decoding takes 1 to 4 bytes a pixel before the
// image is downscaled to Limits.MaxImagePixels, so this bounds memory.
const MaxDecodePixels = 120_000_000

func init() {
	for _, f := range []struct {
		name, media string
		ext         []string
		magic       [][]byte
	}{
		{"png", "image/png", []string{".png"}, [][]byte{[]byte("\x89PNG\r\n\x1a\n")}},
		{"jpeg", "image/jpeg", []string{".jpg", ".jpeg", ".jpe", ".jfif"}, [][]byte{{0xFF, 0xD8, 0xFF}}},
		{"tiff", "image/tiff", []string{".tif", ".tiff"}, [][]byte{[]byte("II*\x00"), []byte("MM\x00*")}},
		{"webp", "image/webp", []string{".webp"}, nil},
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
		if f.name == "webp" {
			match = func(head []byte, _ io.ReaderAt, _ int64) bool {
				return len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP"
			}
		}
		Register(Format{Name: f.name, MediaType: f.media, Extensions: f.ext, Version: "1", Match: match, Priority: 90, Decoder: DecoderFunc(decodeImage)})
	}
}

// decodeImage reads an image input as one page carrying the image (within
// Limits.MaxImagePixels), its text from OCR when opts.OCR is set.
func decodeImage(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	img, err := fitImage(b, opts.Limits.MaxImagePixels)
	if err != nil {
		return nil, err
	}
	doc := &Document{Pages: []Page{{Number: 1, Image: img}}}
	ocrPage(ctx, doc, 0, opts)
	return doc, nil
}

// ocrPage fills an image page's text by OCR when the options have one;
// an OCR failure is a warning, the image stays for a model to read.
func ocrPage(ctx context.Context, doc *Document, i int, opts *Options) {
	p := &doc.Pages[i]
	if opts.OCR == nil || p.Image == nil {
		if p.Image != nil {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("page %d has no text layer: its image is kept for a model that reads images, or for OCR (Options.OCR)", p.Number))
		}
		return
	}
	text, err := opts.OCR.Recognize(ctx, p.Image)
	if err != nil {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("page %d: OCR failed: %v", p.Number, err))
		return
	}
	p.Start = len(doc.Text)
	doc.Text += text
	p.End = len(doc.Text)
}

// fitImage checks an encoded image's size from its header, then returns it
// as is when it is a PNG or JPEG within maxPixels, else decoded, scaled
// down to fit and encoded again (JPEG stays JPEG, anything else PNG).
func fitImage(b []byte, maxPixels int) (*Image, error) {
	cfg, kind, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: the image header does not decode: %v", ErrCorrupt, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("%w: the image is %d×%d pixels", ErrCorrupt, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxDecodePixels {
		return nil, fmt.Errorf("%w: the image is %d×%d pixels (%.0f MP), the most decoded is %d MP: scale it down first", ErrTooLarge, cfg.Width, cfg.Height, float64(px)/1e6, MaxDecodePixels/1_000_000)
	}
	if cfg.Width*cfg.Height <= maxPixels && (kind == "png" || kind == "jpeg") {
		return &Image{MediaType: "image/" + kind, Data: b, Width: cfg.Width, Height: cfg.Height}, nil
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: the %s image does not decode: %v", ErrCorrupt, kind, err)
	}
	return encodeFitted(img, kind == "jpeg", maxPixels)
}

// encodeFitted scales img down to maxPixels (keeping its aspect) and
// encodes it.
func encodeFitted(img image.Image, photo bool, maxPixels int) (*Image, error) {
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
		img, w, h = dst, nw, nh
	}
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
