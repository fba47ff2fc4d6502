package document

import (
	"context"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:       "xlsx",
		MediaType:  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
		Extensions: []string{".xlsx", ".xlsm", ".xltx", ".xltm"},
		// 2: a formula without a cached value shows as its formula. 3:
		// embedded objects (a Word document or workbook pasted in) are
		// attachments. 4: so does a shared formula's every cell, its
		// references moved along (=B4/C4 below =B3/C3).
		Version:  "4",
		Match:    func(head []byte, r io.ReaderAt, size int64) bool { return ooxmlKind(head, r, size) == "xlsx" },
		Priority: 100,
		Decoder:  DecoderFunc(decodeXLSX),
	})
}

// decodeXLSX reads a workbook: each sheet a page labelled with its name,
// its table one row per line prefixed by the reference of the row's first
// cell ("B3: Widget | 10"), values rendered as their number formats show
// them (dates, percentages, decimals, thousands separators); a formula
// without a cached value (openpyxl writes none) as its formula ("=SUM(E5:E7)").
func decodeXLSX(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	pkg, err := openOOXMLMain(ctx, r, size, opts.Limits, "xlsx", "xl/workbook.xml")
	if err != nil {
		return nil, err
	}
	a, main, rels := pkg.a, pkg.main, pkg.rels
	wb, err := a.read(ctx, main)
	if err != nil {
		return nil, err
	}
	x := &xlsxReader{a: a}
	type sheet struct{ name, part string }
	var sheets []sheet
	err = eachStart(wb, main, func(e xml.StartElement) {
		switch e.Name.Local {
		case "workbookPr":
			v := attr(e, "date1904")
			x.date1904 = v == "1" || v == "true"
		case "sheet":
			id := attr(e, "id") // r:id
			for _, rl := range rels {
				if rl.ID == id && !rl.External {
					sheets = append(sheets, sheet{attr(e, "name"), rl.Target})
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if rl, ok := relOfType(rels, "/sharedStrings"); ok && a.has(rl.Target) {
		rc, err := a.open(ctx, rl.Target)
		if err != nil {
			return nil, err
		}
		x.shared, err = readSharedStrings(rc, rl.Target)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	if rl, ok := relOfType(rels, "/styles"); ok && a.has(rl.Target) {
		b, err := a.read(ctx, rl.Target)
		if err != nil {
			return nil, err
		}
		x.formats = readCellFormats(b)
	}
	doc := &Document{}
	ooxmlMeta(ctx, a, &doc.Meta)
	w := newTextWriter(opts.Limits)
	var sheetRels [][]rel
	for _, s := range sheets {
		if !a.has(s.part) {
			continue
		}
		srels, err := readRels(ctx, a, s.part)
		if err != nil {
			return nil, err
		}
		sheetRels = append(sheetRels, srels)
		rc, err := a.open(ctx, s.part)
		if err != nil {
			return nil, err
		}
		w.startPage()
		w.line("Sheet: " + s.name)
		err = x.sheet(rc, s.part, w)
		rc.Close()
		if err != nil {
			return nil, err
		}
		w.endLines()
		w.endPage(s.name)
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	if doc.Attachments, err = embedded(readEmbedded(ctx, a, embeddedParts(a, sheetRels...), opts)); err != nil {
		return nil, err
	}
	return doc, nil
}

type xlsxReader struct {
	a        *archive
	shared   []string
	formats  []string // cell style index → number format code
	date1904 bool
}

// sheet writes one worksheet's rows.
func (x *xlsxReader) sheet(r io.Reader, name string, w *textWriter) error {
	d := newXMLStream(r)
	var (
		cells            []string
		rowNum, col      int
		typ, style, ref  string
		val, inline, fml strings.Builder
		inV, inT, inF    bool
		inRPh            bool
		fShared, fSI     string // the cell formula's t="shared" and si
		masters          = map[string]sharedFormula{}
	)
	for {
		t, err := nextToken(d, name)
		if err != nil {
			return err
		}
		if t == nil {
			return w.err
		}
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "row":
				if n, err := strconv.Atoi(attr(e, "r")); err == nil {
					rowNum = n
				} else {
					rowNum++
				}
				cells, col = cells[:0], 0
			case "c":
				typ, style, ref = attr(e, "t"), attr(e, "s"), attr(e, "r")
				if c, ok := refColumn(ref); ok {
					col = c
				}
				val.Reset()
				inline.Reset()
				fml.Reset()
				fShared, fSI = "", ""
			case "v":
				inV = true
			case "f":
				inF = true
				fShared, fSI = attr(e, "t"), attr(e, "si")
			case "t":
				inT = true
			case "rPh":
				inRPh = true
			}
		case xml.CharData:
			if inV {
				val.Write(e)
			} else if inF {
				fml.Write(e)
			} else if inT && !inRPh {
				inline.Write(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "v":
				inV = false
			case "f":
				inF = false
			case "t":
				inT = false
			case "rPh":
				inRPh = false
			case "c":
				if fShared == "shared" && (fml.Len() > 0 || strings.TrimSpace(val.String()) == "") {
					// A shared formula's first cell holds its text; the
					// others only its index, their formula the first's
					// with its relative references moved along (worked
					// out only for a cell without a cached value, the
					// one that shows it).
					at := rowNum
					if r, ok := refRow(ref); ok {
						at = r
					}
					if fml.Len() > 0 {
						if len(masters) < maxSharedFormulas {
							masters[fSI] = sharedFormula{fml.String(), at, col}
						}
					} else if m, ok := masters[fSI]; ok {
						fml.WriteString(shiftFormula(m.text, at-m.row, col-m.col))
					}
				}
				v := x.cellText(typ, style, val.String(), inline.String())
				if strings.TrimSpace(val.String()) == "" && fml.Len() > 0 && (typ == "" || typ == "n") {
					// No cached number (openpyxl writes <v></v>): the
					// formula is all the file says. A string result
					// (t="str", Excel's =IF(…,"",…)) may well be empty.
					v = "=" + fml.String()
				}
				if v != "" && col < 1<<14 {
					for len(cells) <= col {
						cells = append(cells, "")
					}
					cells[col] = v
				}
				col++
			case "row":
				w.writeSheetRow(rowNum, cells)
			}
		}
	}
}

// sharedFormula is a shared formula's text and the cell it is written in.
type sharedFormula struct {
	text     string
	row, col int
}

// maxSharedFormulas bounds the shared formulas a sheet keeps; Excel
// numbers them from 0 and a sheet rarely has more than a few hundred.
const maxSharedFormulas = 1 << 16

// refRow parses the row of an A1-style reference.
func refRow(ref string) (int, bool) {
	i := strings.IndexFunc(ref, func(r rune) bool { return r >= '0' && r <= '9' })
	if i < 1 {
		return 0, false
	}
	n, err := strconv.Atoi(ref[i:])
	return n, err == nil
}

// shiftFormula moves a formula's relative A1 references by dr rows and dc
// columns, as a shared formula's other cells read it ("B3/C3" one row down
// is "B4/C4"); $-anchored parts, strings and function names stay. A
// reference moved off the sheet reads #REF!, as Excel shows it.
func shiftFormula(f string, dr, dc int) string {
	ident := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '$'
	}
	var b strings.Builder
	for i := 0; i < len(f); {
		c := f[i]
		if c == '"' || c == '\'' {
			// A string, or a quoted sheet name: copied whole.
			j := i + 1
			for j < len(f) && f[j] != c {
				j++
			}
			j = min(j+1, len(f))
			b.WriteString(f[i:j])
			i = j
			continue
		}
		if i > 0 && ident(f[i-1]) || !(c == '$' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			b.WriteByte(c)
			i++
			continue
		}
		// [$]letters[$]digits (no leading zero), not followed by a name's
		// characters or "(".
		j := i
		colAbs := j < len(f) && f[j] == '$'
		if colAbs {
			j++
		}
		ls := j
		for j < len(f) && j-ls < 3 && (f[j] >= 'A' && f[j] <= 'Z' || f[j] >= 'a' && f[j] <= 'z') {
			j++
		}
		le := j
		rowAbs := j < len(f) && f[j] == '$'
		if rowAbs {
			j++
		}
		ds := j
		for j < len(f) && j-ds < 7 && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		column, colOK := refColumn(strings.ToUpper(f[ls:le]))
		if !colOK || j == ds || f[ds] == '0' || j < len(f) && (ident(f[j]) || f[j] == '(') {
			// No reference: copy the word whole.
			k := i + 1
			for k < len(f) && ident(f[k]) {
				k++
			}
			b.WriteString(f[i:k])
			i = k
			continue
		}
		row, _ := strconv.Atoi(f[ds:j])
		if !colAbs {
			column += dc
		}
		if !rowAbs {
			row += dr
		}
		if column < 0 || column >= 1<<14 || row < 1 || row > 1<<20 {
			b.WriteString("#REF!")
			i = j
			continue
		}
		if colAbs {
			b.WriteByte('$')
		}
		b.WriteString(columnName(column))
		if rowAbs {
			b.WriteByte('$')
		}
		b.WriteString(strconv.Itoa(row))
		i = j
	}
	return b.String()
}

// refColumn parses the column of an A1-style reference.
func refColumn(ref string) (int, bool) {
	c := 0
	i := 0
	for ; i < len(ref) && ref[i] >= 'A' && ref[i] <= 'Z'; i++ {
		c = c*26 + int(ref[i]-'A'+1)
	}
	if i == 0 || c > 1<<14 {
		return 0, false
	}
	return c - 1, true
}

// cellText renders a cell as a spreadsheet shows it.
func (x *xlsxReader) cellText(typ, style, v, inline string) string {
	switch typ {
	case "s":
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 || i >= len(x.shared) {
			return ""
		}
		return x.shared[i]
	case "inlineStr":
		return inline
	case "str", "e", "d":
		return v
	case "b":
		if strings.TrimSpace(v) == "1" {
			return "TRUE"
		}
		return "FALSE"
	}
	if v == "" {
		return ""
	}
	code := ""
	if i, err := strconv.Atoi(style); err == nil && i >= 0 && i < len(x.formats) {
		code = x.formats[i]
	}
	return formatCell(v, code, x.date1904)
}

// readSharedStrings reads the workbook's string table; a string's phonetic
// runs (rPh) are not part of what is shown.
func readSharedStrings(r io.Reader, name string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var inT, inRPh bool
	d := newXMLStream(r)
	for {
		t, err := nextToken(d, name)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return out, nil
		}
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "si":
				cur.Reset()
			case "t":
				inT = true
			case "rPh":
				inRPh = true
			}
		case xml.CharData:
			if inT && !inRPh {
				cur.Write(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "si":
				out = append(out, cur.String())
			case "t":
				inT = false
			case "rPh":
				inRPh = false
			}
		}
	}
}

// builtinFormats are the number formats Excel knows by id alone.
var builtinFormats = map[int]string{
	1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00", 9: "0%", 10: "0.00%", 11: "0.00E+00",
	14: "yyyy-mm-dd", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM", 19: "h:mm:ss AM/PM",
	20: "h:mm", 21: "h:mm:ss", 22: "yyyy-mm-dd h:mm", 37: "#,##0", 38: "#,##0", 39: "#,##0.00", 40: "#,##0.00",
	45: "mm:ss", 46: "[h]:mm:ss", 47: "mm:ss.0", 48: "##0.0E+0", 49: "@",
}

// readCellFormats maps each cell style (cellXfs index) to its number
// format code.
func readCellFormats(b []byte) []string {
	custom := map[int]string{}
	var out []string
	inXfs := false
	d := newXMLDecoder(b)
	for {
		t, err := d.Token()
		if err != nil {
			return out
		}
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "numFmt":
				if id, err := strconv.Atoi(attr(e, "numFmtId")); err == nil {
					custom[id] = attr(e, "formatCode")
				}
			case "cellXfs":
				inXfs = true
			case "xf":
				if inXfs {
					id, _ := strconv.Atoi(attr(e, "numFmtId"))
					code, ok := custom[id]
					if !ok {
						code = builtinFormats[id]
					}
					out = append(out, code)
				}
			}
		case xml.EndElement:
			if e.Name.Local == "cellXfs" {
				inXfs = false
			}
		}
	}
}

// formatCell renders a stored number through a format code: the common
// cases a reader needs to see what the sheet shows (dates and times,
// percentages, fixed decimals, thousands separators, currency literals);
// anything else is the number as Excel's General format writes it.
func formatCell(v, code string, date1904 bool) string {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return v
	}
	section := code
	if i := strings.IndexByte(code, ';'); i >= 0 {
		section = code[:i]
	}
	plain := stripLiterals(section)
	switch {
	case code == "" || strings.EqualFold(code, "General") || code == "@":
		return generalNumber(f)
	case isDateCode(plain):
		return serialDate(f, plain, date1904)
	}
	prefix, suffix := literalAffixes(section)
	if strings.Contains(plain, "E+") || strings.Contains(plain, "e+") {
		return prefix + strconv.FormatFloat(f, 'E', decimals(plain), 64) + suffix
	}
	if strings.Contains(plain, "%") {
		return prefix + strconv.FormatFloat(f*100, 'f', decimals(plain), 64) + "%" + suffix
	}
	if !strings.ContainsAny(plain, "0#?") {
		return generalNumber(f)
	}
	s := strconv.FormatFloat(math.Abs(f), 'f', decimals(plain), 64)
	if strings.Contains(plain, ",") {
		s = thousands(s)
	}
	if f < 0 {
		if neg, ok := strings.CutPrefix(code, section+";"); ok && strings.Contains(neg, "(") {
			return prefix + "(" + s + ")" + suffix
		}
		s = "-" + s
	}
	return prefix + s + suffix
}

