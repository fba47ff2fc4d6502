// Package jpx decodes JPEG 2000 images (ISO/IEC 15444-1): a bare
// codestream (.j2k, .j2c) or one wrapped in JP2 boxes (.jp2), as PDF's
// JPXDecode filter carries them.
//
// It decodes the Part 1 core: the five progression orders and their
// changes (POC), precincts, packed packet headers (PPM, PPT), regions of
// interest (RGN, max-shift), tiles and tile-parts, every code-block style
// (bypass, reset, termall, vertically causal, predictable termination,
// segmentation symbols), the reversible 5/3 and irreversible 9/7 wavelets
// with their quantisation, the RCT and ICT component transforms,
// subsampled components, and the JP2 header's colour (greyscale, sRGB,
// sYCC, CMYK) and palette (pclr/cmap). It does not decode Part 2
// extensions (other wavelets, multi-component transforms) nor HTJ2K (Part
// 15) code-blocks: those return an UnsupportedError. Hostile input never
// panics: Limits bound what a decode may allocate, and malformed data is
// a FormatError.
package jpx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"io"
)

// Limits bounds what one decode may allocate.
type Limits struct {
	// MaxPixels is the largest image (width × height on the reference
	// grid) decoded at all.
	MaxPixels int64
	// MaxComponents is the most components (channels) accepted.
	MaxComponents int
	// MaxTiles is the most tiles accepted.
	MaxTiles int
	// MaxCodeBlocks is the most code-blocks accepted over all tiles,
	// components and sub-bands.
	MaxCodeBlocks int
}

// DefaultLimits suit a scanned page at up to 600 dpi.
var DefaultLimits = Limits{MaxPixels: 120_000_000, MaxComponents: 4, MaxTiles: 65535, MaxCodeBlocks: 1 << 20}

// FormatError reports data that is not valid JPEG 2000.
type FormatError string

func (e FormatError) Error() string { return "jpx: invalid JPEG 2000: " + string(e) }

// UnsupportedError reports valid JPEG 2000 using a feature this package
// does not decode.
type UnsupportedError string

func (e UnsupportedError) Error() string { return "jpx: unsupported JPEG 2000 feature: " + string(e) }

// LimitError reports an image beyond the Limits given to Decode.
type LimitError struct {
	What       string
	Value, Max int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("jpx: the image's %s (%d) is over the limit of %d", e.What, e.Value, e.Max)
}

// Decode reads a JPEG 2000 codestream or JP2 file and returns its image:
// *image.Gray, *image.Gray16, *image.NRGBA, *image.NRGBA64 or *image.CMYK
// depending on its components, precision and colour space (see Default).
func Decode(r io.Reader, lim Limits) (image.Image, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return DecodeBytes(data, lim)
}

// DecodeBytes is Decode on data already in memory.
func DecodeBytes(data []byte, lim Limits) (image.Image, error) {
	return DecodeAs(data, lim, Default)
}

// ColorSpace says how to read the components, overriding the JP2 header
// (a PDF's /ColorSpace does).
type ColorSpace int

// Colour spaces for DecodeAs. Default follows the JP2 header; for a bare
// codestream it reads 1 or 2 components as grey (and alpha), 3 as RGB or,
// when the chroma is subsampled, sYCC, 4 as RGB and alpha, as
// opj_decompress does.
const (
	Default ColorSpace = iota
	Gray
	RGB
	CMYK
)

// DecodeAs is DecodeBytes reading the components in colour space cs.
func DecodeAs(data []byte, lim Limits, cs ColorSpace) (img image.Image, err error) {
	defer func() {
		// The decoder checks every index it derives from the data; this
		// is a last guard so that a missed check is an error, not a crash.
		if r := recover(); r != nil {
			img, err = nil, FormatError(fmt.Sprintf("malformed data (%v)", r))
		}
	}()
	return decodeAs(data, lim, cs)
}

func decodeAs(data []byte, lim Limits, cs ColorSpace) (image.Image, error) {
	hdr, stream, err := parseFile(data)
	if err != nil {
		return nil, err
	}
	if cs != Default {
		hdr.enumCS = [4]uint32{0, 17, 16, 12}[cs]
	}
	d, err := newDecoder(stream, lim)
	if err != nil {
		return nil, err
	}
	if err := d.decode(); err != nil {
		return nil, err
	}
	return d.image(hdr)
}

// DecodeConfig returns the image's size and colour model without decoding
// its pixels.
func DecodeConfig(r io.Reader) (image.Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return image.Config{}, err
	}
	hdr, cs, err := parseFile(data)
	if err != nil {
		return image.Config{}, err
	}
	var s siz
	if err := s.parseMain(cs); err != nil {
		return image.Config{}, err
	}
	m := colorModel(hdr, &s)
	return image.Config{ColorModel: m, Width: int(s.x1 - s.x0), Height: int(s.y1 - s.y0)}, nil
}

// jp2Header is what the JP2 boxes say about colour.
type jp2Header struct {
	jp2     bool
	enumCS  uint32 // colr method 1: 16 sRGB, 17 greyscale, 18 sYCC, 12 CMYK; 0 unknown
	palette *palette
	cmap    []cmapEntry
}

