package jbig2

import (
	"encoding/binary"
	"fmt"
)

// inputSymbols are the symbols exported by the symbol dictionaries a
// segment refers to, in the order it refers to them, within
// Limits.MaxSymbols (a dictionary referred to again counts again).
func (d *decoder) inputSymbols(s *segment) ([]*bitmap, error) {
	var syms []*bitmap
	for _, n := range s.referred {
		if len(syms)+len(d.symbols[n]) > d.lim.MaxSymbols {
			return nil, fmt.Errorf("%w: segment %d refers to more than %d symbols", ErrLimit, s.number, d.lim.MaxSymbols)
		}
		syms = append(syms, d.symbols[n]...)
	}
	return syms, nil
}

// symbolDict decodes a symbol dictionary segment (T.88 7.4.2, 6.5):
// arithmetic, each symbol coded directly or refined from one other.
func (d *decoder) symbolDict(s *segment) error {
	unsupported := func(what string) error {
		return &UnsupportedError{Segment: s.number, Type: s.typ, What: what}
	}
	b := s.data
	if len(b) < 2 {
		return malformed("segment %d: symbol dictionary of %d bytes", s.number, len(b))
	}
	flags := binary.BigEndian.Uint16(b)
	b = b[2:]
	switch {
	case flags&1 != 0:
		return unsupported("Huffman coding (SDHUFF)")
	case flags&0x100 != 0:
		return unsupported("reusing a previous dictionary's coding contexts")
	}
	p := genericParams{template: int(flags >> 10 & 3)}
	n := 1
	if p.template == 0 {
		n = 4
	}
	if len(b) < 2*n+8 {
		return malformed("segment %d: symbol dictionary header of %d bytes", s.number, len(s.data))
	}
	p.at = readAT(b, n)
	b = b[2*n:]
	refAgg := flags&2 != 0
	rp := refineParams{template: int(flags >> 12 & 1)}
	if refAgg && rp.template == 0 {
		if len(b) < 12 {
			return malformed("segment %d: symbol dictionary header of %d bytes", s.number, len(s.data))
		}
		rp.at = [2][2]int{{int(int8(b[0])), int(int8(b[1]))}, {int(int8(b[2])), int(int8(b[3]))}}
		b = b[4:]
	}
	numEx := int64(binary.BigEndian.Uint32(b))
	numNew := int64(binary.BigEndian.Uint32(b[4:]))
	b = b[8:]
	in, err := d.inputSymbols(s)
	if err != nil {
		return err
	}
	if int64(d.nsyms)+numNew > int64(d.lim.MaxSymbols) || numEx > int64(len(in))+numNew {
		return fmt.Errorf("%w: segment %d: a symbol dictionary of %d new symbols exporting %d (at most %d symbols in all)", ErrLimit, s.number, numNew, numEx, d.lim.MaxSymbols)
	}
	mq := newMQDecoder(b)
	var iadh, iadw, iaex, iaai, iardx, iardy intDecoder
	cx := make([]context, 1<<contextBits[p.template])
	var grcx, iaid []context
	codeLen := 0
	if refAgg {
		grcx = make([]context, 1<<refineContextBits[rp.template])
		for 1<<codeLen < int64(len(in))+numNew {
			codeLen++
		}
		iaid = make([]context, 2<<codeLen)
	}
	newSyms := make([]*bitmap, 0, numNew)
	height := int64(0)
	for classes := int64(0); int64(len(newSyms)) < numNew; classes++ {
		if classes >= numNew {
			return malformed("segment %d: %d height classes for %d symbols", s.number, classes+1, numNew)
		}
		dh, ok := mq.decodeInt(&iadh)
		if !ok {
			return malformed("segment %d: OOB height class delta", s.number)
		}
		height += int64(dh)
		if height <= 0 || height > 1<<24 {
			return malformed("segment %d: symbol height %d", s.number, height)
		}
		width := int64(0)
		for {
			dw, ok := mq.decodeInt(&iadw)
			if !ok {
				break
			}
			if int64(len(newSyms)) >= numNew {
				return malformed("segment %d: more than %d new symbols", s.number, numNew)
			}
			width += int64(dw)
			if width <= 0 || width > 1<<24 {
				return malformed("segment %d: symbol width %d", s.number, width)
			}
			var bm *bitmap
			var err error
			if refAgg {
				bm, err = d.refinedSymbol(s, mq, grcx, iaid, codeLen, &iaai, &iardx, &iardy, in, newSyms, rp, int(width), int(height))
			} else {
				bm, err = d.decodeGeneric(mq, cx, int(width), int(height), p)
			}
			if err != nil {
				return fmt.Errorf("segment %d (symbol dictionary): %w", s.number, err)
			}
			newSyms = append(newSyms, bm)
		}
	}
	// The export flags: run lengths, alternately not exported and exported.
	all := int64(len(in)) + numNew
	var exported []*bitmap
	flag := false
	for i, runs := int64(0), int64(0); i < all; runs++ {
		if runs > 2*all+1 {
			return malformed("segment %d: more export runs than symbols", s.number)
		}
		run, ok := mq.decodeInt(&iaex)
		if !ok || run < 0 || int64(run) > all-i {
			return malformed("segment %d: export run of %d symbols at %d of %d", s.number, run, i, all)
		}
		if flag {
			for j := i; j < i+int64(run); j++ {
				if j < int64(len(in)) {
					exported = append(exported, in[j])
				} else {
					exported = append(exported, newSyms[j-int64(len(in))])
				}
			}
		}
		i += int64(run)
		flag = !flag
	}
	if int64(len(exported)) != numEx {
		return malformed("segment %d: %d symbols exported, the header says %d", s.number, len(exported), numEx)
	}
	d.symbols[s.number] = exported
	d.nsyms += len(newSyms)
	return nil
}

