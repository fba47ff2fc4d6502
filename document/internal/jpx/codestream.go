package jpx

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Markers (ISO/IEC 15444-1 Annex A).
const (
	mSOC = 0xFF4F
	mSIZ = 0xFF51
	mCOD = 0xFF52
	mCOC = 0xFF53
	mTLM = 0xFF55
	mPLM = 0xFF57
	mPLT = 0xFF58
	mQCD = 0xFF5C
	mQCC = 0xFF5D
	mRGN = 0xFF5E
	mPOC = 0xFF5F
	mPPM = 0xFF60
	mPPT = 0xFF61
	mCRG = 0xFF63
	mCOM = 0xFF64
	mSOT = 0xFF90
	mSOP = 0xFF91
	mEPH = 0xFF92
	mSOD = 0xFF93
	mEOC = 0xFFD9
)

// Progression orders.
const (
	progLRCP = iota
	progRLCP
	progRPCL
	progPCRL
	progCPRL
)

// Code-block style flags.
const (
	cbBypass  = 0x01
	cbReset   = 0x02
	cbTermAll = 0x04
	cbCausal  = 0x08
	cbPredict = 0x10
	cbSegSym  = 0x20
)

type sizComp struct {
	prec   int
	signed bool
	dx, dy uint32
}

// siz is the image and tile geometry of the SIZ marker segment.
type siz struct {
	x1, y1, x0, y0   uint32
	tw, th, tx0, ty0 uint32
	comps            []sizComp
	ntx, nty         int
}

func (s *siz) parseMain(cs []byte) error {
	if len(cs) < 6 || binary.BigEndian.Uint16(cs) != mSOC || binary.BigEndian.Uint16(cs[2:]) != mSIZ {
		return FormatError("the codestream does not start with SOC and SIZ")
	}
	n := int(binary.BigEndian.Uint16(cs[4:]))
	if n < 41 || len(cs) < 4+n {
		return FormatError("short SIZ marker segment")
	}
	return s.parse(cs[6 : 4+n])
}

func (s *siz) parse(b []byte) error {
	u := func(i int) uint32 { return binary.BigEndian.Uint32(b[i:]) }
	s.x1, s.y1, s.x0, s.y0 = u(2), u(6), u(10), u(14)
	s.tw, s.th, s.tx0, s.ty0 = u(18), u(22), u(26), u(30)
	nc := int(binary.BigEndian.Uint16(b[34:]))
	if nc < 1 || len(b) < 36+3*nc {
		return FormatError(fmt.Sprintf("SIZ of %d components in %d bytes", nc, len(b)))
	}
	if s.x1 <= s.x0 || s.y1 <= s.y0 || s.tw == 0 || s.th == 0 || s.tx0 > s.x0 || s.ty0 > s.y0 ||
		uint64(s.tx0)+uint64(s.tw) <= uint64(s.x0) || uint64(s.ty0)+uint64(s.th) <= uint64(s.y0) || s.x1 > 1<<30 || s.y1 > 1<<30 {
		return FormatError(fmt.Sprintf("image area %d,%d-%d,%d with tiles %dx%d at %d,%d", s.x0, s.y0, s.x1, s.y1, s.tw, s.th, s.tx0, s.ty0))
	}
	s.comps = make([]sizComp, nc)
	for i := range s.comps {
		c := &s.comps[i]
		ss := b[36+3*i]
		c.prec, c.signed = int(ss&0x7f)+1, ss&0x80 != 0
		c.dx, c.dy = uint32(b[37+3*i]), uint32(b[38+3*i])
		if c.prec > 16 {
			return UnsupportedError(fmt.Sprintf("components of %d bits", c.prec))
		}
		if c.dx == 0 || c.dy == 0 {
			return FormatError("component subsampling of 0")
		}
	}
	s.ntx = int(ceilDiv(s.x1-s.tx0, s.tw))
	s.nty = int(ceilDiv(s.y1-s.ty0, s.th))
	return nil
}

