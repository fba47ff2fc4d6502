package document

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb"
)

// decodeDOC reads a Word 97-2003 document ([MS-DOC]): the File
// Information Block at the start of the WordDocument stream locates the
// piece table (the CLX) in the table stream; the pieces, in character
// position order, are the text, each either 8-bit (Windows-1252) or
// UTF-16LE. The main document comes first, then footnotes, endnotes,
// comments and text boxes, then headers and footers, each story a block
// of its own. Page breaks (0x0C) make pages; field codes are dropped and
// their results kept; table cells are joined by " | ".
func decodeDOC(ctx context.Context, f *cfb.File, opts *Options) (*Document, error) {
	wd, err := f.ReadStream("WordDocument")
	if err != nil {
		return nil, cfbErr("WordDocument", err)
	}
	le := binary.LittleEndian
	if len(wd) < 0x22 || le.Uint16(wd) != 0xA5EC {
		return nil, fmt.Errorf("%w: the WordDocument stream has no Word 97 header (wIdent)", ErrCorrupt)
	}
	nFib := le.Uint16(wd[2:])
	flags := le.Uint16(wd[0x0A:])
	if flags&0x0100 != 0 || flags&0x8000 != 0 {
		return nil, fmt.Errorf("%w: a password-protected Word .doc; open it in Word or LibreOffice with the password, save a copy without one (File > Properties > Security), and submit that", ErrEncrypted)
	}
	if nFib < 0x00C1 {
		// Word 6 and Word 95 (nFib 101-105) lay the FIB out differently
		// and store text without a piece table of this shape.
		return nil, fmt.Errorf("%w: a Word 6/95 .doc (nFib %#x); convert it with libreoffice --headless --convert-to docx and submit the .docx", ErrUnsupported, nFib)
	}
	// FibBase (32 bytes), csw + fibRgW, cslw + fibRgLw, cbRgFcLcb + fibRgFcLcb.
	p := 32
	rd16 := func() (int, bool) {
		if p+2 > len(wd) {
			return 0, false
		}
		v := int(le.Uint16(wd[p:]))
		p += 2
		return v, true
	}
	csw, ok := rd16()
	if !ok {
		return nil, fmt.Errorf("%w: the Word header is cut short", ErrCorrupt)
	}
	p += 2 * csw
	cslw, ok := rd16()
	if !ok || p+4*cslw > len(wd) || cslw < 11 {
		return nil, fmt.Errorf("%w: the Word header is cut short", ErrCorrupt)
	}
	lw := wd[p : p+4*cslw]
	p += 4 * cslw
	cb, ok := rd16()
	if !ok || p+8*cb > len(wd) || cb < 34 {
		return nil, fmt.Errorf("%w: the Word header is cut short", ErrCorrupt)
	}
	fcLcb := wd[p : p+8*cb]
	ccp := func(i int) int64 { return int64(int32(le.Uint32(lw[4*i:]))) }
	// fibRgLw97: ccpText at 3, ccpFtn 4, ccpHdd 5, ccpMcr 6, ccpAtn 7,
	// ccpEdn 8, ccpTxbx 9, ccpHdrTxbx 10.
	stories := []struct {
		name string
		n    int64
	}{
		{"body", ccp(3)}, {"footnotes", ccp(4)}, {"headers", ccp(5)}, {"macros", ccp(6)},
		{"comments", ccp(7)}, {"endnotes", ccp(8)}, {"text boxes", ccp(9)}, {"header text boxes", ccp(10)},
	}
	var total int64
	for _, s := range stories {
		if s.n < 0 || s.n > 1<<31 {
			return nil, fmt.Errorf("%w: the Word header counts %d characters in the %s", ErrCorrupt, s.n, s.name)
		}
		total += s.n
	}
	fcClx, lcbClx := int64(le.Uint32(fcLcb[33*8:])), int64(le.Uint32(fcLcb[33*8+4:]))
	tableName := "0Table"
	if flags&0x0200 != 0 {
		tableName = "1Table"
	}
	table, err := f.ReadStream(tableName)
	if err != nil {
		return nil, cfbErr(tableName, err)
	}
	if lcbClx <= 0 || fcClx+lcbClx > int64(len(table)) {
		return nil, fmt.Errorf("%w: the piece table (%d bytes at %d) lies outside the %s stream of %d", ErrCorrupt, lcbClx, fcClx, tableName, len(table))
	}
	pieces, err := docPieces(table[fcClx : fcClx+lcbClx])
	if err != nil {
		return nil, err
	}
	maxText := opts.Limits.withDefaults().MaxText
	paras := docParas(wd, table, fcLcb, docStyles(table, fcLcb))
	text, items, err := docText(ctx, wd, pieces, paras, total, maxText)
	if err != nil {
		return nil, err
	}
	lfos, err := docLists(table, fcLcb)
	if err != nil {
		return nil, err
	}
	docSectionMarks(text[:min(int(ccp(3)), len(text))], table, fcLcb)
	counters := listCounters{}
	doc := &Document{}
	w := newTextWriter(opts.Limits)
	pos := 0
	for i, s := range stories {
		end := min(pos+int(s.n), len(text))
		story := text[pos:end]
		base := pos
		pos = end
		listMark := func(at int) string {
			if p, ok := items[base+at]; ok {
				return docListMarker(counters, lfos, p)
			}
			return ""
		}
		isItem := func(at int) bool { _, ok := items[base+at]; return ok }
		if s.name == "macros" {
			continue
		}
		if s.name == "headers" {
			story = dedupParagraphs(story)
			listMark = func(int) string { return "" } // positions moved
			isItem = func(int) bool { return false }
		}
		// Footnote and endnote references (0x02) are numbered in order in
		// the body and in the notes alike: the body cites [n], the note
		// starts with [n].
		var n int
		mark := func() string { n++; return "[" + strconv.Itoa(n) + "]" }
		switch s.name {
		case "body":
			n = 0
		case "footnotes", "endnotes":
			mark = func() string { n++; return "[" + strconv.Itoa(n) + "] " }
		default:
			mark = func() string { return "" }
		}
		docStory(story, w, i == 0, paras != nil, mark, listMark, isItem)
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	if len(doc.Pages) == 1 {
		doc.Pages = nil // no page break recorded: a document without pages
	}
	summaryInfo(f, &doc.Meta)
	return doc, nil
}

// docPiece is one run of text of the piece table: characters [cp, cpEnd)
// stored at fc, 8-bit or UTF-16LE.
type docPiece struct {
	cp, cpEnd  int64
	fc         int64
	compressed bool
}

// docPieces parses the CLX: property runs (Prc, 0x01) to skip, then the
// piece table (Pcdt, 0x02).
func docPieces(clx []byte) ([]docPiece, error) {
	le := binary.LittleEndian
	i := 0
	for i < len(clx) && clx[i] == 0x01 {
		if i+3 > len(clx) {
			return nil, fmt.Errorf("%w: the piece table is cut short", ErrCorrupt)
		}
		i += 3 + int(int16(le.Uint16(clx[i+1:])))
		if i < 0 {
			return nil, fmt.Errorf("%w: a negative property run in the piece table", ErrCorrupt)
		}
	}
	if i+5 > len(clx) || clx[i] != 0x02 {
		return nil, fmt.Errorf("%w: no piece table in the CLX", ErrCorrupt)
	}
	lcb := int(le.Uint32(clx[i+1:]))
	plc := clx[i+5:]
	if lcb < 4 || lcb > len(plc) || (lcb-4)%12 != 0 {
		return nil, fmt.Errorf("%w: a piece table of %d bytes", ErrCorrupt, lcb)
	}
	n := (lcb - 4) / 12
	out := make([]docPiece, 0, n)
	for k := range n {
		cp, cpEnd := int64(le.Uint32(plc[4*k:])), int64(le.Uint32(plc[4*k+4:]))
		pcd := plc[4*(n+1)+8*k:]
		fc := le.Uint32(pcd[2:])
		pc := docPiece{cp: cp, cpEnd: cpEnd, fc: int64(fc & 0x3FFFFFFF), compressed: fc&0x40000000 != 0}
		if pc.compressed {
			pc.fc /= 2
		}
		if cpEnd < cp {
			return nil, fmt.Errorf("%w: a piece of the piece table ends before it starts", ErrCorrupt)
		}
		out = append(out, pc)
	}
	return out, nil
}

// cp1252High maps the bytes 0x80-0x9F of Windows-1252 to Unicode; the
// other bytes are Latin-1.
var cp1252High = [32]rune{
	0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
	0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
}

// docText reads characters [0, total) through the pieces as runes, one
// per character position, so the stories can be cut by count. The marks
// that end a list's paragraphs (or cells) are returned by position, with
// the list they belong to.
func docText(ctx context.Context, wd []byte, pieces []docPiece, paras map[int64]docPara, total, maxText int64) ([]rune, map[int]docPara, error) {
	if total > maxText {
		return nil, nil, fmt.Errorf("%w: %d characters, the limit is %d (Limits.MaxText)", ErrTooLarge, total, maxText)
	}
	// Every character takes at least a byte of the stream: more means
	// pieces that overlap, which only a crafted file has, and which would
	// let a small file expand to MaxText.
	if total > int64(len(wd)) {
		return nil, nil, fmt.Errorf("%w: the header counts %d characters in a WordDocument stream of %d bytes", ErrCorrupt, total, len(wd))
	}
	out := make([]rune, 0, min(total, int64(len(wd))))
	items := map[int]docPara{}
	// mark reads the paragraph mark r ending at stream offset end; a
	// 0x0C is one where it ends a section (a page break inside a
	// paragraph ends no paragraph: paras has nothing past it).
	mark := func(r rune, end int64) rune {
		p := paras[end]
		if r == 0x07 && p.rowEnd {
			return docRowEnd
		}
		if p.ilfo > 0 {
			items[len(out)] = p
		}
		return r
	}
	for _, pc := range pieces {
		if int64(len(out)) >= total {
			break
		}
		if err := context.Cause(ctx); err != nil {
			return nil, nil, err
		}
		n := min(pc.cpEnd-pc.cp, total-int64(len(out)))
		if pc.compressed {
			if pc.fc+n > int64(len(wd)) {
				return nil, nil, fmt.Errorf("%w: a text piece lies outside the WordDocument stream", ErrCorrupt)
			}
			for j, c := range wd[pc.fc : pc.fc+n] {
				r := rune(c)
				switch {
				case c >= 0x80 && c < 0xA0:
					r = cp1252High[c-0x80]
				case c == 0x07 || c == 0x0D || c == 0x0C:
					r = mark(r, pc.fc+int64(j)+1)
				}
				out = append(out, r)
			}
			continue
		}
		if pc.fc+2*n > int64(len(wd)) {
			return nil, nil, fmt.Errorf("%w: a text piece lies outside the WordDocument stream", ErrCorrupt)
		}
		u := make([]uint16, n)
		for i := range u {
			u[i] = binary.LittleEndian.Uint16(wd[pc.fc+2*int64(i):])
		}
		// Surrogate pairs take two character positions; decoding the
		// pair to one rune shifts the count, so pad with a rune dropped
		// later to keep positions aligned.
		for i := 0; i < len(u); i++ {
			if utf16.IsSurrogate(rune(u[i])) && i+1 < len(u) {
				if r := utf16.DecodeRune(rune(u[i]), rune(u[i+1])); r != 0xFFFD {
					out = append(out, r, docSkip)
					i++
					continue
				}
			}
			r := rune(u[i])
			if r == 0x07 || r == 0x0D || r == 0x0C {
				r = mark(r, pc.fc+2*int64(i)+2)
			}
			out = append(out, r)
		}
	}
	return out, items, nil
}

// docSkip marks a character position that produces nothing (the second
// half of a surrogate pair).
const docSkip = -1

// docRowEnd replaces the 0x07 that ends a table row: a cell's end and a
// row's end are the same character, and only the row end's paragraph
// properties tell them apart (an empty cell is two marks in a row too).
const docRowEnd = -2

// docSectionEnd replaces the 0x0C that ends a section: it is the mark
// of the section's last paragraph, where a 0x0C elsewhere is a page
// break inside a paragraph.
const docSectionEnd = -3

// docSectionMarks marks in the body text the 0x0C that end sections
// (docSectionEnd): those just before a section's end in the PlcfSed
// ([MS-DOC] 2.8.26, at fcPlcfSed in the table stream: the sections'
// CPs, then their 12-byte SEDs). Without a readable PlcfSed every 0x0C
// is taken for a section's end, so a damaged file's paragraphs end at
// its breaks.
func docSectionMarks(body []rune, table, fcLcb []byte) {
	le := binary.LittleEndian
	fc, lcb := int64(le.Uint32(fcLcb[6*8:])), int64(le.Uint32(fcLcb[6*8+4:]))
	if lcb < 4+16 || (lcb-4)%16 != 0 || fc+lcb > int64(len(table)) {
		for i, r := range body {
			if r == 0x0C {
				body[i] = docSectionEnd
			}
		}
		return
	}
	plc := table[fc : fc+lcb]
	for k := 1; k <= int(lcb-4)/16; k++ {
		if cp := int64(le.Uint32(plc[4*k:])); cp >= 1 && cp <= int64(len(body)) && body[cp-1] == 0x0C {
			body[cp-1] = docSectionEnd
		}
	}
}

// docPara is what the reader takes from a paragraph's properties.
type docPara struct {
	rowEnd bool // sprmPFTtp or sprmPFInnerTtp: the mark ends a table row
	ilfo   int  // sprmPIlfo: the list format override, from 1; 0 outside lists
	ilvl   int  // sprmPIlvl: the list level, 0-8
}

// docParas returns the properties of the paragraphs that end a table row
// or belong to a list, by the stream offset just past their mark (the
// PlcBtePapx in the table stream, then the PAPX pages of the WordDocument
// stream), or nil when the file has no such table readable (docStory
// then tells row ends by a doubled mark, and lists have no markers). A
// paragraph's list and level are its own or else its style's (styles,
// by istd, the index each PAPX starts with).
func docParas(wd, table, fcLcb []byte, styles []docStyle) map[int64]docPara {
	le := binary.LittleEndian
	fc, lcb := int64(le.Uint32(fcLcb[13*8:])), int64(le.Uint32(fcLcb[13*8+4:]))
	if lcb < 12 || fc+lcb > int64(len(table)) {
		return nil
	}
	plc := table[fc : fc+lcb]
	n := (len(plc) - 4) / 8 // n+1 offsets, then n page numbers
	paras := map[int64]docPara{}
	for k := range n {
		pn := int64(le.Uint32(plc[4*(n+1)+4*k:]) & 0x3FFFFF)
		if pn*512+512 > int64(len(wd)) {
			continue
		}
		page := wd[pn*512 : pn*512+512]
		crun := int(page[511])
		if crun == 0 || 4*(crun+1)+13*crun > 511 {
			continue
		}
		for i := range crun {
			end := int64(le.Uint32(page[4*(i+1):]))
			own, istd := docPara{ilfo: -1, ilvl: -1}, 0 // no PAPX: Normal's properties
			if b := 2 * int(page[4*(crun+1)+13*i]); b > 0 && b < 510 {
				start, size := b+1, 2*int(page[b])-1
				if page[b] == 0 {
					start, size = b+2, 2*int(page[b+1])
				}
				if size < 2 || start+size > 511 {
					continue
				}
				istd, own = int(le.Uint16(page[start:])), docSprms(page[start+2:start+size])
			}
			if p := styledList(styles, istd, own); p != (docPara{}) {
				paras[end] = p
			}
		}
	}
	return paras
}

// docSprms reads a paragraph's or a style's property modifiers ([MS-DOC]
// 2.2.5.1): a table row's end, a list and its level, -1 where they set
// none. It stops at the first modifier whose length it cannot tell.
func docSprms(s []byte) docPara {
	le := binary.LittleEndian
	p := docPara{ilfo: -1, ilvl: -1}
	for len(s) >= 2 {
		sprm := le.Uint16(s)
		s = s[2:]
		var size int
		switch sprm >> 13 { // spra: the operand's size
		case 0, 1:
			size = 1
		case 2, 4, 5:
			size = 2
		case 3:
			size = 4
		case 7:
			size = 3
		default: // 6: variable
			switch {
			case len(s) < 1:
				return p
			case sprm == 0xD608 || sprm == 0xD605: // sprmTDefTable, sprmTDefTable10: a 2-byte count, plus one
				if len(s) < 2 {
					return p
				}
				size = 2 + int(le.Uint16(s)) - 1
			case sprm == 0xC615 && s[0] == 255: // sprmPChgTabs, long form
				return p
			default:
				size = 1 + int(s[0])
			}
		}
		if size < 1 || size > len(s) {
			return p
		}
		switch sprm {
		case 0x2417, 0x244C: // sprmPFTtp, sprmPFInnerTtp
			p.rowEnd = s[0] != 0
		case 0x460B: // sprmPIlfo; negative values keep a list's indents without its number
			p.ilfo = max(0, int(int16(le.Uint16(s))))
		case 0x260A: // sprmPIlvl
			p.ilvl = min(int(s[0]), 8)
		}
		s = s[size:]
	}
	return p
}

// docStory writes one story's text: paragraphs (0x0D) as blocks, list
// items as lines after their marker (listMark: the marker of the
// paragraph whose mark is at a position of the story, "" outside lists),
// table cells (0x07) joined by " | ", a row ended by docRowEnd (marked:
// the file's paragraph properties were read) or else by a doubled mark,
// line breaks (0x0B) as newlines, page and section breaks (0x0C,
// docSectionEnd) as page boundaries in the body, field codes (between
// 0x13 and 0x14) dropped and field results (0x14 to 0x15) kept. A page
// break ends the paragraph, except inside a table cell and inside a list
// item (isItem: the paragraph whose mark is at a position is one): an
// item keeps its text and marker whole, as the .docx reader reads
// w:br type="page", the break a newline, and the page ends before the
// item when no text came before the break, else after it.
func docStory(story []rune, w *textWriter, body, marked bool, noteMark func() string, listMark func(i int) string, isItem func(i int) bool) {
	var para strings.Builder
	var fields []bool // per open field: still in its code
	var row []string
	paraStart := 0 // where the paragraph being read starts in para: a cell holds several
	inList := false
	// A page break inside the paragraph being read, after some of its
	// text; a page break waiting for what is written next: the page ends
	// after the blank line that ends a run of lines, or between two lines
	// of a run that goes on.
	breakAfter, pending := false, false
	settle := func(run bool) {
		if pending {
			if !run {
				w.endLines()
			}
			w.pageBreak()
			pending = false
		}
	}
	inCode := func() bool {
		for _, c := range fields {
			if c {
				return true
			}
		}
		return false
	}
	endRow := func() {
		if len(row) > 0 {
			settle(false)
			if inList {
				w.endLines()
				inList = false
			}
			w.row("", row)
			row = row[:0]
		}
	}
	flush := func(marker string) {
		endRow()
		text := strings.TrimSpace(para.String())
		para.Reset()
		paraStart = 0
		if breakAfter {
			defer func() { pending = true }()
			breakAfter = false
		}
		if marker != "" && text != "" {
			settle(inList)
			if !inList {
				w.endLines()
				inList = true
			}
			w.line(marker + " " + text)
			return
		}
		settle(false)
		inList = false
		w.endLines()
		w.block(text)
	}
	// cellItem puts the marker of a list paragraph ending in a cell
	// before its text.
	cellItem := func(i int) {
		m := listMark(i)
		text := strings.TrimSpace(para.String()[paraStart:])
		if m == "" || text == "" {
			return
		}
		s := para.String()[:paraStart]
		para.Reset()
		para.WriteString(s + m + " " + text)
	}
	// paraEnd returns the mark that ends the paragraph at position i (0
	// at the story's end) and whether the paragraph is a list item: found
	// once per paragraph, however many breaks it holds.
	endFrom, endAt, end, item := -1, -1, rune(0), false
	paraEnd := func(i int) (rune, bool) {
		if i < endFrom || i > endAt {
			endFrom, endAt, end, item = i, len(story), 0, false
			for j := i + 1; j < len(story); j++ {
				if r := story[j]; r == 0x0D || r == 0x07 || r == docRowEnd || r == docSectionEnd {
					endAt, end, item = j, r, r != docRowEnd && isItem(j)
					break
				}
			}
		}
		return end, item
	}
	lastCell := false
	for i, r := range story {
		switch r {
		case 0x13:
			fields = append(fields, true)
			continue
		case 0x14:
			if n := len(fields); n > 0 {
				fields[n-1] = false
			}
			continue
		case 0x15:
			if n := len(fields); n > 0 {
				fields = fields[:n-1]
			}
			continue
		}
		if inCode() {
			continue
		}
		cell := false
		switch r {
		case 0x02:
			para.WriteString(noteMark())
		case docSkip, 0x01, 0x03, 0x04, 0x05, 0x08, 0x1F, 0xFEFF:
			// Anchors of pictures, notes and objects, optional hyphens.
		case docRowEnd:
			endRow()
		case 0x07:
			if lastCell && !marked {
				// The row's own mark after its last cell ends the row.
				endRow()
			} else {
				cellItem(i)
				row = append(row, para.String())
				para.Reset()
				paraStart = 0
				cell = true
			}
		case 0x0D:
			if len(row) > 0 {
				cellItem(i)
				para.WriteByte('\n') // a paragraph inside a cell
				paraStart = para.Len()
			} else {
				flush(listMark(i))
			}
		case 0x0B:
			para.WriteByte('\n')
		case docSectionEnd: // the mark of a section's last paragraph, a list item too
			flush(listMark(i))
			pending = pending || body
		case 0x0C:
			end, item := paraEnd(i)
			switch {
			case len(row) > 0 || end == 0x07:
				para.WriteByte('\n') // a break in a table cell: a row stays whole
			case !item:
				flush("")
				pending = pending || body
			case !body:
				para.WriteByte('\n')
			case strings.TrimSpace(para.String()) == "":
				pending = true // before the paragraph: nothing of it is written yet
			default:
				para.WriteByte('\n')
				breakAfter = true
			}
		case 0x1E:
			para.WriteByte('-')
		case 0xA0:
			para.WriteByte(' ')
		case 0x09:
			if !strings.HasSuffix(para.String(), "] ") { // Word's tab after a note's number
				para.WriteByte('\t')
			}
		default:
			if r < 0x20 || (r >= 0xD800 && r <= 0xDFFF) {
				continue
			}
			para.WriteRune(r)
		}
		lastCell = cell
	}
	endRow()
	if strings.TrimSpace(para.String()) != "" {
		settle(false) // a break before the story's last, unended paragraph
	}
	w.endLines()
	w.block(para.String())
	if breakAfter {
		pending = true
	}
	settle(false)
}

// dedupParagraphs drops repeated paragraphs of the header story: Word
// stores the first-page, odd and even variants of every section's headers
// and footers, mostly the same text.
func dedupParagraphs(story []rune) []rune {
	seen := map[string]bool{}
	var out []rune
	kept := make([]rune, 0, len(story))
	for _, r := range story {
		if r != docSkip {
			kept = append(kept, r)
		}
	}
	for p := range strings.SplitSeq(string(kept), "\r") {
		key := strings.TrimSpace(p)
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, []rune(p)...)
		out = append(out, 0x0D)
	}
	return out
}