// refinedSymbol decodes a symbol of a dictionary with refinement and
// aggregation (T.88 6.5.8.2): one symbol refined, never an aggregate of
// several.
func (d *decoder) refinedSymbol(s *segment, mq *mqDecoder, grcx, iaid []context, codeLen int, iaai, iardx, iardy *intDecoder, in, newSyms []*bitmap, rp refineParams, w, h int) (*bitmap, error) {
	n, ok := mq.decodeInt(iaai)
	switch {
	case !ok || n < 1:
		return nil, malformed("an aggregate of %d symbols", n)
	case n > 1:
		return nil, &UnsupportedError{Segment: s.number, Type: s.typ, What: "a symbol aggregated from several (REFAGGNINST > 1)"}
	}
	id := mq.decodeID(iaid, codeLen)
	rdx, ok1 := mq.decodeInt(iardx)
	rdy, ok2 := mq.decodeInt(iardy)
	if !ok1 || !ok2 {
		return nil, malformed("OOB refinement offset")
	}
	switch {
	case id < len(in):
		rp.ref = in[id]
	case id-len(in) < len(newSyms):
		rp.ref = newSyms[id-len(in)]
	default:
		return nil, malformed("refinement of symbol %d of %d", id, len(in)+len(newSyms))
	}
	rp.dx, rp.dy = int(rdx), int(rdy)
	return d.decodeRefine(mq, grcx, w, h, &rp)
}

// Reference corners of a text region (T.88 7.4.3.1.1).
const (
	cornerBottomLeft = iota
	cornerTopLeft
	cornerBottomRight
	cornerTopRight
)

