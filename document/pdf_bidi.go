package document

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// Right-to-left text. The layout reads a line left to right, in visual
// order: a Hebrew or Arabic word comes out reversed, the words of an RTL
// line in reverse order. logicalLine puts a line back into logical order,
// as pdftotext does, by running the display half of the bidirectional
// algorithm (UAX #9) backwards, simplified to what a line of extracted
// text needs (numbers and their separators, neutrals by their neighbours,
// levels 0–2, reversal with marks kept after their letter, mirroring): the
// reordering of a line with levels 0–2 is its own inverse.

// isRTL reports whether r is a right-to-left letter (bidi class R or AL).
func isRTL(r rune) bool {
	if r < 0x590 {
		return false
	}
	p, _ := bidi.LookupRune(r)
	return p.Class() == bidi.R || p.Class() == bidi.AL
}

// hasRTL reports whether s holds a right-to-left letter. It allocates
// nothing, and skips bytes below 0xD6 at once: none of them starts a rune
// from U+0590 on, so Latin text is one comparison a byte.
func hasRTL(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < 0xD6 {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isRTL(r) {
			return true
		}
		i += n
	}
	return false
}

// arabicForms spells Arabic presentation forms (shaped letters and
// ligatures, U+FB50–FDFF and U+FE70–FEFE, which Chromium's and TCPDF's
// Unicode maps give for their glyphs) as the letters they stand for
// (NFKC), so words match their spelling elsewhere; a vowel sign's form
// drops the space or tatweel NFKC puts before it. Only these characters
// change: NFKC of the whole text would also rewrite "x²" and the like.
func arabicForms(s string) string {
	if strings.IndexByte(s, 0xEF) < 0 { // the lead byte of U+F000–FFFF
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 0xFB50 && r <= 0xFDFF || r >= 0xFE70 && r <= 0xFEFE {
			f := norm.NFKC.String(string(r))
			if r <= 0xFE7F {
				f = strings.TrimLeft(f, " \u0640")
			}
			b.WriteString(f)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// visualGlyph is a glyph's text as it reads left to right on the page: a
// right-to-left glyph of several letters (a lam-alef ligature) reversed,
// so that reversing its line puts it back.
func visualGlyph(s string) string {
	if len(s) < 4 || !hasRTL(s) { // one letter of two or three bytes
		return s
	}
	return reverseClusters(s)
}

// mark reports whether r is a combining mark (Hebrew points, Arabic
// vowels), which stays after its letter when a run is reversed (UAX #9 L3).
func mark(r rune) bool { return unicode.In(r, unicode.Mn, unicode.Me) }

// reverseClusters reverses s letter by letter, each letter with its marks.
func reverseClusters(s string) string {
	out := make([]byte, 0, len(s))
	for end := len(s); end > 0; {
		start := end
		for start > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:start])
			start -= n
			if !mark(r) {
				break
			}
		}
		out = append(out, s[start:end]...)
		end = start
	}
	return string(out)
}

