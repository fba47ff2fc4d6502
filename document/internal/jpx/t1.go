package jpx

// EBCOT tier-1: the coding passes of one code-block (Annex D).

const (
	ctxRL  = 17
	ctxUNI = 18
)

// Per-coefficient state, on a grid with a one-coefficient border.
const (
	fN  = 1 << 0 // neighbour significant, by direction
	fS  = 1 << 1
	fW  = 1 << 2
	fE  = 1 << 3
	fNW = 1 << 4
	fNE = 1 << 5
	fSW = 1 << 6
	fSE = 1 << 7

	fSig     = 1 << 8
	fNeg     = 1 << 9
	fVisit   = 1 << 10
	fRefined = 1 << 11

	fNNeg = 1 << 12 // neighbour negative
	fSNeg = 1 << 13
	fWNeg = 1 << 14
	fENeg = 1 << 15

	causalMask = ^uint32(fS | fSW | fSE | fSNeg)
)

// zcLUT maps the eight neighbour significance bits to the zero coding
// context (Table D.1), per orientation: 0 LL and LH, 1 HL, 2 HH.
var zcLUT [3][256]uint8

// scLUT maps neighbour significance and sign (N, S, W, E bits and their
// sign bits) to the sign coding context and the bit to xor (Table D.3).
var scLUT [256]uint8

