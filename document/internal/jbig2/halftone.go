package jbig2

import (
	"encoding/binary"
	"fmt"
)

// patternDict decodes a pattern dictionary (T.88 7.4.4, 6.7): its
// collective bitmap, generic-coded or MMR, cut into HDPW×HDPH patterns.
func (d *decoder) patternDict(s *segment) error {
	b := s.data
	if len(b) < 7 {
		return malformed("segment %d: pattern dictionary of %d bytes", s.number, len(b))
	}
	mmr := b[0]&1 != 0
	template := int(b[0] >> 1 & 3)
	pw, ph := int(b[1]), int(b[2])
	grayMax := int64(binary.BigEndian.Uint32(b[3:]))
	if pw == 0 || ph == 0 || int64(d.nsyms)+grayMax+1 > int64(d.lim.MaxSymbols) {
		return fmt.Errorf("%w: segment %d: %d patterns of %d×%d", ErrLimit, s.number, grayMax+1, pw, ph)
	}
	w := (grayMax + 1) * int64(pw)
	var all *bitmap
	var err error
	if mmr {
		if w*int64(ph) > d.lim.MaxPixels {
			return fmt.Errorf("%w: a pattern dictionary of %d×%d pixels", ErrLimit, w, ph)
		}
		all, err = d.decodeMMR(b[7:], int(w), ph)
	} else {
		p := genericParams{template: template, at: [4][2]int{{-pw, 0}, {-3, -1}, {2, -2}, {-2, -2}}}
		if w*int64(ph) > d.lim.MaxPixels {
			return fmt.Errorf("%w: a pattern dictionary of %d×%d pixels", ErrLimit, w, ph)
		}
		var cx []context
		if cx, err = d.contexts(1 << contextBits[template]); err == nil {
			all, err = d.decodeGeneric(newMQDecoder(b[7:]), cx, int(w), ph, p)
		}
	}
	if err != nil {
		return fmt.Errorf("segment %d (%s): %w", s.number, segmentName(s.typ), err)
	}
	pats := make([]*bitmap, grayMax+1)
	for i := range pats {
		pat := newBitmap(pw, ph)
		for y := range ph {
			copy(pat.pix[y*pw:(y+1)*pw], all.pix[y*all.w+i*pw:])
		}
		pats[i] = pat
	}
	d.patterns[s.number] = pats
	d.nsyms += len(pats)
	return nil
}

// halftoneRegion decodes an immediate halftone region (T.88 7.4.5, 6.6):
// a grid of patterns chosen by a gray-scale image coded in bitplanes.
func (d *decoder) halftoneRegion(s *segment) error {
	r, err := readRegionInfo(s)
	if err != nil {
		return err
	}
	b := s.data[17:]
	if len(b) < 21 {
		return malformed("segment %d: halftone region header of %d bytes", s.number, len(s.data))
	}
	flags := b[0]
	mmr := flags&1 != 0
	template := int(flags >> 1 & 3)
	enableSkip := flags&8 != 0
	op := flags >> 4 & 7
	defPixel := flags >> 7
	gw, gh := int64(binary.BigEndian.Uint32(b[1:])), int64(binary.BigEndian.Uint32(b[5:]))
	gx, gy := int64(int32(binary.BigEndian.Uint32(b[9:]))), int64(int32(binary.BigEndian.Uint32(b[13:])))
	rx, ry := int64(binary.BigEndian.Uint16(b[17:])), int64(binary.BigEndian.Uint16(b[19:]))
	b = b[21:]
	if op > opReplace {
		return malformed("segment %d: combination operator %d", s.number, op)
	}
	if mmr {
		return &UnsupportedError{Segment: s.number, Type: s.typ, What: "an MMR-coded gray-scale image"}
	}
	var pats []*bitmap
	for _, n := range s.referred {
		if p, ok := d.patterns[n]; ok {
			pats = p
			break
		}
	}
	if len(pats) == 0 {
		return malformed("segment %d: a halftone region without its pattern dictionary", s.number)
	}
	bpp := 0
	for 1<<bpp < len(pats) {
		bpp++
	}
	if gw*gh > d.lim.MaxPixels || gw > 1<<24 || gh > 1<<24 {
		return fmt.Errorf("%w: a halftone grid of %d×%d", ErrLimit, gw, gh)
	}
	if err := d.spend(gw * gh * int64(bpp)); err != nil {
		return err
	}
	reg, err := d.newBitmap(r.w, r.h)
	if err != nil {
		return err
	}
	if defPixel != 0 {
		reg.fill(1)
	}
	pw, ph := int64(pats[0].w), int64(pats[0].h)
	// place is where grid cell (m, n) draws its pattern.
	place := func(m, n int64) (x, y int64) {
		return (gx + m*ry + n*rx) >> 8, (gy + m*rx - n*ry) >> 8
	}
	p := genericParams{template: template, at: [4][2]int{{3, -1}, {-3, -1}, {2, -2}, {-2, -2}}}
	if template >= 2 {
		p.at[0] = [2]int{2, -1}
	}
	if enableSkip {
		p.skip = newBitmap(int(gw), int(gh))
		for m := range gh {
			for n := range gw {
				x, y := place(m, n)
				if x+pw <= 0 || x >= r.w || y+ph <= 0 || y >= r.h {
					p.skip.pix[m*gw+n] = 1
				}
			}
		}
	}
	// The gray-scale image (Annex C.5): bitplanes from the most
	// significant, each Gray-coded against the one above.
	mq := newMQDecoder(b)
	cx, err := d.contexts(1 << contextBits[template])
	if err != nil {
		return err
	}
	gray := make([]uint32, gw*gh)
	var above *bitmap
	for j := bpp - 1; j >= 0; j-- {
		plane, err := d.decodeGeneric(mq, cx, int(gw), int(gh), p)
		if err != nil {
			return fmt.Errorf("segment %d (%s): %w", s.number, segmentName(s.typ), err)
		}
		if above != nil {
			for i := range plane.pix {
				plane.pix[i] ^= above.pix[i]
			}
		}
		for i, v := range plane.pix {
			gray[i] |= uint32(v) << j
		}
		above = plane
	}
	for m := range gh {
		for n := range gw {
			v := gray[m*gw+n]
			if int(v) >= len(pats) {
				v = uint32(len(pats) - 1) // T.88 6.6.5.2: larger values draw the last pattern
			}
			x, y := place(m, n)
			if err := d.spend(pw * ph); err != nil {
				return err
			}
			reg.combine(pats[v], x, y, op)
		}
	}
	return d.place(s, r, reg)
}
