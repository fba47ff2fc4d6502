package jpx

import (
	"fmt"
	"image"
	"image/color"
	"math"
)

// storeTile undoes the component transform and DC level shift (Annex G)
// and copies the tile's components into the image planes.
func (d *decoder) storeTile(t *tile, tcs []*tileComp) error {
	if t.p.cs.mct && len(tcs) >= 3 {
		a, b, c := tcs[0], tcs[1], tcs[2]
		same := a.x0 == b.x0 && a.x0 == c.x0 && a.x1 == b.x1 && a.x1 == c.x1 && a.y0 == b.y0 && a.y0 == c.y0 && a.y1 == b.y1 && a.y1 == c.y1
		if !same {
			return FormatError("component transform over components of different sizes")
		}
		switch {
		case a.ipix != nil && b.ipix != nil && c.ipix != nil:
			for i := range min(len(a.ipix), len(b.ipix), len(c.ipix)) {
				y0, y1, y2 := a.ipix[i], b.ipix[i], c.ipix[i]
				g := y0 - (y2+y1)>>2
				a.ipix[i], b.ipix[i], c.ipix[i] = y2+g, g, y1+g
			}
		case a.fpix != nil && b.fpix != nil && c.fpix != nil:
			for i := range min(len(a.fpix), len(b.fpix), len(c.fpix)) {
				y, cb, cr := a.fpix[i], b.fpix[i], c.fpix[i]
				a.fpix[i] = y + 1.402*cr
				b.fpix[i] = y - 0.34413*cb - 0.71414*cr
				c.fpix[i] = y + 1.772*cb
			}
		case a.ipix == nil && a.fpix == nil:
		default:
			return UnsupportedError("component transform over reversible and irreversible components")
		}
	}
	for c, tc := range tcs {
		sc := d.siz.comps[c]
		pl := &d.planes[c]
		// Unsigned samples are shifted up by half their range (G.1.2);
		// signed ones too, to be stored unsigned.
		lo, hi := int32(0), int32(1)<<sc.prec-1
		shift := int32(1) << (sc.prec - 1)
		w := int(tc.x1 - tc.x0)
		ox, oy := int(tc.x0-pl.x0), int(tc.y0-pl.y0)
		for y := range int(tc.y1 - tc.y0) {
			row := (oy+y)*pl.w + ox
			for x := range w {
				var v int32
				switch {
				case tc.ipix != nil:
					v = tc.ipix[y*w+x]
				case tc.fpix != nil:
					f := float64(tc.fpix[y*w+x])
					if f != f {
						f = 0
					}
					v = int32(math.RoundToEven(max(-1<<20, min(1<<20, f))))
				}
				if v = max(lo, min(hi, v+shift)); pl.pix8 != nil {
					pl.pix8[row+x] = uint8(v)
				} else {
					pl.pix[row+x] = uint16(v)
				}
			}
		}
	}
	return nil
}

// channel is one output channel: a plane, possibly through a palette.
type channel struct {
	pl     *plane
	dx, dy uint32
	prec   int
	signed bool
	lut    []int32 // palette column, indexed by the plane's value
}

func (ch *channel) at(x, y uint32) int32 {
	pl := ch.pl
	if pl.w == 0 || pl.h == 0 {
		return 0
	}
	u, v := int(x/ch.dx)-int(pl.x0), int(y/ch.dy)-int(pl.y0)
	u, v = max(0, min(pl.w-1, u)), max(0, min(pl.h-1, v))
	s := pl.at(u, v)
	if ch.lut != nil {
		s = ch.lut[max(0, min(int32(len(ch.lut)-1), s))]
		if ch.signed {
			s += 1 << (ch.prec - 1)
		}
	}
	return s
}

