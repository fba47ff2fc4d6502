package mq

// Encoder is the MQ encoder (T.88 E.2, 15444-1 C.2): what the tests of
// the decoders make their streams with.
type Encoder struct {
	a, c uint32
	ct   int
	out  []byte // out[0] is the byte before the first (BP starts at it)
}

// NewEncoder returns an encoder at the start of a segment.
func NewEncoder() *Encoder { return &Encoder{a: 0x8000, ct: 12, out: []byte{0}} }

func (e *Encoder) byteOut() {
	b := &e.out[len(e.out)-1]
	switch {
	case *b == 0xFF:
		e.out = append(e.out, byte(e.c>>20))
		e.c &= 0xFFFFF
		e.ct = 7
	case e.c < 0x8000000:
		e.out = append(e.out, byte(e.c>>19))
		e.c &= 0x7FFFF
		e.ct = 8
	default:
		*b++
		if *b == 0xFF {
			e.c &= 0x7FFFFFF
			e.out = append(e.out, byte(e.c>>20))
			e.c &= 0xFFFFF
			e.ct = 7
		} else {
			e.out = append(e.out, byte(e.c>>19))
			e.c &= 0x7FFFF
			e.ct = 8
		}
	}
}

func (e *Encoder) renorm() {
	for {
		e.a <<= 1
		e.c <<= 1
		e.ct--
		if e.ct == 0 {
			e.byteOut()
		}
		if e.a&0x8000 != 0 {
			return
		}
	}
}

// Encode codes bit in the context cx and adapts it.
func (e *Encoder) Encode(cx *Context, bit int) {
	i, mps := *cx&0x7F, int(*cx>>7)
	q := qeTable[i]
	e.a -= q.qe
	if bit == mps {
		if e.a&0x8000 != 0 {
			e.c += q.qe
			return
		}
		if e.a < q.qe {
			e.a = q.qe
		} else {
			e.c += q.qe
		}
		i = Context(q.nmps)
	} else {
		if e.a < q.qe {
			e.c += q.qe
		} else {
			e.a = q.qe
		}
		if q.swtch {
			mps = 1 - mps
		}
		i = Context(q.nlps)
	}
	*cx = i | Context(mps)<<7
	e.renorm()
}

// Flush ends the coded data with the marker 0xFF 0xAC and returns it.
func (e *Encoder) Flush() []byte {
	t := e.c + e.a
	e.c |= 0xFFFF
	if e.c >= t {
		e.c -= 0x8000
	}
	e.c <<= e.ct
	e.byteOut()
	e.c <<= e.ct
	e.byteOut()
	if e.out[len(e.out)-1] != 0xFF {
		e.out = append(e.out, 0xFF)
	}
	e.out = append(e.out, 0xAC)
	return e.out[1:]
}
