package document

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"

	"github.com/extractq/extractq/document/internal/jpx"
)

// JPEG 2000 files (.jp2, and bare codestreams: .j2k, .j2c) decode with
// image.Decode, so they read as pictures like PNG and JPEG (registered in
// image.go) and a fitted picture of one is a PNG.
func init() {
	dec := func(r io.Reader) (image.Image, error) {
		lim := jpxLimits
		lim.MaxPixels = MaxDecodePixels
		img, err := jpx.Decode(r, lim)
		if err != nil {
			return nil, err
		}
		return opaque(img), nil
	}
	cfg := func(r io.Reader) (image.Config, error) {
		c, err := jpx.DecodeConfig(r)
		if c.ColorModel == color.CMYKModel || c.ColorModel == color.NRGBA64Model {
			c.ColorModel = color.RGBAModel // what opaque makes of it
		}
		return c, err
	}
	image.RegisterFormat("jp2", "\x00\x00\x00\x0cjP  \r\n\x87\n", dec, cfg)
	image.RegisterFormat("jp2", "\xff\x4f\xff\x51", dec, cfg)
}

// jpxLimits bound a JPEG 2000 image decoded out of a PDF or read as a file.
var jpxLimits = jpx.Limits{MaxPixels: maxPageImagePixels, MaxComponents: 4, MaxTiles: 65535, MaxCodeBlocks: 1 << 20}

// decodeJPX decodes a JPXDecode image. Its colours are the codestream's
// own (the JP2 header's colour box and palette) unless the PDF gives a
// /ColorSpace of as many components (pdfCS true), which then reads the
// samples, through the Decode array if there is one. An alpha channel
// (SMaskInData) is dropped: the picture is read on white. The codestream's
// own size is the picture's, but may not pass 4 times the pixels of the
// image dictionary's (pixels, when > 0), which bounds the memory taken.
func decodeJPX(b []byte, pixels int64, cs colourSpace, pdfCS bool, dec []decodeRange) (image.Image, error) {
	as := jpx.Default
	if pdfCS {
		switch cs.kind {
		case csGray:
			as = jpx.Gray
		case csRGB:
			as = jpx.RGB
		case csCMYK:
			as = jpx.CMYK
		}
	}
	lim := jpxLimits
	if pixels > 0 {
		lim.MaxPixels = min(lim.MaxPixels, 4*pixels)
	}
	img, err := jpx.DecodeAs(b, lim, as)
	if err != nil {
		return nil, jpxError(err)
	}
	comps := 0
	switch img.(type) {
	case *image.Gray, *image.Gray16:
		comps = 1
	case *image.NRGBA, *image.NRGBA64:
		comps = 3
	case *image.CMYK:
		comps = 4
	}
	plain := !pdfCS || cs.comps != comps || dec == nil && (cs.kind == csGray && !cs.ink || cs.kind == csRGB)
	if plain {
		return opaque(img), nil
	}
	// The PDF's colour space reads the samples.
	if dec == nil {
		dec = cs.defaultDecode(8)
	}
	r := img.Bounds()
	out := image.NewRGBA(r)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			var v [4]uint8
			switch m := img.(type) {
			case *image.Gray:
				v[0] = m.GrayAt(x, y).Y
			case *image.Gray16:
				v[0] = uint8(m.Gray16At(x, y).Y >> 8)
			case *image.NRGBA:
				c := m.NRGBAAt(x, y)
				v = [4]uint8{c.R, c.G, c.B}
			case *image.NRGBA64:
				c := m.NRGBA64At(x, y)
				v = [4]uint8{uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8)}
			case *image.CMYK:
				c := m.CMYKAt(x, y)
				v = [4]uint8{c.C, c.M, c.Y, c.K}
			}
			var c color.RGBA
			if cs.kind == csIndexed {
				i := int(dec[0].lo + float64(v[0])*(dec[0].hi-dec[0].lo)/255 + 0.5)
				c = cs.palette[max(0, min(cs.hival, i))]
			} else {
				var s [4]float64
				for i := range cs.comps {
					s[i] = dec[i].lo + float64(v[i])*(dec[i].hi-dec[i].lo)/255
				}
				c = cs.rgb(s)
			}
			out.SetRGBA(x, y, c)
		}
	}
	return out, nil
}

// opaque drops an image's alpha channel.
func opaque(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.NRGBA:
		for i := 3; i < len(m.Pix); i += 4 {
			m.Pix[i] = 0xff
		}
	case *image.NRGBA64:
		for i := 6; i < len(m.Pix); i += 8 {
			m.Pix[i], m.Pix[i+1] = 0xff, 0xff
		}
	case *image.CMYK:
		out := image.NewRGBA(m.Rect)
		draw.Draw(out, out.Rect, m, m.Rect.Min, draw.Src)
		return out
	}
	return img
}

// jpxError says why a JPEG 2000 image does not decode and what to do.
func jpxError(err error) error {
	var unsup jpx.UnsupportedError
	var lim *jpx.LimitError
	switch {
	case errors.As(err, &unsup):
		return fmt.Errorf("a JPEG 2000 (JPXDecode) image uses a feature extractq does not decode (%v): convert it to PNG (opj_decompress, in Debian's libopenjp2-tools)", err)
	case errors.As(err, &lim):
		return fmt.Errorf("a JPEG 2000 (JPXDecode) image too large to decode: %w", err)
	}
	return fmt.Errorf("%w: the JPEG 2000 (JPXDecode) image does not decode: %v", ErrCorrupt, err)
}
