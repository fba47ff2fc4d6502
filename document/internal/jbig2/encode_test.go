package jbig2

// A test-only JBIG2 encoder: the MQ coder of T.88 Annex E.2, generic
// regions (every template, TPGDON), symbol dictionaries and text regions
// (arithmetic, exact symbols), and segment headers. It makes the fixtures
// of testdata (make-fixtures.sh), which jbig2dec, an independent decoder,
// decodes to the reference pictures the tests compare with.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/extractq/extractq/document/internal/mq"
	"slices"
	"strconv"
)

// mqEncoder is the MQ encoder of T.88 E.2 with JBIG2's integer and
// symbol ID procedures.
type mqEncoder struct{ mq.Encoder }

func newMQEncoder() *mqEncoder { return &mqEncoder{*mq.NewEncoder()} }

func (e *mqEncoder) encode(cx *context, bit int) { e.Encode(cx, bit) }

func (e *mqEncoder) flush() []byte { return e.Flush() }

// encodeInt is the integer encoding of T.88 A.2; oob codes OOB.
func (e *mqEncoder) encodeInt(cx *intDecoder, v int, oob bool) {
	prev := 1
	bit := func(b int) {
		e.encode(&cx[prev], b)
		if prev < 256 {
			prev = prev<<1 | b
		} else {
			prev = (prev<<1|b)&511 | 256
		}
	}
	s, u := 0, v
	if v < 0 {
		s, u = 1, -v
	}
	if oob {
		s, u = 1, 0
	}
	bit(s)
	var prefix []int
	var n, off int
	switch {
	case u < 4:
		prefix, n, off = []int{0}, 2, 0
	case u < 20:
		prefix, n, off = []int{1, 0}, 4, 4
	case u < 84:
		prefix, n, off = []int{1, 1, 0}, 6, 20
	case u < 340:
		prefix, n, off = []int{1, 1, 1, 0}, 8, 84
	case u < 4436:
		prefix, n, off = []int{1, 1, 1, 1, 0}, 12, 340
	default:
		prefix, n, off = []int{1, 1, 1, 1, 1}, 32, 4436
	}
	for _, b := range prefix {
		bit(b)
	}
	for i := n - 1; i >= 0; i-- {
		bit((u - off) >> i & 1)
	}
}

// encodeID is the IAID encoding of T.88 A.3.
func (e *mqEncoder) encodeID(cx []context, id, codeLen int) {
	prev := 1
	for i := codeLen - 1; i >= 0; i-- {
		b := id >> i & 1
		e.encode(&cx[prev], b)
		prev = prev<<1 | b
	}
}

// templatePixels are the context pixels of each generic template as T.88
// Figures 3–6 number them, least significant first; "A1".."A4" stand for
// the adaptive pixels.
var templatePixels = [4][]string{
	{"-1,0", "-2,0", "-3,0", "-4,0", "A1", "2,-1", "1,-1", "0,-1", "-1,-1", "-2,-1", "A2", "A3", "1,-2", "0,-2", "-1,-2", "A4"},
	{"-1,0", "-2,0", "-3,0", "A1", "2,-1", "1,-1", "0,-1", "-1,-1", "-2,-1", "2,-2", "1,-2", "0,-2", "-1,-2"},
	{"-1,0", "-2,0", "A1", "1,-1", "0,-1", "-1,-1", "-2,-1", "1,-2", "0,-2", "-1,-2"},
	{"-1,0", "-2,0", "-3,0", "-4,0", "A1", "1,-1", "0,-1", "-1,-1", "-2,-1", "-3,-1"},
}

// offsets resolves a template's pixels with the adaptive pixels at.
func offsets(template int, at [4][2]int) [][2]int {
	var out [][2]int
	for _, p := range templatePixels[template] {
		if p[0] == 'A' {
			out = append(out, at[p[1]-'1'])
			continue
		}
		var x, y int
		fmt.Sscanf(p, "%d,%d", &x, &y)
		out = append(out, [2]int{x, y})
	}
	return out
}