func init() {
	for f := range 256 {
		b := func(m int) int {
			if f&m != 0 {
				return 1
			}
			return 0
		}
		h, v := b(fW)+b(fE), b(fN)+b(fS)
		d := b(fNW) + b(fNE) + b(fSW) + b(fSE)
		zc := func(h, v, d int) uint8 {
			switch {
			case h == 2:
				return 8
			case h == 1 && v >= 1:
				return 7
			case h == 1 && d >= 1:
				return 6
			case h == 1:
				return 5
			case v == 2:
				return 4
			case v == 1:
				return 3
			case d >= 2:
				return 2
			case d == 1:
				return 1
			}
			return 0
		}
		zcLUT[0][f] = zc(h, v, d)
		zcLUT[1][f] = zc(v, h, d)
		var hh uint8
		switch {
		case d >= 3:
			hh = 8
		case d == 2 && h+v >= 1:
			hh = 7
		case d == 2:
			hh = 6
		case d == 1 && h+v >= 2:
			hh = 5
		case d == 1 && h+v == 1:
			hh = 4
		case d == 1:
			hh = 3
		case h+v >= 2:
			hh = 2
		case h+v == 1:
			hh = 1
		}
		zcLUT[2][f] = hh
	}
	// scLUT index: bits 0-3 significance of N, S, W, E; bits 4-7 their signs.
	for f := range 256 {
		contrib := func(sig, neg int) int {
			if f&sig == 0 {
				return 0
			}
			if f&neg != 0 {
				return -1
			}
			return 1
		}
		clamp := func(x int) int { return max(-1, min(1, x)) }
		h := clamp(contrib(fW, fW<<4) + contrib(fE, fE<<4))
		v := clamp(contrib(fN, fN<<4) + contrib(fS, fS<<4))
		var ctx, xor int
		switch {
		case h == 1:
			ctx = 12 + v
		case h == 0 && v == 0:
			ctx = 9
		case h == 0:
			ctx, xor = 10, b2i(v < 0)
		default:
			ctx, xor = 12-v, 1
		}
		scLUT[f] = uint8(ctx) | uint8(xor)<<7
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// t1 decodes code-blocks, reusing its buffers.
type t1 struct {
	mq     mqDecoder
	w, h   int
	stride int
	flags  []uint32
	mag    []int32 // magnitudes, scaled by 2 (one bit below the last decoded plane)
	orient int
	causal bool
}

func (t *t1) setSig(i int, neg bool) {
	s := t.stride
	f := t.flags
	if neg {
		f[i] |= fSig | fNeg
		f[i-s] |= fS | fSNeg
		f[i+s] |= fN | fNNeg
		f[i-1] |= fE | fENeg
		f[i+1] |= fW | fWNeg
	} else {
		f[i] |= fSig
		f[i-s] |= fS
		f[i+s] |= fN
		f[i-1] |= fE
		f[i+1] |= fW
	}
	f[i-s-1] |= fSE
	f[i-s+1] |= fSW
	f[i+s-1] |= fNE
	f[i+s+1] |= fNW
}

func scIndex(f uint32) uint32 { return f&0xf | (f>>12&0xf)<<4 }

func (t *t1) decodeSign(f uint32) bool {
	e := scLUT[scIndex(f)]
	return t.mq.decode(int(e&0x7f))^int(e>>7) == 1
}

// flagsAt returns the state of the coefficient at flag index i in stripe
// row k, hiding the stripe below in vertically causal mode.
func (t *t1) flagsAt(i, k int) uint32 {
	f := t.flags[i]
	if t.causal && k == 3 {
		f &= causalMask
	}
	return f
}

func (t *t1) sigPass(p int, raw bool) {
	oph := int32(3) << p
	zc := &zcLUT[t.orient]
	s := t.stride
	for y0 := 0; y0 < t.h; y0 += 4 {
		ye := min(y0+4, t.h)
		for x := range t.w {
			if i := (y0+1)*s + x + 1; ye-y0 == 4 && t.flags[i]|t.flags[i+s]|t.flags[i+2*s]|t.flags[i+3*s] == 0 {
				continue // no coefficient of the column has a significant neighbour
			}
			for y := y0; y < ye; y++ {
				i := (y+1)*t.stride + x + 1
				f := t.flagsAt(i, y-y0)
				if f&fSig != 0 || f&0xff == 0 {
					continue
				}
				var bit int
				if raw {
					bit = t.mq.raw()
				} else {
					bit = t.mq.decode(int(zc[f&0xff]))
				}
				if bit == 1 {
					var neg bool
					if raw {
						neg = t.mq.raw() == 1
					} else {
						neg = t.decodeSign(f)
					}
					t.mag[y*t.w+x] = oph
					t.setSig(i, neg)
				}
				t.flags[i] |= fVisit
			}
		}
	}
}

func (t *t1) refPass(p int, raw bool) {
	delta := int32(1) << p
	s := t.stride
	for y0 := 0; y0 < t.h; y0 += 4 {
		ye := min(y0+4, t.h)
		for x := range t.w {
			if i := (y0+1)*s + x + 1; ye-y0 == 4 && (t.flags[i]|t.flags[i+s]|t.flags[i+2*s]|t.flags[i+3*s])&fSig == 0 {
				continue // nothing significant in the column
			}
			for y := y0; y < ye; y++ {
				i := (y+1)*t.stride + x + 1
				f := t.flagsAt(i, y-y0)
				if f&(fSig|fVisit) != fSig {
					continue
				}
				var bit int
				if raw {
					bit = t.mq.raw()
				} else {
					ctx := 14
					if f&fRefined != 0 {
						ctx = 16
					} else if f&0xff != 0 {
						ctx = 15
					}
					bit = t.mq.decode(ctx)
				}
				if bit == 1 {
					t.mag[y*t.w+x] += delta
				} else {
					t.mag[y*t.w+x] -= delta
				}
				t.flags[i] |= fRefined
			}
		}
	}
}

func (t *t1) cleanupPass(p int, segSym bool) {
	oph := int32(3) << p
	zc := &zcLUT[t.orient]
	for y0 := 0; y0 < t.h; y0 += 4 {
		ye := min(y0+4, t.h)
		for x := range t.w {
			y := y0
			if ye-y0 == 4 {
				i := (y0+1)*t.stride + x + 1
				s := t.stride
				if (t.flags[i]|t.flags[i+s]|t.flags[i+2*s]|t.flagsAt(i+3*s, 3))&(0xff|fSig|fVisit) == 0 {
					if t.mq.decode(ctxRL) == 0 {
						continue
					}
					r := t.mq.decode(ctxUNI)<<1 | t.mq.decode(ctxUNI)
					y = y0 + r
					i += r * s
					neg := t.decodeSign(t.flagsAt(i, r))
					t.mag[y*t.w+x] = oph
					t.setSig(i, neg)
					y++
				}
			}
			for ; y < ye; y++ {
				i := (y+1)*t.stride + x + 1
				f := t.flagsAt(i, y-y0)
				if f&(fSig|fVisit) == 0 {
					if t.mq.decode(int(zc[f&0xff])) == 1 {
						t.mag[y*t.w+x] = oph
						t.setSig(i, t.decodeSign(f))
					}
				}
				t.flags[i] &^= fVisit
			}
		}
	}
	if segSym {
		for range 4 {
			t.mq.decode(ctxUNI)
		}
	}
}

// decode runs the code-block's coding passes; afterwards t.mag and the
// fNeg flags hold its coefficients.
func (t *t1) decode(cb *codeBlock, orient int, style byte, roiShift int) {
	t.w, t.h = int(cb.x1-cb.x0), int(cb.y1-cb.y0)
	t.stride = t.w + 2
	n := t.stride * (t.h + 2)
	if cap(t.flags) < n {
		t.flags = make([]uint32, n)
	}
	t.flags = t.flags[:n]
	clear(t.flags)
	if cap(t.mag) < t.w*t.h {
		t.mag = make([]int32, t.w*t.h)
	}
	t.mag = t.mag[:t.w*t.h]
	clear(t.mag)
	t.orient = [4]int{0, 1, 0, 2}[orient]
	t.causal = style&cbCausal != 0
	t.mq.resetContexts()
	p, ptype, pass, off := cb.numbps+roiShift-1, 2, 0, 0
	if p < 0 || p > 29 {
		return
	}
	for _, seg := range cb.segs {
		data := cb.data[off : off+seg.len]
		off += seg.len
		raw := style&cbBypass != 0 && pass >= 10 && ptype != 2
		if raw {
			t.mq.rawInit(data)
		} else {
			t.mq.init(data)
		}
		for range seg.passes {
			if p < 0 {
				return
			}
			switch ptype {
			case 0:
				t.sigPass(p, raw)
			case 1:
				t.refPass(p, raw)
			case 2:
				t.cleanupPass(p, style&cbSegSym != 0)
			}
			if style&cbReset != 0 {
				t.mq.resetContexts()
			}
			if ptype == 2 {
				ptype, p = 0, p-1
			} else {
				ptype++
			}
			pass++
		}
	}
}

// decodeBlocks decodes every code-block of tc into its sub-band,
// dequantised (E.1).
func decodeBlocks(tc *tileComp) {
	stride, n := tc.w(), tc.w()*tc.h()
	if n <= 0 {
		return
	}
	if tc.p.reversible {
		tc.ipix = make([]int32, n)
	} else {
		tc.fpix = make([]float32, n)
	}
	var t t1
	for _, res := range tc.res {
		for _, pr := range res.precincts {
			for bi := range pr.bands {
				b := res.bands[bi]
				for ci := range pr.bands[bi].cbs {
					cb := &pr.bands[bi].cbs[ci]
					if cb.passes == 0 {
						continue
					}
					t.decode(cb, b.kind, tc.p.cbStyle, tc.p.roiShift)
					for y := range t.h {
						row := b.off + int(cb.y0-b.y0+uint32(y))*stride + int(cb.x0-b.x0)
						for x := range t.w {
							m := t.mag[y*t.w+x]
							if m == 0 {
								continue
							}
							if roi := tc.p.roiShift; roi > 0 && m >= 1<<roi {
								m >>= roi // a region of interest's coefficient (Annex H)
							}
							neg := t.flags[(y+1)*t.stride+x+1]&fNeg != 0
							if tc.ipix != nil {
								v := m >> 1
								if neg {
									v = -v
								}
								tc.ipix[row+x] = v
							} else {
								v := float32(m) * b.step * 0.5
								if neg {
									v = -v
								}
								tc.fpix[row+x] = v
							}
						}
					}
				}
			}
		}
	}
}