func ceilDiv(a, b uint32) uint32 { return uint32((uint64(a) + uint64(b) - 1) / uint64(b)) }

func ceilDivPow2(a uint32, n int) uint32 { return uint32((uint64(a) + (1 << n) - 1) >> n) }

// compParams are the coding and quantisation parameters of one component
// (COD/COC and QCD/QCC).
type compParams struct {
	levels     int
	cbw, cbh   int // exponents
	cbStyle    byte
	reversible bool
	precincts  []byte // per resolution: PPx | PPy<<4
	qStyle     int    // 0 none, 1 scalar derived, 2 scalar expounded
	guard      int
	steps      []uint16 // exponent<<11 | mantissa per sub-band
	fromCOC    bool
	fromQCC    bool
	roiShift   int // RGN: a region of interest's coefficients are shifted up by this
}

// codingStyle is the COD segment's tile-wide part.
type codingStyle struct {
	sop, eph bool
	prog     int
	layers   int
	mct      bool
}

type params struct {
	cs    codingStyle
	comps []compParams
	// poc: progression order changes; tilePOC says the tile's own POC
	// replaced the main header's.
	poc     []pocEntry
	tilePOC bool
}

// pocEntry is one progression of a POC marker: layers [0, l1),
// resolutions [r0, r1), components [c0, c1) in order prog.
type pocEntry struct {
	r0, c0, l1, r1, c1, prog int
}

func (p *params) parsePOC(b []byte, main bool) error {
	cw := 1
	if len(p.comps) >= 257 {
		cw = 2
	}
	n := 5 + 2*cw
	if len(b) < n {
		return FormatError("short POC")
	}
	comp := func(b []byte) int {
		if cw == 2 {
			return int(binary.BigEndian.Uint16(b))
		}
		return int(b[0])
	}
	if !main && !p.tilePOC {
		p.poc, p.tilePOC = nil, true
	}
	for ; len(b) >= n; b = b[n:] {
		e := pocEntry{r0: int(b[0]), c0: comp(b[1:])}
		e.l1 = int(binary.BigEndian.Uint16(b[1+cw:]))
		e.r1 = int(b[3+cw])
		e.c1 = comp(b[4+cw:])
		if e.c1 == 0 {
			e.c1 = 256 // CEpoc 0 stands for 256
		}
		e.prog = int(b[4+2*cw])
		if e.prog > progCPRL {
			return FormatError(fmt.Sprintf("POC progression order %d", e.prog))
		}
		if len(p.poc) > 1024 {
			return FormatError("more than 1024 progression order changes")
		}
		p.poc = append(p.poc, e)
	}
	return nil
}

func (p *params) clone() *params {
	q := &params{cs: p.cs, comps: make([]compParams, len(p.comps)), poc: slices.Clone(p.poc)}
	copy(q.comps, p.comps)
	for i := range q.comps {
		q.comps[i].fromCOC, q.comps[i].fromQCC = false, false
	}
	return q
}

func parseSPcod(b []byte, precFlag bool, c *compParams) error {
	if len(b) < 5 {
		return FormatError("short coding style")
	}
	c.levels = int(b[0])
	c.cbw, c.cbh = int(b[1]&0x0f)+2, int(b[2]&0x0f)+2
	c.cbStyle = b[3]
	c.reversible = b[4] == 1
	if c.levels > 32 || c.cbw > 10 || c.cbh > 10 || c.cbw+c.cbh > 12 {
		return FormatError(fmt.Sprintf("%d decomposition levels, code-blocks 2^%d x 2^%d", c.levels, c.cbw, c.cbh))
	}
	if b[4] > 1 {
		return UnsupportedError("Part 2 wavelet")
	}
	if c.cbStyle&0xC0 != 0 {
		return UnsupportedError("Part 2 / HT code-block style")
	}
	c.precincts = make([]byte, c.levels+1)
	for i := range c.precincts {
		c.precincts[i] = 0xff
		if precFlag {
			if len(b) < 6+i {
				return FormatError("short precinct sizes")
			}
			c.precincts[i] = b[5+i]
			if i > 0 && (b[5+i]&0x0f == 0 || b[5+i]>>4 == 0) {
				return FormatError("precinct of size 1 above resolution 0")
			}
		}
	}
	return nil
}