// encodeGeneric codes bm with the generic region procedure into e.
func encodeGeneric(e *mqEncoder, cx []context, bm *bitmap, p genericParams) {
	offs := offsets(p.template, p.at)
	ltp := 0
	for y := range bm.h {
		if p.tpgdon {
			same := 1
			for x := range bm.w {
				if bm.at(x, y) != bm.at(x, y-1) {
					same = 0
					break
				}
			}
			e.encode(&cx[sltp[p.template]], same^ltp)
			ltp = same
			if same == 1 {
				continue
			}
		}
		for x := range bm.w {
			if p.skip != nil && p.skip.pix[y*bm.w+x] == 1 {
				continue // 0, not coded
			}
			c := 0
			for i, o := range offs {
				c |= int(bm.at(x+o[0], y+o[1])) << i
			}
			e.encode(&cx[c], int(bm.at(x, y)))
		}
	}
}

// seg is a segment to write.
type seg struct {
	number uint32
	typ    int
	refs   []uint32
	page   uint32
	page4  bool // a 4-byte page association field
	data   []byte
	// unknownLength writes 0xffffffff as the data length (an immediate
	// generic region ending with its marker and row count).
	unknownLength bool
}

func (s seg) bytes() []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, s.number)
	flags := byte(s.typ)
	if s.page4 {
		flags |= 0x40
	}
	b.WriteByte(flags)
	if len(s.refs) <= 4 {
		b.WriteByte(byte(len(s.refs)) << 5)
	} else {
		binary.Write(&b, binary.BigEndian, uint32(0xE0000000|len(s.refs)))
		b.Write(make([]byte, (len(s.refs)+8)/8))
	}
	for _, r := range s.refs {
		switch {
		case s.number <= 256:
			b.WriteByte(byte(r))
		case s.number <= 65536:
			binary.Write(&b, binary.BigEndian, uint16(r))
		default:
			binary.Write(&b, binary.BigEndian, r)
		}
	}
	if s.page4 {
		binary.Write(&b, binary.BigEndian, s.page)
	} else {
		b.WriteByte(byte(s.page))
	}
	n := uint32(len(s.data))
	if s.unknownLength {
		n = 0xFFFFFFFF
	}
	binary.Write(&b, binary.BigEndian, n)
	b.Write(s.data)
	return b.Bytes()
}

func stream(segs ...seg) []byte {
	var b []byte
	for _, s := range segs {
		b = append(b, s.bytes()...)
	}
	return b
}

// pageInfo is a page information segment's data; h 0xffffffff makes a
// striped page of unknown height.
func pageInfoData(w, h uint32, defPixel byte, striped bool, stripe uint16) []byte {
	b := binary.BigEndian.AppendUint32(nil, w)
	b = binary.BigEndian.AppendUint32(b, h)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // resolution unknown
	b = append(b, 1|defPixel<<2)          // eventually lossless
	if striped {
		stripe |= 0x8000
	}
	return binary.BigEndian.AppendUint16(b, stripe)
}

func regionInfoData(w, h int, x, y int32, op byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(w))
	b = binary.BigEndian.AppendUint32(b, uint32(h))
	b = binary.BigEndian.AppendUint32(b, uint32(x))
	b = binary.BigEndian.AppendUint32(b, uint32(y))
	return append(b, op)
}

// genericRegionData codes bm as an immediate generic region's data;
// unknownLength appends the end marker's row count (the coder ends with
// 0xFF 0xAC already).
func genericRegionData(bm *bitmap, x, y int32, op byte, p genericParams, unknownLength bool) []byte {
	b := regionInfoData(bm.w, bm.h, x, y, op)
	flags := byte(p.template << 1)
	if p.tpgdon {
		flags |= 8
	}
	b = append(b, flags)
	n := 1
	if p.template == 0 {
		n = 4
	}
	for i := range n {
		b = append(b, byte(int8(p.at[i][0])), byte(int8(p.at[i][1])))
	}
	e := newMQEncoder()
	encodeGeneric(e, make([]context, 1<<contextBits[p.template]), bm, p)
	b = append(b, e.flush()...)
	if unknownLength {
		b = binary.BigEndian.AppendUint32(b, uint32(bm.h))
	}
	return b
}

