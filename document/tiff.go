package document

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"

	"golang.org/x/image/draw"
)

// TIFF structure, as scanners and fax software write it, and as a JPEG's
// EXIF block holds it: a header naming the byte order and the offset of
// the first image file directory (IFD), each IFD a count of 12-byte
// entries and the offset of the next. Every page of a multi-page scan is
// one IFD of that chain; golang.org/x/image/tiff decodes only the first.

const (
	tiffNewSubfileType = 254 // bit 0: a reduced-resolution copy (thumbnail)
	tiffOrientation    = 274
	tiffTypeShort      = 3
	tiffTypeLong       = 4
)

// tiffIFD is one image file directory: where it starts, and what of it
// decides whether and how the page is read.
type tiffIFD struct {
	off         uint32
	thumbnail   bool
	orientation int // 1–8, EXIF's meaning; 1 when absent or out of range
}

// tiffIFDs walks a TIFF's chain of IFDs from its header. At most max+1
// are returned (so a caller can say "more than max"); a chain that loops or
// points outside the file ends where it goes wrong, with the IFDs before.
func tiffIFDs(b []byte, max int) ([]tiffIFD, binary.ByteOrder, error) {
	bo, first, err := tiffHeader(b)
	if err != nil {
		return nil, nil, err
	}
	var out []tiffIFD
	seen := map[uint32]bool{}
	for off := first; off != 0 && len(out) <= max; {
		if seen[off] {
			break // a loop: each page once
		}
		seen[off] = true
		ifd, next, ok := readIFD(b, bo, off)
		if !ok {
			break
		}
		out = append(out, ifd)
		off = next
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: the TIFF's first image directory lies outside the file", ErrCorrupt)
	}
	return out, bo, nil
}

// tiffHeader reads a TIFF header: its byte order and first IFD's offset.
func tiffHeader(b []byte) (binary.ByteOrder, uint32, error) {
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("%w: a TIFF header is 8 bytes, the file has %d", ErrCorrupt, len(b))
	}
	var bo binary.ByteOrder
	switch string(b[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return nil, 0, fmt.Errorf("%w: not a TIFF header", ErrCorrupt)
	}
	if bo.Uint16(b[2:]) != 42 {
		return nil, 0, fmt.Errorf("%w: not a TIFF header (BigTIFF is not read)", ErrCorrupt)
	}
	return bo, bo.Uint32(b[4:]), nil
}

// readIFD reads the entries of the IFD at off that matter here and the
// offset of the next IFD; ok is false when the IFD does not fit the file.
func readIFD(b []byte, bo binary.ByteOrder, off uint32) (ifd tiffIFD, next uint32, ok bool) {
	if uint64(off)+2 > uint64(len(b)) {
		return ifd, 0, false
	}
	n := int(bo.Uint16(b[off:]))
	end := uint64(off) + 2 + 12*uint64(n)
	if end+4 > uint64(len(b)) {
		return ifd, 0, false
	}
	ifd = tiffIFD{off: off, orientation: 1}
	for i := range n {
		e := b[uint64(off)+2+12*uint64(i):]
		tag, typ, count := bo.Uint16(e), bo.Uint16(e[2:]), bo.Uint32(e[4:])
		if count != 1 {
			continue
		}
		var v uint32
		switch typ {
		case tiffTypeShort:
			v = uint32(bo.Uint16(e[8:]))
		case tiffTypeLong:
			v = bo.Uint32(e[8:])
		default:
			continue
		}
		switch tag {
		case tiffNewSubfileType:
			ifd.thumbnail = v&1 != 0
		case tiffOrientation:
			if v >= 1 && v <= 8 {
				ifd.orientation = int(v)
			}
		}
	}
	return ifd, bo.Uint32(b[end:]), true
}

// tiffPage reads a TIFF file as if its header pointed at one IFD, so
// that golang.org/x/image/tiff decodes that page.
type tiffPage struct {
	b     []byte
	first [4]byte // the page's IFD offset, in the file's byte order
	pos   int64
}

