package jbig2

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/image/ccitt"
)

// genericParams are the parameters of the generic region decoding
// procedure (T.88 6.2) other than the size.
type genericParams struct {
	template int
	tpgdon   bool
	at       [4][2]int // adaptive pixels: template 0 uses 4, the others 1
	// skip are pixels not coded, 0 (USESKIP, for halftone grids); nil
	// for none.
	skip *bitmap
}

// contextBits is the number of context bits of each template.
var contextBits = [4]int{16, 13, 10, 10}

// sltp is the context of TPGDON's "line same as previous" bit, per
// template (T.88 6.2.5.7).
var sltp = [4]int{0x9B25, 0x0795, 0x00E5, 0x0195}

// readAT reads n adaptive pixels' signed offsets.
func readAT(b []byte, n int) (at [4][2]int) {
	for i := range n {
		at[i] = [2]int{int(int8(b[2*i])), int(int8(b[2*i+1]))}
	}
	return at
}

// window describes a template's context as three sliding windows, one a
// row (T.88 Figures 3–6 number its pixels so): the current row's last
// curBits pixels, then the row above's up1Bits pixels ending up1Lead right
// of x, then the row two above's; with the adaptive pixels at their
// nominal places the context is those windows side by side. at are the
// context bits the adaptive pixels take, replaced when they are moved.
type window struct {
	curBits, up1Bits, up1Lead, up2Bits, up2Lead, up1Shift, up2Shift int
	at                                                              []int
}

// defaultAT are the nominal adaptive pixels of each template.
var defaultAT = [4][4][2]int{
	{{3, -1}, {-3, -1}, {2, -2}, {-2, -2}},
	{{3, -1}},
	{{2, -1}},
	{{2, -1}},
}

var windows = [4]window{
	{4, 7, 3, 5, 2, 4, 11, []int{4, 10, 11, 15}},
	{3, 6, 3, 4, 2, 3, 9, []int{3}},
	{2, 5, 2, 3, 1, 2, 7, []int{2}},
	{4, 6, 2, 0, 0, 4, 0, []int{4}},
}

// decodeGeneric decodes a w×h bitmap with the arithmetic generic region
// procedure, with the contexts cx (1 << contextBits[template] of them).
func (d *decoder) decodeGeneric(mq *mqDecoder, cx []context, w, h int, p genericParams) (*bitmap, error) {
	bm, err := d.newBitmap(int64(w), int64(h))
	if err != nil {
		return nil, err
	}
	win := windows[p.template]
	nominal := true
	var atMask int
	for i, bit := range win.at {
		nominal = nominal && p.at[i] == defaultAT[p.template][i]
		atMask |= 1 << bit
	}
	curMask, up1Mask, up2Mask := 1<<win.curBits-1, 1<<win.up1Bits-1, 1<<win.up2Bits-1
	// load is the pixel x of row, 0 past its end or for no row.
	load := func(row []byte, x int) int {
		if x < w && row != nil {
			return int(row[x])
		}
		return 0
	}
	ltp := 0
	for y := range h {
		cur := bm.pix[y*w : (y+1)*w]
		var up1, up2 []byte
		if y >= 1 {
			up1 = bm.pix[(y-1)*w : y*w]
		}
		if y >= 2 && win.up2Bits > 0 {
			up2 = bm.pix[(y-2)*w : (y-1)*w]
		}
		if p.tpgdon {
			ltp ^= mq.decode(&cx[sltp[p.template]])
			if ltp == 1 {
				if up1 != nil {
					copy(cur, up1)
				}
				continue
			}
		}
		c0, c1, c2 := 0, 0, 0
		for x := range win.up1Lead {
			c1 = c1<<1 | load(up1, x)
		}
		for x := range win.up2Lead {
			c2 = c2<<1 | load(up2, x)
		}
		for x := range w {
			c1 = (c1<<1 | load(up1, x+win.up1Lead)) & up1Mask
			c2 = (c2<<1 | load(up2, x+win.up2Lead)) & up2Mask
			c := c0 | c1<<win.up1Shift | c2<<win.up2Shift
			if !nominal {
				c &^= atMask
				for i, bit := range win.at {
					c |= int(bm.at(x+p.at[i][0], y+p.at[i][1])) << bit
				}
			}
			b := 0
			if p.skip == nil || p.skip.pix[y*w+x] == 0 {
				b = mq.decode(&cx[c])
			}
			cur[x] = byte(b)
			c0 = (c0<<1 | b) & curMask
		}
	}
	return bm, nil
}

