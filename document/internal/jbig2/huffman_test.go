package jbig2

// The test encoder's Huffman side: codes by T.88's tables (standard or
// custom), Huffman-coded symbol dictionaries (uncompressed collective
// bitmaps) and text regions.

import (
	"encoding/binary"
	"slices"
)

// bitWriter writes bits most significant first.
type bitWriter struct {
	b []byte
	n int // bits written
}

func (w *bitWriter) bits(v uint64, n int) {
	for i := n - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (7 - w.n%8)
		w.n++
	}
}

func (w *bitWriter) align() { w.n = (w.n + 7) &^ 7 }

// encode writes v (or OOB) with t.
func (w *bitWriter) encode(t *huffTable, v int64, oob bool) {
	code := func(i int) {
		for k, line := range t.codes {
			if line == i {
				w.bits(k&0xFFFFFFFF, int(k>>32))
				return
			}
		}
		panic("a line without a code")
	}
	if oob {
		code(t.oob)
		return
	}
	for i, l := range t.lines {
		if i == t.low || i == t.high || i == t.oob || l.prefLen == 0 {
			continue
		}
		if v >= l.rangeLow && v < l.rangeLow+1<<l.rangeLen {
			code(i)
			w.bits(uint64(v-l.rangeLow), l.rangeLen)
			return
		}
	}
	if t.lines[t.low].prefLen > 0 && v <= t.lines[t.low].rangeLow {
		code(t.low)
		w.bits(uint64(t.lines[t.low].rangeLow-v), 32)
		return
	}
	code(t.high)
	w.bits(uint64(v-t.lines[t.high].rangeLow), 32)
}

// huffDictData codes syms (by height then width) as a Huffman-coded
// symbol dictionary, height deltas with table B.dh (4 or 5), widths with
// B.dw (2 or 3), collective bitmaps uncompressed.
func huffDictData(syms []*bitmap, dh, dw int) []byte {
	flags := uint16(1) | uint16(dh-4)<<2 | uint16(dw-2)<<4
	b := binary.BigEndian.AppendUint16(nil, flags)
	b = binary.BigEndian.AppendUint32(b, uint32(len(syms)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(syms)))
	w := &bitWriter{}
	dht, dwt, b1 := standardTable(dh), standardTable(dw), standardTable(1)
	height := 0
	for i := 0; i < len(syms); {
		h := syms[i].h
		w.encode(dht, int64(h-height), false)
		height = h
		width, j := 0, i
		for ; j < len(syms) && syms[j].h == h; j++ {
			w.encode(dwt, int64(syms[j].w-width), false)
			width = syms[j].w
		}
		w.encode(dwt, 0, true)
		w.encode(b1, 0, false) // BMSIZE 0: uncompressed
		w.align()
		total := 0
		for _, s := range syms[i:j] {
			total += s.w
		}
		for y := range h {
			x := 0
			for _, s := range syms[i:j] {
				for sx := range s.w {
					w.bits(uint64(s.at(sx, y)), 1)
				}
				x += s.w
			}
			w.align()
		}
		i = j
	}
	w.encode(b1, 0, false)
	w.encode(b1, int64(len(syms)), false)
	return append(b, w.b...)
}

// huffText are a Huffman-coded text region's tables: FS (6 or 7), DS (8,
// 9, 10, or a custom table), DT (11, 12 or 13).
type huffTextParams struct {
	fs, dt   int
	ds       int        // 0 for custom
	custom   *huffTable // the custom DS table
	unused   int        // symbols before the ones drawn, never drawn (code length 0)
	logStrip int
}

