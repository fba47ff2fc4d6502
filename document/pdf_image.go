package document

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"io"
	"strings"

	"github.com/extractq/extractq/document/internal/jbig2"
	"github.com/extractq/extractq/document/internal/pdf"
	"golang.org/x/image/ccitt"
)

// pageImageOf sets the page image of a page without a text layer: the
// largest image drawn over at least a third of the page, decoded and fitted
// to the limits. It returns a warning when the page has none it can
// decode.
func pageImageOf(ctx context.Context, pg *pdfPage, file io.ReaderAt, images []pageImage, encrypted bool, num int, opts *Options) string {
	var best *pageImage
	for i := range images {
		if best == nil || images[i].area > best.area {
			best = &images[i]
		}
	}
	if best == nil || best.area < pg.width*pg.height/3 {
		return fmt.Sprintf("page %d has no text and no page image", num)
	}
	// full is the picture OCR reads, at the scan's resolution: made only
	// with OCR, and dropped once read (the page keeps the fitted one).
	var full *Image
	img, err := func() (img *Image, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		img, full, err = xobjectImage(file, best.xobj, encrypted, opts.Limits.MaxImagePixels, ocrPixels(opts))
		return img, err
	}()
	if err != nil {
		pg.unreadable = fmt.Sprintf("its page image could not be read: %v", err)
		return fmt.Sprintf("page %d has no text layer and its image could not be read: %v", num, err)
	}
	pg.image = img
	if opts.OCR == nil {
		return fmt.Sprintf("page %d has no text layer: its image is kept for a model that reads images, or for OCR (Options.OCR)", num)
	}
	text, err := opts.OCR.Recognize(ctx, cmp.Or(full, img))
	if err != nil {
		return fmt.Sprintf("page %d: OCR failed: %v", num, err)
	}
	pg.text = strings.TrimSpace(text)
	if pg.text != "" {
		pg.blocks = []Block{{Start: 0, End: len(pg.text), Box: Box{0, 0, pg.width, pg.height}}}
	}
	return ""
}

// maxPageImagePixels bounds a page image decoded out of a PDF (a 600 dpi
// A3 scan is 35 MP; RGB samples take 4 bytes a pixel once decoded).
const maxPageImagePixels = 40_000_000

