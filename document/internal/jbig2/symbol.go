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
	huffman := flags&1 != 0
	switch {
	case flags&0x100 != 0:
		return unsupported("reusing a previous dictionary's coding contexts")
	case huffman && flags&2 != 0:
		return unsupported("Huffman coding with refinement and aggregation (SDHUFF and SDREFAGG)")
	case huffman:
		return d.huffmanSymbolDict(s, flags, b)
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
	var iadh, iadw, iaex, iaai intDecoder
	cx, err := d.contexts(1 << contextBits[p.template])
	if err != nil {
		return err
	}
	// With refinement and aggregation, symbols are coded as text
	// regions of the input and earlier symbols: their values' contexts are
	// the dictionary's, shared by all.
	var agg *arithText
	if refAgg {
		if agg, err = d.newArithText(b, int(int64(len(in))+numNew), true, rp.template); err != nil {
			return err
		}
		agg.mq = mq
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
				bm, err = d.refinedSymbol(s, agg, &iaai, in, newSyms, rp, int(width), int(height))
			} else {
				bm, err = d.decodeGeneric(mq, cx, int(width), int(height), p)
			}
			if err != nil {
				return fmt.Errorf("segment %d (symbol dictionary): %w", s.number, err)
			}
			newSyms = append(newSyms, bm)
		}
	}
	return d.exportSymbols(s, in, newSyms, numEx, func() (int64, bool, error) {
		v, ok := mq.decodeInt(&iaex)
		return int64(v), ok, nil
	})
}