// mmrRegionData wraps T.6 data as an immediate generic region's.
func mmrRegionData(w, h int, t6 []byte) []byte {
	return append(append(regionInfoData(w, h, 0, 0, opOr), 1), t6...)
}

// crop is a copy of the w×h part of bm at (x, y).
func crop(bm *bitmap, x, y, w, h int) *bitmap {
	out := newBitmap(w, h)
	for yy := range h {
		for xx := range w {
			out.pix[yy*w+xx] = bm.at(x+xx, y+yy)
		}
	}
	return out
}

// textParams are a text region's coding options: reference corner,
// transposition, strips (1 << logStrips), the S offset, the combination
// operator of its symbols and its default pixel; refine codes every
// instance of an odd symbol as the symbol before it refined (template
// rtemplate, adaptive pixels nominal).
type textParams struct {
	corner     int
	transposed bool
	logStrips  int
	dsOffset   int
	op         byte
	defPixel   byte
	refine     bool
	rtemplate  int
}

// inst is a symbol drawn at (x, y), its reference corner at (s, t).
type inst struct{ x, y, id, s, t int }

// components are bm's connected components' boxes as symbols, identical
// ones once, by increasing height then width (the order of a
// dictionary's height classes), and where each is drawn.
func components(bm *bitmap) ([]*bitmap, []inst) {
	var syms []*bitmap
	var insts []inst
	seen := make([]bool, len(bm.pix))
	for start := range bm.pix {
		if bm.pix[start] == 0 || seen[start] {
			continue
		}
		// The 8-connected component's box.
		x0, y0, x1, y1 := bm.w, bm.h, -1, -1
		stack := []int{start}
		seen[start] = true
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := i%bm.w, i/bm.w
			x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					xx, yy := x+dx, y+dy
					if bm.at(xx, yy) == 1 && !seen[yy*bm.w+xx] {
						seen[yy*bm.w+xx] = true
						stack = append(stack, yy*bm.w+xx)
					}
				}
			}
		}
		sym := crop(bm, x0, y0, x1-x0+1, y1-y0+1)
		id := slices.IndexFunc(syms, func(s *bitmap) bool { return s.w == sym.w && s.h == sym.h && bytes.Equal(s.pix, sym.pix) })
		if id < 0 {
			id = len(syms)
			syms = append(syms, sym)
		}
		insts = append(insts, inst{x: x0, y: y0, id: id})
	}
	order := make([]int, len(syms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if syms[a].h != syms[b].h {
			return syms[a].h - syms[b].h
		}
		return syms[a].w - syms[b].w
	})
	newID := make([]int, len(syms))
	sorted := make([]*bitmap, len(syms))
	for n, i := range order {
		newID[i] = n
		sorted[n] = syms[i]
	}
	for i := range insts {
		insts[i].id = newID[insts[i].id]
	}
	return sorted, insts
}

// nominalRAT are the nominal adaptive pixels of refinement template 0.
var nominalRAT = [2][2]int{{-1, -1}, {-1, -1}}

// encodeRefine codes bm with the generic refinement procedure into e.
func encodeRefine(e *mqEncoder, cx []context, bm *bitmap, p *refineParams) {
	ltp := 0
	for y := range bm.h {
		if p.tpgron {
			typ := 1
			for x := range bm.w {
				if v, ok := typical(p, x, y); ok && bm.at(x, y) != v {
					typ = 0
					break
				}
			}
			e.encode(&cx[refineSLTP[p.template]], typ^ltp)
			ltp = typ
		}
		for x := range bm.w {
			if ltp == 1 {
				if _, ok := typical(p, x, y); ok {
					continue
				}
			}
			e.encode(&cx[refineContext(bm, x, y, p)], int(bm.at(x, y)))
		}
	}
}