type palette struct {
	entries int
	depth   []int     // bits per column
	signed  []bool    // per column
	values  [][]int32 // [column][entry]
}

type cmapEntry struct {
	comp   int
	mtyp   int // 0 direct, 1 palette
	column int
}

// jp2Magic starts a JP2 file: the signature box.
var jp2Magic = []byte("\x00\x00\x00\x0cjP  \r\n\x87\n")

// codestreamMagic starts a bare codestream: SOC then SIZ.
var codestreamMagic = []byte{0xFF, 0x4F, 0xFF, 0x51}

// IsJPX reports whether head starts a JP2 file or a JPEG 2000 codestream.
func IsJPX(head []byte) bool {
	return bytes.HasPrefix(head, jp2Magic) || bytes.HasPrefix(head, codestreamMagic)
}

// parseFile finds the codestream in data, reading the JP2 header boxes if
// data is a JP2 file.
func parseFile(data []byte) (*jp2Header, []byte, error) {
	if bytes.HasPrefix(data, codestreamMagic) {
		return &jp2Header{}, data, nil
	}
	if !bytes.HasPrefix(data, jp2Magic) {
		return nil, nil, FormatError("neither a JP2 signature nor a codestream's SOC and SIZ markers")
	}
	hdr := &jp2Header{jp2: true}
	var cs []byte
	err := walkBoxes(data, func(typ string, body []byte) error {
		switch typ {
		case "jp2h":
			return walkBoxes(body, func(typ string, body []byte) error { return hdr.parseHeaderBox(typ, body) })
		case "jp2c":
			if cs == nil {
				cs = body
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if cs == nil {
		return nil, nil, FormatError("JP2 file without a contiguous codestream box (jp2c)")
	}
	return hdr, cs, nil
}

// walkBoxes calls fn with each box's type and body in data.
func walkBoxes(data []byte, fn func(typ string, body []byte) error) error {
	for len(data) >= 8 {
		n := uint64(binary.BigEndian.Uint32(data))
		typ := string(data[4:8])
		hl := uint64(8)
		switch n {
		case 0:
			n = uint64(len(data))
		case 1:
			if len(data) < 16 {
				return FormatError("truncated box header")
			}
			n, hl = binary.BigEndian.Uint64(data[8:]), 16
		}
		if n < hl || n > uint64(len(data)) {
			if typ == "jp2c" && n > uint64(len(data)) { // a truncated codestream: decode what is there
				n = uint64(len(data))
			} else {
				return FormatError(fmt.Sprintf("box %q of length %d in %d bytes", typ, n, len(data)))
			}
		}
		if err := fn(typ, data[hl:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (h *jp2Header) parseHeaderBox(typ string, b []byte) error {
	switch typ {
	case "colr":
		if len(b) >= 7 && b[0] == 1 && h.enumCS == 0 {
			h.enumCS = binary.BigEndian.Uint32(b[3:])
		}
	case "pclr":
		if len(b) < 3 {
			return FormatError("short pclr box")
		}
		ne, npc := int(binary.BigEndian.Uint16(b)), int(b[2])
		if ne < 1 || ne > 1024 || npc < 1 || len(b) < 3+npc {
			return FormatError(fmt.Sprintf("palette of %d entries of %d columns", ne, npc))
		}
		p := &palette{entries: ne}
		size := 0
		for i := range npc {
			d := int(b[3+i]&0x7f) + 1
			if d > 16 {
				return UnsupportedError(fmt.Sprintf("palette column of %d bits", d))
			}
			p.depth = append(p.depth, d)
			p.signed = append(p.signed, b[3+i]&0x80 != 0)
			size += (d + 7) / 8
		}
		off := 3 + npc
		if len(b) < off+ne*size {
			return FormatError("short pclr box")
		}
		p.values = make([][]int32, npc)
		for i := range npc {
			p.values[i] = make([]int32, ne)
		}
		for e := range ne {
			for i := range npc {
				var v int32
				if p.depth[i] > 8 {
					v = int32(binary.BigEndian.Uint16(b[off:]))
					off += 2
				} else {
					v = int32(b[off])
					off++
				}
				p.values[i][e] = v
			}
		}
		h.palette = p
	case "cmap":
		for i := 0; i+4 <= len(b); i += 4 {
			h.cmap = append(h.cmap, cmapEntry{comp: int(binary.BigEndian.Uint16(b[i:])), mtyp: int(b[i+2]), column: int(b[i+3])})
		}
	}
	return nil
}

// colorModel is the model of the image Decode returns.
func colorModel(h *jp2Header, s *siz) color.Model {
	n, prec := len(s.comps), 8
	if len(s.comps) > 0 {
		prec = s.comps[0].prec
	}
	if h.palette != nil {
		n, prec = len(h.cmap), 8
		if len(h.palette.depth) > 0 {
			prec = h.palette.depth[0]
		}
	}
	switch {
	case n == 4 && h.enumCS == 12:
		return color.CMYKModel
	case n >= 3 && prec > 8:
		return color.NRGBA64Model
	case n >= 3:
		return color.NRGBAModel
	case prec > 8:
		return color.Gray16Model
	}
	return color.GrayModel
}