// textRegion decodes an immediate text region (T.88 7.4.3, 6.4):
// arithmetic, its symbols refined or not.
func (d *decoder) textRegion(s *segment) error {
	unsupported := func(what string) error {
		return &UnsupportedError{Segment: s.number, Type: s.typ, What: what}
	}
	r, err := readRegionInfo(s)
	if err != nil {
		return err
	}
	b := s.data[17:]
	if len(b) < 2 {
		return malformed("segment %d: text region without its flags", s.number)
	}
	flags := binary.BigEndian.Uint16(b)
	b = b[2:]
	switch {
	case flags&1 != 0:
		return unsupported("Huffman coding (SBHUFF)")
	}
	refine := flags&2 != 0
	strips := int64(1) << (flags >> 2 & 3)
	corner := int(flags >> 4 & 3)
	transposed := flags&0x40 != 0
	op := byte(flags >> 7 & 3)
	defPixel := byte(flags >> 9 & 1)
	dsOffset := int64(flags >> 10 & 0x1F)
	if dsOffset >= 16 {
		dsOffset -= 32
	}
	rp := refineParams{template: int(flags >> 15)}
	if refine && rp.template == 0 {
		if len(b) < 4 {
			return malformed("segment %d: text region without its refinement adaptive pixels", s.number)
		}
		rp.at = [2][2]int{{int(int8(b[0])), int(int8(b[1]))}, {int(int8(b[2])), int(int8(b[3]))}}
		b = b[4:]
	}
	if len(b) < 4 {
		return malformed("segment %d: text region without its instance count", s.number)
	}
	numInst := int64(binary.BigEndian.Uint32(b))
	b = b[4:]
	if numInst > int64(d.lim.MaxSymbols) {
		return fmt.Errorf("%w: segment %d: a text region of %d symbol instances (at most %d)", ErrLimit, s.number, numInst, d.lim.MaxSymbols)
	}
	syms, err := d.inputSymbols(s)
	if err != nil {
		return err
	}
	codeLen := 0
	for 1<<codeLen < len(syms) {
		codeLen++
	}
	reg, err := d.newBitmap(r.w, r.h)
	if err != nil {
		return err
	}
	if defPixel != 0 {
		reg.fill(1)
	}
	mq := newMQDecoder(b)
	var iadt, iafs, iads, iait, iari, iardw, iardh, iardx, iardy intDecoder
	iaid := make([]context, 2<<codeLen)
	var grcx []context
	if refine {
		grcx = make([]context, 1<<refineContextBits[rp.template])
	}
	dt, ok := mq.decodeInt(&iadt)
	if !ok {
		return malformed("segment %d: OOB strip delta", s.number)
	}
	stripT := -int64(dt) * strips
	firstS := int64(0)
	for n := int64(0); n < numInst; {
		dt, ok := mq.decodeInt(&iadt)
		if !ok {
			return malformed("segment %d: OOB strip delta", s.number)
		}
		stripT += int64(dt) * strips
		first := true
		var curS int64
		for n < numInst {
			if first {
				dfs, ok := mq.decodeInt(&iafs)
				if !ok {
					return malformed("segment %d: OOB first symbol offset", s.number)
				}
				firstS += int64(dfs)
				curS = firstS
				first = false
			} else {
				ds, ok := mq.decodeInt(&iads)
				if !ok {
					break // end of strip
				}
				curS += int64(ds) + dsOffset
			}
			curT := int64(0)
			if strips > 1 {
				v, ok := mq.decodeInt(&iait)
				if !ok {
					return malformed("segment %d: OOB symbol T offset", s.number)
				}
				curT = int64(v)
			}
			t := stripT + curT
			id := mq.decodeID(iaid, codeLen)
			if id >= len(syms) {
				return malformed("segment %d: symbol %d of %d", s.number, id, len(syms))
			}
			sym := syms[id]
			if refine {
				if ri, _ := mq.decodeInt(&iari); ri != 0 {
					rdw, ok1 := mq.decodeInt(&iardw)
					rdh, ok2 := mq.decodeInt(&iardh)
					rdx, ok3 := mq.decodeInt(&iardx)
					rdy, ok4 := mq.decodeInt(&iardy)
					gw, gh := int64(sym.w)+int64(rdw), int64(sym.h)+int64(rdh)
					if !ok1 || !ok2 || !ok3 || !ok4 || gw <= 0 || gh <= 0 {
						return malformed("segment %d: symbol refinement to %d×%d", s.number, gw, gh)
					}
					rp.ref, rp.dx, rp.dy = sym, int(rdw>>1+rdx), int(rdh>>1+rdy)
					if sym, err = d.decodeRefine(mq, grcx, int(gw), int(gh), &rp); err != nil {
						return fmt.Errorf("segment %d (%s): %w", s.number, segmentName(s.typ), err)
					}
				}
			}
			w, h := int64(sym.w), int64(sym.h)
			if !transposed && (corner == cornerTopRight || corner == cornerBottomRight) {
				curS += w - 1
			} else if transposed && (corner == cornerBottomLeft || corner == cornerBottomRight) {
				curS += h - 1
			}
			x, y := curS, t
			if transposed {
				x, y = t, curS
			}
			switch corner {
			case cornerTopRight:
				x -= w - 1
			case cornerBottomLeft:
				y -= h - 1
			case cornerBottomRight:
				x, y = x-(w-1), y-(h-1)
			}
			if err := d.spend(w * h); err != nil {
				return err
			}
			reg.combine(sym, x, y, op)
			if !transposed && (corner == cornerTopLeft || corner == cornerBottomLeft) {
				curS += w - 1
			} else if transposed && (corner == cornerTopLeft || corner == cornerTopRight) {
				curS += h - 1
			}
			if curS > 1<<40 || curS < -1<<40 || stripT > 1<<40 || stripT < -1<<40 || firstS > 1<<40 || firstS < -1<<40 {
				return malformed("segment %d: symbol position out of range", s.number)
			}
			n++
		}
	}
	return d.place(s, r, reg)
}