// dictData codes syms (by height then width) as a symbol dictionary's new
// symbols after the input symbols in, exporting the new ones. With
// refAgg each new symbol is the symbol before it (in in, then the new
// ones) refined with template rtemplate, 1 right and 1 up; else it is
// coded with generic template 0.
func dictData(syms, in []*bitmap, refAgg bool, rtemplate int) []byte {
	p := genericParams{template: 0, at: defaultAT[0]}
	flags := uint16(0)
	if refAgg {
		flags |= 2 | uint16(rtemplate)<<12
	}
	b := binary.BigEndian.AppendUint16(nil, flags)
	for i := range 4 {
		b = append(b, byte(int8(p.at[i][0])), byte(int8(p.at[i][1])))
	}
	if refAgg && rtemplate == 0 {
		b = append(b, 0xFF, 0xFF, 0xFF, 0xFF)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(syms)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(syms)))
	e := newMQEncoder()
	var iadh, iadw, iaex, iaai, iardx, iardy intDecoder
	cx := make([]context, 1<<16)
	grcx := make([]context, 1<<refineContextBits[rtemplate])
	codeLen := 0
	for 1<<codeLen < len(in)+len(syms) {
		codeLen++
	}
	iaid := make([]context, 2<<codeLen)
	all := append(slices.Clone(in), syms...)
	height := 0
	for i := 0; i < len(syms); {
		h := syms[i].h
		e.encodeInt(&iadh, h-height, false)
		height = h
		width := 0
		for ; i < len(syms) && syms[i].h == h; i++ {
			s := syms[i]
			e.encodeInt(&iadw, s.w-width, false)
			width = s.w
			if !refAgg {
				encodeGeneric(e, cx, s, p)
				continue
			}
			ref := len(in) + i - 1
			e.encodeInt(&iaai, 1, false)
			e.encodeID(iaid, ref, codeLen)
			e.encodeInt(&iardx, 1, false)
			e.encodeInt(&iardy, -1, false)
			encodeRefine(e, grcx, s, &refineParams{template: rtemplate, ref: all[ref], dx: 1, dy: -1, at: nominalRAT})
		}
		e.encodeInt(&iadw, 0, true)
	}
	e.encodeInt(&iaex, len(in), false)   // the input symbols not exported
	e.encodeInt(&iaex, len(syms), false) // the new ones exported
	return append(b, e.flush()...)
}

// symbolText codes bm as a symbol dictionary of its components and a text
// region drawing them with tp: the dictionary's data and the region's.
func symbolText(bm *bitmap, tp textParams) (dict, text []byte) {
	syms, insts := components(bm)
	return dictData(syms, nil, false, 0), textData(bm.w, bm.h, syms, insts, tp)
}