// exportSymbols decodes which of the input and new symbols a dictionary
// exports (T.88 6.5.10), their run lengths read by next, alternately not
// exported and exported.
func (d *decoder) exportSymbols(s *segment, in, newSyms []*bitmap, numEx int64, next func() (int64, bool, error)) error {
	all := int64(len(in)) + int64(len(newSyms))
	var exported []*bitmap
	flag := false
	for i, runs := int64(0), int64(0); i < all; runs++ {
		if runs > 2*all+1 {
			return malformed("segment %d: more export runs than symbols", s.number)
		}
		run, ok, err := next()
		if err != nil {
			return err
		}
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

// huffmanSymbolDict decodes a Huffman-coded symbol dictionary without
// refinement (T.88 6.5.5, 6.5.9): each height class's symbols in one
// collective bitmap, uncompressed or MMR, cut by their widths. b is the
// data after the flags.
func (d *decoder) huffmanSymbolDict(s *segment, flags uint16, b []byte) error {
	tc := &tableChooser{d: d, s: s}
	dh, err := tc.table(int(flags>>2&3), 4, 5)
	if err != nil {
		return err
	}
	dwt, err := tc.table(int(flags>>4&3), 2, 3)
	if err != nil {
		return err
	}
	bms, err := tc.table(int(flags>>6&1), 1)
	if err != nil {
		return err
	}
	if len(b) < 8 {
		return malformed("segment %d: symbol dictionary header of %d bytes", s.number, len(s.data))
	}
	numEx := int64(binary.BigEndian.Uint32(b))
	numNew := int64(binary.BigEndian.Uint32(b[4:]))
	in, err := d.inputSymbols(s)
	if err != nil {
		return err
	}
	if int64(d.nsyms)+numNew > int64(d.lim.MaxSymbols) || numEx > int64(len(in))+numNew {
		return fmt.Errorf("%w: segment %d: a symbol dictionary of %d new symbols exporting %d (at most %d symbols in all)", ErrLimit, s.number, numNew, numEx, d.lim.MaxSymbols)
	}
	r := &bitReader{b: b[8:]}
	newSyms := make([]*bitmap, 0, numNew)
	height := int64(0)
	for classes := int64(0); int64(len(newSyms)) < numNew; classes++ {
		if classes >= numNew {
			return malformed("segment %d: %d height classes for %d symbols", s.number, classes+1, numNew)
		}
		delta, ok, err := r.decode(dh)
		if err != nil {
			return err
		}
		height += delta
		if !ok || height <= 0 || height > 1<<24 {
			return malformed("segment %d: symbol height %d", s.number, height)
		}
		var widths []int
		width, total := int64(0), int64(0)
		for {
			dw, ok, err := r.decode(dwt)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if int64(len(newSyms)+len(widths)) >= numNew {
				return malformed("segment %d: more than %d new symbols", s.number, numNew)
			}
			width += dw
			total += width
			if width <= 0 || width > 1<<24 || total > 1<<24 {
				return malformed("segment %d: symbol width %d", s.number, width)
			}
			widths = append(widths, int(width))
		}
		size, ok, err := r.decode(bms)
		if err != nil {
			return err
		}
		r.align()
		if !ok || size < 0 {
			return malformed("segment %d: collective bitmap of %d bytes", s.number, size)
		}
		if len(widths) == 0 {
			continue
		}
		var all *bitmap
		rest := r.b[r.pos/8:]
		if size == 0 {
			// Uncompressed, rows padded to whole bytes.
			stride := (total + 7) / 8
			if stride*height > int64(len(rest)) {
				return malformed("segment %d: a collective bitmap of %d×%d in %d bytes", s.number, total, height, len(rest))
			}
			if all, err = d.newBitmap(total, height); err != nil {
				return err
			}
			for y := range all.h {
				for x := range all.w {
					all.pix[y*all.w+x] = rest[int64(y)*stride+int64(x>>3)] >> (7 - x&7) & 1
				}
			}
			r.pos += int(stride * height * 8)
		} else {
			if size > int64(len(rest)) {
				return malformed("segment %d: a collective bitmap of %d bytes in %d", s.number, size, len(rest))
			}
			if total*height > d.lim.MaxPixels {
				return fmt.Errorf("%w: a collective bitmap of %d×%d pixels", ErrLimit, total, height)
			}
			if all, err = d.decodeMMR(rest[:size], int(total), int(height)); err != nil {
				return fmt.Errorf("segment %d (symbol dictionary): %w", s.number, err)
			}
			r.pos += int(size * 8)
		}
		x := 0
		for _, w := range widths {
			sym := newBitmap(w, int(height))
			for y := range sym.h {
				copy(sym.pix[y*w:(y+1)*w], all.pix[y*all.w+x:])
			}
			newSyms = append(newSyms, sym)
			x += w
		}
	}
	b1 := standardTable(1)
	return d.exportSymbols(s, in, newSyms, numEx, func() (int64, bool, error) { return r.decode(b1) })
}

// refinedSymbol decodes a symbol of a dictionary with refinement and
// aggregation (T.88 6.5.8.2): one symbol refined, or several drawn as a
// text region (one strip, top left corners, OR, refined or not).
func (d *decoder) refinedSymbol(s *segment, agg *arithText, iaai *intDecoder, in, newSyms []*bitmap, rp refineParams, w, h int) (*bitmap, error) {
	mq := agg.mq
	n, ok := mq.decodeInt(iaai)
	syms := append(in[:len(in):len(in)], newSyms...)
	switch {
	case !ok || n < 1:
		return nil, malformed("an aggregate of %d symbols", n)
	case n > 1:
		if int64(n) > int64(d.lim.MaxSymbols) {
			return nil, fmt.Errorf("%w: an aggregate of %d symbols", ErrLimit, n)
		}
		bm, err := d.newBitmap(int64(w), int64(h))
		if err != nil {
			return nil, err
		}
		err = d.drawText(s, bm, agg, syms, int64(n), textLayout{strips: 1, corner: cornerTopLeft, op: opOr, refine: &rp})
		return bm, err
	}
	id, err := agg.id()
	if err != nil {
		return nil, err
	}
	rdx, ok1 := mq.decodeInt(&agg.iardx)
	rdy, ok2 := mq.decodeInt(&agg.iardy)
	if !ok1 || !ok2 {
		return nil, malformed("OOB refinement offset")
	}
	if id >= len(syms) {
		return nil, malformed("refinement of symbol %d of %d", id, len(syms))
	}
	rp.ref, rp.dx, rp.dy = syms[id], int(rdx), int(rdy)
	return d.decodeRefine(mq, agg.grcx, w, h, &rp)
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
	huffman := flags&1 != 0
	refine := flags&2 != 0
	logStrips := int(flags >> 2 & 3)
	strips := int64(1) << logStrips
	corner := int(flags >> 4 & 3)
	transposed := flags&0x40 != 0
	op := byte(flags >> 7 & 3)
	defPixel := byte(flags >> 9 & 1)
	dsOffset := int64(flags >> 10 & 0x1F)
	if dsOffset >= 16 {
		dsOffset -= 32
	}
	if huffman && refine {
		return unsupported("Huffman coding with refinement (SBHUFF and SBREFINE)")
	}
	var hflags uint16
	if huffman {
		if len(b) < 2 {
			return malformed("segment %d: text region without its Huffman flags", s.number)
		}
		hflags = binary.BigEndian.Uint16(b)
		b = b[2:]
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
	var src textSource
	if huffman {
		src, err = d.huffmanText(s, hflags, b, len(syms), logStrips)
	} else {
		src, err = d.newArithText(b, len(syms), refine, rp.template)
	}
	if err != nil {
		return err
	}
	reg, err := d.newBitmap(r.w, r.h)
	if err != nil {
		return err
	}
	if defPixel != 0 {
		reg.fill(1)
	}
	lay := textLayout{strips: strips, corner: corner, transposed: transposed, op: op, dsOffset: dsOffset}
	if refine {
		lay.refine = &rp
	}
	if err := d.drawText(s, reg, src, syms, numInst, lay); err != nil {
		return err
	}
	return d.place(s, r, reg)
}

// textLayout is how a text region places its symbols: strips (1, 2, 4
// or 8 rows), reference corner, transposition, combination operator, S
// offset, and for refined instances the refinement's parameters.
type textLayout struct {
	strips     int64
	corner     int
	transposed bool
	op         byte
	dsOffset   int64
	refine     *refineParams
}

// drawText draws numInst symbol instances of syms onto reg, their values
// read from src (T.88 6.4.5): strip by strip, each ending with OOB.
func (d *decoder) drawText(s *segment, reg *bitmap, src textSource, syms []*bitmap, numInst int64, lay textLayout) error {
	oob := func(what string) error { return malformed("segment %d: OOB %s", s.number, what) }
	dt, ok, err := src.dt()
	if err != nil {
		return err
	} else if !ok {
		return oob("strip delta")
	}
	stripT := -dt * lay.strips
	firstS := int64(0)
strips:
	for n := int64(0); n < numInst; {
		dt, ok, err := src.dt()
		if err != nil {
			return err
		} else if !ok {
			return oob("strip delta")
		}
		stripT += dt * lay.strips
		first := true
		var curS int64
		for {
			if first {
				dfs, ok, err := src.fs()
				if err != nil {
					return err
				} else if !ok {
					return oob("first symbol offset")
				}
				firstS += dfs
				curS = firstS
				first = false
			} else {
				ds, ok, err := src.ds()
				if err != nil && n >= numInst {
					break strips // the data ends after the last instance, without its OOB
				} else if err != nil {
					return err
				} else if !ok {
					break // end of strip
				}
				if n >= numInst {
					break strips // more than the region holds: the rest is ignored
				}
				curS += ds + lay.dsOffset
			}
			curT := int64(0)
			if lay.strips > 1 {
				if curT, err = src.it(); err != nil {
					return err
				}
			}
			t := stripT + curT
			id, err := src.id()
			if err != nil {
				return err
			}
			if id < 0 || id >= len(syms) {
				return malformed("segment %d: symbol %d of %d", s.number, id, len(syms))
			}
			sym := syms[id]
			if lay.refine != nil {
				if sym, err = d.refineInstance(s, src.(*arithText), sym, lay.refine); err != nil {
					return err
				}
			}
			w, h := int64(sym.w), int64(sym.h)
			if !lay.transposed && (lay.corner == cornerTopRight || lay.corner == cornerBottomRight) {
				curS += w - 1
			} else if lay.transposed && (lay.corner == cornerBottomLeft || lay.corner == cornerBottomRight) {
				curS += h - 1
			}
			x, y := curS, t
			if lay.transposed {
				x, y = t, curS
			}
			switch lay.corner {
			case cornerTopRight:
				x -= w - 1
			case cornerBottomLeft:
				y -= h - 1
			case cornerBottomRight:
				x, y = x-(w-1), y-(h-1)
			}
			// An instance costs its pixels and its values' decoding, as
			// much as some 32 pixels'.
			if err := d.spend(w*h + 32); err != nil {
				return err
			}
			reg.combine(sym, x, y, lay.op)
			if !lay.transposed && (lay.corner == cornerTopLeft || lay.corner == cornerBottomLeft) {
				curS += w - 1
			} else if lay.transposed && (lay.corner == cornerTopLeft || lay.corner == cornerTopRight) {
				curS += h - 1
			}
			if curS > 1<<40 || curS < -1<<40 || stripT > 1<<40 || stripT < -1<<40 || firstS > 1<<40 || firstS < -1<<40 {
				return malformed("segment %d: symbol position out of range", s.number)
			}
			n++
		}
	}
	return nil
}

// textSource reads a text region's values: strip deltas, first and
// further symbol offsets (ok false for OOB), T offsets in the strip, symbol
// IDs.
type textSource interface {
	dt() (int64, bool, error)
	fs() (int64, bool, error)
	ds() (int64, bool, error)
	it() (int64, error)
	id() (int, error)
}

// arithText reads a text region's values arithmetically coded (T.88
// 6.4, Annex A).
type arithText struct {
	mq                                                       *mqDecoder
	iadt, iafs, iads, iait, iari, iardw, iardh, iardx, iardy intDecoder
	iaid                                                     []context
	codeLen                                                  int
	grcx                                                     []context
}

func (d *decoder) newArithText(b []byte, nsyms int, refine bool, rtemplate int) (*arithText, error) {
	a := &arithText{mq: newMQDecoder(b)}
	for 1<<a.codeLen < nsyms {
		a.codeLen++
	}
	var err error
	if a.iaid, err = d.contexts(2 << a.codeLen); err != nil {
		return nil, err
	}
	if refine {
		if a.grcx, err = d.contexts(1 << refineContextBits[rtemplate]); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *arithText) val(cx *intDecoder) (int64, bool, error) {
	v, ok := a.mq.decodeInt(cx)
	return int64(v), ok, nil
}

func (a *arithText) dt() (int64, bool, error) { return a.val(&a.iadt) }
func (a *arithText) fs() (int64, bool, error) { return a.val(&a.iafs) }
func (a *arithText) ds() (int64, bool, error) { return a.val(&a.iads) }
func (a *arithText) id() (int, error)         { return a.mq.decodeID(a.iaid, a.codeLen), nil }

func (a *arithText) it() (int64, error) {
	v, ok := a.mq.decodeInt(&a.iait)
	if !ok {
		return 0, malformed("OOB symbol T offset")
	}
	return int64(v), nil
}

// refineInstance is a text region's symbol instance refined when its RI
// says so (T.88 6.4.11), else the symbol itself.
func (d *decoder) refineInstance(s *segment, a *arithText, sym *bitmap, rp *refineParams) (*bitmap, error) {
	if ri, _ := a.mq.decodeInt(&a.iari); ri == 0 {
		return sym, nil
	}
	rdw, ok1 := a.mq.decodeInt(&a.iardw)
	rdh, ok2 := a.mq.decodeInt(&a.iardh)
	rdx, ok3 := a.mq.decodeInt(&a.iardx)
	rdy, ok4 := a.mq.decodeInt(&a.iardy)
	gw, gh := int64(sym.w)+int64(rdw), int64(sym.h)+int64(rdh)
	if !ok1 || !ok2 || !ok3 || !ok4 || gw <= 0 || gh <= 0 {
		return nil, malformed("segment %d: symbol refinement to %d×%d", s.number, gw, gh)
	}
	rp.ref, rp.dx, rp.dy = sym, int(rdw>>1+rdx), int(rdh>>1+rdy)
	bm, err := d.decodeRefine(a.mq, a.grcx, int(gw), int(gh), rp)
	if err != nil {
		return nil, fmt.Errorf("segment %d (%s): %w", s.number, segmentName(s.typ), err)
	}
	return bm, nil
}

// huffText reads a text region's values Huffman-coded (T.88 6.4,
// 7.4.3.1.7): the tables the flags select, the symbol IDs' code read first.
type huffText struct {
	r             *bitReader
	fst, dst, dtt *huffTable
	ids           *huffTable
	logStrips     int
}

func (h *huffText) dt() (int64, bool, error) { return h.r.decode(h.dtt) }
func (h *huffText) fs() (int64, bool, error) { return h.r.decode(h.fst) }
func (h *huffText) ds() (int64, bool, error) { return h.r.decode(h.dst) }

func (h *huffText) it() (int64, error) {
	v, err := h.r.bits(h.logStrips)
	return int64(v), err
}

func (h *huffText) id() (int, error) {
	v, ok, err := h.r.decode(h.ids)
	if err == nil && !ok {
		err = malformed("an OOB symbol ID")
	}
	return int(v), err
}

// huffmanText reads the Huffman flags' tables and the symbol ID code
// lengths at the start of b.
func (d *decoder) huffmanText(s *segment, hflags uint16, b []byte, nsyms, logStrips int) (*huffText, error) {
	if err := d.spend(int64(nsyms)); err != nil { // the symbol ID code's table
		return nil, err
	}
	tc := &tableChooser{d: d, s: s}
	h := &huffText{r: &bitReader{b: b}, logStrips: logStrips}
	var err error
	if h.fst, err = tc.table(int(hflags&3), 6, 7); err != nil {
		return nil, err
	}
	if h.dst, err = tc.table(int(hflags>>2&3), 8, 9, 10); err != nil {
		return nil, err
	}
	if h.dtt, err = tc.table(int(hflags>>4&3), 11, 12, 13); err != nil {
		return nil, err
	}
	// The run codes' lengths, 4 bits each, then the symbols' code lengths
	// in run codes: a length, the last repeated, or zeros.
	runLines := make([]huffLine, 35, 37)
	for i := range runLines {
		n, err := h.r.bits(4)
		if err != nil {
			return nil, err
		}
		runLines[i] = huffLine{int(n), 0, int64(i)}
	}
	runLines = append(runLines, huffLine{0, 32, -1}, huffLine{0, 32, 35}) // no range lines
	runs, err := newHuffTable(runLines, false)
	if err != nil {
		return nil, err
	}
	lens := make([]huffLine, 0, nsyms+2)
	for len(lens) < nsyms {
		code, _, err := h.r.decode(runs)
		if err != nil {
			return nil, err
		}
		var n, v int64
		switch {
		case code < 32:
			n, v = 1, code
		case code == 32:
			if len(lens) == 0 {
				return nil, malformed("segment %d: a symbol code length repeated before any", s.number)
			}
			x, err := h.r.bits(2)
			if err != nil {
				return nil, err
			}
			n, v = int64(x)+3, int64(lens[len(lens)-1].prefLen)
		case code == 33:
			x, err := h.r.bits(3)
			if err != nil {
				return nil, err
			}
			n = int64(x) + 3
		default:
			x, err := h.r.bits(7)
			if err != nil {
				return nil, err
			}
			n = int64(x) + 11
		}
		for range n {
			if len(lens) == nsyms {
				return nil, malformed("segment %d: more symbol code lengths than symbols", s.number)
			}
			lens = append(lens, huffLine{int(v), 0, int64(len(lens))})
		}
	}
	h.r.align()
	lens = append(lens, huffLine{0, 32, -1}, huffLine{0, 32, int64(nsyms)})
	if h.ids, err = newHuffTable(lens, false); err != nil {
		return nil, err
	}
	return h, nil
}
