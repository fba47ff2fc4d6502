package document

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb"
)

// BIFF8 record types read ([MS-XLS] 2.3).
const (
	biffFormula    = 0x0006
	biffEOF        = 0x000A
	biffDateMode   = 0x0022
	biffFilePass   = 0x002F
	biffContinue   = 0x003C
	biffBoundSheet = 0x0085
	biffMulRK      = 0x00BD
	biffXF         = 0x00E0
	biffSST        = 0x00FC
	biffLabelSST   = 0x00FD
	biffNumber     = 0x0203
	biffLabel      = 0x0204
	biffBoolErr    = 0x0205
	biffString     = 0x0207
	biffRK         = 0x027E
	biffFormat     = 0x041E
	biffBOF        = 0x0809
)

// biffRecord is one record of a BIFF stream.
type biffRecord struct {
	typ  uint16
	data []byte
	next int // offset of the following record
}

// biffAt reads the record at off; ok is false past the end or at a record
// cut short.
func biffAt(b []byte, off int) (biffRecord, bool) {
	if off < 0 || off+4 > len(b) {
		return biffRecord{}, false
	}
	typ := binary.LittleEndian.Uint16(b[off:])
	n := int(binary.LittleEndian.Uint16(b[off+2:]))
	if off+4+n > len(b) {
		return biffRecord{}, false
	}
	return biffRecord{typ, b[off+4 : off+4+n], off + 4 + n}, true
}

// xlsReader holds what the workbook globals say about every sheet.
type xlsReader struct {
	sst      []string
	xfFormat []int          // XF index → number format id
	formats  map[int]string // number format id → custom code
	date1904 bool
}