func parseQuant(b []byte, c *compParams) error {
	if len(b) < 1 {
		return FormatError("short quantisation")
	}
	c.qStyle, c.guard = int(b[0]&0x1f), int(b[0]>>5)
	b = b[1:]
	c.steps = nil
	switch c.qStyle {
	case 0:
		for _, v := range b {
			c.steps = append(c.steps, uint16(v>>3)<<11)
		}
	case 1, 2:
		for i := 0; i+1 < len(b); i += 2 {
			c.steps = append(c.steps, binary.BigEndian.Uint16(b[i:]))
		}
	default:
		return FormatError(fmt.Sprintf("quantisation style %d", c.qStyle))
	}
	if len(c.steps) == 0 {
		return FormatError("no quantisation step sizes")
	}
	return nil
}

// step returns the exponent and mantissa of sub-band band (0 the LL, then
// 3 per level from the coarsest) at decomposition level nb.
func (c *compParams) step(band, nb int) (exp, mant int) {
	if c.qStyle == 1 {
		v := c.steps[0]
		e := int(v>>11) - c.levels + nb
		if band == 0 {
			e = int(v >> 11)
		}
		return e, int(v & 0x7ff)
	}
	if band >= len(c.steps) {
		return -1, 0
	}
	v := c.steps[band]
	return int(v >> 11), int(v & 0x7ff)
}

// applyMarker reads a COD, COC, QCD or QCC marker segment into p. A COC
// (QCC) outranks a COD (QCD) of the same header; a tile's params start as
// the main header's with none of them from a COC or QCC (clone), so that a
// tile's COD outranks the main header's COC (A.6.1).
func (p *params) applyMarker(m uint16, b []byte) error {
	nc := len(p.comps)
	compIndex := func() (int, []byte, error) {
		if nc < 257 {
			if len(b) < 1 {
				return 0, nil, FormatError("short marker segment")
			}
			return int(b[0]), b[1:], nil
		}
		if len(b) < 2 {
			return 0, nil, FormatError("short marker segment")
		}
		return int(binary.BigEndian.Uint16(b)), b[2:], nil
	}
	switch m {
	case mCOD:
		if len(b) < 5 {
			return FormatError("short COD")
		}
		scod := b[0]
		p.cs = codingStyle{sop: scod&2 != 0, eph: scod&4 != 0, prog: int(b[1]), layers: int(binary.BigEndian.Uint16(b[2:])), mct: b[4] != 0}
		if p.cs.prog > progCPRL || p.cs.layers == 0 {
			return FormatError(fmt.Sprintf("progression order %d, %d layers", p.cs.prog, p.cs.layers))
		}
		for i := range p.comps {
			if p.comps[i].fromCOC {
				continue
			}
			if err := parseSPcod(b[5:], scod&1 != 0, &p.comps[i]); err != nil {
				return err
			}
		}
	case mCOC:
		c, rest, err := compIndex()
		if err != nil {
			return err
		}
		if c >= nc || len(rest) < 1 {
			return FormatError(fmt.Sprintf("COC for component %d of %d", c, nc))
		}
		if err := parseSPcod(rest[1:], rest[0]&1 != 0, &p.comps[c]); err != nil {
			return err
		}
		p.comps[c].fromCOC = true
	case mQCD:
		for i := range p.comps {
			if p.comps[i].fromQCC {
				continue
			}
			if err := parseQuant(b, &p.comps[i]); err != nil {
				return err
			}
		}
	case mQCC:
		c, rest, err := compIndex()
		if err != nil {
			return err
		}
		if c >= nc {
			return FormatError(fmt.Sprintf("QCC for component %d of %d", c, nc))
		}
		if err := parseQuant(rest, &p.comps[c]); err != nil {
			return err
		}
		p.comps[c].fromQCC = true
	}
	return nil
}
