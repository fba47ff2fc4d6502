package jpx

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

type decoder struct {
	cs     []byte
	lim    Limits
	siz    siz
	main   *params
	tiles  []*tile
	budget int // code-blocks and precincts left under Limits.MaxCodeBlocks
	// ppm: the main header's packed packet headers (PPM), Nppm and Ippm
	// pairs, one a tile-part; ppmSeen says there were PPM markers.
	ppm     []byte
	ppmSeen bool
	// trace, when set (by tests), sees where each packet's header and body
	// are: offsets in the tile's data, or in its packed headers.
	trace  func(tile, hdrStart, hdrEnd, bodyStart, bodyEnd int)
	planes []plane
}

// plane is one decoded component on its own (subsampled) grid, as
// unsigned values (a signed component's offset by half its range).
type plane struct {
	w, h int
	x0   uint32 // first column and row on the component grid
	y0   uint32
	// The samples, in pix8 when the component has at most 8 bits (a
	// byte a sample: most scans), else in pix.
	pix  []uint16
	pix8 []uint8
}

// at is the sample at column u and row v of the plane.
func (pl *plane) at(u, v int) int32 {
	if pl.pix8 != nil {
		return int32(pl.pix8[v*pl.w+u])
	}
	return int32(pl.pix[v*pl.w+u])
}

type tile struct {
	idx   int
	p     *params
	data  []byte
	parts int
	// headers: the packet headers, when packed in PPM or PPT markers.
	headers []byte
	packed  bool
	x0, y0  uint32
	x1, y1  uint32
}

func newDecoder(cs []byte, lim Limits) (*decoder, error) {
	d := &decoder{cs: cs, lim: lim}
	if err := d.siz.parseMain(cs); err != nil {
		return nil, err
	}
	s := &d.siz
	px := int64(s.x1-s.x0) * int64(s.y1-s.y0)
	if lim.MaxPixels > 0 && px > lim.MaxPixels {
		return nil, &LimitError{"pixel count", px, lim.MaxPixels}
	}
	if lim.MaxComponents > 0 && len(s.comps) > lim.MaxComponents {
		return nil, &LimitError{"component count", int64(len(s.comps)), int64(lim.MaxComponents)}
	}
	nt := int64(s.ntx) * int64(s.nty)
	if lim.MaxTiles > 0 && nt > int64(lim.MaxTiles) || nt > 65535 {
		return nil, &LimitError{"tile count", nt, int64(min(lim.MaxTiles, 65535))}
	}
	d.budget = lim.MaxCodeBlocks
	if d.budget <= 0 {
		d.budget = 1 << 30
	}
	d.tiles = make([]*tile, nt)
	d.main = &params{comps: make([]compParams, len(s.comps))}
	return d, nil
}

