package document

import (
	"strconv"
	"strings"
)

// numLevel is one level of a list definition: its number format, in
// WordprocessingML's names ("decimal", "lowerLetter", "bullet", …), its
// level text, "%1." placing the numbers of levels 1 to 9, and the number
// of its first item; style is the paragraph style linked to the level
// (a .docx's w:pStyle), whose paragraphs are at that level.
type numLevel struct {
	format, text, style string
	start               int
}

// listCounters counts the items of Word lists, per list and per level:
// the .docx reader keys them by numId, the .doc reader by list format
// override, which is what a numId becomes in a .doc.
type listCounters map[string][]int

// marker returns the list marker of the next item at level lvl of the
// list key, whose levels are given ("-", "1.", "a)", "1.2."), advancing
// its counter: an item resets the counters of the levels below it. A
// level numbered "none" with no text shows nothing, though it counts: it
// is how Word and LibreOffice tie headings to an outline without numbers.
func (lc listCounters) marker(key string, levels []numLevel, lvl int) string {
	lvl = max(0, min(lvl, 8))
	c := lc[key]
	for len(c) <= lvl {
		c = append(c, 0)
	}
	c[lvl]++
	for i := lvl + 1; i < len(c); i++ {
		c[i] = 0
	}
	lc[key] = c
	indent := strings.Repeat("  ", lvl)
	if lvl >= len(levels) {
		return indent + "-"
	}
	l := levels[lvl]
	if l.format == "none" && l.text == "" {
		return ""
	}
	switch l.format {
	case "bullet", "", "none":
		return indent + "-"
	}
	text := l.text
	if text == "" {
		text = "%" + strconv.Itoa(lvl+1) + "."
	}
	for i := 0; i <= lvl && i < 9; i++ {
		f, start := "decimal", 1
		if i < len(levels) {
			f, start = levels[i].format, levels[i].start
		}
		n := start + max(c[i], 1) - 1
		text = strings.ReplaceAll(text, "%"+strconv.Itoa(i+1), formatNumber(n, f))
	}
	return indent + text
}

// formatNumber renders a list counter in a WordprocessingML number format.
func formatNumber(n int, format string) string {
	if n < 1 { // a list may start at 0: letters and roman numerals cannot say it
		return strconv.Itoa(n)
	}
	switch format {
	case "lowerLetter":
		return strings.ToLower(columnName(n - 1))
	case "upperLetter":
		return columnName(n - 1)
	case "lowerRoman":
		return roman(n)
	case "upperRoman":
		return strings.ToUpper(roman(n))
	}
	return strconv.Itoa(n)
}
