package jbig2

import (
	"encoding/binary"
	"fmt"
)

// Huffman coding (T.88 Annex B): tables of lines, each a prefix length,
// a range length and the low end of its range; the lower range line codes
// values below the table's range (low − a 32-bit offset), the upper range
// line values above it, the OOB line the out-of-band value.

// huffLine is one table line.
type huffLine struct {
	prefLen, rangeLen int
	rangeLow          int64
}

// huffTable is a table's lines (regular, then lower, upper and OOB lines;
// prefLen 0 for one absent) with their codes.
type huffTable struct {
	lines []huffLine
	low   int            // index of the lower range line, -1 for none
	high  int            // index of the upper range line
	oob   int            // index of the OOB line, -1 for none
	codes map[uint64]int // prefLen<<32 | code → line
	max   int            // the longest prefix
}

// newHuffTable assigns the lines' codes (T.88 B.3). lines end with the
// lower and upper range lines, then the OOB line when oob.
func newHuffTable(lines []huffLine, oob bool) (*huffTable, error) {
	t := &huffTable{lines: lines, codes: map[uint64]int{}, low: len(lines) - 2, high: len(lines) - 1, oob: -1}
	if oob {
		t.low, t.high, t.oob = len(lines)-3, len(lines)-2, len(lines)-1
	}
	var count [33]int
	for _, l := range lines {
		if l.prefLen < 0 || l.prefLen > 32 || l.rangeLen < 0 || l.rangeLen > 32 {
			return nil, malformed("a Huffman table line of prefix length %d, range length %d", l.prefLen, l.rangeLen)
		}
		count[l.prefLen]++
		t.max = max(t.max, l.prefLen)
	}
	count[0] = 0
	first := uint64(0)
	for n := 1; n <= t.max; n++ {
		first = (first + uint64(count[n-1])) << 1
		code := first
		for i, l := range lines {
			if l.prefLen == n {
				if code >= 1<<n {
					return nil, malformed("a Huffman table whose prefix lengths overflow")
				}
				t.codes[uint64(n)<<32|code] = i
				code++
			}
		}
	}
	return t, nil
}

// bitReader reads bits most significant first.
type bitReader struct {
	b   []byte
	pos int // in bits
}

func (r *bitReader) bit() (int, error) {
	if r.pos >= 8*len(r.b) {
		return 0, malformed("the Huffman-coded data ends early")
	}
	v := int(r.b[r.pos>>3] >> (7 - r.pos&7) & 1)
	r.pos++
	return v, nil
}

func (r *bitReader) bits(n int) (uint64, error) {
	var v uint64
	for range n {
		b, err := r.bit()
		if err != nil {
			return 0, err
		}
		v = v<<1 | uint64(b)
	}
	return v, nil
}

func (r *bitReader) align() { r.pos = (r.pos + 7) &^ 7 }

// decode reads a value coded with t; ok is false for OOB.
func (r *bitReader) decode(t *huffTable) (v int64, ok bool, err error) {
	code := uint64(0)
	for n := 1; n <= t.max; n++ {
		b, err := r.bit()
		if err != nil {
			return 0, false, err
		}
		code = code<<1 | uint64(b)
		i, found := t.codes[uint64(n)<<32|code]
		if !found {
			continue
		}
		l := t.lines[i]
		switch i {
		case t.oob:
			return 0, false, nil
		case t.low:
			off, err := r.bits(32)
			return l.rangeLow - int64(off), true, err
		case t.high:
			off, err := r.bits(32)
			return l.rangeLow + int64(off), true, err
		}
		off, err := r.bits(l.rangeLen)
		return l.rangeLow + int64(off), true, err
	}
	return 0, false, malformed("a code not in its Huffman table")
}

