package jpx

import "github.com/extractq/extractq/document/internal/mq"

// mqDecoder is the MQ arithmetic decoder (Annex C, package mq) with the
// code-block's 19 contexts, also reading raw (bypass) segments.
type mqDecoder struct {
	d  mq.Decoder
	cx [19]mq.Context
	// The bypass segment being read.
	rawData []byte
	bp      int
	c       uint32
	ct      int
}

func (m *mqDecoder) init(data []byte) { m.d.Init(data) }

// resetContexts sets every context to its initial state (Table D.7).
func (m *mqDecoder) resetContexts() {
	m.cx = [19]mq.Context{}
	m.cx[ctxUNI] = mq.NewContext(46)
	m.cx[ctxRL] = mq.NewContext(3)
	m.cx[0] = mq.NewContext(4)
}

func (m *mqDecoder) decode(cx int) int { return m.d.Decode(&m.cx[cx]) }

func (m *mqDecoder) byteAt(i int) uint32 {
	if i < len(m.rawData) {
		return uint32(m.rawData[i])
	}
	return 0xff
}

// rawInit starts reading a bypass segment.
func (m *mqDecoder) rawInit(data []byte) {
	m.rawData, m.bp, m.c, m.ct = data, 0, 0, 0
}

// raw reads one bit of a bypass segment (the raw bits of C.3.5).
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