// generalNumber is Excel's General format: up to 15 significant digits.
func generalNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 15, 64)
}

// stripLiterals removes quoted text, escapes and bracketed sections
// ([Red], [$€-407]) from a format code, leaving its placeholders.
func stripLiterals(code string) string {
	var b strings.Builder
	for i := 0; i < len(code); i++ {
		switch c := code[i]; c {
		case '"':
			j := strings.IndexByte(code[i+1:], '"')
			if j < 0 {
				return b.String()
			}
			i += j + 1
		case '\\', '_', '*':
			i++
		case '[':
			j := strings.IndexByte(code[i:], ']')
			if j < 0 {
				return b.String()
			}
			if strings.HasPrefix(code[i:], "[h") || strings.HasPrefix(code[i:], "[m") || strings.HasPrefix(code[i:], "[s") {
				b.WriteString(code[i+1 : i+j])
			}
			i += j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// literalAffixes returns the literal text (a currency sign, a unit) before
// and after a format's placeholders.
func literalAffixes(code string) (prefix, suffix string) {
	var lit strings.Builder
	seenDigit := false
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case c == '"':
			j := strings.IndexByte(code[i+1:], '"')
			if j < 0 {
				i = len(code)
				continue
			}
			lit.WriteString(code[i+1 : i+1+j])
			i += j + 1
		case c == '\\' && i+1 < len(code):
			lit.WriteByte(code[i+1])
			i++
		case c == '_' || c == '*':
			i++
		case c == '[':
			j := strings.IndexByte(code[i:], ']')
			if j < 0 {
				i = len(code)
				continue
			}
			if in := code[i+1 : i+j]; strings.HasPrefix(in, "$") {
				sym, _, _ := strings.Cut(in[1:], "-")
				lit.WriteString(sym)
			}
			i += j
		case strings.IndexByte("0#?,.%Ee+-", c) >= 0:
			if !seenDigit {
				prefix = lit.String()
				lit.Reset()
			}
			seenDigit = true
		case c == ' ' || c == '(' || c == ')':
			lit.WriteByte(c)
		case c >= 0x80 || strings.IndexByte("$€£¥", c) >= 0:
			lit.WriteByte(c)
		}
	}
	if !seenDigit {
		return "", ""
	}
	return prefix, strings.TrimRight(lit.String(), " ")
}

// decimals counts the digit placeholders after a format's decimal point.
func decimals(plain string) int {
	i := strings.IndexByte(plain, '.')
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range plain[i+1:] {
		if c == '0' || c == '#' || c == '?' {
			n++
		} else if c != ',' {
			break
		}
	}
	return n
}

// thousands inserts commas into the integer part of a formatted number.
func thousands(s string) string {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

// isDateCode reports whether a format (literals stripped) shows a date or
// a time.
func isDateCode(plain string) bool {
	return strings.ContainsAny(strings.ToLower(plain), "ymdhs")
}

// serialDate renders a spreadsheet date serial as ISO 8601: the date, the
// time, or both, as the format has them; an ambiguous d/m order is never
// guessed.
func serialDate(f float64, plain string, date1904 bool) string {
	base := time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	if date1904 {
		base = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if f < 0 || f > 2958465 {
		return generalNumber(f)
	}
	t := base.Add(time.Duration(math.Round(f*86400)) * time.Second)
	lower := strings.ToLower(plain)
	hasDate := strings.ContainsAny(lower, "yd") || (strings.Contains(lower, "m") && !strings.ContainsAny(lower, "hs"))
	hasTime := strings.ContainsAny(lower, "hs")
	switch {
	case hasDate && hasTime:
		return t.Format("2006-01-02 15:04:05")
	case hasTime:
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02")
}