// header reads the marker segments of the main header (t nil) or of a
// tile-part's header from pos into p (and t), up to the first SOT (main)
// or SOD, whose position it returns.
func (d *decoder) header(pos int, p *params, t *tile) (int, error) {
	main := t == nil
	cs := d.cs
	seenCOD, seenQCD := !main, !main
	for {
		if pos+4 > len(cs) {
			return pos, FormatError("codestream ends in a header")
		}
		m := binary.BigEndian.Uint16(cs[pos:])
		if m == mSOT && main || m == mSOD && !main {
			if !seenCOD || !seenQCD {
				return pos, FormatError("main header without COD or QCD")
			}
			return pos, nil
		}
		if m>>8 != 0xff {
			return pos, FormatError(fmt.Sprintf("expected a marker at byte %d, found %#04x", pos, m))
		}
		n := int(binary.BigEndian.Uint16(cs[pos+2:]))
		if n < 2 || pos+2+n > len(cs) {
			return pos, FormatError(fmt.Sprintf("marker %#04x of length %d at byte %d", m, n, pos))
		}
		body := cs[pos+4 : pos+2+n]
		switch m {
		case mSIZ:
			if !main {
				return pos, FormatError("SIZ in a tile header")
			}
		case mCOD, mCOC, mQCD, mQCC:
			if m == mCOD {
				seenCOD = true
			}
			if m == mQCD {
				seenQCD = true
			}
			if err := p.applyMarker(m, body); err != nil {
				return pos, err
			}
		case mPOC:
			if err := p.parsePOC(body, main); err != nil {
				return pos, err
			}
		case mPPM:
			if !main || len(body) < 1 {
				return pos, FormatError("PPM in a tile header")
			}
			d.ppm, d.ppmSeen = append(d.ppm, body[1:]...), true
		case mPPT:
			if main || d.ppmSeen || len(body) < 1 {
				return pos, FormatError("PPT in the main header, or with PPM")
			}
			t.headers, t.packed = append(t.headers, body[1:]...), true
		case mRGN:
			c, rest := 0, body
			if len(p.comps) < 257 && len(body) >= 1 {
				c, rest = int(body[0]), body[1:]
			} else if len(body) >= 2 {
				c, rest = int(binary.BigEndian.Uint16(body)), body[2:]
			}
			if c >= len(p.comps) || len(rest) < 2 {
				return pos, FormatError(fmt.Sprintf("RGN for component %d of %d", c, len(p.comps)))
			}
			if rest[0] != 0 {
				return pos, UnsupportedError(fmt.Sprintf("region of interest style %d", rest[0]))
			}
			p.comps[c].roiShift = int(rest[1])
		}
		pos += 2 + n
	}
}

func (d *decoder) decode() error {
	cs := d.cs
	sizLen := int(binary.BigEndian.Uint16(cs[4:]))
	pos, err := d.header(4+sizLen, d.main, nil)
	if err != nil {
		return err
	}
	// Tile-parts.
	for pos+12 <= len(cs) && binary.BigEndian.Uint16(cs[pos:]) == mSOT {
		if binary.BigEndian.Uint16(cs[pos+2:]) != 10 {
			return FormatError("SOT of the wrong length")
		}
		idx := int(binary.BigEndian.Uint16(cs[pos+4:]))
		psot := int64(binary.BigEndian.Uint32(cs[pos+6:]))
		if idx >= len(d.tiles) {
			return FormatError(fmt.Sprintf("tile %d of %d", idx, len(d.tiles)))
		}
		end := int64(len(cs))
		if psot != 0 {
			end = min(end, int64(pos)+psot)
		} else if len(cs) >= 2 && binary.BigEndian.Uint16(cs[len(cs)-2:]) == mEOC {
			end -= 2
		}
		t := d.tiles[idx]
		if t == nil {
			t = &tile{idx: idx, p: d.main.clone()}
			d.tiles[idx] = t
		}
		sod, err := d.header(pos+12, t.p, t)
		if err != nil {
			return err
		}
		if d.ppmSeen {
			// This tile-part's packet headers are the next Nppm bytes.
			if len(d.ppm) < 4 {
				return FormatError("PPM without the packet headers of a tile-part")
			}
			n := min(int64(binary.BigEndian.Uint32(d.ppm)), int64(len(d.ppm)-4))
			t.headers, t.packed = append(t.headers, d.ppm[4:4+n]...), true
			d.ppm = d.ppm[4+n:]
		}
		if int64(sod+2) > end {
			return FormatError("tile-part data before its header ends")
		}
		t.data = append(t.data, cs[sod+2:end]...)
		t.parts++
		pos = int(end)
	}
	s := &d.siz
	d.planes = make([]plane, len(s.comps))
	for c, sc := range s.comps {
		pl := &d.planes[c]
		pl.x0, pl.y0 = ceilDiv(s.x0, sc.dx), ceilDiv(s.y0, sc.dy)
		pl.w, pl.h = int(ceilDiv(s.x1, sc.dx)-pl.x0), int(ceilDiv(s.y1, sc.dy)-pl.y0)
		if sc.prec <= 8 {
			pl.pix8 = make([]uint8, pl.w*pl.h)
		} else {
			pl.pix = make([]uint16, pl.w*pl.h)
		}
	}
	decoded := 0
	for _, t := range d.tiles {
		if t == nil {
			continue
		}
		if err := d.decodeTile(t); err != nil {
			return fmt.Errorf("tile %d: %w", t.idx, err)
		}
		decoded++
	}
	if decoded == 0 {
		return FormatError("no tile data")
	}
	return nil
}