// rawStream reads a stream's bytes as stored, before any filter.
func rawStream(file io.ReaderAt, v pdf.Value) ([]byte, error) {
	off, n, ok := v.RawStream()
	if !ok || n <= 0 || n > 64<<20 {
		return nil, fmt.Errorf("no image stream (length %d)", n)
	}
	b := make([]byte, n)
	if _, err := file.ReadAt(b, off); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// xobjectImage decodes an image XObject: JPEG (DCTDecode) as is, CCITT
// fax (the usual scanner output), JBIG2 (scanners' and OCRmyPDF's) and
// Flate-compressed gray or RGB samples.
// It returns the picture fitted to maxPixels and, when ocrPixels > 0, the
// picture for OCR at the image's own resolution (within ocrPixels): a
// JPEG's stream bytes as they are, else the decoded samples as PNG.
func xobjectImage(file io.ReaderAt, x pdf.Value, encrypted bool, maxPixels, ocrPixels int) (fit, full *Image, err error) {
	w, h := int(x.Key("Width").Int64()), int(x.Key("Height").Int64())
	if w <= 0 || h <= 0 || int64(w)*int64(h) > maxPageImagePixels {
		return nil, nil, fmt.Errorf("image of %d×%d pixels", w, h)
	}
	filter := x.Key("Filter")
	if filter.Kind() == pdf.Array && filter.Len() == 1 {
		filter = filter.Index(0)
	}
	params := x.Key("DecodeParms")
	if params.Kind() == pdf.Array {
		params = params.Index(0)
	}
	name := filter.Name()
	if encrypted && (name == "DCTDecode" || name == "CCITTFaxDecode" || name == "JBIG2Decode") {
		return nil, nil, fmt.Errorf("a %s image in an encrypted file", name)
	}
	switch name {
	case "DCTDecode":
		b, err := rawStream(file, x)
		if err != nil {
			return nil, nil, err
		}
		return fitForOCR(b, maxPixels, ocrPixels, 1)
	case "CCITTFaxDecode":
		b, err := rawStream(file, x)
		if err != nil {
			return nil, nil, err
		}
		sub := ccitt.Group3
		if params.Key("K").Int64() < 0 {
			sub = ccitt.Group4
		}
		cols := int(params.Key("Columns").Int64())
		if cols <= 0 {
			cols = w
		}
		rows := int(params.Key("Rows").Int64())
		if rows <= 0 {
			rows = h
		}
		img := image.NewGray(image.Rect(0, 0, cols, rows))
		rd := ccitt.NewReader(bytes.NewReader(b), ccitt.MSB, sub, cols, rows, &ccitt.Options{Invert: !params.Key("BlackIs1").Bool(), Align: params.Key("EncodedByteAlign").Bool()})
		if err := readBits(rd, img, cols, rows); err != nil {
			return nil, nil, err
		}
		return fitDecoded(img, false, maxPixels, ocrPixels, 1, nil, nil)
	case "JBIG2Decode":
		b, err := rawStream(file, x)
		if err != nil {
			return nil, nil, err
		}
		var globals []byte
		if g := params.Key("JBIG2Globals"); g.Kind() == pdf.Stream {
			// Through its filters: writers may Flate-compress the globals.
			rd := g.Reader()
			globals, err = io.ReadAll(io.LimitReader(rd, 64<<20))
			rd.Close()
			if err != nil {
				return nil, nil, fmt.Errorf("its JBIG2Globals: %w", err)
			}
		}
		img, err := jbig2.Decode(b, globals, jbig2.Limits{MaxPixels: maxPageImagePixels})
		if err != nil {
			return nil, nil, fmt.Errorf("a JBIG2Decode image: %w", err)
		}
		// Decode [1 0] swaps black and white, for a picture and a mask
		// alike (a mask's 0 samples are painted).
		if d := x.Key("Decode"); d.Kind() == pdf.Array && d.Len() == 2 && d.Index(0).Float64() == 1 {
			for i := range img.Pix {
				img.Pix[i] = ^img.Pix[i]
			}
		}
		return fitDecoded(img, false, maxPixels, ocrPixels, 1, nil, nil)
	case "FlateDecode", "":
		bpc := int(x.Key("BitsPerComponent").Int64())
		if pred := params.Key("Predictor").Int64(); pred >= 10 && name != "" {
			// PNG predictors: the stream is a PNG's image data as is.
			if encrypted {
				return nil, nil, fmt.Errorf("a PNG-predicted image in an encrypted file")
			}
			b, err := rawStream(file, x)
			if err != nil {
				return nil, nil, err
			}
			comps := int(params.Key("Colors").Int64())
			if comps == 0 {
				comps = 1
			}
			return fitForOCR(wrapPNG(w, h, bpc, comps, b), maxPixels, ocrPixels, 1)
		}
		comps := 0
		switch cs := x.Key("ColorSpace"); {
		case cs.Name() == "DeviceGray", x.Key("ImageMask").Bool():
			comps = 1
		case cs.Name() == "DeviceRGB":
			comps = 3
		case cs.Kind() == pdf.Array && cs.Index(0).Name() == "ICCBased":
			comps = int(cs.Index(1).Key("N").Int64())
		}
		if (comps != 1 && comps != 3) || (bpc != 8 && !(bpc == 1 && comps == 1)) {
			return nil, nil, fmt.Errorf("%d-bit samples in %d components are not decoded", bpc, comps)
		}
		rd := x.Reader()
		defer rd.Close()
		if bpc == 1 {
			img := image.NewGray(image.Rect(0, 0, w, h))
			rowBytes := (w + 7) / 8
			row := make([]byte, rowBytes)
			for y := range h {
				if _, err := io.ReadFull(rd, row); err != nil {
					return nil, nil, err
				}
				for xx := range w {
					if row[xx/8]&(0x80>>(xx%8)) != 0 {
						img.Pix[y*img.Stride+xx] = 0xFF
					}
				}
			}
			return fitDecoded(img, false, maxPixels, ocrPixels, 1, nil, nil)
		}
		if comps == 1 {
			img := image.NewGray(image.Rect(0, 0, w, h))
			if _, err := io.ReadFull(rd, img.Pix); err != nil {
				return nil, nil, err
			}
			return fitDecoded(img, false, maxPixels, ocrPixels, 1, nil, nil)
		}
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		px := make([]byte, 3*w)
		for y := range h {
			if _, err := io.ReadFull(rd, px); err != nil {
				return nil, nil, err
			}
			for xx := range w {
				img.SetRGBA(xx, y, color.RGBA{px[3*xx], px[3*xx+1], px[3*xx+2], 0xFF})
			}
		}
		return fitDecoded(img, false, maxPixels, ocrPixels, 1, nil, nil)
	}
	return nil, nil, fmt.Errorf("images compressed with %s are not decoded", name)
}

// wrapPNG makes a PNG file of zlib-compressed, PNG-filtered samples (a
// PDF image with a PNG predictor holds exactly a PNG's image data): no
// decoding here, the PNG decoder checks it all.
func wrapPNG(w, h, bpc, comps int, idat []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(kind string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		b.Write(n[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(kind))
		crc.Write(data)
		b.WriteString(kind)
		b.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		b.Write(n[:])
	}
	colorType := byte(0) // gray
	if comps == 3 {
		colorType = 2 // RGB
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = byte(bpc), colorType
	chunk("IHDR", ihdr)
	chunk("IDAT", idat)
	chunk("IEND", nil)
	return b.Bytes()
}

// readBits unpacks a 1-bit-per-pixel stream (1 = white after the ccitt
// reader's inversion) into a gray image.
func readBits(rd io.Reader, img *image.Gray, w, h int) error {
	row := make([]byte, (w+7)/8)
	for y := range h {
		if _, err := io.ReadFull(rd, row); err != nil {
			return fmt.Errorf("the fax image ends early at row %d: %w", y, err)
		}
		for x := range w {
			if row[x/8]&(0x80>>(x%8)) != 0 {
				img.Pix[y*img.Stride+x] = 0xFF
			}
		}
	}
	return nil
}
