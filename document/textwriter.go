package document

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cellSep joins a table row's cells; shared with the PDF reader so every
// format's tables look alike to a model: one row per line.
const cellSep = " | "

// textWriter assembles a document's text block by block and records its
// pages, stopping at Limits.MaxText.
type textWriter struct {
	b         strings.Builder
	pages     []Page
	pageStart int
	inPage    bool
	max       int64
	err       error
}

func newTextWriter(lim Limits) *textWriter { return &textWriter{max: lim.withDefaults().MaxText} }

// block writes one paragraph-like block, trimmed, followed by a blank line;
// empty blocks are dropped.
func (w *textWriter) block(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	w.write(s)
	w.write("\n\n")
}

// line writes one line (a list item, a table row) without a blank line
// after it; end a run of lines with endLines.
func (w *textWriter) line(s string) {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	if strings.TrimSpace(s) == "" {
		return
	}
	w.write(s)
	w.write("\n")
}

// endLines ends a run of lines with a blank line.
func (w *textWriter) endLines() {
	t := w.b.String()
	if strings.HasSuffix(t, "\n") && !strings.HasSuffix(t, "\n\n") {
		w.write("\n")
	}
}

// row writes a table row: cells with their inner whitespace collapsed,
// joined by cellSep, trailing empty cells dropped.
func (w *textWriter) row(prefix string, cells []string) {
	for i := range cells {
		cells[i] = collapseSpace(cells[i])
	}
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	if len(cells) == 0 {
		return
	}
	w.line(prefix + strings.Join(cells, cellSep))
}

func (w *textWriter) write(s string) {
	if w.err != nil {
		return
	}
	// The text is promised UTF-8 whatever a reader hands in (a child's
	// error quoting its input, a name from an archive).
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if int64(w.b.Len()+len(s)) > w.max {
		w.err = fmt.Errorf("%w: more than %d bytes of text (Limits.MaxText)", ErrTooLarge, w.max)
		return
	}
	w.b.WriteString(s)
}

// startPage opens a page (a slide, a sheet, a chapter) at the current end
// of the text.
func (w *textWriter) startPage() {
	w.endPage("")
	w.pageStart, w.inPage = w.b.Len(), true
}

// pageBreak ends the page so far where the format records a page break
// (Word's last rendered break, LibreOffice's soft break): the text before
// the first break is page 1, from the document's start.
func (w *textWriter) pageBreak() {
	if !w.inPage {
		w.pageStart, w.inPage = 0, true
	}
	if len(strings.TrimSpace(w.b.String()[w.pageStart:])) == 0 {
		return // nothing on this page yet: two breaks in a row make one
	}
	w.startPage()
}

// endPage closes the open page with its label; the page's range excludes
// the blank line that separates it from the next.
func (w *textWriter) endPage(label string) {
	if !w.inPage {
		return
	}
	w.inPage = false
	end := len(strings.TrimRight(w.b.String(), "\n"))
	end = max(end, w.pageStart)
	w.pages = append(w.pages, Page{Number: len(w.pages) + 1, Start: w.pageStart, End: end, Label: label})
}

// text returns the text without its final blank lines, and the pages.
func (w *textWriter) text() (string, []Page, error) {
	w.endPage("")
	t := strings.TrimRight(w.b.String(), "\n")
	for i := range w.pages {
		w.pages[i].End = min(w.pages[i].End, len(t))
		w.pages[i].Start = min(w.pages[i].Start, w.pages[i].End)
	}
	return t, w.pages, w.err
}

// collapseSpace joins runs of whitespace (newlines included) into one
// space: a table cell or a heading is one line.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// columnName is a spreadsheet column's letters: 0 is A, 26 is AA.
func columnName(i int) string {
	var b []byte
	for i++; i > 0; i = (i - 1) / 26 {
		b = append([]byte{byte('A' + (i-1)%26)}, b...)
	}
	return string(b)
}

// writeSheetRow writes one spreadsheet row, prefixed by the A1-style
// reference of its first non-empty cell so a value can be cited by cell:
// "C5: 10 | 20". Cells are indexed by column from 0.
func (w *textWriter) writeSheetRow(rowNum int, cells []string) {
	first := 0
	for first < len(cells) && strings.TrimSpace(cells[first]) == "" {
		first++
	}
	if first == len(cells) {
		return
	}
	w.row(fmt.Sprintf("%s%d: ", columnName(first), rowNum), cells[first:])
}