// Tile structures (B.5 - B.7).

type tileComp struct {
	x0, y0, x1, y1 uint32
	p              *compParams
	res            []*resolution
	prec           int
	// The tile-component's samples, one of these, w()×h() row by row:
	// the code-blocks are decoded into their sub-bands' places in it
	// (band.off) and the inverse DWT runs in place, so a component takes
	// 4 bytes a sample however many levels it has.
	ipix []int32
	fpix []float32
}

func (tc *tileComp) w() int { return int(tc.x1 - tc.x0) }
func (tc *tileComp) h() int { return int(tc.y1 - tc.y0) }

type resolution struct {
	x0, y0, x1, y1 uint32 // its samples take the w()×h() corner of the tile-component's buffer
	ppx, ppy       int
	npw, nph       int
	pxs, pys       uint32
	bands          []*band
	precincts      []*precinct
}

type band struct {
	kind           int // 0 LL, 1 HL, 2 LH, 3 HH
	x0, y0, x1, y1 uint32
	mb             int
	step           float32
	cbw, cbh       int
	// off is where the band's first sample is in the tile-component's
	// buffer: a resolution's low-pass half (the resolution below it) in
	// its top left corner, HL beside it, LH below it, HH in the other
	// corner (the layout the inverse DWT reads).
	off int
}

func (r *resolution) w() int { return int(r.x1 - r.x0) }
func (r *resolution) h() int { return int(r.y1 - r.y0) }

func (b *band) w() int { return int(b.x1 - b.x0) }
func (b *band) h() int { return int(b.y1 - b.y0) }

type precinct struct {
	bands []precBand
}

type precBand struct {
	cw, ch int
	cbs    []codeBlock
	incl   *tagTree
	zbp    *tagTree
}

type codeBlock struct {
	x0, y0, x1, y1 uint32
	included       bool
	lblock         int
	numbps         int
	passes         int
	segs           []segment
	data           []byte
	pending        []pendingSeg
}

type segment struct {
	len, passes, max int
}

type pendingSeg struct {
	seg, passes, len int
}

// ceilShift is ceil(a / 2^n) for a possibly negative a.
func ceilShift(a int64, n int) int64 { return -((-a) >> n) }

func (d *decoder) take(n uint64) error {
	if n > uint64(d.budget) {
		return &LimitError{"code-block and precinct count", int64(min(n, math.MaxInt32)), int64(d.lim.MaxCodeBlocks)}
	}
	d.budget -= int(n)
	return nil
}

func (d *decoder) decodeTile(t *tile) error {
	s := &d.siz
	p, q := uint64(t.idx%s.ntx), uint64(t.idx/s.ntx)
	t.x0 = uint32(max(uint64(s.tx0)+p*uint64(s.tw), uint64(s.x0)))
	t.y0 = uint32(max(uint64(s.ty0)+q*uint64(s.th), uint64(s.y0)))
	t.x1 = uint32(min(uint64(s.tx0)+(p+1)*uint64(s.tw), uint64(s.x1)))
	t.y1 = uint32(min(uint64(s.ty0)+(q+1)*uint64(s.th), uint64(s.y1)))
	tcs := make([]*tileComp, len(s.comps))
	for c := range tcs {
		tc, err := d.setupTileComp(t, c)
		if err != nil {
			return err
		}
		tcs[c] = tc
	}
	d.readPackets(t, tcs)
	for _, tc := range tcs {
		decodeBlocks(tc)
		inverseDWT(tc)
	}
	return d.storeTile(t, tcs)
}

