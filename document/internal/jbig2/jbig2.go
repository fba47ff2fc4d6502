// Package jbig2 decodes JBIG2 (ITU-T T.88) bi-level images as PDF embeds
// them (the JBIG2Decode filter): the embedded stream organisation, without
// a file header, one page, with an optional stream of global segments
// (DecodeParms /JBIG2Globals) read before the page's.
//
// What it decodes: page information, end of stripe (striped pages of
// unknown height included), end of page and end of file; immediate generic
// regions, arithmetic (MQ coder, templates 0–3 with their adaptive pixels,
// TPGDON) or MMR (T.6, through golang.org/x/image/ccitt); symbol
// dictionaries and the immediate text regions drawn with them, arithmetic
// (symbols refined, aggregated or neither) or Huffman-coded (standard
// tables B.1–B.13 and code table segments; collective bitmaps
// uncompressed or MMR); immediate generic refinement regions over the page
// (TPGRON included); pattern dictionaries and immediate halftone regions
// (arithmetic gray-scale images, skipped cells included). Regions combine
// onto the page with OR, AND, XOR, XNOR or REPLACE.
//
// What it does not: Huffman coding with refinement or aggregation, a
// dictionary reusing another's coding contexts, MMR-coded gray-scale
// images of halftones, intermediate regions and their refinement, the
// extended generic template: those fail with an *UnsupportedError
// (errors.Is ErrUnsupported) naming the segment type. Profiles, colour
// palettes and extension segments are skipped.
//
// Limits: the page, each region and each symbol stay within
// Limits.MaxPixels; the pixels decoded over all regions and symbols within
// Limits.MaxWork; the segments within Limits.MaxSegments, the symbols of
// all dictionaries and the symbol instances of a text region within
// Limits.MaxSymbols. Decoding is linear in the pixels decoded, so hostile
// input costs at most Limits.MaxWork pixel steps.
package jbig2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
)

var (
	// ErrUnsupported is a segment or coding option this package does not
	// decode (see *UnsupportedError).
	ErrUnsupported = errors.New("jbig2: not supported")
	// ErrMalformed is data that is not valid JBIG2.
	ErrMalformed = errors.New("jbig2: malformed data")
	// ErrLimit is an image, segment count or amount of work beyond Limits.
	ErrLimit = errors.New("jbig2: beyond the decoding limits")
)

// UnsupportedError names the segment type (T.88 7.3) or coding option
// that is not decoded.
type UnsupportedError struct {
	Segment uint32 // segment number
	Type    int    // segment type
	What    string // what of it is not decoded
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("jbig2: segment %d (%s, type %d): %s is not supported", e.Segment, segmentName(e.Type), e.Type, e.What)
}

// Is makes an *UnsupportedError match ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Limits bound the decoding; zero fields take the defaults.
type Limits struct {
	// MaxPixels bounds the page, each region and each symbol (default
	// 40 million: a 600 dpi A3 scan is 35).
	MaxPixels int64
	// MaxWork bounds the pixels decoded and drawn over all regions and
	// symbols (default 4 × MaxPixels).
	MaxWork int64
	// MaxSegments bounds the segments of the globals and the page
	// together (default 100 000).
	MaxSegments int
	// MaxSymbols bounds the symbols of all dictionaries, and the symbol
	// instances of one text region (default 1 000 000).
	MaxSymbols int
}

func (l Limits) withDefaults() Limits {
	if l.MaxPixels <= 0 {
		l.MaxPixels = 40_000_000
	}
	if l.MaxWork <= 0 {
		l.MaxWork = 4 * l.MaxPixels
	}
	if l.MaxSegments <= 0 {
		l.MaxSegments = 100_000
	}
	if l.MaxSymbols <= 0 {
		l.MaxSymbols = 1_000_000
	}
	return l
}

// Segment types of T.88 7.3.
const (
	tSymbolDict          = 0
	tIntermediateText    = 4
	tImmediateText       = 6
	tImmediateLLText     = 7
	tPatternDict         = 16
	tIntermediateHalf    = 20
	tImmediateHalf       = 22
	tImmediateLLHalf     = 23
	tIntermediateGeneric = 36
	tImmediateGeneric    = 38
	tImmediateLLGeneric  = 39
	tIntermediateRefine  = 40
	tImmediateRefine     = 42
	tImmediateLLRefine   = 43
	tPageInfo            = 48
	tEndOfPage           = 49
	tEndOfStripe         = 50
	tEndOfFile           = 51
	tProfiles            = 52
	tTables              = 53
	tColourPalette       = 54
	tExtension           = 62
)