// decodeXLS reads an Excel 97-2003 workbook ([MS-XLS], BIFF8, in the
// Workbook stream): the globals' shared strings (across CONTINUE records),
// number formats and sheet list, then each worksheet's cells (shared and
// inline strings, numbers, RK and MULRK numbers, formulas' cached results,
// booleans and errors), written as the xlsx reader writes a sheet: a page
// per sheet labelled with its name, "Sheet: NAME", then each row as
// "B3: v1 | v2", numbers through their number formats.
func decodeXLS(ctx context.Context, f *cfb.File, name string, opts *Options) (*Document, error) {
	b, err := f.ReadStream(name)
	if err != nil {
		return nil, cfbErr(name, err)
	}
	le := binary.LittleEndian
	first, ok := biffAt(b, 0)
	if !ok || first.typ != biffBOF || len(first.data) < 4 {
		return nil, fmt.Errorf("%w: the %s stream does not start with a BOF record", ErrCorrupt, name)
	}
	if v := le.Uint16(first.data); v != 0x0600 {
		return nil, fmt.Errorf("%w: an Excel 5/95 workbook (BIFF version %#x); convert it with libreoffice --headless --convert-to xlsx and submit the .xlsx", ErrUnsupported, v)
	}
	x := &xlsReader{formats: map[int]string{}}
	type sheet struct {
		name string
		pos  int
	}
	var sheets []sheet
	for off := first.next; ; {
		r, ok := biffAt(b, off)
		if !ok || r.typ == biffEOF {
			break
		}
		off = r.next
		switch r.typ {
		case biffFilePass:
			return nil, fmt.Errorf("%w: a password-protected Excel .xls; open it in Excel or LibreOffice with the password, save a copy without one, and submit that", ErrEncrypted)
		case biffDateMode:
			x.date1904 = len(r.data) >= 2 && le.Uint16(r.data) == 1
		case biffXF:
			if len(r.data) >= 4 {
				x.xfFormat = append(x.xfFormat, int(le.Uint16(r.data[2:])))
			}
		case biffFormat:
			if len(r.data) >= 5 {
				s, _ := xlString16(r.data[2:])
				x.formats[int(le.Uint16(r.data))] = s
			}
		case biffBoundSheet:
			// lbPlyPos, hsState, dt, then the name (8-bit count).
			if len(r.data) >= 8 && r.data[5] == 0 {
				sheets = append(sheets, sheet{xlString8(r.data[6:]), int(le.Uint32(r.data))})
			}
		case biffSST:
			segs := [][]byte{r.data}
			for {
				c, ok := biffAt(b, off)
				if !ok || c.typ != biffContinue {
					break
				}
				segs = append(segs, c.data)
				off = c.next
			}
			if x.sst, err = readSST(segs, opts.Limits.withDefaults().MaxText); err != nil {
				return nil, err
			}
		}
	}
	doc := &Document{}
	w := newTextWriter(opts.Limits)
	// Sheets may point anywhere in the stream: the bytes scanned for all
	// of them together are bounded.
	budget := int64(4*len(b)) + 1<<20
	for _, s := range sheets {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		rows, scanned, err := x.sheet(b, s.pos)
		if err != nil {
			return nil, err
		}
		if budget -= scanned; budget < 0 {
			return nil, fmt.Errorf("%w: the sheets' records overlap past any real workbook's", ErrCorrupt)
		}
		w.startPage()
		w.line("Sheet: " + s.name)
		for _, r := range slices.Sorted(func(yield func(int) bool) {
			for k := range rows {
				if !yield(k) {
					return
				}
			}
		}) {
			w.writeSheetRow(r+1, rows[r])
		}
		w.endLines()
		w.endPage(s.name)
		if w.err != nil {
			return nil, w.err
		}
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	summaryInfo(f, &doc.Meta)
	return doc, nil
}

// maxXLSCells bounds the cells a sheet holds in memory before they are
// written (BIFF8 sheets are at most 65,536 × 256).
const maxXLSCells = 1 << 22

// sheet reads one worksheet's cells from the BOF at pos to its EOF; an
// embedded chart's records (a nested BOF…EOF) are skipped.
func (x *xlsReader) sheet(b []byte, pos int) (map[int][]string, int64, error) {
	le := binary.LittleEndian
	rows := map[int][]string{}
	cells := 0
	set := func(row, col int, v string) error {
		if v == "" || col >= 256 || row >= 1<<16 {
			return nil
		}
		r := rows[row]
		for len(r) <= col {
			r = append(r, "")
		}
		r[col] = v
		rows[row] = r
		if cells++; cells > maxXLSCells {
			return fmt.Errorf("%w: a sheet of more than %d cells", ErrTooLarge, maxXLSCells)
		}
		return nil
	}
	r, ok := biffAt(b, pos)
	if !ok || r.typ != biffBOF {
		return rows, 0, nil // a sheet whose offset is wrong: nothing to read
	}
	depth := 1
	// A formula whose cached result is a string: its STRING record follows.
	pendingRow, pendingCol := -1, -1
	off := r.next
	for depth > 0 {
		r, ok := biffAt(b, off)
		if !ok {
			break
		}
		off = r.next
		d := r.data
		switch r.typ {
		case biffBOF:
			depth++
			continue
		case biffEOF:
			depth--
			continue
		}
		if depth != 1 {
			continue
		}
		if r.typ != biffString {
			pendingRow = -1
		}
		var err error
		switch r.typ {
		case biffLabelSST:
			if len(d) >= 10 {
				if i := int(le.Uint32(d[6:])); i < len(x.sst) {
					err = set(int(le.Uint16(d)), int(le.Uint16(d[2:])), x.sst[i])
				}
			}
		case biffLabel:
			if len(d) >= 9 {
				s, _ := xlString16(d[6:])
				err = set(int(le.Uint16(d)), int(le.Uint16(d[2:])), s)
			}
		case biffNumber:
			if len(d) >= 14 {
				err = set(int(le.Uint16(d)), int(le.Uint16(d[2:])), x.number(math.Float64frombits(le.Uint64(d[6:])), int(le.Uint16(d[4:]))))
			}
		case biffRK:
			if len(d) >= 10 {
				err = set(int(le.Uint16(d)), int(le.Uint16(d[2:])), x.number(rkNumber(le.Uint32(d[6:])), int(le.Uint16(d[4:]))))
			}
		case biffMulRK:
			if len(d) >= 6 {
				row, col := int(le.Uint16(d)), int(le.Uint16(d[2:]))
				for i := 4; i+6 <= len(d)-2 && err == nil; i += 6 {
					err = set(row, col, x.number(rkNumber(le.Uint32(d[i+2:])), int(le.Uint16(d[i:]))))
					col++
				}
			}
		case biffBoolErr:
			if len(d) >= 8 {
				err = set(int(le.Uint16(d)), int(le.Uint16(d[2:])), boolErr(d[6], d[7] != 0))
			}
		case biffFormula:
			if len(d) >= 14 {
				row, col, xf := int(le.Uint16(d)), int(le.Uint16(d[2:])), int(le.Uint16(d[4:]))
				v := d[6:14]
				if le.Uint16(v[6:]) != 0xFFFF {
					err = set(row, col, x.number(math.Float64frombits(le.Uint64(v)), xf))
					break
				}
				switch v[0] {
				case 0:
					pendingRow, pendingCol = row, col
				case 1:
					err = set(row, col, boolErr(v[2], false))
				case 2:
					err = set(row, col, boolErr(v[2], true))
				}
			}
		case biffString:
			if pendingRow >= 0 && len(d) >= 3 {
				s, _ := xlString16(d)
				err = set(pendingRow, pendingCol, s)
			}
			pendingRow = -1
		}
		if err != nil {
			return nil, 0, err
		}
	}
	return rows, int64(off - pos), nil
}

// number renders a cell's number through its XF's number format, as the
// xlsx reader does.
func (x *xlsReader) number(f float64, xf int) string {
	code := ""
	if xf >= 0 && xf < len(x.xfFormat) {
		id := x.xfFormat[xf]
		if c, ok := x.formats[id]; ok {
			code = c
		} else {
			code = builtinFormats[id]
		}
	}
	return formatCell(strconv.FormatFloat(f, 'g', -1, 64), code, x.date1904)
}

// rkNumber decodes an RK value: a 30-bit integer or the high 30 bits of a
// double, either possibly ×100.
func rkNumber(rk uint32) float64 {
	var f float64
	if rk&2 != 0 {
		f = float64(int32(rk) >> 2)
	} else {
		f = math.Float64frombits(uint64(rk&0xFFFFFFFC) << 32)
	}
	if rk&1 != 0 {
		f /= 100
	}
	return f
}

// boolErr renders a boolean or an error value as Excel shows it.
func boolErr(v byte, isErr bool) string {
	if !isErr {
		if v != 0 {
			return "TRUE"
		}
		return "FALSE"
	}
	switch v {
	case 0x00:
		return "#NULL!"
	case 0x07:
		return "#DIV/0!"
	case 0x0F:
		return "#VALUE!"
	case 0x17:
		return "#REF!"
	case 0x1D:
		return "#NAME?"
	case 0x24:
		return "#NUM!"
	case 0x2A:
		return "#N/A"
	}
	return "#ERR"
}

// xlString16 reads an XLUnicodeString (16-bit count, flags, characters)
// within one record, returning it and the bytes it took.
func xlString16(b []byte) (string, int) {
	if len(b) < 3 {
		return "", len(b)
	}
	n := int(binary.LittleEndian.Uint16(b))
	return xlChars(b[2:], n, 2)
}

// xlString8 reads a ShortXLUnicodeString (8-bit count, flags, characters).
func xlString8(b []byte) string {
	if len(b) < 2 {
		return ""
	}
	s, _ := xlChars(b[1:], int(b[0]), 1)
	return s
}

// xlChars reads n characters after a flags byte at b[0]: 8-bit (Latin-1,
// the high bytes dropped by Excel) or UTF-16LE; rich-text runs and
// phonetic data following the characters are skipped by the count.
func xlChars(b []byte, n, pre int) (string, int) {
	flags := b[0]
	i := 1
	if flags&0x08 != 0 {
		i += 2 // cRun
	}
	if flags&0x04 != 0 {
		i += 4 // cbExtRst
	}
	if i > len(b) {
		return "", pre + len(b)
	}
	b = b[i:]
	if flags&1 == 0 {
		n = min(n, len(b))
		return latin1(b[:n]), pre + i + n
	}
	n = min(n, len(b)/2)
	u := make([]uint16, n)
	for k := range u {
		u[k] = binary.LittleEndian.Uint16(b[2*k:])
	}
	return string(utf16.Decode(u)), pre + i + 2*n
}

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// sstReader reads the shared string table across its SST and CONTINUE
// records: a string's characters may go on in the next record, which
// then starts with a flags byte of its own (8-bit or UTF-16 for the rest
// of the characters); anything else (counts, runs, phonetic data) simply
// continues in the next record's bytes.
type sstReader struct {
	segs [][]byte
	seg  int
	off  int
}

func (r *sstReader) avail() bool {
	for r.seg < len(r.segs) && r.off >= len(r.segs[r.seg]) {
		r.seg++
		r.off = 0
	}
	return r.seg < len(r.segs)
}

func (r *sstReader) byte() (byte, bool) {
	if !r.avail() {
		return 0, false
	}
	c := r.segs[r.seg][r.off]
	r.off++
	return c, true
}

func (r *sstReader) uint(n int) (uint32, bool) {
	var v uint32
	for i := range n {
		c, ok := r.byte()
		if !ok {
			return 0, false
		}
		v |= uint32(c) << (8 * i)
	}
	return v, true
}

// skip passes n bytes, across records.
func (r *sstReader) skip(n int64) bool {
	for n > 0 {
		if !r.avail() {
			return false
		}
		k := min(n, int64(len(r.segs[r.seg])-r.off))
		r.off += int(k)
		n -= k
	}
	return true
}

// chars reads n characters, taking a new flags byte where a record ends
// inside them.
func (r *sstReader) chars(n int, wide bool, sb *strings.Builder) bool {
	var u []uint16
	flush := func() {
		if len(u) > 0 {
			sb.WriteString(string(utf16.Decode(u)))
			u = u[:0]
		}
	}
	for n > 0 {
		if r.seg >= len(r.segs) {
			return false
		}
		if r.off >= len(r.segs[r.seg]) {
			r.seg++
			r.off = 0
			if r.seg >= len(r.segs) || len(r.segs[r.seg]) == 0 {
				return false
			}
			wide = r.segs[r.seg][0]&1 != 0
			r.off = 1
			continue
		}
		seg := r.segs[r.seg]
		if wide {
			if r.off+2 > len(seg) {
				return false
			}
			u = append(u, binary.LittleEndian.Uint16(seg[r.off:]))
			r.off += 2
		} else {
			flush()
			sb.WriteRune(rune(seg[r.off]))
			r.off++
		}
		n--
	}
	flush()
	return true
}

// readSST reads the shared strings; a table cut short keeps the strings
// read so far.
func readSST(segs [][]byte, maxText int64) ([]string, error) {
	r := &sstReader{segs: segs}
	if _, ok := r.uint(4); !ok {
		return nil, nil
	}
	unique, ok := r.uint(4)
	if !ok {
		return nil, nil
	}
	var out []string
	var total int64
	for range unique {
		n, ok := r.uint(2)
		if !ok {
			break
		}
		flags, ok := r.byte()
		if !ok {
			break
		}
		var runs, ext uint32
		if flags&0x08 != 0 {
			if runs, ok = r.uint(2); !ok {
				break
			}
		}
		if flags&0x04 != 0 {
			if ext, ok = r.uint(4); !ok {
				break
			}
		}
		var sb strings.Builder
		if !r.chars(int(n), flags&1 != 0, &sb) {
			out = append(out, sb.String())
			break
		}
		out = append(out, sb.String())
		if total += int64(sb.Len()); total > maxText {
			return nil, fmt.Errorf("%w: shared strings of more than %d bytes (Limits.MaxText)", ErrTooLarge, maxText)
		}
		if !r.skip(4*int64(runs) + int64(ext)) {
			break
		}
	}
	return out, nil
}