func (d *decoder) setupTileComp(t *tile, c int) (*tileComp, error) {
	sc := d.siz.comps[c]
	cp := &t.p.comps[c]
	if len(cp.steps) == 0 {
		return nil, FormatError("component without quantisation")
	}
	tc := &tileComp{p: cp, prec: sc.prec}
	tc.x0, tc.y0 = ceilDiv(t.x0, sc.dx), ceilDiv(t.y0, sc.dy)
	tc.x1, tc.y1 = ceilDiv(t.x1, sc.dx), ceilDiv(t.y1, sc.dy)
	nl := cp.levels
	for r := 0; r <= nl; r++ {
		res := &resolution{}
		res.x0, res.y0 = ceilDivPow2(tc.x0, nl-r), ceilDivPow2(tc.y0, nl-r)
		res.x1, res.y1 = ceilDivPow2(tc.x1, nl-r), ceilDivPow2(tc.y1, nl-r)
		res.ppx, res.ppy = int(cp.precincts[r]&15), int(cp.precincts[r]>>4)
		res.pxs, res.pys = res.x0>>res.ppx, res.y0>>res.ppy
		if res.x1 > res.x0 && res.y1 > res.y0 {
			res.npw = int(ceilDivPow2(res.x1, res.ppx) - res.pxs)
			res.nph = int(ceilDivPow2(res.y1, res.ppy) - res.pys)
		}
		if err := d.take(uint64(res.npw) * uint64(res.nph)); err != nil {
			return nil, err
		}
		kinds := []int{1, 2, 3}
		nb := nl - r + 1
		cbw, cbh := min(cp.cbw, res.ppx-1), min(cp.cbh, res.ppy-1)
		if r == 0 {
			kinds, nb = []int{0}, nl
			cbw, cbh = min(cp.cbw, res.ppx), min(cp.cbh, res.ppy)
		}
		for _, k := range kinds {
			b := &band{kind: k, cbw: cbw, cbh: cbh}
			xob, yob := int64(k&1), int64(k>>1)
			if nb == 0 {
				b.x0, b.y0, b.x1, b.y1 = tc.x0, tc.y0, tc.x1, tc.y1
			} else {
				b.x0 = uint32(ceilShift(int64(tc.x0)-xob<<(nb-1), nb))
				b.y0 = uint32(ceilShift(int64(tc.y0)-yob<<(nb-1), nb))
				b.x1 = uint32(ceilShift(int64(tc.x1)-xob<<(nb-1), nb))
				b.y1 = uint32(ceilShift(int64(tc.y1)-yob<<(nb-1), nb))
			}
			bi := 0
			if r > 0 {
				bi = 3*(r-1) + k
			}
			exp, mant := cp.step(bi, nb)
			if exp < 0 {
				return nil, FormatError(fmt.Sprintf("no quantisation step for sub-band %d", bi))
			}
			b.mb = cp.guard + exp - 1
			if b.mb > 30 {
				return nil, UnsupportedError(fmt.Sprintf("%d magnitude bit-planes", b.mb))
			}
			gain := [4]int{0, 1, 1, 2}[k]
			b.step = float32(math.Ldexp(1+float64(mant)/2048, sc.prec+gain-exp))
			res.bands = append(res.bands, b)
		}
		if r > 0 {
			if err := placeBands(res, tc.res[r-1], tc.w()); err != nil {
				return nil, err
			}
		}
		res.precincts = make([]*precinct, res.npw*res.nph)
		for i := range res.precincts {
			px, py := res.pxs+uint32(i%res.npw), res.pys+uint32(i/res.npw)
			pr := &precinct{bands: make([]precBand, len(res.bands))}
			for bi, b := range res.bands {
				sx, sy := res.ppx, res.ppy
				if r > 0 {
					sx, sy = sx-1, sy-1
				}
				x0, y0 := max(uint64(px)<<sx, uint64(b.x0)), max(uint64(py)<<sy, uint64(b.y0))
				x1, y1 := min(uint64(px+1)<<sx, uint64(b.x1)), min(uint64(py+1)<<sy, uint64(b.y1))
				if x1 <= x0 || y1 <= y0 {
					continue
				}
				cx0, cy0 := x0>>b.cbw, y0>>b.cbh
				cx1, cy1 := (x1+(1<<b.cbw)-1)>>b.cbw, (y1+(1<<b.cbh)-1)>>b.cbh
				pb := &pr.bands[bi]
				pb.cw, pb.ch = int(cx1-cx0), int(cy1-cy0)
				if err := d.take(uint64(pb.cw) * uint64(pb.ch)); err != nil {
					return nil, err
				}
				pb.cbs = make([]codeBlock, pb.cw*pb.ch)
				for j := range pb.cbs {
					cb := &pb.cbs[j]
					cx, cy := cx0+uint64(j%pb.cw), cy0+uint64(j/pb.cw)
					cb.x0, cb.y0 = uint32(max(cx<<b.cbw, x0)), uint32(max(cy<<b.cbh, y0))
					cb.x1, cb.y1 = uint32(min((cx+1)<<b.cbw, x1)), uint32(min((cy+1)<<b.cbh, y1))
				}
				pb.incl, pb.zbp = newTagTree(pb.cw, pb.ch), newTagTree(pb.cw, pb.ch)
			}
			res.precincts[i] = pr
		}
		tc.res = append(tc.res, res)
	}
	return tc, nil
}