func segmentName(t int) string {
	switch t {
	case tSymbolDict:
		return "symbol dictionary"
	case tIntermediateText:
		return "intermediate text region"
	case tImmediateText, tImmediateLLText:
		return "immediate text region"
	case tPatternDict:
		return "pattern dictionary"
	case tIntermediateHalf:
		return "intermediate halftone region"
	case tImmediateHalf, tImmediateLLHalf:
		return "immediate halftone region"
	case tIntermediateGeneric:
		return "intermediate generic region"
	case tImmediateGeneric, tImmediateLLGeneric:
		return "immediate generic region"
	case tIntermediateRefine:
		return "intermediate generic refinement region"
	case tImmediateRefine, tImmediateLLRefine:
		return "immediate generic refinement region"
	case tPageInfo:
		return "page information"
	case tEndOfPage:
		return "end of page"
	case tEndOfStripe:
		return "end of stripe"
	case tEndOfFile:
		return "end of file"
	case tProfiles:
		return "profiles"
	case tTables:
		return "tables"
	case tColourPalette:
		return "colour palette"
	case tExtension:
		return "extension"
	}
	return "unknown segment type"
}

// segment is a parsed segment header (T.88 7.2) and its data.
type segment struct {
	number   uint32
	typ      int
	page     uint32
	referred []uint32
	data     []byte
	// unknownLength: an immediate generic region whose data length field
	// is 0xffffffff; data runs to the end of the stream, the region finds
	// its own end.
	unknownLength bool
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// parseHeader reads one segment header at b[off:], returning the segment
// (its data not yet sliced) and the offset of its data.
func parseHeader(b []byte, off int) (segment, int, error) {
	var s segment
	need := func(n int) error {
		if len(b)-off < n {
			return malformed("segment header at byte %d ends early", off)
		}
		return nil
	}
	if err := need(6); err != nil {
		return s, 0, err
	}
	s.number = binary.BigEndian.Uint32(b[off:])
	flags := b[off+4]
	s.typ = int(flags & 0x3F)
	pageSize4 := flags&0x40 != 0
	off += 5
	count := int(b[off] >> 5)
	switch count {
	case 5, 6:
		return s, 0, malformed("segment %d: referred-to segment count %d", s.number, count)
	case 7:
		if err := need(4); err != nil {
			return s, 0, err
		}
		n := binary.BigEndian.Uint32(b[off:]) & 0x1FFFFFFF
		if int64(n) > int64(len(b)) {
			return s, 0, malformed("segment %d refers to %d segments", s.number, n)
		}
		count = int(n)
		off += 4 + (count+8)/8 // retention bits: one per referred segment and one for this
	default:
		off++
	}
	refSize := 1
	switch {
	case s.number > 65536:
		refSize = 4
	case s.number > 256:
		refSize = 2
	}
	if err := need(count * refSize); err != nil {
		return s, 0, err
	}
	s.referred = make([]uint32, count)
	for i := range count {
		switch refSize {
		case 1:
			s.referred[i] = uint32(b[off])
		case 2:
			s.referred[i] = uint32(binary.BigEndian.Uint16(b[off:]))
		default:
			s.referred[i] = binary.BigEndian.Uint32(b[off:])
		}
		off += refSize
	}
	if pageSize4 {
		if err := need(4); err != nil {
			return s, 0, err
		}
		s.page = binary.BigEndian.Uint32(b[off:])
		off += 4
	} else {
		if err := need(1); err != nil {
			return s, 0, err
		}
		s.page = uint32(b[off])
		off++
	}
	if err := need(4); err != nil {
		return s, 0, err
	}
	n := binary.BigEndian.Uint32(b[off:])
	off += 4
	if n == 0xFFFFFFFF {
		if s.typ != tImmediateGeneric && s.typ != tImmediateLLGeneric {
			return s, 0, malformed("segment %d (%s) of unknown length", s.number, segmentName(s.typ))
		}
		s.unknownLength = true
		s.data = b[off:]
		return s, off, nil
	}
	if int64(n) > int64(len(b)-off) {
		return s, 0, malformed("segment %d (%s) has %d bytes of data, the stream %d", s.number, segmentName(s.typ), n, len(b)-off)
	}
	s.data = b[off : off+int(n)]
	return s, off, nil
}

// decoder holds the state of one decoding: the segments decoded so far
// (symbol dictionaries' symbols by segment number) and the page.
type decoder struct {
	lim      Limits
	work     int64
	symbols  map[uint32][]*bitmap
	patterns map[uint32][]*bitmap
	tables   map[uint32]*huffTable
	nsyms    int
	page     *page
}

// page is the page bitmap being composed.
type page struct {
	bm       *bitmap
	unknownH bool // striped, height 0xffffffff: grows with the stripes
	defPixel byte
	done     bool
}

// Decode decodes the page of an embedded JBIG2 stream (PDF's JBIG2Decode
// filter), after the global segments of globals (nil for none). The
// picture is black (0x00) and white (0xFF) as JBIG2's 1 and 0 pixels.
func Decode(data, globals []byte, lim Limits) (*image.Gray, error) {
	d := &decoder{lim: lim.withDefaults(), symbols: map[uint32][]*bitmap{}, patterns: map[uint32][]*bitmap{}, tables: map[uint32]*huffTable{}}
	nseg := 0
	for _, stream := range [][]byte{globals, data} {
		off := 0
		for off < len(stream) && (d.page == nil || !d.page.done) {
			if nseg++; nseg > d.lim.MaxSegments {
				return nil, fmt.Errorf("%w: more than %d segments", ErrLimit, d.lim.MaxSegments)
			}
			if len(stream)-off < 11 && d.page != nil {
				break // a few bytes after the last segment (a line end PDF writers add): no segment header is that short
			}
			s, start, err := parseHeader(stream, off)
			if err != nil {
				return nil, err
			}
			used, err := d.segment(&s)
			if err != nil {
				return nil, err
			}
			if s.unknownLength {
				off = start + used
			} else {
				off = start + len(s.data)
			}
			if s.typ == tEndOfFile {
				break
			}
		}
	}
	if d.page == nil {
		return nil, malformed("no page information segment")
	}
	bm := d.page.bm
	if bm.w == 0 || bm.h == 0 {
		return nil, malformed("an empty page (%d×%d)", bm.w, bm.h)
	}
	for i, p := range bm.pix {
		bm.pix[i] = ^(p * 0xFF) // 1 (black) → 0x00, 0 → 0xFF
	}
	return &image.Gray{Pix: bm.pix, Stride: bm.w, Rect: image.Rect(0, 0, bm.w, bm.h)}, nil
}

// spend counts n pixels of work against Limits.MaxWork.
func (d *decoder) spend(n int64) error {
	d.work += n
	if d.work > d.lim.MaxWork {
		return fmt.Errorf("%w: more than %d pixels decoded", ErrLimit, d.lim.MaxWork)
	}
	return nil
}

// contexts makes n coding contexts, counted as n pixels of work: a
// segment that codes little still clears its contexts.
func (d *decoder) contexts(n int) ([]context, error) {
	if err := d.spend(int64(n)); err != nil {
		return nil, err
	}
	return make([]context, n), nil
}

// newBitmap makes a w×h bitmap within the limits.
func (d *decoder) newBitmap(w, h int64) (*bitmap, error) {
	if w < 0 || h < 0 || w*h > d.lim.MaxPixels || w > 1<<24 || h > 1<<24 {
		return nil, fmt.Errorf("%w: a bitmap of %d×%d pixels (at most %d)", ErrLimit, w, h, d.lim.MaxPixels)
	}
	if err := d.spend(w * h); err != nil {
		return nil, err
	}
	return newBitmap(int(w), int(h)), nil
}

// segment decodes one segment; for a segment of unknown length it
// returns the bytes its data took.
func (d *decoder) segment(s *segment) (int, error) {
	unsupported := func(what string) error {
		return &UnsupportedError{Segment: s.number, Type: s.typ, What: what}
	}
	switch s.typ {
	case tPageInfo:
		if d.page != nil {
			return 0, nil // a second page: PDF embeds one, the first is read
		}
		return 0, d.pageInfo(s)
	case tEndOfPage:
		if d.page != nil {
			d.page.done = true
		}
		return 0, nil
	case tEndOfStripe:
		if d.page == nil {
			return 0, malformed("segment %d: end of stripe before the page information", s.number)
		}
		if len(s.data) < 4 {
			return 0, malformed("segment %d: end of stripe of %d bytes", s.number, len(s.data))
		}
		if d.page.unknownH {
			y := int64(binary.BigEndian.Uint32(s.data)) + 1
			if err := d.growPage(y); err != nil {
				return 0, err
			}
		}
		return 0, nil
	case tTables:
		t, err := customTable(s)
		if err != nil {
			return 0, err
		}
		if d.nsyms += len(t.lines); d.nsyms > d.lim.MaxSymbols {
			return 0, fmt.Errorf("%w: more than %d symbols and Huffman table lines", ErrLimit, d.lim.MaxSymbols)
		}
		d.tables[s.number] = t
		return 0, nil
	case tEndOfFile, tProfiles, tColourPalette, tExtension:
		return 0, nil
	case tImmediateGeneric, tImmediateLLGeneric:
		return d.genericRegion(s)
	case tSymbolDict:
		return 0, d.symbolDict(s)
	case tImmediateText, tImmediateLLText:
		return 0, d.textRegion(s)
	case tImmediateRefine, tImmediateLLRefine:
		return 0, d.refinementRegion(s)
	case tPatternDict:
		return 0, d.patternDict(s)
	case tImmediateHalf, tImmediateLLHalf:
		return 0, d.halftoneRegion(s)
	case tIntermediateText, tIntermediateHalf, tIntermediateGeneric, tIntermediateRefine:
		return 0, unsupported("the segment type")
	}
	return 0, unsupported("an unknown segment type")
}

// pageInfo reads a page information segment (T.88 7.4.8).
func (d *decoder) pageInfo(s *segment) error {
	if len(s.data) < 19 {
		return malformed("segment %d: page information of %d bytes", s.number, len(s.data))
	}
	w := int64(binary.BigEndian.Uint32(s.data))
	h := int64(binary.BigEndian.Uint32(s.data[4:]))
	flags := s.data[16]
	p := &page{defPixel: flags >> 2 & 1}
	if h == 0xFFFFFFFF {
		p.unknownH, h = true, 0
	}
	if w*h > d.lim.MaxPixels || w > 1<<24 || h > 1<<24 {
		return fmt.Errorf("%w: a page of %d×%d pixels (at most %d)", ErrLimit, w, h, d.lim.MaxPixels)
	}
	p.bm = newBitmap(int(w), int(h))
	if p.defPixel != 0 {
		p.bm.fill(1)
	}
	d.page = p
	return nil
}

// growPage makes a striped page of unknown height h rows high.
func (d *decoder) growPage(h int64) error {
	bm := d.page.bm
	if h <= int64(bm.h) {
		return nil
	}
	if int64(bm.w)*h > d.lim.MaxPixels || h > 1<<24 {
		return fmt.Errorf("%w: a page of %d×%d pixels (at most %d)", ErrLimit, bm.w, h, d.lim.MaxPixels)
	}
	old := len(bm.pix)
	bm.pix = append(bm.pix, make([]byte, bm.w*int(h)-old)...)
	if d.page.defPixel != 0 {
		for i := old; i < len(bm.pix); i++ {
			bm.pix[i] = 1
		}
	}
	bm.h = int(h)
	return nil
}

// regionInfo is the region segment information field (T.88 7.4.1).
type regionInfo struct {
	w, h, x, y int64
	op         byte
}

func readRegionInfo(s *segment) (regionInfo, error) {
	if len(s.data) < 17 {
		return regionInfo{}, malformed("segment %d: region information of %d bytes", s.number, len(s.data))
	}
	b := s.data
	r := regionInfo{
		w:  int64(binary.BigEndian.Uint32(b)),
		h:  int64(binary.BigEndian.Uint32(b[4:])),
		x:  int64(binary.BigEndian.Uint32(b[8:])),
		y:  int64(binary.BigEndian.Uint32(b[12:])),
		op: b[16] & 7,
	}
	if r.op > opReplace {
		return r, malformed("segment %d: combination operator %d", s.number, r.op)
	}
	return r, nil
}

// place combines a region's bitmap onto the page.
func (d *decoder) place(s *segment, r regionInfo, bm *bitmap) error {
	if d.page == nil {
		return malformed("segment %d (%s) before the page information", s.number, segmentName(s.typ))
	}
	if d.page.unknownH {
		if err := d.growPage(r.y + int64(bm.h)); err != nil {
			return err
		}
	}
	if err := d.spend(int64(bm.w) * int64(bm.h)); err != nil {
		return err
	}
	d.page.bm.combine(bm, r.x, r.y, r.op)
	return nil
}
