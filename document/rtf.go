package document

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

func init() {
	Register(Format{
		Name:       "rtf",
		MediaType:  "application/rtf",
		Extensions: []string{".rtf"},
		Version:    "1",
		Match:      func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, []byte(`{\rtf`)) },
		Priority:   55,
		Decoder:    DecoderFunc(decodeRTF),
	})
}

// rtfSkipped are destinations whose content is not the document's text:
// tables of fonts, colours and styles, pictures, field instructions
// (their result is kept), embedded object data, revision tables.
var rtfSkipped = map[string]bool{
	"fonttbl": true, "colortbl": true, "stylesheet": true, "listtable": true, "listoverridetable": true,
	"revtbl": true, "rsidtbl": true, "generator": true, "pict": true, "objdata": true, "themedata": true,
	"colorschememapping": true, "datastore": true, "latentstyles": true, "xmlnstbl": true, "mmathPr": true,
	"filetbl": true, "pgdsctbl": true, "fldinst": true, "bkmkstart": true, "bkmkend": true, "datafield": true,
	"nonshppict": true, "shpinst": false, "sp": true, "template": true, "userprops": true, "docvar": true,
	"wgrffmtfilter": true, "xe": true, "tc": true, "atnid": true, "atnauthor": true, "annotation": true,
	"protusertbl": true, "passwordhash": true, "fchars": true, "lchars": true, "ftnsep": true, "ftnsepc": true,
	"aftnsep": true, "aftnsepc": true, "private": true, "pn": true, "pntxtb": true, "pntxta": true,
}

// rtfSpecial are control words that stand for one character.
var rtfSpecial = map[string]string{
	"tab": "\t", "line": "\n", "emdash": "—", "endash": "–", "lquote": "‘", "rquote": "’",
	"ldblquote": "“", "rdblquote": "”", "bullet": "•", "emspace": " ", "enspace": " ", "qmspace": " ",
}

// rtfState is what a group inherits from its parent.
type rtfState struct {
	dest string // "", "skip", "footnote", "header", "footer", or an info field
	uc   int    // characters to skip after \uN
}

// rtfReader turns RTF control words into paragraphs, list items, table
// rows, headers, footers and footnotes.
type rtfReader struct {
	w            *textWriter
	codepage     string
	para         strings.Builder
	pending      []byte // \'hh bytes awaiting decoding together (DBCS pairs)
	inTable      bool
	isList       bool
	inList       bool
	inRows       bool
	cells        []string
	headers      []string
	footers      []string
	notes        []string
	note         strings.Builder
	noteCount    int
	info         map[string]*strings.Builder
	skipChars    int
	stack        []rtfState
	state        rtfState
	headerFooter strings.Builder
}

// decodeRTF reads an RTF document: headers first, then the body
// (paragraphs, list items with their markers, tables as rows), footnotes
// cited as [n] and written after it, then the footers.
func decodeRTF(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	body := newTextWriter(opts.Limits)
	rr := &rtfReader{w: body, codepage: "windows-1252", info: map[string]*strings.Builder{}, state: rtfState{uc: 1}}
	if err := rr.parse(ctx, b); err != nil {
		return nil, err
	}
	rr.endPara()
	out := newTextWriter(opts.Limits)
	for _, h := range dedupe(rr.headers) {
		out.block(h)
	}
	text, _, err := body.text()
	if err != nil {
		return nil, err
	}
	out.block(text)
	for _, n := range rr.notes {
		out.block(n)
	}
	for _, f := range dedupe(rr.footers) {
		out.block(f)
	}
	doc := &Document{}
	if doc.Text, _, err = out.text(); err != nil {
		return nil, err
	}
	for k, v := range rr.info {
		s := collapseSpace(v.String())
		switch k {
		case "title":
			doc.Meta.Title = s
		case "author":
			doc.Meta.Author = s
		case "subject":
			doc.Meta.Subject = s
		}
	}
	return doc, nil
}