// placeBands sets where res's sub-bands are in the tile-component's
// buffer, of row length stride: beside and below prev, the resolution
// below, whose samples are res's low-pass ones. The sizes add up for any
// origin (B.5); placeBands checks it, as the in-place inverse DWT relies
// on it.
func placeBands(res, prev *resolution, stride int) error {
	pw, ph := prev.w(), prev.h()
	hl, lh, hh := res.bands[0], res.bands[1], res.bands[2]
	if pw+hl.w() != res.w() || ph+lh.h() != res.h() || hl.h() != ph || lh.w() != pw || hh.w() != hl.w() || hh.h() != lh.h() {
		return FormatError("sub-bands that do not tile their resolution")
	}
	hl.off, lh.off, hh.off = pw, ph*stride, ph*stride+pw
	return nil
}

// packetRef names one precinct's packets, with its position on the
// reference grid for the position-driven progressions.
type packetRef struct {
	c, r, p int
	x, y    uint64
}

// readPackets reads the tile's packets in its progression order (B.12),
// or the progressions of its POC markers, into the code-blocks, stopping
// where the data ends.
func (d *decoder) readPackets(t *tile, tcs []*tileComp) {
	pr := &packetReader{data: t.data, sop: t.p.cs.sop, eph: t.p.cs.eph, packed: t.packed, hdr: t.headers}
	if d.trace != nil {
		pr.trace = func(hs, he, bs, be int) { d.trace(t.idx, hs, he, bs, be) }
	}
	layers := t.p.cs.layers
	maxRes := 0
	for _, tc := range tcs {
		maxRes = max(maxRes, len(tc.res))
	}
	// next[c][r][p] is the next layer of each precinct: a POC progression
	// reads only packets no earlier one read.
	next := make([][][]int, len(tcs))
	for c, tc := range tcs {
		next[c] = make([][]int, len(tc.res))
		for r, res := range tc.res {
			next[c][r] = make([]int, len(res.precincts))
		}
	}
	// visits bounds the packets a hostile POC makes the loops pass over
	// without reading (each read takes a byte of data at least).
	visits := 0
	packet := func(c, r, p, l int) bool {
		tc := tcs[c]
		if r >= len(tc.res) || p >= len(tc.res[r].precincts) || next[c][r][p] != l {
			visits++
			return visits < 1<<24
		}
		next[c][r][p]++
		return pr.read(tc, tc.res[r], tc.res[r].precincts[p], l)
	}
	var refs []packetRef
	for c, tc := range tcs {
		sc := d.siz.comps[c]
		nl := len(tc.res) - 1
		for r, res := range tc.res {
			for p := range res.precincts {
				px, py := uint64(res.pxs)+uint64(p%res.npw), uint64(res.pys)+uint64(p/res.npw)
				x := max(uint64(t.x0), px<<(res.ppx+nl-r)*uint64(sc.dx))
				y := max(uint64(t.y0), py<<(res.ppy+nl-r)*uint64(sc.dy))
				refs = append(refs, packetRef{c, r, p, x, y})
			}
		}
	}
	// progression reads layers [0, l1), resolutions [r0, r1), components
	// [c0, c1) in order prog; false when the data has ended.
	progression := func(prog, l1, r0, r1, c0, c1 int) bool {
		l1, r1, c1 = min(l1, layers), min(r1, maxRes), min(c1, len(tcs))
		switch prog {
		case progLRCP, progRLCP:
			// one reads layer l of resolution r, each component, each precinct.
			one := func(l, r int) bool {
				for c := c0; c < c1; c++ {
					if r >= len(tcs[c].res) {
						continue
					}
					for p := range tcs[c].res[r].precincts {
						if !packet(c, r, p, l) {
							return false
						}
					}
				}
				return true
			}
			if prog == progLRCP {
				for l := range l1 {
					for r := r0; r < r1; r++ {
						if !one(l, r) {
							return false
						}
					}
				}
				return true
			}
			for r := r0; r < r1; r++ {
				for l := range l1 {
					if !one(l, r) {
						return false
					}
				}
			}
			return true
		}
		sorted := slices.Clone(refs)
		slices.SortStableFunc(sorted, func(a, b packetRef) int {
			switch prog {
			case progRPCL:
				return cmp.Or(cmp.Compare(a.r, b.r), cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x), cmp.Compare(a.c, b.c))
			case progPCRL:
				return cmp.Or(cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x), cmp.Compare(a.c, b.c), cmp.Compare(a.r, b.r))
			}
			return cmp.Or(cmp.Compare(a.c, b.c), cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x), cmp.Compare(a.r, b.r))
		})
		for _, ref := range sorted {
			if ref.r < r0 || ref.r >= r1 || ref.c < c0 || ref.c >= c1 {
				continue
			}
			for l := range l1 {
				if !packet(ref.c, ref.r, ref.p, l) {
					return false
				}
			}
		}
		return true
	}
	if len(t.p.poc) == 0 {
		progression(t.p.cs.prog, layers, 0, maxRes, 0, len(tcs))
		return
	}
	for _, e := range t.p.poc {
		if !progression(e.prog, e.l1, e.r0, e.r1, e.c0, e.c1) {
			return
		}
	}
}