func newTIFFPage(b []byte, bo binary.ByteOrder, off uint32) *tiffPage {
	p := &tiffPage{b: b}
	bo.PutUint32(p.first[:], off)
	return p
}

// ReadAt reads the file with bytes 4 to 8 (the first IFD's offset)
// replaced by the page's.
func (p *tiffPage) ReadAt(dst []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("tiff page: negative offset")
	}
	if off >= int64(len(p.b)) {
		return 0, io.EOF
	}
	n := copy(dst, p.b[off:])
	for i := max(off, 4); i < min(off+int64(n), 8); i++ {
		dst[i-off] = p.first[i-4]
	}
	if n < len(dst) {
		return n, io.EOF
	}
	return n, nil
}

func (p *tiffPage) Read(dst []byte) (int, error) {
	n, err := p.ReadAt(dst, p.pos)
	p.pos += int64(n)
	return n, err
}

// jpegOrientation reads the EXIF Orientation of a JPEG file (1 when it has
// none): how a camera or phone that stored the picture sideways says to
// turn it upright. Viewers apply it; OCR and models shown the raw pixels
// would read the page sideways.
func jpegOrientation(b []byte) int {
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return 1
	}
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xFF {
			return 1
		}
		marker := b[i+1]
		if marker == 0xFF { // fill byte
			i++
			continue
		}
		if marker == 0xDA || marker == 0xD9 { // image data or its end: no EXIF before it
			return 1
		}
		size := int(binary.BigEndian.Uint16(b[i+2:]))
		if size < 2 || i+2+size > len(b) {
			return 1
		}
		seg := b[i+4 : i+2+size]
		if marker == 0xE1 && len(seg) > 6 && string(seg[:6]) == "Exif\x00\x00" {
			tiff := seg[6:]
			bo, first, err := tiffHeader(tiff)
			if err != nil {
				return 1
			}
			ifd, _, ok := readIFD(tiff, bo, first)
			if !ok {
				return 1
			}
			return ifd.orientation
		}
		i += 2 + size
	}
	return 1
}

// orient turns img upright by an EXIF Orientation: 2 mirrored, 3 turned
// half a turn, 4 flipped, 5 transposed, 6 stored a quarter turn
// anticlockwise (shown turned clockwise), 7 transversed, 8 stored a
// quarter turn clockwise.
func orient(img image.Image, o int) image.Image {
	if o < 2 || o > 8 {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	// Work on a copy with one pixel layout, gray when the picture is.
	var src, dst draw.Image
	bpp := 4
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	if isGray(img) {
		bpp = 1
		g := image.NewGray(image.Rect(0, 0, w, h))
		draw.Draw(g, g.Bounds(), img, b.Min, draw.Src)
		src, dst = g, image.NewGray(image.Rect(0, 0, dw, dh))
	} else {
		c := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.Draw(c, c.Bounds(), img, b.Min, draw.Src)
		src, dst = c, image.NewRGBA(image.Rect(0, 0, dw, dh))
	}
	sp, sstride := pix(src)
	dp, dstride := pix(dst)
	for y := range h {
		for x := range w {
			var dx, dy int
			switch o {
			case 2:
				dx, dy = w-1-x, y
			case 3:
				dx, dy = w-1-x, h-1-y
			case 4:
				dx, dy = x, h-1-y
			case 5:
				dx, dy = y, x
			case 6:
				dx, dy = h-1-y, x
			case 7:
				dx, dy = h-1-y, w-1-x
			case 8:
				dx, dy = y, w-1-x
			}
			copy(dp[dy*dstride+dx*bpp:dy*dstride+dx*bpp+bpp], sp[y*sstride+x*bpp:y*sstride+x*bpp+bpp])
		}
	}
	return dst
}

// pix is the pixel buffer and stride of the two layouts orient makes.
func pix(img draw.Image) ([]byte, int) {
	if g, ok := img.(*image.Gray); ok {
		return g.Pix, g.Stride
	}
	c := img.(*image.RGBA)
	return c.Pix, c.Stride
}
