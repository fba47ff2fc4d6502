package jbig2

// The MQ arithmetic decoder of T.88 Annex E (the same coder as JPEG 2000's),
// with a 32-bit C register: the high 16 bits are compared with Qe.

// qeEntry is one row of Table E.1: the LPS probability estimate, the next
// state after an MPS and an LPS, and whether an LPS switches the MPS sense.
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

// context is one adaptive context: its state index (I) in the low 7 bits
// and its MPS in bit 7.
type context uint8

// mqDecoder decodes bits from one arithmetically coded segment. Reading
// past the data feeds 1 bits (as after a marker), so a truncated segment
// decodes to something in bounded time rather than failing mid-row.
type mqDecoder struct {
	data []byte
	bp   int
	a, c uint32
	ct   int
}

func newMQDecoder(data []byte) *mqDecoder {
	d := &mqDecoder{data: data}
	d.c = uint32(d.byteAt(0)) << 16
	d.byteIn()
	d.c <<= 7
	d.ct -= 7
	d.a = 0x8000
	return d
}

func (d *mqDecoder) byteAt(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0xFF
}

// byteIn is BYTEIN of Figure E.19.
func (d *mqDecoder) byteIn() {
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

// decode is DECODE of Figure E.15 with the context cx.
func (d *mqDecoder) decode(cx *context) int {
	i, mps := *cx&0x7F, int(*cx>>7)
	q := qeTable[i]
	d.a -= q.qe
	var bit int
	if d.c>>16 < q.qe {
		// LPS_EXCHANGE
		if d.a < q.qe {
			bit = mps
			i = context(q.nmps)
		} else {
			bit = 1 - mps
			if q.swtch {
				mps = 1 - mps
			}
			i = context(q.nlps)
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
			i = context(q.nlps)
		} else {
			bit = mps
			i = context(q.nmps)
		}
	}
	*cx = i | context(mps)<<7
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

// intDecoder is the integer arithmetic decoding procedure of Annex A.2
// (IADH, IADW, IAEX, IADT, IAFS, IADS, IAIT, …): 512 contexts each.
type intDecoder [512]context

// decodeInt returns the value, or ok false for OOB.
func (d *mqDecoder) decodeInt(cx *intDecoder) (v int32, ok bool) {
	prev := 1
	bit := func() int {
		b := d.decode(&cx[prev])
		if prev < 256 {
			prev = prev<<1 | b
		} else {
			prev = (prev<<1|b)&511 | 256
		}
		return b
	}
	s := bit()
	var n, off int
	switch {
	case bit() == 0:
		n, off = 2, 0
	case bit() == 0:
		n, off = 4, 4
	case bit() == 0:
		n, off = 6, 20
	case bit() == 0:
		n, off = 8, 84
	case bit() == 0:
		n, off = 12, 340
	default:
		n, off = 32, 4436
	}
	var u uint64
	for range n {
		u = u<<1 | uint64(bit())
	}
	u += uint64(off)
	if u > 1<<31-1 {
		u = 1<<31 - 1 // out of range for any use: callers' bounds reject it
	}
	switch {
	case s == 1 && u == 0:
		return 0, false
	case s == 1:
		return -int32(u), true
	}
	return int32(u), true
}

// decodeID is the IAID procedure of Annex A.3: codeLen bits, contexts
// 1<<(codeLen+1).
func (d *mqDecoder) decodeID(cx []context, codeLen int) int {
	prev := 1
	for range codeLen {
		prev = prev<<1 | d.decode(&cx[prev])
	}
	return prev - 1<<codeLen
}