type packetReader struct {
	data     []byte
	pos      int
	sop, eph bool
	// packed: the headers are hdr (from PPM or PPT), read from hpos.
	packed bool
	hdr    []byte
	hpos   int
	trace  func(hdrStart, hdrEnd, bodyStart, bodyEnd int)
}

// read reads one packet; false means the data has ended.
func (pr *packetReader) read(tc *tileComp, res *resolution, prec *precinct, layer int) bool {
	if pr.packed && pr.hpos >= len(pr.hdr) || !pr.packed && pr.pos >= len(pr.data) {
		return false
	}
	if pr.sop && pr.pos+6 <= len(pr.data) && pr.data[pr.pos] == 0xff && pr.data[pr.pos+1] == 0x91 {
		pr.pos += 6
	}
	// hb is where the header is read: the data, or the packed headers.
	hb, hpos := pr.data, &pr.pos
	if pr.packed {
		hb, hpos = pr.hdr, &pr.hpos
	}
	hstart := *hpos
	br := &bitReader{b: hb, pos: *hpos}
	cbStyle := tc.p.cbStyle
	var included []*codeBlock
	if br.bit() == 1 {
		for bi := range prec.bands {
			pb := &prec.bands[bi]
			b := res.bands[bi]
			for i := range pb.cbs {
				cb := &pb.cbs[i]
				var inc bool
				if !cb.included {
					inc = pb.incl.decode(br, i, int32(layer+1))
				} else {
					inc = br.bit() == 1
				}
				if br.truncated {
					return false
				}
				if !inc {
					continue
				}
				if !cb.included {
					th := int32(1)
					for !pb.zbp.decode(br, i, th) {
						th++
						if br.truncated || th > 64 {
							return false
						}
					}
					cb.numbps = b.mb - int(th-1)
					cb.lblock = 3
					cb.included = true
				}
				n := readPassCount(br)
				for br.bit() == 1 && !br.truncated {
					cb.lblock++
				}
				if br.truncated || cb.lblock > 32 {
					return false
				}
				cb.pending = cb.pending[:0]
				for n > 0 {
					if len(cb.segs) == 0 || cb.segs[len(cb.segs)-1].passes+pendingPasses(cb) >= cb.segs[len(cb.segs)-1].max {
						cb.segs = append(cb.segs, segment{max: maxPasses(cbStyle, cb.segs)})
					}
					si := len(cb.segs) - 1
					seg := &cb.segs[si]
					k := min(n, seg.max-seg.passes-pendingPasses(cb))
					length := br.bits(cb.lblock + floorLog2(k))
					cb.pending = append(cb.pending, pendingSeg{si, k, length})
					n -= k
				}
				if br.truncated {
					return false
				}
				included = append(included, cb)
			}
		}
	}
	br.align()
	*hpos = br.pos
	if pr.eph && *hpos+2 <= len(hb) && hb[*hpos] == 0xff && hb[*hpos+1] == 0x92 {
		*hpos += 2
	}
	if pr.trace != nil {
		n := 0
		for _, cb := range included {
			for _, ps := range cb.pending {
				n += ps.len
			}
		}
		pr.trace(hstart, *hpos, pr.pos, min(pr.pos+n, len(pr.data)))
	}
	for _, cb := range included {
		for _, ps := range cb.pending {
			n := min(ps.len, len(pr.data)-pr.pos)
			cb.data = append(cb.data, pr.data[pr.pos:pr.pos+n]...)
			pr.pos += n
			cb.segs[ps.seg].len += n
			cb.segs[ps.seg].passes += ps.passes
			cb.passes += ps.passes
			if n < ps.len {
				return false
			}
		}
		cb.pending = cb.pending[:0]
	}
	return true
}

// pendingPasses counts the passes already assigned in this packet to the
// code-block's last segment.
func pendingPasses(cb *codeBlock) int {
	n := 0
	for _, p := range cb.pending {
		if p.seg == len(cb.segs)-1 {
			n += p.passes
		}
	}
	return n
}

func maxPasses(style byte, segs []segment) int {
	switch {
	case style&cbTermAll != 0:
		return 1
	case style&cbBypass != 0:
		if len(segs) == 0 {
			return 10
		}
		if m := segs[len(segs)-1].max; m == 1 || m == 10 {
			return 2
		}
		return 1
	}
	return 1 << 20
}

func floorLog2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// readPassCount reads the number of coding passes (Table B.4).
func readPassCount(br *bitReader) int {
	if br.bit() == 0 {
		return 1
	}
	if br.bit() == 0 {
		return 2
	}
	if v := br.bits(2); v < 3 {
		return 3 + v
	}
	if v := br.bits(5); v < 31 {
		return 6 + v
	}
	return 37 + br.bits(7)
}