// image assembles the planes into an image, applying the JP2 header's
// palette and colour space.
func (d *decoder) image(h *jp2Header) (image.Image, error) {
	s := &d.siz
	var chs []channel
	for c, sc := range s.comps {
		chs = append(chs, channel{pl: &d.planes[c], dx: sc.dx, dy: sc.dy, prec: sc.prec})
	}
	if h.palette != nil {
		if len(h.cmap) == 0 {
			return nil, FormatError("palette without component mapping (cmap)")
		}
		var out []channel
		for _, m := range h.cmap {
			if m.comp >= len(chs) {
				return nil, FormatError(fmt.Sprintf("cmap names component %d of %d", m.comp, len(chs)))
			}
			ch := chs[m.comp]
			if m.mtyp == 1 {
				if m.column >= len(h.palette.values) {
					return nil, FormatError(fmt.Sprintf("cmap names palette column %d of %d", m.column, len(h.palette.values)))
				}
				ch.lut, ch.prec, ch.signed = h.palette.values[m.column], h.palette.depth[m.column], h.palette.signed[m.column]
			}
			out = append(out, ch)
		}
		chs = out
	}
	w, ht := int(s.x1-s.x0), int(s.y1-s.y0)
	rect := image.Rect(0, 0, w, ht)
	model := colorModel(h, s)
	// scale maps a channel's value to 8 or 16 bits.
	scale := func(ch *channel, v int32, bits int) uint32 {
		maxIn := int64(1)<<ch.prec - 1
		v64 := max(0, min(maxIn, int64(v)))
		if ch.prec == bits {
			return uint32(v64)
		}
		return uint32((v64*(int64(1)<<bits-1) + maxIn/2) / maxIn)
	}
	pos := func(x, y int) (uint32, uint32) { return s.x0 + uint32(x), s.y0 + uint32(y) }
	switch model {
	case color.GrayModel:
		img := image.NewGray(rect)
		ch := &chs[0]
		for y := range ht {
			for x := range w {
				img.Pix[y*img.Stride+x] = uint8(scale(ch, ch.at(pos(x, y)), 8))
			}
		}
		return img, nil
	case color.Gray16Model:
		img := image.NewGray16(rect)
		ch := &chs[0]
		for y := range ht {
			for x := range w {
				v := scale(ch, ch.at(pos(x, y)), 16)
				img.Pix[y*img.Stride+2*x], img.Pix[y*img.Stride+2*x+1] = uint8(v>>8), uint8(v)
			}
		}
		return img, nil
	case color.CMYKModel:
		img := image.NewCMYK(rect)
		for y := range ht {
			for x := range w {
				for k := range 4 {
					img.Pix[y*img.Stride+4*x+k] = uint8(scale(&chs[k], chs[k].at(pos(x, y)), 8))
				}
			}
		}
		return img, nil
	}
	deep := model == color.NRGBA64Model
	bits := 8
	if deep {
		bits = 16
	}
	var img8 *image.NRGBA
	var img16 *image.NRGBA64
	if deep {
		img16 = image.NewNRGBA64(rect)
	} else {
		img8 = image.NewNRGBA(rect)
	}
	alpha := len(chs) >= 4
	// sYCC by the JP2 header, or (as opj_decompress guesses) a bare
	// codestream's three components with subsampled chroma.
	ycc := h.enumCS == 18 || h.enumCS == 0 && h.palette == nil && len(chs) == 3 && chs[0].dx == 1 && chs[0].dy == 1 &&
		(chs[1].dx > 1 || chs[1].dy > 1) && (chs[2].dx > 1 || chs[2].dy > 1)
	full := uint32(1)<<bits - 1
	for y := range ht {
		for x := range w {
			var v [4]uint32
			v[3] = full
			for k := range 3 {
				v[k] = scale(&chs[k], chs[k].at(pos(x, y)), bits)
			}
			if alpha {
				v[3] = scale(&chs[3], chs[3].at(pos(x, y)), bits)
			}
			if ycc {
				v[0], v[1], v[2] = yccToRGB(v[0], v[1], v[2], full)
			}
			if deep {
				o := y*img16.Stride + 8*x
				for k := range 4 {
					img16.Pix[o+2*k], img16.Pix[o+2*k+1] = uint8(v[k]>>8), uint8(v[k])
				}
			} else {
				o := y*img8.Stride + 4*x
				for k := range 4 {
					img8.Pix[o+k] = uint8(v[k])
				}
			}
		}
	}
	if deep {
		return img16, nil
	}
	return img8, nil
}

// yccToRGB converts sYCC (chroma offset by half the range) as OpenJPEG
// does, truncating.
func yccToRGB(y, cb, cr, full uint32) (r, g, b uint32) {
	off := int32(full+1) / 2
	iy, icb, icr := int32(y), int32(cb)-off, int32(cr)-off
	c := func(v int32) uint32 { return uint32(max(0, min(int32(full), v))) }
	return c(iy + int32(1.402*float64(icr))), c(iy - int32(0.344*float64(icb)+0.714*float64(icr))), c(iy + int32(1.772*float64(icb)))
}
