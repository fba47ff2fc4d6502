// Package mq is the MQ arithmetic decoder that JBIG2 (ITU-T T.88, Annex E)
// and JPEG 2000 (ISO/IEC 15444-1, Annex C) share: one adaptive binary
// coder, the same probability table, the same byte stuffing after 0xFF.
// It reads with a 32-bit C register whose high 16 bits are compared with
// Qe. Reading past the data feeds 1 bits, as after a marker, so a
// truncated segment decodes to something in bounded time instead of
// failing in the middle of a row; the callers bound the work.
package mq

// qeEntry is one row of the probability estimation table (T.88 Table E.1,
// 15444-1 Table C.2): Qe, the next state after an MPS and after an LPS,
// and whether an LPS switches the MPS sense.
type qeEntry struct {
	qe         uint32
	nmps, nlps uint8
	swtch      bool
}

var qeTable = [47]qeEntry{
	{0x5601, 1, 1, true}, {0x3401, 2, 6, false}, {0x1801, 3, 9, false}, {0x0AC1, 4, 12, false},
	{0x0521, 5, 29, false}, {0x0221, 38, 33, false}, {0x5601, 7, 6, true}, {0x5401, 8, 14, false},
	{0x4801, 9, 14, false}, {0x3801, 10, 14, false}, {0x3001, 11, 17, false}, {0x2401, 12, 18, false},
	{0x1C01, 13, 20, false}, {0x1601, 29, 21, false}, {0x5601, 15, 14, true}, {0x5401, 16, 14, false},
	{0x5101, 17, 15, false}, {0x4801, 18, 16, false}, {0x3801, 19, 17, false}, {0x3401, 20, 18, false},
	{0x3001, 21, 19, false}, {0x2801, 22, 19, false}, {0x2401, 23, 20, false}, {0x2201, 24, 21, false},
	{0x1C01, 25, 22, false}, {0x1801, 26, 23, false}, {0x1601, 27, 24, false}, {0x1401, 28, 25, false},
	{0x1201, 29, 26, false}, {0x1101, 30, 27, false}, {0x0AC1, 31, 28, false}, {0x09C1, 32, 29, false},
	{0x08A1, 33, 30, false}, {0x0521, 34, 31, false}, {0x0441, 35, 32, false}, {0x02A1, 36, 33, false},
	{0x0221, 37, 34, false}, {0x0141, 38, 35, false}, {0x0111, 39, 36, false}, {0x0085, 40, 37, false},
	{0x0049, 41, 38, false}, {0x0025, 42, 39, false}, {0x0015, 43, 40, false}, {0x0009, 44, 41, false},
	{0x0005, 45, 42, false}, {0x0001, 45, 43, false}, {0x5601, 46, 46, false},
}

// Context is one adaptive context: its state index in the low 7 bits and
// its MPS in bit 7. The zero Context is state 0 with MPS 0, the initial
// state of most contexts.
type Context uint8

// NewContext returns a context in state index with MPS 0 (JPEG 2000's
// uniform and run-length contexts start in states 46 and 3).
func NewContext(index int) Context { return Context(index & 0x7F) }

// Decoder decodes the bits of one arithmetically coded segment.
type Decoder struct {
	data []byte
	bp   int
	a, c uint32
	ct   int
}

// Init starts decoding data (INITDEC).
func (d *Decoder) Init(data []byte) {
	*d = Decoder{data: data}
	d.c = uint32(d.byteAt(0)) << 16
	d.byteIn()
	d.c <<= 7
	d.ct -= 7
	d.a = 0x8000
}

func (d *Decoder) byteAt(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0xFF
}

// byteIn is BYTEIN.
func (d *Decoder) byteIn() {
	if d.byteAt(d.bp) == 0xFF {
		if d.byteAt(d.bp+1) > 0x8F {
			d.c += 0xFF00
			d.ct = 8
		} else {
			d.bp++
			d.c += uint32(d.byteAt(d.bp)) << 9
			d.ct = 7
		}
		return
	}
	d.bp++
	d.c += uint32(d.byteAt(d.bp)) << 8
	d.ct = 8
}

// Decode decodes one bit in the context cx and adapts it (DECODE).
func (d *Decoder) Decode(cx *Context) int {
	i, mps := *cx&0x7F, int(*cx>>7)
	q := &qeTable[i]
	d.a -= q.qe
	var bit int
	if d.c>>16 < q.qe {
		// LPS_EXCHANGE
		if d.a < q.qe {
			bit = mps
			i = Context(q.nmps)
		} else {
			bit = 1 - mps
			if q.swtch {
				mps = 1 - mps
			}
			i = Context(q.nlps)
		}
		d.a = q.qe
	} else {
		d.c -= q.qe << 16
		if d.a&0x8000 != 0 {
			return mps
		}
		// MPS_EXCHANGE
		if d.a < q.qe {
			bit = 1 - mps
			if q.swtch {
				mps = 1 - mps
			}
			i = Context(q.nlps)
		} else {
			bit = mps
			i = Context(q.nmps)
		}
	}
	*cx = i | Context(mps)<<7
	// RENORMD
	for {
		if d.ct == 0 {
			d.byteIn()
		}
		d.a <<= 1
		d.c <<= 1
		d.ct--
		if d.a&0x8000 != 0 {
			break
		}
	}
	return bit
}