// logicalLine turns a line read left to right into logical order; a line
// without a right-to-left letter comes back as it is, unallocated.
//
// The line's base direction is the direction most of its letters have
// (ties right to left). The rule of UAX #9 (the first letter's direction)
// needs the logical order being sought: in visual order the first letter
// is the leftmost in one reading and the rightmost in the other, and a
// Hebrew sentence that starts with a Latin name has a Latin letter at its
// right end. The page-wide majority pdftotext uses reads an English line
// quoting a Hebrew name backwards on a mostly Hebrew page.
//
// Numbers keep their digits' order. In a left-to-right line a number
// between right-to-left letters on both sides moves with them ("פרק 5,
// ספר" quoted in English), any other stays in place: visual order cannot
// tell which letters a number followed, and a number beside Latin text is
// the likelier reading. Brackets in reversed text are mirrored when that pairs
// them up and they were not: Chromium maps a mirrored bracket to the shape
// drawn, LibreOffice to the character written.
func logicalLine(s string) string {
	if !hasRTL(s) {
		return s
	}
	rs := []rune(s)
	n := len(rs)
	t := make([]bidi.Class, n)
	var letters [2]int // left to right, right to left
	for i, r := range rs {
		p, _ := bidi.LookupRune(r)
		switch c := p.Class(); c {
		case bidi.L, bidi.EN, bidi.ES, bidi.CS, bidi.ET, bidi.NSM:
			t[i] = c
		case bidi.R, bidi.AL:
			t[i] = bidi.R
		case bidi.AN:
			t[i] = bidi.EN // orders as EN does at these levels
		default:
			t[i] = bidi.ON
		}
		switch t[i] {
		case bidi.L:
			letters[0]++
		case bidi.R:
			letters[1]++
		}
	}
	base := bidi.L
	if letters[1] >= letters[0] {
		base = bidi.R
	}
	// W1: a mark takes its letter's class (marks follow their letter).
	for i := range t {
		if t[i] == bidi.NSM {
			t[i] = bidi.ON
			if i > 0 {
				t[i] = t[i-1]
			}
		}
	}
	// W4–W6: separators within numbers ("3.5", "1,000") and currency and
	// percent signs beside them join the number; others are neutral.
	for i := 1; i+1 < n; i++ {
		if (t[i] == bidi.ES || t[i] == bidi.CS) && t[i-1] == bidi.EN && t[i+1] == bidi.EN {
			t[i] = bidi.EN
		}
	}
	for i := 0; i < n; {
		j := i
		for j < n && t[j] == bidi.ET {
			j++
		}
		if j > i && (i > 0 && t[i-1] == bidi.EN || j < n && t[j] == bidi.EN) {
			for k := i; k < j; k++ {
				t[k] = bidi.EN
			}
		}
		i = max(j, i+1)
	}
	for i, c := range t {
		if c == bidi.ES || c == bidi.CS || c == bidi.ET {
			t[i] = bidi.ON
		}
	}
	if base == bidi.L {
		left := make([]bidi.Class, n) // the nearest letter's class on the left
		prev := base
		for i, c := range t {
			if c == bidi.L || c == bidi.R {
				prev = c
			}
			left[i] = prev
		}
		next := base
		for i := n - 1; i >= 0; i-- {
			switch c := t[i]; {
			case c == bidi.L || c == bidi.R:
				next = c
			case c == bidi.EN && (left[i] != bidi.R || next != bidi.R):
				t[i] = bidi.L
			}
		}
	}
	// A neutral inside a word whose letters all have one direction takes
	// it: the glyphs of "\ref{eq:1}" or "\usepackage{a4}" touch, so the
	// producer drew them as one run of that direction, though UAX #9
	// would resolve the backslash or brace by the letters beyond the
	// space. Sentence punctuation at a word's edge stays neutral: ".Linux"
	// in visual order is "Linux." ending a right-to-left sentence.
	wordNeutrals(rs, t)
	// N1–N2: neutrals between two of one direction take it, others the
	// base direction.
	for i := 0; i < n; {
		if t[i] != bidi.ON {
			i++
			continue
		}
		j := i
		for j < n && t[j] == bidi.ON {
			j++
		}
		// The classes either side (numbers count as RTL), or the base
		// direction at the line's ends.
		a, z := base, base
		if i > 0 {
			a = asStrong(t[i-1])
		}
		if j < n {
			z = asStrong(t[j])
		}
		d := base
		if a == z {
			d = a
		}
		for k := i; k < j; k++ {
			t[k] = d
		}
		i = j
	}
	// I1–I2: levels.
	lv := make([]int8, n)
	for i, c := range t {
		switch {
		case c == bidi.R:
			lv[i] = 1
		case c == bidi.EN || base == bidi.R:
			lv[i] = 2
		}
	}
	// L2–L3: reverse every run of level k or more, from the highest k to
	// 1, a letter and its marks as one.
	var units [][2]int // rune ranges: a letter and its marks
	for i := 0; i < n; i++ {
		if i > 0 && mark(rs[i]) {
			units[len(units)-1][1] = i + 1
			continue
		}
		units = append(units, [2]int{i, i + 1})
	}
	for k := int8(2); k >= 1; k-- {
		for i := 0; i < len(units); {
			if lv[units[i][0]] < k {
				i++
				continue
			}
			j := i
			for j < len(units) && lv[units[j][0]] >= k {
				j++
			}
			for a, b := i, j-1; a < b; a, b = a+1, b-1 {
				units[a], units[b] = units[b], units[a]
			}
			i = j
		}
	}
	// L4: mirror the brackets at odd levels if that pairs them up, or
	// else all brackets if that does (Pango draws a pair around a Hebrew
	// name in an English line at the Hebrew's level, mirrored).
	mirror, best := mirrorNone, unpaired(rs, units, lv, mirrorNone)
	for _, m := range []int{mirrorOdd, mirrorAll} {
		if u := unpaired(rs, units, lv, m); u < best {
			mirror, best = m, u
		}
	}
	out := make([]byte, 0, len(s))
	for _, u := range units {
		for _, r := range rs[u[0]:u[1]] {
			if p, _ := bidi.LookupRune(r); p.IsBracket() && mirrored(mirror, lv[u[0]]) {
				out = append(out, bidi.ReverseString(string(r))...)
				continue
			}
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out)
}

// wordNeutrals gives the neutrals (ON) of each word of rs (runes between
// spaces) whose letters are all left to right, or all right to left, that
// direction, except sentence punctuation at the word's ends; a word of
// Latin letters takes its digits along ("eq:1", "a4paper"), as UAX #9
// W7 does after a Latin letter.
func wordNeutrals(rs []rune, t []bidi.Class) {
	punct := func(k int) bool { return strings.ContainsRune(sentencePunct, rs[k]) }
	for i := 0; i < len(rs); {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		j, dir, mixed := i, bidi.ON, false
		for ; j < len(rs) && !unicode.IsSpace(rs[j]); j++ {
			if c := t[j]; c == bidi.L || c == bidi.R {
				mixed = mixed || dir != bidi.ON && dir != c
				dir = c
			}
		}
		if dir != bidi.ON && !mixed {
			a, z := i, j // the word without the punctuation at its ends
			for a < z && punct(a) {
				a++
			}
			for z > a && punct(z-1) {
				z--
			}
			for k := a; k < z; k++ {
				if t[k] == bidi.ON || dir == bidi.L && t[k] == bidi.EN {
					t[k] = dir
				}
			}
		}
		i = j
	}
}

// sentencePunct is punctuation that ends a sentence or clause, Latin and
// Arabic: beside a word of the other direction it belongs to the line.
const sentencePunct = ".,:;!?…،؛؟۔"

// asStrong is a resolved class as neutrals see it: a number as RTL (N1).
func asStrong(c bidi.Class) bidi.Class {
	if c == bidi.EN {
		return bidi.R
	}
	return c
}

// Which brackets logicalLine mirrors.
const (
	mirrorNone = iota
	mirrorOdd  // those at odd levels, as UAX #9 does
	mirrorAll
)

func mirrored(mode int, level int8) bool {
	return mode == mirrorAll || mode == mirrorOdd && level%2 == 1
}

// unpaired counts the brackets of the reordered line that close none
// opened before or stay open, with those mode says mirrored.
func unpaired(rs []rune, units [][2]int, lv []int8, mode int) int {
	open, bad := 0, 0
	for _, u := range units {
		for _, r := range rs[u[0]:u[1]] {
			p, _ := bidi.LookupRune(r)
			if !p.IsBracket() {
				continue
			}
			switch {
			case p.IsOpeningBracket() != mirrored(mode, lv[u[0]]):
				open++
			case open > 0:
				open--
			default:
				bad++
			}
		}
	}
	return open + bad
}