// decodeMMR decodes a w×h bitmap coded with T.6 (MMR), 1 bits black.
func (d *decoder) decodeMMR(data []byte, w, h int) (*bitmap, error) {
	bm, err := d.newBitmap(int64(w), int64(h))
	if err != nil {
		return nil, err
	}
	if w == 0 || h == 0 {
		return bm, nil
	}
	rd := ccitt.NewReader(bytes.NewReader(data), ccitt.MSB, ccitt.Group4, w, h, &ccitt.Options{Invert: true})
	row := make([]byte, (w+7)/8)
	for y := range h {
		if _, err := io.ReadFull(rd, row); err != nil {
			return nil, malformed("the MMR data ends early at row %d of %d: %v", y, h, err)
		}
		for x := range w {
			bm.pix[y*w+x] = row[x>>3] >> (7 - x&7) & 1
		}
	}
	return bm, nil
}

// genericRegion decodes an immediate generic region segment (T.88
// 7.4.6) onto the page.
func (d *decoder) genericRegion(s *segment) (int, error) {
	r, err := readRegionInfo(s)
	if err != nil {
		return 0, err
	}
	b := s.data[17:]
	if len(b) < 1 {
		return 0, malformed("segment %d: generic region without its flags", s.number)
	}
	flags := b[0]
	mmr := flags&1 != 0
	p := genericParams{template: int(flags >> 1 & 3), tpgdon: flags&8 != 0}
	if flags&0x10 != 0 {
		return 0, &UnsupportedError{Segment: s.number, Type: s.typ, What: "the extended template (EXTTEMPLATE)"}
	}
	b = b[1:]
	if !mmr {
		n := 1
		if p.template == 0 {
			n = 4
		}
		if len(b) < 2*n {
			return 0, malformed("segment %d: generic region without its adaptive pixels", s.number)
		}
		p.at = readAT(b, n)
		b = b[2*n:]
	}
	used := len(s.data) - len(b) // the header fields
	h := r.h
	if s.unknownLength {
		if mmr {
			return 0, &UnsupportedError{Segment: s.number, Type: s.typ, What: "MMR data of unknown length"}
		}
		i := bytes.Index(b, []byte{0xFF, 0xAC})
		if i < 0 || len(b) < i+6 {
			return 0, malformed("segment %d: generic region of unknown length without its end marker", s.number)
		}
		rows := int64(binary.BigEndian.Uint32(b[i+2:]))
		if rows > h {
			return 0, malformed("segment %d: generic region of %d rows ends after %d", s.number, h, rows)
		}
		h = rows
		b = b[:i+2]
		used += i + 6
	}
	if r.w > 1<<24 || h > 1<<24 {
		return 0, fmt.Errorf("%w: a region of %d×%d pixels", ErrLimit, r.w, h)
	}
	var bm *bitmap
	if mmr {
		bm, err = d.decodeMMR(b, int(r.w), int(h))
	} else {
		var cx []context
		if cx, err = d.contexts(1 << contextBits[p.template]); err == nil {
			bm, err = d.decodeGeneric(newMQDecoder(b), cx, int(r.w), int(h), p)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("segment %d (%s): %w", s.number, segmentName(s.typ), err)
	}
	return used, d.place(s, r, bm)
}
