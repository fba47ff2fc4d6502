package document

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math"
	"strings"

	"github.com/extractq/extractq/document/internal/jbig2"
	"github.com/extractq/extractq/document/internal/pdf"
	"golang.org/x/image/ccitt"
	"golang.org/x/image/draw"
)

// pageImageOf sets the page image of a page without a text layer: the
// largest image drawn over at least a third of the page, decoded and fitted
// to the limits; or, when no image covers two thirds of the page and the
// images together cover more than the largest and over a third (scanner
// software that cuts a page into bands), the images drawn into one picture
// at their places. It returns a warning when the page has none it can
// decode.
func pageImageOf(ctx context.Context, pg *pdfPage, images []pageImage, num int, opts *Options) string {
	var best *pageImage
	for i := range images {
		if best == nil || images[i].area > best.area {
			best = &images[i]
		}
	}
	third := pg.width * pg.height / 3
	var strips []pageImage
	if best != nil && best.area < 2*third {
		strips = stripsOf(images, best.area, third)
	}
	if best == nil || strips == nil && best.area < third {
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
		if strips != nil {
			var pic image.Image
			if pic, err = compositeImages(strips); err != nil {
				return nil, err
			}
			img, full, err = fitDecoded(pic, false, opts.Limits.MaxImagePixels, ocrPixels(opts), 1, nil, nil)
			return img, err
		}
		img, full, err = xobjectImage(best.xobj, opts.Limits.MaxImagePixels, ocrPixels(opts))
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

// maxStrips bounds the images drawn into one page picture.
const maxStrips = 64

// stripsOf picks the images that together make a page (drawn upright,
// unrotated) when they cover at least a third of its area and a quarter
// more than the largest image alone: nil when they do not, or are too
// many.
func stripsOf(images []pageImage, largest, third float64) []pageImage {
	var strips []pageImage
	var area float64
	for _, im := range images {
		if im.ctm[0] > 0 && im.ctm[3] > 0 && im.ctm[1] == 0 && im.ctm[2] == 0 {
			strips = append(strips, im)
			area += im.area
		}
	}
	if len(strips) < 2 || len(strips) > maxStrips || area < third || area < 1.25*largest {
		return nil
	}
	return strips
}

// compositeImages draws images into one picture at their places on the
// page, on white, at the finest of their resolutions (within
// maxPageImagePixels).
func compositeImages(strips []pageImage) (image.Image, error) {
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	scale := 0.0 // pixels a point
	for _, s := range strips {
		m := s.ctm
		x0, y0 = min(x0, m[4]), min(y0, m[5])
		x1, y1 = max(x1, m[4]+m[0]), max(y1, m[5]+m[3])
		w, h := float64(s.xobj.Key("Width").Int64()), float64(s.xobj.Key("Height").Int64())
		scale = max(scale, w/m[0], h/m[3])
	}
	pw, ph := (x1-x0)*scale, (y1-y0)*scale
	if pw*ph > maxPageImagePixels {
		scale *= 0.999 * math.Sqrt(maxPageImagePixels/(pw*ph))
	}
	if scale <= 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return nil, fmt.Errorf("page images placed at a scale of %v", scale)
	}
	pw, ph = math.Ceil((x1-x0)*scale), math.Ceil((y1-y0)*scale)
	if pw < 1 || ph < 1 || pw*ph > maxPageImagePixels {
		return nil, fmt.Errorf("page images over %.0f×%.0f pixels", pw, ph)
	}
	// One image decoded at a time; the picture is gray until an image in
	// colour comes.
	rect := image.Rect(0, 0, int(pw), int(ph))
	var canvas draw.Image = image.NewGray(rect)
	draw.Draw(canvas, rect, image.White, image.Point{}, draw.Src)
	decoded := 0
	for i, s := range strips {
		decoded += int(min(max(s.xobj.Key("Width").Int64(), 0), maxPageImagePixels) * min(max(s.xobj.Key("Height").Int64(), 0), maxPageImagePixels))
		if decoded > 2*maxPageImagePixels {
			return nil, fmt.Errorf("the %d images drawn on the page hold over %d MP", len(strips), 2*maxPageImagePixels/1_000_000)
		}
		img, stored, err := decodeXObject(s.xobj)
		if err == nil && stored != nil {
			img, _, err = image.Decode(bytes.NewReader(stored))
		}
		if err != nil {
			return nil, fmt.Errorf("image %d of %d drawn on the page: %w", i+1, len(strips), err)
		}
		if _, gray := canvas.(*image.Gray); gray && !isGray(img) {
			rgb := image.NewRGBA(rect)
			draw.Draw(rgb, rect, canvas, image.Point{}, draw.Src)
			canvas = rgb
		}
		m := s.ctm
		// PDF's y goes up, the picture's down.
		r := image.Rect(int(math.Round((m[4]-x0)*scale)), int(math.Round((y1-m[5]-m[3])*scale)),
			int(math.Round((m[4]+m[0]-x0)*scale)), int(math.Round((y1-m[5])*scale)))
		draw.ApproxBiLinear.Scale(canvas, r, img, img.Bounds(), draw.Src, nil)
	}
	return canvas, nil
}

// maxPageImagePixels bounds a page image decoded out of a PDF (a 600 dpi
// A3 scan is 35 MP; RGB samples take 4 bytes a pixel once decoded).
const maxPageImagePixels = 40_000_000

// xobjectImage decodes an image XObject and fits it: see decodeXObject for
// what is decoded. It returns the picture fitted to maxPixels and, when
// ocrPixels > 0, the picture for OCR at the image's own resolution (within
// ocrPixels): a JPEG's bytes as they are when nothing in the PDF changes
// its colours, else the decoded samples as PNG.
func xobjectImage(x pdf.Value, maxPixels, ocrPixels int) (fit, full *Image, err error) {
	img, stored, err := decodeXObject(x)
	if err != nil {
		return nil, nil, err
	}
	if stored != nil {
		return fitForOCR(stored, maxPixels, ocrPixels, 1)
	}
	return fitDecoded(img, false, maxPixels, ocrPixels, 1, nil, nil)
}

// maxImageStream bounds the bytes of a page image read whole (a JPEG, or
// the PNG-predicted samples passed on as a PNG).
const maxImageStream = 64 << 20

// pdfFilter is one of a stream's filters and its parameters.
type pdfFilter struct {
	name   string
	params pdf.Value
}

// filterNames spells out the abbreviated filter names of inline images.
var filterNames = map[string]string{"AHx": "ASCIIHexDecode", "A85": "ASCII85Decode", "LZW": "LZWDecode", "Fl": "FlateDecode", "RL": "RunLengthDecode", "CCF": "CCITTFaxDecode", "DCT": "DCTDecode"}

func streamFilters(x pdf.Value) []pdfFilter {
	f, p := x.Key("Filter"), x.Key("DecodeParms")
	var fs []pdfFilter
	switch f.Kind() {
	case pdf.Name:
		if p.Kind() == pdf.Array {
			p = p.Index(0)
		}
		fs = append(fs, pdfFilter{f.Name(), p})
	case pdf.Array:
		for i := range min(f.Len(), 9) {
			fp := p
			if p.Kind() == pdf.Array {
				fp = p.Index(i)
			} else if i > 0 {
				fp = pdf.Value{}
			}
			fs = append(fs, pdfFilter{f.Index(i).Name(), fp})
		}
	}
	for i := range fs {
		fs[i].name = cmp.Or(filterNames[fs[i].name], fs[i].name)
	}
	return fs
}

// imageCodecs are the filters that decode an image's samples as a whole:
// only the last of a stream's filters.
var imageCodecs = map[string]bool{"DCTDecode": true, "CCITTFaxDecode": true, "JBIG2Decode": true, "JPXDecode": true}

// decodeXObject decodes an image XObject's samples: JPEG (DCTDecode), CCITT
// fax (the usual scanner output), JPEG 2000 (JPXDecode), and samples of 1, 2, 4, 8 or 16 bits
// stored as they are or compressed with Flate, LZW or RunLength, behind
// ASCIIHex or ASCII85 too, in gray, RGB, CMYK, Lab, one ink's tints or an
// indexed (palette) colour space, with a Decode array. A JPEG that the PDF
// takes as it is comes back as its stored bytes (stored), to go on without
// decoding.
func decodeXObject(x pdf.Value) (img image.Image, stored []byte, err error) {
	w, h := int(x.Key("Width").Int64()), int(x.Key("Height").Int64())
	if w <= 0 || h <= 0 || int64(w)*int64(h) > maxPageImagePixels {
		return nil, nil, fmt.Errorf("image of %d×%d pixels", w, h)
	}
	filters := streamFilters(x)
	if len(filters) > 8 {
		return nil, nil, fmt.Errorf("an image behind %d filters", len(filters))
	}
	mask := x.Key("ImageMask").Bool()
	bpc := int(x.Key("BitsPerComponent").Int64())
	last := ""
	if len(filters) > 0 {
		last = filters[len(filters)-1].name
	}
	var cs colourSpace
	if mask {
		cs, bpc = colourSpace{kind: csGray, comps: 1}, 1
	} else if cs, err = parseColourSpace(x.Key("ColorSpace"), 0); err != nil {
		switch {
		case last == "CCITTFaxDecode":
			cs = colourSpace{kind: csGray, comps: 1} // fax is black and white, whatever the PDF says
		case imageCodecs[last]:
			// A JPEG's own header says its colours.
		default:
			return nil, nil, err
		}
	}
	dec, err := decodeArray(x.Key("Decode"), cs, bpc)
	if err != nil {
		return nil, nil, err
	}
	rd := x.EncodedReader()
	codec := pdfFilter{}
	for i, f := range filters {
		if imageCodecs[f.name] {
			if i != len(filters)-1 {
				return nil, nil, fmt.Errorf("the %s image is filtered again (%s)", f.name, filters[i+1].name)
			}
			codec = f
			break
		}
		// The samples of a single Flate filter with a PNG predictor are a
		// PNG's image data: passed on as a PNG, when the PDF's colours are
		// the PNG's.
		if len(filters) == 1 && f.name == "FlateDecode" && f.params.Key("Predictor").Int64() >= 10 && dec == nil &&
			(cs.kind == csGray && !cs.ink || cs.kind == csRGB && bpc >= 8) && int(cmp.Or(f.params.Key("Colors").Int64(), 1)) == cs.comps &&
			int(cmp.Or(f.params.Key("Columns").Int64(), 1)) == w && int(cmp.Or(f.params.Key("BitsPerComponent").Int64(), 8)) == bpc {
			b, err := readStream(rd)
			if err != nil {
				return nil, nil, err
			}
			return nil, wrapPNG(w, h, bpc, cs.comps, b), nil
		}
		if rd, err = pdf.Unfilter(rd, f.name, f.params); err != nil {
			return nil, nil, err
		}
	}
	switch codec.name {
	case "DCTDecode":
		b, err := readStream(rd)
		if err != nil {
			return nil, nil, err
		}
		return decodeJPEG(b, dec)
	case "CCITTFaxDecode":
		p := codec.params
		sub := ccitt.Group3
		if p.Key("K").Int64() < 0 {
			sub = ccitt.Group4
		}
		// The image's Width when Columns is left out, its Height bounding
		// Rows: a fax image is the image.
		cols := int(p.Key("Columns").Int64())
		if cols <= 0 {
			cols = w
		}
		rows := int(p.Key("Rows").Int64())
		if rows <= 0 || rows > h {
			rows = h
		}
		if cols > 2*w+64 {
			return nil, nil, fmt.Errorf("a fax image of %d columns in an image %d pixels wide", cols, w)
		}
		// A Decode array [1 0] inverts the image (a mask's, or a
		// scanner's that writes white as 0).
		invert := !p.Key("BlackIs1").Bool()
		if dec != nil && dec[0].lo > dec[0].hi {
			invert = !invert
		}
		img := image.NewGray(image.Rect(0, 0, cols, rows))
		fax := ccitt.NewReader(rd, ccitt.MSB, sub, cols, rows, &ccitt.Options{Invert: invert, Align: p.Key("EncodedByteAlign").Bool()})
		if err := readBits(fax, img, cols, rows); err != nil {
			return nil, nil, err
		}
		return img, nil, nil
	case "JPXDecode":
		b, err := readStream(rd)
		if err != nil {
			return nil, nil, err
		}
		img, err := decodeJPX(b, int64(w)*int64(h), cs, cs.comps > 0, dec)
		return img, nil, err
	case "JBIG2Decode":
		b, err := readStream(rd)
		if err != nil {
			return nil, nil, err
		}
		var globals []byte
		if g := codec.params.Key("JBIG2Globals"); g.Kind() == pdf.Stream {
			if globals, err = streamBytes(g, maxImageStream); err != nil {
				return nil, nil, fmt.Errorf("its JBIG2Globals: %w", err)
			}
		}
		img, err := jbig2.Decode(b, globals, jbig2.Limits{MaxPixels: maxPageImagePixels})
		if err != nil {
			return nil, nil, fmt.Errorf("a JBIG2Decode image: %w", err)
		}
		// A Decode array [1 0] swaps black and white, for a picture and a
		// mask alike (a mask's 0 samples are painted).
		if dec != nil && dec[0].lo > dec[0].hi {
			for i := range img.Pix {
				img.Pix[i] = ^img.Pix[i]
			}
		}
		return img, nil, nil
	case "":
		img, err := readSamples(rd, w, h, bpc, cs, dec)
		return img, nil, err
	}
	return nil, nil, fmt.Errorf("images compressed with %s are not decoded", codec.name)
}

// streamBytes reads a stream other than the image's (a palette, JBIG2's
// globals) through its own filters, at most limit bytes: pdf.Value's
// Reader knows only Flate and ASCII85.
func streamBytes(v pdf.Value, limit int64) ([]byte, error) {
	rd := v.EncodedReader()
	for _, f := range streamFilters(v) {
		var err error
		if rd, err = pdf.Unfilter(rd, f.name, f.params); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("it does not read: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	return b, nil
}

// readStream reads the rest of a stream, at most maxImageStream bytes.
func readStream(rd io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(rd, maxImageStream+1))
	if err != nil {
		return nil, fmt.Errorf("the image stream does not read: %w", err)
	}
	if len(b) > maxImageStream {
		return nil, fmt.Errorf("an image stream of more than %d MB", maxImageStream>>20)
	}
	return b, nil
}

// decodeJPEG takes a JPEG as it is (fitForOCR makes a CMYK one RGB)
// unless a Decode array inverts it. The Decode array [1 0 1 0 1 0 1 0] of
// Photoshop's and ImageMagick's CMYK JPEGs says their samples are stored
// inverted, which Go's decoder already undoes by the Adobe marker, as
// poppler does: left as decoded.
func decodeJPEG(b []byte, dec []decodeRange) (image.Image, []byte, error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the JPEG header does not decode (%v)", ErrCorrupt, err)
	}
	if cfg.ColorModel == color.CMYKModel || dec == nil {
		return nil, b, nil
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPageImagePixels {
		return nil, nil, fmt.Errorf("a JPEG of %d×%d pixels", cfg.Width, cfg.Height)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the JPEG does not decode: %v", ErrCorrupt, err)
	}
	invert := dec[0].lo > dec[0].hi
	switch m := img.(type) {
	case *image.Gray:
		if invert {
			for i := range m.Pix {
				m.Pix[i] = ^m.Pix[i]
			}
		}
		return m, nil, nil
	}
	if !invert {
		return img, nil, nil
	}
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Rect, img, img.Bounds().Min, draw.Src)
	for i := 0; i < len(out.Pix); i += 4 {
		out.Pix[i], out.Pix[i+1], out.Pix[i+2] = ^out.Pix[i], ^out.Pix[i+1], ^out.Pix[i+2]
	}
	return out, nil, nil
}

func cmykToRGB(c, m, y, k byte) (r, g, b byte) {
	w := 255 - uint32(k)
	return byte((255 - uint32(c)) * w / 255), byte((255 - uint32(m)) * w / 255), byte((255 - uint32(y)) * w / 255)
}

// Colour space kinds an image's samples are decoded from.
const (
	csGray = iota + 1
	csRGB
	csCMYK
	csLab
	csIndexed
)

// colourSpace is an image's colour space as far as reading it goes: gray,
// RGB, CMYK, Lab, or a palette of one of them.
type colourSpace struct {
	kind  int
	comps int // components a sample has
	// base, hival and palette: an indexed space's colours, each entry
	// already made RGB (or gray when base is gray).
	base    *colourSpace
	hival   int
	palette []color.RGBA
	// white: a Lab space's white point X, Z (Y is 1); ab its a* b* range.
	white [2]float64
	ab    [4]float64
	// ink: a gray space of one ink's tints (Separation, DeviceN of one
	// colorant), 1 the darkest.
	ink bool
}

// parseColourSpace reads an image's /ColorSpace. CalGray and CalRGB are
// read as DeviceGray and DeviceRGB, an ICC profile by its component count.
func parseColourSpace(v pdf.Value, depth int) (colourSpace, error) {
	name := v.Name()
	if v.Kind() == pdf.Array {
		name = v.Index(0).Name()
	}
	switch name {
	case "DeviceGray", "G", "CalGray":
		return colourSpace{kind: csGray, comps: 1}, nil
	case "DeviceRGB", "RGB", "CalRGB":
		return colourSpace{kind: csRGB, comps: 3}, nil
	case "DeviceCMYK", "CMYK":
		return colourSpace{kind: csCMYK, comps: 4}, nil
	case "ICCBased":
		switch n := v.Index(1).Key("N").Int64(); n {
		case 1:
			return colourSpace{kind: csGray, comps: 1}, nil
		case 3:
			return colourSpace{kind: csRGB, comps: 3}, nil
		case 4:
			return colourSpace{kind: csCMYK, comps: 4}, nil
		default:
			return colourSpace{}, fmt.Errorf("an ICC colour space of %d components is not decoded", n)
		}
	case "Separation", "DeviceN":
		// One ink's tints, read as their darkness: exact for black ink,
		// near enough for OCR for a spot colour's.
		if v.Kind() != pdf.Array || name == "DeviceN" && v.Index(1).Len() != 1 {
			return colourSpace{}, fmt.Errorf("images in a %s colour space of %d colorants are not decoded", name, v.Index(1).Len())
		}
		return colourSpace{kind: csGray, comps: 1, ink: true}, nil
	case "Lab":
		d := v.Index(1)
		cs := colourSpace{kind: csLab, comps: 3, white: [2]float64{0.9505, 1.089}, ab: [4]float64{-100, 100, -100, 100}}
		if wp := d.Key("WhitePoint"); wp.Len() == 3 && wp.Index(0).Float64() > 0 && wp.Index(2).Float64() > 0 {
			cs.white = [2]float64{wp.Index(0).Float64(), wp.Index(2).Float64()}
		}
		if r := d.Key("Range"); r.Len() == 4 {
			for i := range cs.ab {
				cs.ab[i] = r.Index(i).Float64()
			}
		}
		return cs, nil
	case "Indexed", "I":
		if v.Kind() != pdf.Array || v.Len() != 4 || depth > 0 {
			return colourSpace{}, fmt.Errorf("an indexed colour space of %d entries", v.Len())
		}
		base, err := parseColourSpace(v.Index(1), depth+1)
		if err != nil {
			return colourSpace{}, err
		}
		hival := int(v.Index(2).Int64())
		if hival < 0 || hival > 255 {
			return colourSpace{}, fmt.Errorf("an indexed colour space of %d colours", hival+1)
		}
		var table []byte
		switch lk := v.Index(3); lk.Kind() {
		case pdf.String:
			table = []byte(lk.RawString())
		case pdf.Stream:
			rd := lk.EncodedReader()
			for _, f := range streamFilters(lk) {
				if rd, err = pdf.Unfilter(rd, f.name, f.params); err != nil {
					return colourSpace{}, fmt.Errorf("the palette of an indexed colour space: %w", err)
				}
			}
			table, err = io.ReadAll(io.LimitReader(rd, 4*256))
			if err != nil {
				return colourSpace{}, fmt.Errorf("the palette of an indexed colour space does not read: %w", err)
			}
		}
		cs := colourSpace{kind: csIndexed, comps: 1, base: &base, hival: hival, palette: make([]color.RGBA, hival+1)}
		dec := base.defaultDecode(8)
		for i := range cs.palette {
			var s [4]float64
			for c := range base.comps {
				// A short table (some writers drop trailing zeros)
				// reads as black past its end.
				if j := i*base.comps + c; j < len(table) {
					s[c] = dec[c].lo + float64(table[j])*(dec[c].hi-dec[c].lo)/255
				}
			}
			cs.palette[i] = base.rgb(s)
		}
		return cs, nil
	case "":
		return colourSpace{}, fmt.Errorf("an image without a colour space")
	}
	return colourSpace{}, fmt.Errorf("images in the %s colour space are not decoded", name)
}

// decodeRange maps a component's samples, 0 to 2^bpc-1, onto lo to hi.
type decodeRange struct{ lo, hi float64 }

// defaultDecode is the Decode array a colour space implies.
func (cs colourSpace) defaultDecode(bpc int) []decodeRange {
	switch cs.kind {
	case csLab:
		return []decodeRange{{0, 100}, {cs.ab[0], cs.ab[1]}, {cs.ab[2], cs.ab[3]}}
	case csIndexed:
		return []decodeRange{{0, float64(int(1)<<bpc - 1)}}
	}
	d := make([]decodeRange, cs.comps)
	for i := range d {
		d[i] = decodeRange{0, 1}
	}
	return d
}

// decodeArray reads an image's /Decode: nil when there is none or it is
// the colour space's own.
func decodeArray(v pdf.Value, cs colourSpace, bpc int) ([]decodeRange, error) {
	if v.Kind() != pdf.Array || cs.comps == 0 {
		return nil, nil
	}
	if v.Len() != 2*cs.comps {
		return nil, fmt.Errorf("a Decode array of %d numbers for %d components", v.Len(), cs.comps)
	}
	def := cs.defaultDecode(bpc)
	d := make([]decodeRange, cs.comps)
	same := true
	for i := range d {
		d[i] = decodeRange{v.Index(2 * i).Float64(), v.Index(2*i + 1).Float64()}
		same = same && d[i] == def[i]
	}
	if same {
		return nil, nil
	}
	return d, nil
}

// rgb makes a colour of a sample's decoded components (0 to 1, Lab's L*
// a* b*).
func (cs colourSpace) rgb(s [4]float64) color.RGBA {
	b := func(f float64) byte { return byte(math.Round(255 * min(1, max(0, f)))) }
	switch cs.kind {
	case csGray:
		if cs.ink {
			s[0] = 1 - s[0]
		}
		g := b(s[0])
		return color.RGBA{g, g, g, 0xFF}
	case csRGB:
		return color.RGBA{b(s[0]), b(s[1]), b(s[2]), 0xFF}
	case csCMYK:
		r, g, bl := cmykToRGB(b(s[0]), b(s[1]), b(s[2]), b(s[3]))
		return color.RGBA{r, g, bl, 0xFF}
	case csLab:
		// L*a*b* to XYZ against the space's white point, then to sRGB
		// (the white point scaled to D65's).
		fy := (s[0] + 16) / 116
		fx, fz := fy+s[1]/500, fy-s[2]/200
		inv := func(t float64) float64 {
			if t > 6.0/29 {
				return t * t * t
			}
			return 3 * (6.0 / 29) * (6.0 / 29) * (t - 4.0/29)
		}
		x, y, z := 0.9505*inv(fx), inv(fy), 1.089*inv(fz)
		lin := [3]float64{3.2406*x - 1.5372*y - 0.4986*z, -0.9689*x + 1.8758*y + 0.0415*z, 0.0557*x - 0.2040*y + 1.0570*z}
		for i, c := range lin {
			if c <= 0.0031308 {
				lin[i] = 12.92 * c
			} else {
				lin[i] = 1.055*math.Pow(c, 1/2.4) - 0.055
			}
		}
		return color.RGBA{b(lin[0]), b(lin[1]), b(lin[2]), 0xFF}
	}
	return color.RGBA{A: 0xFF}
}

// readSamples decodes an image's samples, bpc bits each (1, 2, 4, 8 or 16),
// row by row: gray into a gray image, the rest into RGB.
func readSamples(rd io.Reader, w, h, bpc int, cs colourSpace, dec []decodeRange) (image.Image, error) {
	switch bpc {
	case 1, 2, 4, 8, 16:
	default:
		return nil, fmt.Errorf("%d-bit samples are not decoded", bpc)
	}
	if cs.kind == csIndexed && bpc == 16 {
		return nil, fmt.Errorf("16-bit palette indexes are not decoded")
	}
	// 8-bit gray, RGB and CMYK samples as they are are copied.
	plain := dec == nil && bpc == 8 && !cs.ink
	if dec == nil {
		dec = cs.defaultDecode(bpc)
	}
	// Samples of up to 8 bits are looked up: their value's decoded
	// component, per component (16-bit samples by their high byte).
	tbits := min(bpc, 8)
	levels := 1 << tbits
	tables := make([][]float64, cs.comps)
	for c := range tables {
		tables[c] = make([]float64, levels)
		for v := range levels {
			tables[c][v] = dec[c].lo + float64(v)*(dec[c].hi-dec[c].lo)/float64(levels-1)
		}
	}
	gray := cs.kind == csGray || cs.kind == csIndexed && cs.base.kind == csGray
	var gimg *image.Gray
	var cimg *image.RGBA
	if gray {
		gimg = image.NewGray(image.Rect(0, 0, w, h))
	} else {
		cimg = image.NewRGBA(image.Rect(0, 0, w, h))
	}
	// The colours of a gray or palette sample's values, made once.
	var lut []color.RGBA
	switch cs.kind {
	case csGray:
		lut = make([]color.RGBA, levels)
		for v := range lut {
			lut[v] = cs.rgb([4]float64{tables[0][v]})
		}
	case csIndexed:
		lut = make([]color.RGBA, levels)
		for v := range lut {
			i := int(math.Round(tables[0][v]))
			lut[v] = cs.palette[min(max(i, 0), cs.hival)]
		}
	}
	rowBytes := (w*cs.comps*bpc + 7) / 8
	row := make([]byte, rowBytes)
	br := bufio.NewReaderSize(rd, 64<<10)
	for y := range h {
		if _, err := io.ReadFull(br, row); err != nil {
			if y > 0 && (err == io.ErrUnexpectedEOF || err == io.EOF) {
				// A scan cut short keeps its rows read (the rest is
				// white), as readers of PDF do.
				if gimg != nil {
					fillWhite(gimg.Pix[y*gimg.Stride:])
				} else {
					fillWhite(cimg.Pix[y*cimg.Stride:])
				}
				break
			}
			return nil, fmt.Errorf("the image's samples end at row %d of %d: %w", y, h, err)
		}
		bit := 0
		sample := func() int {
			var v int
			switch bpc {
			case 8:
				v = int(row[bit>>3])
			case 16:
				v = int(row[bit>>3])
			default:
				v = int(row[bit>>3]>>(8-bpc-bit&7)) & (1<<bpc - 1)
			}
			bit += bpc
			return v
		}
		switch {
		case plain && cs.kind == csGray:
			copy(gimg.Pix[y*gimg.Stride:], row[:w])
			continue
		case plain && cs.kind == csRGB:
			px := cimg.Pix[y*cimg.Stride:]
			for x := range w {
				px[4*x], px[4*x+1], px[4*x+2], px[4*x+3] = row[3*x], row[3*x+1], row[3*x+2], 0xFF
			}
			continue
		case plain && cs.kind == csCMYK:
			px := cimg.Pix[y*cimg.Stride:]
			for x := range w {
				px[4*x], px[4*x+1], px[4*x+2] = cmykToRGB(row[4*x], row[4*x+1], row[4*x+2], row[4*x+3])
				px[4*x+3] = 0xFF
			}
			continue
		}
		if lut != nil {
			for x := range w {
				c := lut[sample()]
				if gimg != nil {
					gimg.Pix[y*gimg.Stride+x] = c.R
				} else {
					cimg.SetRGBA(x, y, c)
				}
			}
			continue
		}
		var s [4]float64
		for x := range w {
			for c := range cs.comps {
				s[c] = tables[c][sample()]
			}
			cimg.SetRGBA(x, y, cs.rgb(s))
		}
	}
	if gimg != nil {
		return gimg, nil
	}
	return cimg, nil
}

func fillWhite(b []byte) {
	for i := range b {
		b[i] = 0xFF
	}
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