// standardLines are T.88's tables B.1 to B.13: regular lines, then the
// lower and upper range lines, then the OOB line for those with one. (B.14
// and B.15 code refinements, which Huffman-coded regions here do not
// have.)
var standardLines = [13]struct {
	lines []huffLine
	oob   bool
}{
	{[]huffLine{{1, 4, 0}, {2, 8, 16}, {3, 16, 272}, {0, 32, -1}, {3, 32, 65808}}, false},
	{[]huffLine{{1, 0, 0}, {2, 0, 1}, {3, 0, 2}, {4, 3, 3}, {5, 6, 11}, {0, 32, -1}, {6, 32, 75}, {6, 0, 0}}, true},
	{[]huffLine{{8, 8, -256}, {1, 0, 0}, {2, 0, 1}, {3, 0, 2}, {4, 3, 3}, {5, 6, 11}, {8, 32, -257}, {7, 32, 75}, {6, 0, 0}}, true},
	{[]huffLine{{1, 0, 1}, {2, 0, 2}, {3, 0, 3}, {4, 3, 4}, {5, 6, 12}, {0, 32, -1}, {5, 32, 76}}, false},
	{[]huffLine{{7, 8, -255}, {1, 0, 1}, {2, 0, 2}, {3, 0, 3}, {4, 3, 4}, {5, 6, 12}, {7, 32, -256}, {6, 32, 76}}, false},
	{[]huffLine{{5, 10, -2048}, {4, 9, -1024}, {4, 8, -512}, {4, 7, -256}, {5, 6, -128}, {5, 5, -64}, {4, 5, -32}, {2, 7, 0}, {3, 7, 128}, {3, 8, 256}, {4, 9, 512}, {4, 10, 1024}, {6, 32, -2049}, {6, 32, 2048}}, false},
	{[]huffLine{{4, 9, -1024}, {3, 8, -512}, {4, 7, -256}, {5, 6, -128}, {5, 5, -64}, {4, 5, -32}, {4, 5, 0}, {5, 5, 32}, {5, 6, 64}, {4, 7, 128}, {3, 8, 256}, {3, 9, 512}, {3, 10, 1024}, {5, 32, -1025}, {5, 32, 2048}}, false},
	{[]huffLine{{8, 3, -15}, {9, 1, -7}, {8, 1, -5}, {9, 0, -3}, {7, 0, -2}, {4, 0, -1}, {2, 1, 0}, {5, 0, 2}, {6, 0, 3}, {3, 4, 4}, {6, 1, 20}, {4, 4, 22}, {4, 5, 38}, {5, 6, 70}, {5, 7, 134}, {6, 7, 262}, {7, 8, 390}, {6, 10, 646}, {9, 32, -16}, {9, 32, 1670}, {2, 0, 0}}, true},
	{[]huffLine{{8, 4, -31}, {9, 2, -15}, {8, 2, -11}, {9, 1, -7}, {7, 1, -5}, {4, 1, -3}, {3, 1, -1}, {3, 1, 1}, {5, 1, 3}, {6, 1, 5}, {3, 5, 7}, {6, 2, 39}, {4, 5, 43}, {4, 6, 75}, {5, 7, 139}, {5, 8, 267}, {6, 8, 523}, {7, 9, 779}, {6, 11, 1291}, {9, 32, -32}, {9, 32, 3339}, {2, 0, 0}}, true},
	{[]huffLine{{7, 4, -21}, {8, 0, -5}, {7, 0, -4}, {5, 0, -3}, {2, 2, -2}, {5, 0, 2}, {6, 0, 3}, {7, 0, 4}, {8, 0, 5}, {2, 6, 6}, {5, 5, 70}, {6, 5, 102}, {6, 6, 134}, {6, 7, 198}, {6, 8, 326}, {6, 9, 582}, {6, 10, 1094}, {7, 11, 2118}, {8, 32, -22}, {8, 32, 4166}, {2, 0, 0}}, true},
	{[]huffLine{{1, 0, 1}, {2, 1, 2}, {4, 0, 4}, {4, 1, 5}, {5, 1, 7}, {5, 2, 9}, {6, 2, 13}, {7, 2, 17}, {7, 3, 21}, {7, 4, 29}, {7, 5, 45}, {7, 6, 77}, {0, 32, -1}, {7, 32, 141}}, false},
	{[]huffLine{{1, 0, 1}, {2, 0, 2}, {3, 1, 3}, {5, 0, 5}, {5, 1, 6}, {6, 1, 8}, {7, 0, 10}, {7, 1, 11}, {7, 2, 13}, {7, 3, 17}, {7, 4, 25}, {8, 5, 41}, {8, 32, 73}, {0, 32, -1}, {0, 32, 0}}, false},
	{[]huffLine{{1, 0, 1}, {3, 0, 2}, {4, 0, 3}, {5, 0, 4}, {4, 1, 5}, {3, 3, 7}, {6, 1, 15}, {6, 2, 17}, {6, 3, 21}, {6, 4, 29}, {6, 5, 45}, {7, 6, 77}, {0, 32, -1}, {7, 32, 141}}, false},
}

// standardTable is table B.n.
func standardTable(n int) *huffTable {
	s := standardLines[n-1]
	t, err := newHuffTable(s.lines, s.oob)
	if err != nil {
		panic(fmt.Sprintf("table B.%d: %v", n, err)) // the tables are constants
	}
	return t
}

// customTable reads a code table segment (T.88 7.4.13, B.2).
func customTable(s *segment) (*huffTable, error) {
	b := s.data
	if len(b) < 9 {
		return nil, malformed("segment %d: code table of %d bytes", s.number, len(b))
	}
	oob := b[0]&1 != 0
	ps, rs := int(b[0]>>1&7)+1, int(b[0]>>4&7)+1
	low := int64(int32(binary.BigEndian.Uint32(b[1:])))
	high := int64(int32(binary.BigEndian.Uint32(b[5:])))
	r := &bitReader{b: b[9:]}
	var lines []huffLine
	for cur := low; cur < high; {
		if len(lines) > 1<<16 {
			return nil, malformed("segment %d: a code table of more than %d lines", s.number, 1<<16)
		}
		p, err := r.bits(ps)
		if err != nil {
			return nil, err
		}
		rl, err := r.bits(rs)
		if err != nil {
			return nil, err
		}
		if rl > 32 {
			return nil, malformed("segment %d: a code table line of range length %d", s.number, rl)
		}
		lines = append(lines, huffLine{int(p), int(rl), cur})
		cur += 1 << rl
	}
	// The lower range line, the upper, the OOB line.
	extra := []huffLine{{0, 32, low - 1}, {0, 32, high}}
	if oob {
		extra = append(extra, huffLine{0, 0, 0})
	}
	for _, l := range extra {
		p, err := r.bits(ps)
		if err != nil {
			return nil, err
		}
		l.prefLen = int(p)
		lines = append(lines, l)
	}
	return newHuffTable(lines, oob)
}

// tableChooser hands out the tables a segment's flags select: standard
// ones by number, custom ones (3) from the code table segments it refers
// to, in order.
type tableChooser struct {
	d      *decoder
	s      *segment
	custom int
}

func (c *tableChooser) table(sel int, standard ...int) (*huffTable, error) {
	if sel < len(standard) && standard[sel] > 0 {
		return standardTable(standard[sel]), nil
	}
	if sel != 3 && !(len(standard) == 1 && sel == 1) {
		return nil, malformed("segment %d: Huffman table selection %d", c.s.number, sel)
	}
	n := 0
	for _, ref := range c.s.referred {
		if t, ok := c.d.tables[ref]; ok {
			if n == c.custom {
				c.custom++
				return t, nil
			}
			n++
		}
	}
	return nil, malformed("segment %d: a custom Huffman table it does not refer to", c.s.number)
}
