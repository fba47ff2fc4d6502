package jpx

// bitReader reads a packet header's bits: after a 0xFF byte the next
// byte holds only 7 bits (B.10.1).
type bitReader struct {
	b         []byte
	pos       int
	buf       byte
	ct        int
	truncated bool
}

func (r *bitReader) bit() int {
	if r.ct == 0 {
		if r.buf == 0xff {
			r.ct = 7
		} else {
			r.ct = 8
		}
		if r.pos < len(r.b) {
			r.buf = r.b[r.pos]
			r.pos++
		} else {
			r.buf = 0
			r.truncated = true
		}
	}
	r.ct--
	return int(r.buf>>r.ct) & 1
}

func (r *bitReader) bits(n int) int {
	v := 0
	for range n {
		v = v<<1 | r.bit()
	}
	return v
}

// align skips to the end of the header: a 0xFF last byte is followed by
// a stuffed one.
func (r *bitReader) align() {
	if r.buf == 0xff {
		if r.pos < len(r.b) {
			r.pos++
		}
		r.buf = 0
	}
	r.ct = 0
}

// tagTree is a tag tree (B.10.2) over a w×h grid of leaves.
type tagTree struct {
	nodes  []ttNode
	leaves int
	w      int
}

type ttNode struct {
	parent int32
	value  int32
	low    int32
}

const ttUnknown = 1 << 30

func newTagTree(w, h int) *tagTree {
	t := &tagTree{leaves: w * h, w: w}
	type lvl struct{ w, h, off int }
	var lv []lvl
	off := 0
	for {
		lv = append(lv, lvl{w, h, off})
		off += w * h
		if w <= 1 && h <= 1 {
			break
		}
		w, h = (w+1)/2, (h+1)/2
	}
	t.nodes = make([]ttNode, off)
	for i, l := range lv {
		for y := range l.h {
			for x := range l.w {
				n := &t.nodes[l.off+y*l.w+x]
				n.value, n.parent = ttUnknown, -1
				if i+1 < len(lv) {
					p := lv[i+1]
					n.parent = int32(p.off + (y/2)*p.w + x/2)
				}
			}
		}
	}
	return t
}

// decode reads bits until it knows whether leaf's value is below
// threshold, and says whether it is.
func (t *tagTree) decode(r *bitReader, leaf int, threshold int32) bool {
	var stack [32]int32
	n := 0
	for i := int32(leaf); i >= 0 && n < len(stack); i = t.nodes[i].parent {
		stack[n] = i
		n++
	}
	low := int32(0)
	for n > 0 {
		n--
		node := &t.nodes[stack[n]]
		if low > node.low {
			node.low = low
		} else {
			low = node.low
		}
		for low < threshold && low < node.value {
			if r.bit() == 1 {
				node.value = low
			} else {
				low++
			}
			if r.truncated {
				return false
			}
		}
		node.low = low
	}
	return t.nodes[leaf].value < threshold
}