// textData codes a w×h text region of the instances of syms with tp.
func textData(w, h int, syms []*bitmap, insts []inst, tp textParams) []byte {
	insts = slices.Clone(insts)
	// Each instance's reference corner at (S, T), T across the strips, S
	// along them; strips in order, symbols by S.
	strips := 1 << tp.logStrips
	right := tp.corner == cornerTopRight || tp.corner == cornerBottomRight
	bottom := tp.corner == cornerBottomLeft || tp.corner == cornerBottomRight
	// pre and post are what the decoder adds to CURS before drawing a
	// symbol and after.
	pre := func(s *bitmap) int {
		switch {
		case !tp.transposed && right:
			return s.w - 1
		case tp.transposed && bottom:
			return s.h - 1
		}
		return 0
	}
	post := func(s *bitmap) int {
		switch {
		case !tp.transposed && !right:
			return s.w - 1
		case tp.transposed && !bottom:
			return s.h - 1
		}
		return 0
	}
	for i := range insts {
		in := &insts[i]
		s := syms[in.id]
		cx, cy := in.x, in.y
		if right {
			cx += s.w - 1
		}
		if bottom {
			cy += s.h - 1
		}
		in.s, in.t = cx, cy
		if tp.transposed {
			in.s, in.t = cy, cx
		}
	}
	slices.SortStableFunc(insts, func(a, b inst) int {
		if sa, sb := a.t/strips, b.t/strips; sa != sb {
			return sa - sb
		}
		return a.s - b.s
	})
	codeLen := 0
	for 1<<codeLen < len(syms) {
		codeLen++
	}
	text := regionInfoData(w, h, 0, 0, opOr)
	flags := uint16(tp.logStrips)<<2 | uint16(tp.corner)<<4 | uint16(tp.op)<<7 | uint16(tp.defPixel)<<9 | uint16(tp.dsOffset&0x1F)<<10
	if tp.transposed {
		flags |= 0x40
	}
	if tp.refine {
		flags |= 2 | uint16(tp.rtemplate)<<15
	}
	text = binary.BigEndian.AppendUint16(text, flags)
	if tp.refine && tp.rtemplate == 0 {
		text = append(text, 0xFF, 0xFF, 0xFF, 0xFF)
	}
	text = binary.BigEndian.AppendUint32(text, uint32(len(insts)))
	e := newMQEncoder()
	var iadt, iafs, iads, iait, iari, iardw, iardh, iardx, iardy intDecoder
	iaid := make([]context, 2<<codeLen)
	grcx := make([]context, 1<<refineContextBits[tp.rtemplate])
	e.encodeInt(&iadt, 0, false)
	stripT, firstS := 0, 0
	for i := 0; i < len(insts); {
		st := insts[i].t / strips * strips
		e.encodeInt(&iadt, (st-stripT)/strips, false)
		stripT = st
		curS, start := 0, i
		for j := start; j < len(insts) && insts[j].t/strips*strips == st; j++ {
			in := insts[j]
			sym := syms[in.id]
			s0 := in.s - pre(sym) // CURS before the decoder adds pre
			if j == start {
				e.encodeInt(&iafs, s0-firstS, false)
				firstS = s0
			} else {
				e.encodeInt(&iads, s0-curS-tp.dsOffset, false)
			}
			if strips > 1 {
				e.encodeInt(&iait, in.t-st, false)
			}
			switch {
			case tp.refine && in.id%2 == 1:
				ref := syms[in.id-1]
				e.encodeID(iaid, in.id-1, codeLen)
				rdw, rdh, rdx, rdy := sym.w-ref.w, sym.h-ref.h, 1, -2
				e.encodeInt(&iari, 1, false)
				e.encodeInt(&iardw, rdw, false)
				e.encodeInt(&iardh, rdh, false)
				e.encodeInt(&iardx, rdx, false)
				e.encodeInt(&iardy, rdy, false)
				encodeRefine(e, grcx, sym, &refineParams{template: tp.rtemplate, ref: ref, dx: rdw>>1 + rdx, dy: rdh>>1 + rdy, at: nominalRAT})
			case tp.refine:
				e.encodeID(iaid, in.id, codeLen)
				e.encodeInt(&iari, 0, false)
			default:
				e.encodeID(iaid, in.id, codeLen)
			}
			curS = in.s + post(sym)
			i = j + 1
		}
		e.encodeInt(&iads, 0, true)
	}
	return append(text, e.flush()...)
}

// refineData codes bm as an immediate refinement region's data at (x, y),
// refining the page (page).
func refineData(bm, page *bitmap, x, y int32, op byte, template int, tpgron bool) []byte {
	b := regionInfoData(bm.w, bm.h, x, y, op)
	flags := byte(template)
	if tpgron {
		flags |= 2
	}
	b = append(b, flags)
	if template == 0 {
		b = append(b, 0xFF, 0xFF, 0xFF, 0xFF)
	}
	e := newMQEncoder()
	encodeRefine(e, make([]context, 1<<refineContextBits[template]), bm, &refineParams{template: template, ref: page, dx: -int(x), dy: -int(y), tpgron: tpgron, at: nominalRAT})
	return append(b, e.flush()...)
}