// huffTextData codes a w×h text region of the instances of syms (ids
// offset by hp.unused) with the top left corner, Huffman-coded.
func huffTextData(w, h int, syms []*bitmap, insts []inst, hp huffTextParams) []byte {
	insts = slices.Clone(insts)
	strips := 1 << hp.logStrip
	slices.SortStableFunc(insts, func(a, b inst) int {
		if sa, sb := a.y/strips, b.y/strips; sa != sb {
			return sa - sb
		}
		return a.x - b.x
	})
	text := regionInfoData(w, h, 0, 0, opOr)
	text = binary.BigEndian.AppendUint16(text, 1|uint16(hp.logStrip)<<2|uint16(cornerTopLeft)<<4)
	dsSel := uint16(3)
	if hp.ds > 0 {
		dsSel = uint16(hp.ds - 8)
	}
	text = binary.BigEndian.AppendUint16(text, uint16(hp.fs-6)|dsSel<<2|uint16(hp.dt-11)<<4)
	text = binary.BigEndian.AppendUint32(text, uint32(len(insts)))
	bw := &bitWriter{}
	// Run codes all 6 bits long; symbol code lengths: 0 for the unused
	// ones (runs of zeros), then L for the others (L, then repeats).
	for range 35 {
		bw.bits(6, 4)
	}
	var runLines []huffLine
	for i := range 35 {
		runLines = append(runLines, huffLine{6, 0, int64(i)})
	}
	runs, _ := newHuffTable(append(runLines, huffLine{0, 32, -1}, huffLine{0, 32, 35}), false)
	for left := hp.unused; left > 0; {
		switch {
		case left >= 11:
			n := min(left, 138)
			bw.encode(runs, 34, false)
			bw.bits(uint64(n-11), 7)
			left -= n
		case left >= 3:
			bw.encode(runs, 33, false)
			bw.bits(uint64(left-3), 3)
			left = 0
		default:
			bw.encode(runs, 0, false)
			left--
		}
	}
	L := 1
	for 1<<L < len(syms) {
		L++
	}
	for left := len(syms); left > 0; {
		bw.encode(runs, int64(L), false)
		left--
		for left >= 3 {
			n := min(left, 6)
			bw.encode(runs, 32, false)
			bw.bits(uint64(n-3), 2)
			left -= n
		}
	}
	bw.align()
	var lens []huffLine
	for i := range hp.unused + len(syms) {
		l := L
		if i < hp.unused {
			l = 0
		}
		lens = append(lens, huffLine{l, 0, int64(i)})
	}
	ids, _ := newHuffTable(append(lens, huffLine{0, 32, -1}, huffLine{0, 32, int64(len(lens))}), false)
	fst, dtt := standardTable(hp.fs), standardTable(hp.dt)
	dst := hp.custom
	if hp.ds > 0 {
		dst = standardTable(hp.ds)
	}
	// Tables B.11 to B.13 code strip deltas from 1: the strips start one
	// strip above the region.
	bw.encode(dtt, 1, false)
	stripT, firstS := -strips, 0
	for i := 0; i < len(insts); {
		st := insts[i].y / strips * strips
		bw.encode(dtt, int64((st-stripT)/strips), false)
		stripT = st
		curS, start := 0, i
		for j := start; j < len(insts) && insts[j].y/strips*strips == st; j++ {
			in := insts[j]
			if j == start {
				bw.encode(fst, int64(in.x-firstS), false)
				firstS = in.x
			} else {
				bw.encode(dst, int64(in.x-curS), false)
			}
			if strips > 1 {
				bw.bits(uint64(in.y-st), hp.logStrip)
			}
			bw.encode(ids, int64(hp.unused+in.id), false)
			curS = in.x + syms[in.id].w - 1
			i = j + 1
		}
		bw.encode(dst, 0, true)
	}
	return append(text, bw.b...)
}

// customDS is the custom table the fixtures code S deltas with: OOB,
// prefixes in 4 bits, range lengths in 4, −8 to 64, and its segment data.
func customDS() (*huffTable, []byte) {
	lines := []huffLine{{3, 3, -8}, {2, 3, 0}, {3, 5, 8}, {4, 5, 40}}
	b := []byte{1 | 3<<1 | 3<<4}
	b = binary.BigEndian.AppendUint32(b, uint32(0xFFFFFFF8)) // −8
	b = binary.BigEndian.AppendUint32(b, 64)
	w := &bitWriter{}
	for _, l := range lines {
		w.bits(uint64(l.prefLen), 4)
		w.bits(uint64(l.rangeLen), 4)
	}
	for _, p := range []int{5, 5, 4} { // lower, upper, OOB
		w.bits(uint64(p), 4)
	}
	t, err := newHuffTable(append(lines, huffLine{5, 32, -9}, huffLine{5, 32, 64}, huffLine{4, 0, 0}), true)
	if err != nil {
		panic(err)
	}
	return t, append(b, w.b...)
}

// huffDictMMR is a Huffman-coded symbol dictionary of one height class of
// h rows, symbols of the widths given side by side in one collective
// bitmap coded as t6 (MMR).
func huffDictMMR(widths []int, h int, t6 []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, 1) // Huffman, B.4, B.2, B.1
	b = binary.BigEndian.AppendUint32(b, uint32(len(widths)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(widths)))
	w := &bitWriter{}
	dht, dwt, b1 := standardTable(4), standardTable(2), standardTable(1)
	w.encode(dht, int64(h), false)
	width := 0
	for _, sw := range widths {
		w.encode(dwt, int64(sw-width), false)
		width = sw
	}
	w.encode(dwt, 0, true)
	w.encode(b1, int64(len(t6)), false)
	w.align()
	w.b = append(w.b, t6...)
	w.n += 8 * len(t6)
	w.encode(b1, 0, false)
	w.encode(b1, int64(len(widths)), false)
	return append(b, w.b...)
}
