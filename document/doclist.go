package document

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
)

// docNumFormats maps the number formats of a .doc list level ([MS-DOC]
// LVLF.nfc, [MS-OSHARED] 2.2.1.3) to the WordprocessingML names
// formatNumber and listCounters.marker take; the others are numbered in
// decimal, as the .docx reader numbers formats it does not know.
var docNumFormats = map[byte]string{
	0: "decimal", 1: "upperRoman", 2: "lowerRoman", 3: "upperLetter", 4: "lowerLetter",
	23: "bullet", 255: "none",
}

// docLists reads the list definitions of a .doc ([MS-DOC] 2.9.199,
// 2.9.200): the PlfLst (LSTF records, then after them the LVL records of
// each list: 9 levels, or 1 for a simple list) and the PlfLfo, whose list
// format overrides (LFO) paragraphs name by sprmPIlfo, each naming a list
// by lsid and overriding start values or whole levels of it (LFOLVL). It
// returns the levels of each override's list, overrides applied, in
// override order (ilfo 1 first); nil when the file has no lists.
func docLists(table, fcLcb []byte) ([][]numLevel, error) {
	le := binary.LittleEndian
	if len(fcLcb) < 75*8 { // a FIB without fcPlfLst and fcPlfLfo
		return nil, nil
	}
	span := func(i int, name string) ([]byte, int, error) {
		fc, lcb := int64(le.Uint32(fcLcb[i*8:])), int64(le.Uint32(fcLcb[i*8+4:]))
		if fc+lcb > int64(len(table)) {
			return nil, 0, fmt.Errorf("%w: the list table %s (%d bytes at %d) lies outside the table stream of %d bytes; re-save the file in Word or LibreOffice", ErrCorrupt, name, lcb, fc, len(table))
		}
		return table[fc : fc+lcb], int(fc + lcb), nil
	}
	plfLst, lvlAt, err := span(73, "PlfLst")
	if err != nil {
		return nil, err
	}
	plfLfo, _, err := span(74, "PlfLfo")
	if err != nil || len(plfLst) == 0 || len(plfLfo) == 0 {
		return nil, err
	}
	cut := func(what string) error {
		return fmt.Errorf("%w: the list table's %s is cut short; re-save the file in Word or LibreOffice", ErrCorrupt, what)
	}
	if len(plfLst) < 2 {
		return nil, cut("PlfLst")
	}
	const lstf, lfo = 28, 16
	cLst := int(int16(le.Uint16(plfLst)))
	if cLst < 0 || 2+lstf*cLst > len(plfLst) {
		return nil, cut("PlfLst")
	}
	lists := make(map[uint32][]numLevel, cLst)
	p := lvlAt // the LVL records follow the PlfLst, outside lcbPlfLst
	for k := range cLst {
		rec := plfLst[2+lstf*k:]
		levels := make([]numLevel, 9)
		if rec[26]&1 != 0 { // fSimpleList
			levels = levels[:1]
		}
		for l := range levels {
			if levels[l], p, err = docLVL(table, p); err != nil {
				return nil, err
			}
		}
		lists[le.Uint32(rec)] = levels
	}
	if len(plfLfo) < 4 {
		return nil, cut("PlfLfo")
	}
	n := int64(le.Uint32(plfLfo))
	if 4+lfo*n > int64(len(plfLfo)) {
		return nil, cut("PlfLfo")
	}
	out := make([][]numLevel, n)
	q := 4 + lfo*int(n) // rgLfoData: per LFO, a CP and its clfolvl LFOLVL
	for i := range out {
		levels := slices.Clone(lists[le.Uint32(plfLfo[4+lfo*i:])]) // by lsid
		if q += 4; q > len(plfLfo) {
			return nil, cut("LFOData")
		}
		for range plfLfo[4+lfo*i+12] { // clfolvl
			if q+8 > len(plfLfo) {
				return nil, cut("LFOLVL")
			}
			start, flags := int(int32(le.Uint32(plfLfo[q:]))), le.Uint32(plfLfo[q+4:])
			q += 8
			l := int(flags & 0x0F) // iLvl
			over := l < len(levels)
			if flags&0x20 != 0 { // fFormatting: a whole level follows
				var lv numLevel
				if lv, q, err = docLVL(plfLfo, q); err != nil {
					return nil, err
				}
				if over {
					levels[l] = lv
				}
			}
			if flags&0x10 != 0 && over { // fStartAt
				levels[l].start = start
			}
		}
		out[i] = levels
	}
	return out, nil
}