// patternDictData codes pats (all of one size) as a pattern dictionary
// with generic template template.
func patternDictData(pats []*bitmap, template int) []byte {
	pw, ph := pats[0].w, pats[0].h
	b := []byte{byte(template << 1), byte(pw), byte(ph)}
	b = binary.BigEndian.AppendUint32(b, uint32(len(pats)-1))
	all := newBitmap(pw*len(pats), ph)
	for i, p := range pats {
		all.combine(p, int64(i*pw), 0, opOr)
	}
	p := genericParams{template: template, at: [4][2]int{{-pw, 0}, {-3, -1}, {2, -2}, {-2, -2}}}
	e := newMQEncoder()
	encodeGeneric(e, make([]context, 1<<contextBits[template]), all, p)
	return append(b, e.flush()...)
}

// halftone are a halftone region's parameters: its size, the grid's
// origin (HGX, HGY) and vector (HRX, HRY), its generic template, whether
// it skips the cells outside the region, its patterns' combination
// operator and its default pixel.
type halftone struct {
	w, h          int
	gx, gy        int32
	rx, ry        uint16
	template      int
	skip          bool
	op, defPixel  byte
	npats, pw, ph int
}

// halftoneData codes gray (rows of the grid's values) as an immediate
// halftone region's data.
func halftoneData(gray [][]int, ht halftone) []byte {
	gh, gw := len(gray), len(gray[0])
	b := regionInfoData(ht.w, ht.h, 0, 0, opOr)
	flags := byte(ht.template<<1) | ht.op<<4 | ht.defPixel<<7
	if ht.skip {
		flags |= 8
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, uint32(gw))
	b = binary.BigEndian.AppendUint32(b, uint32(gh))
	b = binary.BigEndian.AppendUint32(b, uint32(ht.gx))
	b = binary.BigEndian.AppendUint32(b, uint32(ht.gy))
	b = binary.BigEndian.AppendUint16(b, ht.rx)
	b = binary.BigEndian.AppendUint16(b, ht.ry)
	p := genericParams{template: ht.template, at: [4][2]int{{3, -1}, {-3, -1}, {2, -2}, {-2, -2}}}
	if ht.template >= 2 {
		p.at[0] = [2]int{2, -1}
	}
	if ht.skip {
		p.skip = newBitmap(gw, gh)
		for m := range gh {
			for n := range gw {
				x := (int64(ht.gx) + int64(m)*int64(ht.ry) + int64(n)*int64(ht.rx)) >> 8
				y := (int64(ht.gy) + int64(m)*int64(ht.rx) - int64(n)*int64(ht.ry)) >> 8
				if x+int64(ht.pw) <= 0 || x >= int64(ht.w) || y+int64(ht.ph) <= 0 || y >= int64(ht.h) {
					p.skip.pix[m*gw+n] = 1
				}
			}
		}
	}
	bpp := 0
	for 1<<bpp < ht.npats {
		bpp++
	}
	e := newMQEncoder()
	cx := make([]context, 1<<contextBits[ht.template])
	for j := bpp - 1; j >= 0; j-- {
		plane := newBitmap(gw, gh)
		for m := range gh {
			for n := range gw {
				if p.skip != nil && p.skip.pix[m*gw+n] == 1 {
					continue
				}
				v := gray[m][n]
				plane.pix[m*gw+n] = byte(v>>j&1 ^ v>>(j+1)&1) // Gray code
			}
		}
		encodeGeneric(e, cx, plane, p)
	}
	return append(b, e.flush()...)
}

