package jbig2

import "github.com/extractq/extractq/document/internal/mq"

// The MQ arithmetic decoder of T.88 Annex E is JPEG 2000's (package mq);
// the integer and symbol ID procedures on top of it are JBIG2's own.

// context is one adaptive context.
type context = mq.Context

// mqDecoder decodes bits from one arithmetically coded segment.
type mqDecoder struct{ mq.Decoder }

func newMQDecoder(data []byte) *mqDecoder {
	d := new(mqDecoder)
	d.Init(data)
	return d
}

// decode decodes one bit in the context cx.
func (d *mqDecoder) decode(cx *context) int { return d.Decode(cx) }

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