// docLVL reads the LVL at b[p:] ([MS-DOC] 2.9.150): an LVLF (start
// value, number format, placeholders' positions, the sizes of the
// property lists that follow, skipped) and the level text. It returns
// the level and the offset past it.
func docLVL(b []byte, p int) (numLevel, int, error) {
	le := binary.LittleEndian
	cut := fmt.Errorf("%w: a list level (LVL) of the list table is cut short; re-save the file in Word or LibreOffice", ErrCorrupt)
	const lvlf = 28
	if p+lvlf > len(b) {
		return numLevel{}, 0, cut
	}
	f := b[p : p+lvlf]
	p += lvlf + int(f[24]) + int(f[25]) // grpprlChpx and grpprlPapx
	if p+2 > len(b) {
		return numLevel{}, 0, cut
	}
	cch := int(le.Uint16(b[p:]))
	if p+2+2*cch > len(b) {
		return numLevel{}, 0, cut
	}
	xst := make([]uint16, cch)
	for j := range xst {
		xst[j] = le.Uint16(b[p+2+2*j:])
	}
	format, ok := docNumFormats[f[4]]
	if !ok {
		format = "decimal"
	}
	lv := numLevel{format: format, text: docLevelText(xst, f[6:15]), start: int(int32(le.Uint32(f)))}
	return lv, p + 2 + 2*cch, nil
}

// docLevelText turns a level's text (xst) into the "%1." form of
// WordprocessingML: rgbxchNums gives the 1-based positions of the
// placeholders, whose characters 0-8 name the level numbered there.
func docLevelText(xst []uint16, rgbxchNums []byte) string {
	holders := map[int]bool{}
	for _, x := range rgbxchNums {
		if x == 0 {
			break
		}
		holders[int(x)-1] = true
	}
	text := make([]uint16, 0, len(xst))
	for j, c := range xst {
		if holders[j] && c < 9 {
			text = append(text, '%', '1'+c)
			continue
		}
		text = append(text, c)
	}
	return string(utf16.Decode(text))
}

// docStyle is what the reader takes from a paragraph style of a .doc:
// its base style (istdBase, -1 for none) and its list and level (-1
// where it sets none: it inherits them).
type docStyle struct {
	base       int
	ilfo, ilvl int
}

// docStyles reads the paragraph styles of the stylesheet ([MS-DOC]
// 2.9.271 STSH, at fcStshf in the table stream): after the STSHI, an STD
// per istd, each its StdfBase (the style's type and istdBase), its name,
// and for a paragraph style first the properties that differ from its
// base style's (UpxPapx: an istd, then property modifiers). Best effort,
// as docParas: a damaged stylesheet ends the styles read, and paragraphs
// of the others keep only their own lists.
func docStyles(table, fcLcb []byte) []docStyle {
	le := binary.LittleEndian
	fc, lcb := int64(le.Uint32(fcLcb[1*8:])), int64(le.Uint32(fcLcb[1*8+4:]))
	if lcb < 6 || fc+lcb > int64(len(table)) {
		return nil
	}
	stsh := table[fc : fc+lcb]
	cbStshi := int(le.Uint16(stsh))
	cstd, cbStdf := int(le.Uint16(stsh[2:])), int(le.Uint16(stsh[4:])) // STSHI: cstd, cbSTDBaseInFile
	if cbStdf < 10 {
		return nil
	}
	var styles []docStyle
	for p := 2 + cbStshi; len(styles) < cstd && p+2 <= len(stsh); {
		cb := int(le.Uint16(stsh[p:]))
		if p+2+cb > len(stsh) {
			break
		}
		std := stsh[p+2 : p+2+cb]
		p += 2 + cb
		st := docStyle{base: -1, ilfo: -1, ilvl: -1}
		if len(std) >= cbStdf+2 && le.Uint16(std[2:])&0x0F == 1 { // stk: a paragraph style
			if base := int(le.Uint16(std[2:]) >> 4); base != 0x0FFF {
				st.base = base
			}
			q := cbStdf + 2 + 2*int(le.Uint16(std[cbStdf:])) + 2 // past the name and its terminator
			if q+2 <= len(std) {
				if n := int(le.Uint16(std[q:])); n >= 2 && q+2+n <= len(std) {
					own := docSprms(std[q+4 : q+2+n]) // after UpxPapx's istd
					st.ilfo, st.ilvl = own.ilfo, own.ilvl
				}
			}
		}
		styles = append(styles, st)
	}
	return styles
}

// styledList completes a paragraph's own properties (own, -1 where unset)
// with the list and level of its style istd, inherited through istdBase
// (at most maxStyleDepth styles, so a cycle ends); a paragraph or style
// in list 0 is out of its base style's list.
func styledList(styles []docStyle, istd int, own docPara) docPara {
	for range maxStyleDepth {
		if istd < 0 || istd >= len(styles) || own.ilfo >= 0 && own.ilvl >= 0 {
			break
		}
		s := styles[istd]
		if own.ilfo < 0 {
			own.ilfo = s.ilfo
		}
		if own.ilvl < 0 {
			own.ilvl = s.ilvl
		}
		istd = s.base
	}
	own.ilfo, own.ilvl = max(own.ilfo, 0), max(own.ilvl, 0)
	return own
}

// docListMarker returns the list marker of a paragraph in list format
// override ilfo (levels of each, from docLists), advancing the counters.
func docListMarker(counters listCounters, lfos [][]numLevel, p docPara) string {
	var levels []numLevel
	if p.ilfo <= len(lfos) {
		levels = lfos[p.ilfo-1]
	}
	return counters.marker(strconv.Itoa(p.ilfo), levels, p.ilvl)
}