// readPBM reads a binary PBM (P4): 1 is black.
func readPBM(b []byte) (*bitmap, error) {
	var fields []int
	i := 2
	if !bytes.HasPrefix(b, []byte("P4")) {
		return nil, fmt.Errorf("not a binary PBM")
	}
	for len(fields) < 2 {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
			i++
		}
		if i < len(b) && b[i] == '#' {
			for i < len(b) && b[i] != '\n' {
				i++
			}
			continue
		}
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(string(b[i:j]))
		if err != nil {
			return nil, fmt.Errorf("PBM header: %w", err)
		}
		fields = append(fields, n)
		i = j
	}
	i++ // the one white space after the height
	w, h := fields[0], fields[1]
	stride := (w + 7) / 8
	if len(b)-i < stride*h {
		return nil, fmt.Errorf("PBM of %d×%d has %d bytes of pixels", w, h, len(b)-i)
	}
	bm := newBitmap(w, h)
	for y := range h {
		for x := range w {
			bm.pix[y*w+x] = b[i+y*stride+x/8] >> (7 - x%8) & 1
		}
	}
	return bm, nil
}

// aggSym is a symbol of a dictionary with refinement and aggregation:
// parts drawn side by side (symbol ids at x, top row 0), or with one part
// that symbol refined, 1 right and 1 up.
type aggSym struct {
	bm    *bitmap
	parts []struct{ id, x int }
}

// aggDictData codes syms (by height then width) as new symbols of a
// dictionary with refinement and aggregation (template rtemplate) over
// the input symbols in, exporting the new ones.
func aggDictData(syms []aggSym, in []*bitmap, rtemplate int) []byte {
	p := genericParams{template: 0, at: defaultAT[0]}
	b := binary.BigEndian.AppendUint16(nil, 2|uint16(rtemplate)<<12)
	for i := range 4 {
		b = append(b, byte(int8(p.at[i][0])), byte(int8(p.at[i][1])))
	}
	if rtemplate == 0 {
		b = append(b, 0xFF, 0xFF, 0xFF, 0xFF)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(syms)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(syms)))
	e := newMQEncoder()
	var iadh, iadw, iaex, iaai, iadt, iafs, iads, iari, iardx, iardy intDecoder
	codeLen := 0
	for 1<<codeLen < len(in)+len(syms) {
		codeLen++
	}
	iaid := make([]context, 2<<codeLen)
	grcx := make([]context, 1<<refineContextBits[rtemplate])
	all := slices.Clone(in)
	height := 0
	for i := 0; i < len(syms); {
		h := syms[i].bm.h
		e.encodeInt(&iadh, h-height, false)
		height = h
		width := 0
		for ; i < len(syms) && syms[i].bm.h == h; i++ {
			s := syms[i]
			e.encodeInt(&iadw, s.bm.w-width, false)
			width = s.bm.w
			e.encodeInt(&iaai, len(s.parts), false)
			if len(s.parts) == 1 {
				ref := s.parts[0].id
				e.encodeID(iaid, ref, codeLen)
				e.encodeInt(&iardx, 1, false)
				e.encodeInt(&iardy, -1, false)
				encodeRefine(e, grcx, s.bm, &refineParams{template: rtemplate, ref: all[ref], dx: 1, dy: -1, at: nominalRAT})
			} else {
				// A text region of one strip at T 0, its parts unrefined.
				e.encodeInt(&iadt, 0, false)
				e.encodeInt(&iadt, 0, false)
				curS := 0
				for j, part := range s.parts {
					if j == 0 {
						e.encodeInt(&iafs, part.x, false)
					} else {
						e.encodeInt(&iads, part.x-curS, false)
					}
					e.encodeID(iaid, part.id, codeLen)
					e.encodeInt(&iari, 0, false)
					curS = part.x + all[part.id].w - 1
				}
				e.encodeInt(&iads, 0, true)
			}
			all = append(all, s.bm)
		}
		e.encodeInt(&iadw, 0, true)
	}
	e.encodeInt(&iaex, len(in), false)
	e.encodeInt(&iaex, len(syms), false)
	return append(b, e.flush()...)
}
