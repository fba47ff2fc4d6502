package jbig2

import (
	"fmt"
)

// refineParams are the parameters of the generic refinement region
// decoding procedure (T.88 6.3) other than the size.
type refineParams struct {
	template int
	ref      *bitmap
	dx, dy   int
	tpgron   bool
	at       [2][2]int // template 0: one in the bitmap, one in the reference
}

// refineContextBits is the number of context bits of each template.
var refineContextBits = [2]int{13, 10}

// refineSLTP is the context of TPGRON's "typical line" bit (T.88
// 6.3.5.6), per template.
var refineSLTP = [2]int{0x0100, 0x0040}

// refineContext is the context of pixel (x, y) of bm refined from p.ref
// (T.88 Figures 12 and 13).
func refineContext(bm *bitmap, x, y int, p *refineParams) int {
	r, rx, ry := p.ref, x-p.dx, y-p.dy
	if p.template == 0 {
		return int(bm.at(x-1, y)) | int(bm.at(x+1, y-1))<<1 | int(bm.at(x, y-1))<<2 |
			int(bm.at(x+p.at[0][0], y+p.at[0][1]))<<3 |
			int(r.at(rx+1, ry+1))<<4 | int(r.at(rx, ry+1))<<5 | int(r.at(rx-1, ry+1))<<6 |
			int(r.at(rx+1, ry))<<7 | int(r.at(rx, ry))<<8 | int(r.at(rx-1, ry))<<9 |
			int(r.at(rx+1, ry-1))<<10 | int(r.at(rx, ry-1))<<11 |
			int(r.at(rx+p.at[1][0], ry+p.at[1][1]))<<12
	}
	return int(bm.at(x-1, y)) | int(bm.at(x+1, y-1))<<1 | int(bm.at(x, y-1))<<2 | int(bm.at(x-1, y-1))<<3 |
		int(r.at(rx+1, ry+1))<<4 | int(r.at(rx, ry+1))<<5 |
		int(r.at(rx+1, ry))<<6 | int(r.at(rx, ry))<<7 | int(r.at(rx-1, ry))<<8 |
		int(r.at(rx, ry-1))<<9
}

// typical is TPGRON's prediction of pixel (x, y): the value of the
// reference's 3×3 pixels around it when they are all the same.
func typical(p *refineParams, x, y int) (byte, bool) {
	rx, ry := x-p.dx, y-p.dy
	v := p.ref.at(rx, ry)
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			if p.ref.at(rx+dx, ry+dy) != v {
				return 0, false
			}
		}
	}
	return v, true
}

// decodeRefine decodes a w×h bitmap with the generic refinement region
// procedure, with the contexts cx (1 << refineContextBits[template]).
func (d *decoder) decodeRefine(mq *mqDecoder, cx []context, w, h int, p *refineParams) (*bitmap, error) {
	bm, err := d.newBitmap(int64(w), int64(h))
	if err != nil {
		return nil, err
	}
	ltp := 0
	for y := range h {
		if p.tpgron {
			ltp ^= mq.decode(&cx[refineSLTP[p.template]])
		}
		for x := range w {
			if ltp == 1 {
				if v, ok := typical(p, x, y); ok {
					bm.pix[y*w+x] = v
					continue
				}
			}
			bm.pix[y*w+x] = byte(mq.decode(&cx[refineContext(bm, x, y, p)]))
		}
	}
	return bm, nil
}

// refinementRegion decodes an immediate generic refinement region (T.88
// 7.4.7) that refines the page under it: one that refers to an
// intermediate region is not decoded.
func (d *decoder) refinementRegion(s *segment) error {
	if len(s.referred) > 0 {
		return &UnsupportedError{Segment: s.number, Type: s.typ, What: "refining an intermediate region"}
	}
	r, err := readRegionInfo(s)
	if err != nil {
		return err
	}
	b := s.data[17:]
	if len(b) < 1 {
		return malformed("segment %d: refinement region without its flags", s.number)
	}
	p := refineParams{template: int(b[0] & 1), tpgron: b[0]&2 != 0}
	b = b[1:]
	if p.template == 0 {
		if len(b) < 4 {
			return malformed("segment %d: refinement region without its adaptive pixels", s.number)
		}
		p.at = [2][2]int{{int(int8(b[0])), int(int8(b[1]))}, {int(int8(b[2])), int(int8(b[3]))}}
		b = b[4:]
	}
	if d.page == nil {
		return malformed("segment %d (%s) before the page information", s.number, segmentName(s.typ))
	}
	if r.w > 1<<24 || r.h > 1<<24 {
		return fmt.Errorf("%w: a region of %d×%d pixels", ErrLimit, r.w, r.h)
	}
	// The reference: the page, the region's pixels over it.
	if d.page.unknownH {
		if err := d.growPage(r.y + r.h); err != nil {
			return err
		}
	}
	p.ref, p.dx, p.dy = d.page.bm, -int(r.x), -int(r.y)
	cx, err := d.contexts(1 << refineContextBits[p.template])
	if err != nil {
		return err
	}
	bm, err := d.decodeRefine(newMQDecoder(b), cx, int(r.w), int(r.h), &p)
	if err != nil {
		return fmt.Errorf("segment %d (%s): %w", s.number, segmentName(s.typ), err)
	}
	return d.place(s, r, bm)
}