func dedupe(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (rr *rtfReader) parse(ctx context.Context, b []byte) error {
	for i := 0; i < len(b); {
		if i&0xFFFF == 0 {
			if err := context.Cause(ctx); err != nil {
				return err
			}
		}
		c := b[i]
		switch c {
		case '{':
			rr.flushBytes()
			if len(rr.stack) > 10000 {
				return fmt.Errorf("%w: groups nested deeper than 10000", ErrCorrupt)
			}
			rr.stack = append(rr.stack, rr.state)
			i++
			// {\*\dest …}: an optional destination, skipped unless known.
			if bytes.HasPrefix(b[i:], []byte(`\*`)) {
				j := i + 2
				for j < len(b) && (b[j] == ' ' || b[j] == '\r' || b[j] == '\n') {
					j++
				}
				word, _, _ := rtfWord(b, j)
				if !rtfKnownOptional(word) {
					rr.state.dest = "skip"
				}
				i += 2
			}
		case '}':
			rr.flushBytes()
			rr.endGroup()
			if len(rr.stack) == 0 {
				return nil
			}
			rr.state = rr.stack[len(rr.stack)-1]
			rr.stack = rr.stack[:len(rr.stack)-1]
			i++
		case '\\':
			word, param, n := rtfWord(b, i+1)
			i += 1 + n
			if word == "'" {
				if i+2 <= len(b) {
					if v, ok := unhex2(b[i], b[i+1]); ok {
						if rr.skipChars > 0 {
							rr.skipChars--
						} else {
							rr.pending = append(rr.pending, v)
						}
					}
					i += 2
				}
				continue
			}
			rr.flushBytes()
			rr.control(word, param)
		case '\r', '\n':
			i++
		default:
			rr.flushBytes()
			j := i
			for j < len(b) && b[j] != '{' && b[j] != '}' && b[j] != '\\' && b[j] != '\r' && b[j] != '\n' {
				j++
			}
			if chunk := b[i:j]; utf8.Valid(chunk) && !hasHighBytes(chunk) {
				rr.text(string(chunk))
			} else {
				// Raw 8-bit text is in the document's codepage.
				rr.pending = append(rr.pending, chunk...)
			}
			i = j
		}
	}
	return nil
}

// rtfKnownOptional are \* destinations whose text is content.
func rtfKnownOptional(word string) bool {
	return word == "shppict" || word == "fldrslt"
}

// rtfWord parses a control word and its numeric parameter at b[i:]: it
// returns the word, the parameter (nil when none) and the bytes consumed
// (a single trailing space belongs to the word).
func rtfWord(b []byte, i int) (string, *int, int) {
	start := i
	if i >= len(b) {
		return "", nil, 0
	}
	if !isLetter(b[i]) {
		return string(b[i]), nil, 1
	}
	for i < len(b) && isLetter(b[i]) && i-start < 32 {
		i++
	}
	word := string(b[start:i])
	var param *int
	ps := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-ps < 11 {
		i++
	}
	if i > ps && !(i == ps+1 && b[ps] == '-') {
		if v, err := strconv.Atoi(string(b[ps:i])); err == nil {
			param = &v
		}
	}
	if i < len(b) && b[i] == ' ' {
		i++
	}
	return word, param, i - start
}

func hasHighBytes(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (rr *rtfReader) control(word string, param *int) {
	p := func(def int) int {
		if param == nil {
			return def
		}
		return *param
	}
	if rtfSkipped[word] {
		rr.state.dest = "skip"
		return
	}
	switch word {
	case "ansicpg":
		rr.codepage = rtfCodepage(p(1252))
		return
	case "uc":
		rr.state.uc = max(0, min(p(1), 10))
		return
	case "u":
		v := p(0)
		if v < 0 {
			v += 65536
		}
		rr.text(string(rune(v)))
		rr.skipChars = rr.state.uc
		return
	case "footnote":
		rr.state.dest = "footnote"
		rr.note.Reset()
		return
	case "header", "headerl", "headerr", "headerf":
		rr.state.dest = "header"
		rr.headerFooter.Reset()
		return
	case "footer", "footerl", "footerr", "footerf":
		rr.state.dest = "footer"
		rr.headerFooter.Reset()
		return
	case "info":
		rr.state.dest = "info"
		return
	case "title", "author", "subject":
		if rr.state.dest == "info" {
			rr.state.dest = word
			rr.info[word] = &strings.Builder{}
			return
		}
	case "chftn":
		if rr.state.dest == "footnote" {
			return // the note repeats its own number
		}
		rr.noteCount++
		rr.text("[" + strconv.Itoa(rr.noteCount) + "]")
		return
	}
	if rr.state.dest == "skip" {
		return
	}
	if s, ok := rtfSpecial[word]; ok {
		rr.text(s)
		return
	}
	switch word {
	case "\\", "{", "}":
		rr.text(word)
	case "~":
		rr.text("\u00a0")
	case "_":
		rr.text("-")
	case "par", "sect", "page", "nestcell":
		rr.endPara()
	case "pard":
		rr.inTable, rr.isList = false, false
	case "intbl":
		rr.inTable = true
	case "ls", "listtext", "pntext", "ilvl":
		rr.isList = true
	case "cell":
		rr.endCell()
	case "row":
		rr.endRow()
	}
}

// rtfCodepage names the charset of an \ansicpg number.
func rtfCodepage(cp int) string {
	switch cp {
	case 932:
		return "shift_jis"
	case 936:
		return "gbk"
	case 949:
		return "euc-kr"
	case 950:
		return "big5"
	case 10000:
		return "macintosh"
	case 65001:
		return "utf-8"
	}
	if _, name := charset.Lookup("windows-" + strconv.Itoa(cp)); name != "" {
		return name
	}
	return "windows-1252"
}

// flushBytes decodes the \'hh bytes gathered so far in the codepage.
func (rr *rtfReader) flushBytes() {
	if len(rr.pending) == 0 {
		return
	}
	b := rr.pending
	rr.pending = nil
	rr.text(transcode(b, rr.codepage))
}

func (rr *rtfReader) text(s string) {
	for rr.skipChars > 0 && s != "" {
		// \uN is followed by uc fallback characters for old readers.
		_, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		rr.skipChars--
	}
	switch rr.state.dest {
	case "skip", "info":
	case "footnote":
		rr.note.WriteString(s)
	case "header", "footer":
		rr.headerFooter.WriteString(s)
	case "title", "author", "subject":
		rr.info[rr.state.dest].WriteString(s)
	default:
		rr.para.WriteString(s)
	}
}

// endGroup closes a header, footer or footnote when its group ends.
func (rr *rtfReader) endGroup() {
	parent := rtfState{}
	if n := len(rr.stack); n > 0 {
		parent = rr.stack[n-1]
	}
	if rr.state.dest == parent.dest {
		return
	}
	switch rr.state.dest {
	case "footnote":
		rr.notes = append(rr.notes, "["+strconv.Itoa(len(rr.notes)+1)+"] "+collapseSpace(rr.note.String()))
	case "header":
		rr.headers = append(rr.headers, rr.headerFooter.String())
	case "footer":
		rr.footers = append(rr.footers, rr.headerFooter.String())
	}
}

func (rr *rtfReader) endPara() {
	if rr.state.dest == "footnote" {
		rr.note.WriteString(" ")
		return
	}
	if rr.state.dest == "header" || rr.state.dest == "footer" {
		rr.headerFooter.WriteString("\n")
		return
	}
	if rr.state.dest != "" {
		return
	}
	s := strings.TrimSpace(rr.para.String())
	rr.para.Reset()
	if rr.inTable {
		if s != "" {
			rr.para.WriteString(s + " ")
		}
		return
	}
	if s == "" {
		return
	}
	if rr.inRows {
		rr.w.endLines()
		rr.inRows = false
	}
	if rr.isList {
		rr.w.line(listMarker(s))
		rr.inList = true
		return
	}
	if rr.inList {
		rr.w.endLines()
		rr.inList = false
	}
	rr.w.block(s)
}

// listMarker writes a list item's bullet as "-", like the other readers:
// RTF bullets are often a symbol font's private-use character.
func listMarker(s string) string {
	t := strings.TrimLeft(s, " \t")
	r, size := utf8.DecodeRuneInString(t)
	if r == '•' || r == '·' || r == '▪' || r == '◦' || (r >= 0xF000 && r <= 0xF0FF) {
		return "- " + strings.TrimLeft(t[size:], " \t")
	}
	return strings.Replace(s, "\t", " ", 1)
}

func (rr *rtfReader) endCell() {
	if rr.state.dest != "" {
		return
	}
	rr.cells = append(rr.cells, rr.para.String())
	rr.para.Reset()
}

func (rr *rtfReader) endRow() {
	if rr.state.dest != "" {
		return
	}
	if rr.inList {
		rr.w.endLines()
		rr.inList = false
	}
	rr.w.row("", rr.cells)
	rr.cells = nil
	rr.inRows = true
}
