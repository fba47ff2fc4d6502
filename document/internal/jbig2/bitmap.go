package jbig2

// Combination operators (T.88 7.4.1.5).
const (
	opOr byte = iota
	opAnd
	opXor
	opXnor
	opReplace
)

// bitmap is a bi-level image, one byte a pixel: 1 black, 0 white.
type bitmap struct {
	w, h int
	pix  []byte
}

func newBitmap(w, h int) *bitmap { return &bitmap{w: w, h: h, pix: make([]byte, w*h)} }

// at is the pixel at (x, y), 0 outside the bitmap.
func (b *bitmap) at(x, y int) byte {
	if x < 0 || y < 0 || x >= b.w || y >= b.h {
		return 0
	}
	return b.pix[y*b.w+x]
}

func (b *bitmap) fill(v byte) {
	for i := range b.pix {
		b.pix[i] = v
	}
}

// combine draws src with its top left corner at (x, y) with the
// operator op, clipped to b.
func (b *bitmap) combine(src *bitmap, x, y int64, op byte) {
	x0, y0 := max(x, 0), max(y, 0)
	x1, y1 := min(x+int64(src.w), int64(b.w)), min(y+int64(src.h), int64(b.h))
	if x0 >= x1 || y0 >= y1 {
		return
	}
	for yy := y0; yy < y1; yy++ {
		dst := b.pix[int(yy)*b.w+int(x0) : int(yy)*b.w+int(x1)]
		s := src.pix[int(yy-y)*src.w+int(x0-x):]
		switch op {
		case opOr:
			for i := range dst {
				dst[i] |= s[i]
			}
		case opAnd:
			for i := range dst {
				dst[i] &= s[i]
			}
		case opXor:
			for i := range dst {
				dst[i] ^= s[i]
			}
		case opXnor:
			for i := range dst {
				dst[i] = 1 ^ (dst[i] ^ s[i])
			}
		default:
			copy(dst, s[:len(dst)])
		}
	}
}
