package jpx

// qeTable is the MQ coder's probability estimation (Table C.2): Qe, the
// next index after an MPS and after an LPS, and whether an LPS switches
// the MPS sense.
var qeTable = [47]struct {
	qe         uint32
	nmps, nlps uint8
	sw         bool
}{
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

// mqDecoder is the MQ arithmetic decoder (Annex C), also reading raw
// (bypass) segments.
type mqDecoder struct {
	data []byte
	bp   int
	a, c uint32
	ct   int
	// contexts: index into qeTable and MPS
	idx [19]uint8
	mps [19]uint8
}

func (m *mqDecoder) byteAt(i int) uint32 {
	if i < len(m.data) {
		return uint32(m.data[i])
	}
	return 0xff
}

func (m *mqDecoder) init(data []byte) {
	m.data, m.bp = data, 0
	m.c = m.byteAt(0) << 16
	m.byteIn()
	m.c <<= 7
	m.ct -= 7
	m.a = 0x8000
}

func (m *mqDecoder) byteIn() {
	if m.byteAt(m.bp) == 0xff {
		b1 := m.byteAt(m.bp + 1)
		if b1 > 0x8f {
			m.c += 0xff00
			m.ct = 8
		} else {
			m.bp++
			m.c += b1 << 9
			m.ct = 7
		}
	} else {
		m.bp++
		m.c += m.byteAt(m.bp) << 8
		m.ct = 8
	}
}

// resetContexts sets every context to its initial state (Table D.7).
func (m *mqDecoder) resetContexts() {
	m.idx = [19]uint8{}
	m.mps = [19]uint8{}
	m.idx[ctxUNI] = 46
	m.idx[ctxRL] = 3
	m.idx[0] = 4
}

func (m *mqDecoder) decode(cx int) int {
	e := &qeTable[m.idx[cx]]
	qe := e.qe
	m.a -= qe
	var d int
	if m.c>>16 < qe {
		if m.a < qe {
			m.a = qe
			d = int(m.mps[cx])
			m.idx[cx] = e.nmps
		} else {
			m.a = qe
			d = 1 - int(m.mps[cx])
			if e.sw {
				m.mps[cx] ^= 1
			}
			m.idx[cx] = e.nlps
		}
	} else {
		m.c -= qe << 16
		if m.a&0x8000 != 0 {
			return int(m.mps[cx])
		}
		if m.a < qe {
			d = 1 - int(m.mps[cx])
			if e.sw {
				m.mps[cx] ^= 1
			}
			m.idx[cx] = e.nlps
		} else {
			d = int(m.mps[cx])
			m.idx[cx] = e.nmps
		}
	}
	for {
		if m.ct == 0 {
			m.byteIn()
		}
		m.a <<= 1
		m.c <<= 1
		m.ct--
		if m.a&0x8000 != 0 {
			break
		}
	}
	return d
}

// rawInit starts reading a bypass segment.
func (m *mqDecoder) rawInit(data []byte) {
	m.data, m.bp, m.c, m.ct = data, 0, 0, 0
}

func (m *mqDecoder) raw() int {
	if m.ct == 0 {
		if m.c == 0xff {
			if b := m.byteAt(m.bp); b > 0x8f {
				m.c, m.ct = 0xff, 8
			} else {
				m.c, m.ct = b, 7
				m.bp++
			}
		} else {
			m.c, m.ct = m.byteAt(m.bp), 8
			m.bp++
		}
	}
	m.ct--
	return int(m.c>>m.ct) & 1
}
