package document

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The PDF layout layer: glyphs in page space → runs of text on one
// baseline → regions cut along white space (columns, then bands) → lines.
// Distances are in multiples of the font size, so the rules hold at any
// scale.

// run is a piece of one line: glyphs on one baseline with no wide gap. x0,
// x1 and yb (the baseline, growing down) are in reading space, where the
// text runs left to right; box is the run's place on the page.
type run struct {
	words    []word
	x0, x1   float64
	yb, size float64
	box      Box
}

// word is a word of a run and its extent along the baseline.
type word struct {
	s      string
	x0, x1 float64
}

func (r run) top() float64 { return r.yb - 0.8*r.size }
func (r run) bot() float64 { return r.yb + 0.25*r.size }

// leaf is a region no white space cuts further: lines of runs.
type leaf struct {
	lines  [][]run
	column bool // the region began a column (a vertical cut before it)
	x0, x1 float64
	y0, y1 float64
	box    Box
	size   float64
}

// toReading turns page-space (x, y, y up) into reading space for text
// whose baseline turns dir quarter turns: x along the baseline, y down.
func toReading(x, y float64, dir int) (float64, float64) {
	switch dir {
	case 1:
		return y, x
	case 2:
		return -x, y
	case 3:
		return -y, -x
	}
	return x, -y
}

// buildRuns joins glyphs (in content order, one direction) into runs.
// pageH turns page space into the top-left boxes of Block. Words are
// spelled in visual order, left to right, whatever order their glyphs are
// drawn in: cairo draws right-to-left text in logical order, each glyph
// left of the one before, Chromium and LibreOffice left to right.
// logicalLine turns a line back into logical order.
func buildRuns(gs []glyph, dir int, pageH float64) []run {
	var runs []run
	var cur *run
	var buf [32]piece
	pieces := buf[:0]  // the current word's glyphs
	var back bool      // some drawn left of the word
	var marks bool     // some are combining marks
	var accents bool   // some are spacing accents
	var markRun bool   // the run so far is marks alone
	var wordMarks bool // the word so far is marks alone
	var b strings.Builder
	var wordX0, wordX1, wordSize float64 // the current word's extent and largest glyph
	var runGlyphs int
	var last glyph
	endWord := func() {
		if len(pieces) > 0 && cur != nil {
			if back {
				slices.SortStableFunc(pieces, func(a, b piece) int { return cmp.Compare(a.x, b.x) })
			}
			b.Reset()
			if marks && slices.ContainsFunc(pieces, func(p piece) bool { return hasRTL(p.s) }) {
				spellMarks(&b, pieces)
			} else if accents {
				spellAccents(&b, pieces)
			} else {
				for _, p := range pieces {
					b.WriteString(p.s)
				}
			}
			if w := strings.TrimSpace(b.String()); w != "" {
				cur.words = append(cur.words, word{s: w, x0: wordX0, x1: wordX1})
			}
		}
		pieces, back, marks, accents, wordMarks = pieces[:0], false, false, false, false
	}
	flush := func() {
		if cur == nil {
			return
		}
		endWord()
		if len(cur.words) > 0 {
			runs = append(runs, *cur)
		}
		cur = nil
	}
	for i, g := range gs {
		x, yb := toReading(g.x, g.y, dir)
		x1 := x + g.w
		bx0, by0 := g.x, pageH-g.y-0.8*g.size
		bx1, by1 := g.x+g.w, pageH-g.y+0.25*g.size
		if dir != 0 {
			bx0, bx1 = min(bx0, g.x-g.size), max(bx1, g.x+g.size)
			by0, by1 = min(by0, pageH-g.y-g.w), max(by1, pageH-g.y+g.w)
		}
		left := false // drawn left of the word (or run) so far
		if cur != nil {
			// The same glyph drawn again just beside itself is fake bold.
			if g.s == last.s && math.Abs(g.x-last.x) < 0.1*g.size && math.Abs(g.y-last.y) < 0.1*g.size {
				continue
			}
			size := max(cur.size, g.size)
			x0Ref, x1Ref := cur.x0, cur.x1
			if len(pieces) > 0 {
				x0Ref, x1Ref = wordX0, wordX1
			}
			// Marks sit above or below the baseline (Arabic vowels by up
			// to a third of the font size): they keep to the run's, and a
			// run begun by a mark takes its first letter's.
			if d := math.Abs(yb - cur.yb); d <= size && (onlyMarks(g.s) || markRun) {
				if markRun && !onlyMarks(g.s) {
					cur.yb = yb
				}
				yb = cur.yb
			}
			gap := x - x1Ref
			switch {
			case g.w > 0 && x1 <= x0Ref+0.1*size:
				left, gap = true, x0Ref-x1
			case g.w <= 0.05*size && x >= x0Ref-0.3*size && x <= x1Ref:
				gap = 0 // a mark over the word, drawn after its letter
			case wordMarks && len(pieces) > 0 && gap < 0.3*size:
				gap = 0 // the letter under the marks just drawn
			case len(pieces) > 0 && (overAccent(last, g, dir) || overAccent(g, last, dir)):
				gap = 0 // TeX's \accent: an accent and its letter drawn over one another
			}
			// A superscript or subscript (a footnote mark, m²) is smaller,
			// off the baseline by less than the larger size's x-height, and
			// short: it stays in the run, as part of its word. A line of
			// small text beside a large glyph (an icon) is no script.
			shift := math.Abs(yb - cur.yb)
			script := shift <= 0.6*size && min(cur.size, g.size) <= 0.8*size
			if script && g.size > cur.size {
				script = runGlyphs <= maxScript // the run so far is the mark
			} else if script {
				script = shortScript(gs[i:], dir)
			}
			switch {
			case shift > 0.35*size && !script, gap < -0.6*size, gap > 1.2*size:
				flush()
			case gap > wordGapBetween(last.s, g.s)*size || strings.TrimSpace(g.s) == "" && g.w > wordGap*g.size:
				// A space glyph is a word break when it moves the pen by a
				// space: Ghostscript kerns with spaces shrunk to nothing by
				// a negative word spacing ("Inv" "estment").
				endWord()
			case len(pieces) > 0 && 0.8*g.size > wordSize:
				// A word of superscripts only is a mark before the text (a
				// footnote's number, "¹This"), not part of the next word.
				endWord()
			}
		}
		if cur == nil {
			cur = &run{x0: x, x1: x1, yb: yb, size: g.size, box: Box{bx0, by0, bx1, by1}}
			markRun = onlyMarks(g.s)
			runGlyphs = 0
		}
		runGlyphs++
		if g.size > cur.size { // the run began with a superscript: the line's baseline is the text's
			cur.yb = yb
		}
		markRun = markRun && onlyMarks(g.s)
		if strings.TrimSpace(g.s) != "" {
			if len(pieces) == 0 {
				wordX0, wordX1, wordSize = x, x1, 0
			}
			back = back || (left && len(pieces) > 0)
			marks = marks || onlyMarks(g.s)
			accents = accents || spacingAccent(g.s) != 0
			wordMarks = onlyMarks(g.s) && (len(pieces) == 0 || wordMarks)
			pieces = append(pieces, piece{visualGlyph(g.s), x, g.w})
			wordX0, wordX1 = min(wordX0, x), max(wordX1, x1)
			wordSize = max(wordSize, g.size)
		}
		cur.x0 = min(cur.x0, x)
		cur.x1 = max(cur.x1, x1)
		cur.size = max(cur.size, g.size)
		cur.box = Box{min(cur.box.X0, bx0), min(cur.box.Y0, by0), max(cur.box.X1, bx1), max(cur.box.Y1, by1)}
		last = g
	}
	flush()
	return runs
}

// piece is a glyph's text in a word, where it starts and its advance.
type piece struct {
	s    string
	x, w float64
}

// onlyMarks reports whether s is combining marks alone (Hebrew points,
// Arabic vowels, accents drawn as glyphs of their own).
func onlyMarks(s string) bool {
	if s == "" || s[0] < 0xCC { // runes below U+0300 are no marks
		return false
	}
	for _, r := range s {
		if !mark(r) {
			return false
		}
	}
	return true
}

// maxScript is the most glyphs a superscript or subscript has ("12", "th").
const maxScript = 3

// shortScript reports whether the glyphs from gs[0] on, on gs[0]'s baseline
// and in its size, are at most maxScript before other text follows.
func shortScript(gs []glyph, dir int) bool {
	_, yb0 := toReading(gs[0].x, gs[0].y, dir)
	for k, g := range gs {
		_, yb := toReading(g.x, g.y, dir)
		if math.Abs(yb-yb0) > 0.1*gs[0].size || math.Abs(g.size-gs[0].size) > 0.1*gs[0].size {
			return true
		}
		if k >= maxScript {
			return false
		}
	}
	return true
}

// spellMarks writes a right-to-left word's glyphs with each combining
// mark after its letter, whatever order they were drawn in: Chromium draws
// a letter's points before it (HarfBuzz's visual order), cairo after it.
// A mark's letter is the one starting nearest the mark's origin: shapers
// place a right-to-left mark's origin at its letter's left edge (Chromium
// and cairo within 1.4 points), where it may well fall inside the letter
// on its left.
func spellMarks(b *strings.Builder, pieces []piece) {
	owner := make([]int, len(pieces)) // a mark's letter; -1 for letters
	for i, p := range pieces {
		owner[i] = -1
		if !onlyMarks(p.s) {
			continue
		}
		best := math.Inf(1)
		for j, q := range pieces {
			if d := math.Abs(q.x - p.x); !onlyMarks(q.s) && d < best {
				owner[i], best = j, d
			}
		}
	}
	for i, p := range pieces {
		if owner[i] >= 0 {
			continue // written after its letter
		}
		b.WriteString(p.s)
		for k, q := range pieces {
			if owner[k] == i {
				b.WriteString(q.s)
			}
		}
	}
}

// wordGap is the gap between two glyphs, in font sizes, from which they
// belong to two words. TeX sets words apart by positioning alone (no space
// glyph), and a tight justified line shrinks its spaces to 0.18 of the
// font size; kerning within a word stays within a few hundredths.
// pdftotext breaks at 0.1.
const wordGap = 0.13

// rtlWordGap is wordGap beside a right-to-left letter. Arabic and Hebrew
// fonts have narrow spaces (0.17 of the font size in XB Niloofar, where
// TeX shrinks them to 0.11 in a justified line), and their letters sit
// closer within a word than Latin ones: joined Arabic letters touch. In
// lshort-persian, xepersian's and arabluatex's manuals and cjhebrew's,
// letters of a word stay under 0.08 apart, word spaces 0.11 or more.
const rtlWordGap = 0.09

// wordGapBetween is the word gap between glyphs (or words) a and b, side
// by side: rtlWordGap if either ends in a right-to-left letter or an Indic
// one where they meet (a's last rune, b's first; marks do not count), else
// wordGap. The letters of a word in an Indic script touch along their
// headline or are set at their advances (within a few thousandths of the
// font size, vowel signs over their letter); LibreOffice sets the spaces
// of a line in such a script in its own font and draws the script's
// glyphs from a fallback font at 0.1 of the font size apart across a
// space (pdftotext breaks there).
func wordGapBetween(a, b string) float64 {
	ra, _ := utf8.DecodeLastRuneInString(a)
	rb, _ := utf8.DecodeRuneInString(b)
	if isRTL(ra) || isRTL(rb) || (isIndic(ra) || isIndic(rb)) && !unicode.Is(unicode.M, rb) {
		return rtlWordGap
	}
	return wordGap
}

// isIndic reports whether r is of a Brahmic script of India or Sri Lanka
// (Devanagari to Sinhala, U+0900–0DFF, and Devanagari Extended).
func isIndic(r rune) bool {
	return r >= 0x900 && r <= 0xDFF || r >= 0xA8E0 && r <= 0xA8FF
}

func medianSize(runs []run) float64 {
	if len(runs) == 0 {
		return 10
	}
	s := make([]float64, len(runs))
	for i, r := range runs {
		s[i] = r.size
	}
	slices.Sort(s)
	return s[len(s)/2]
}

// cut splits runs along white space, recursively: first a gutter between
// columns of running text (every run on one side or the other), else the
// horizontal gaps between bands. Leaves come out in reading order.
func cut(runs []run, column bool, out []leaf, depth int) []leaf {
	if len(runs) == 0 {
		return out
	}
	if len(runs) > 1 && depth < 64 {
		med := medianSize(runs)
		if left, right, ok := columnCut(runs, med); ok {
			out = cut(left, true, out, depth+1)
			return cut(right, true, out, depth+1)
		}
		if bands := joinColumns(bandCut(runs, med), med); len(bands) > 1 {
			for i, band := range bands {
				out = cut(band, column && i == 0, out, depth+1)
			}
			return out
		}
	}
	return append(out, makeLeaf(runs, column))
}

// columnCut finds the widest vertical gutter no run crosses, and accepts it
// only between columns of running text (several words a run on both
// sides): a table's columns are not cut, so its rows stay rows.
func columnCut(runs []run, med float64) (left, right []run, ok bool) {
	byX := slices.Clone(runs)
	slices.SortFunc(byX, func(a, b run) int { return cmp.Compare(a.x0, b.x0) })
	best, bestW := 0.0, max(0.8*med, 6)
	reach := byX[0].x1
	for _, r := range byX[1:] {
		if w := r.x0 - reach; w > bestW {
			best, bestW = (reach+r.x0)/2, w
		}
		reach = max(reach, r.x1)
	}
	if best == 0 {
		return nil, nil, false
	}
	for _, r := range runs {
		if r.x1 <= best {
			left = append(left, r)
		} else {
			right = append(right, r)
		}
	}
	if !prose(left) || !prose(right) {
		return nil, nil, false
	}
	return left, right, true
}

// prose reports whether runs read as running text: at least two lines,
// three words a run on average.
func prose(runs []run) bool {
	words := 0
	for _, r := range runs {
		words += len(r.words)
	}
	return len(runs) >= 2 && words >= 3*len(runs)
}

// bandCut splits runs at horizontal gaps of half a line or more.
func bandCut(runs []run, med float64) [][]run {
	byY := slices.Clone(runs)
	slices.SortStableFunc(byY, func(a, b run) int { return cmp.Compare(a.top(), b.top()) })
	var bands [][]run
	start, reach := 0, byY[0].bot()
	for i := 1; i < len(byY); i++ {
		if byY[i].top()-reach > 0.5*med {
			bands = append(bands, byY[start:i])
			start = i
		}
		reach = max(reach, byY[i].bot())
	}
	return append(bands, byY[start:])
}

// joinColumns joins adjacent bands that are parts of the same two columns:
// a gap that happens to run across both columns at once (a heading's margin
// in one, a paragraph's in the other), or one column running on below the
// other's end, cut them into bands that would be read left, right, left,
// right. Bands join when their union has a gutter and each is two columns
// itself, one line across it (headings side by side) or running text on
// one side; a short band on one side (a heading in a column) joins when
// the band after it joins too.
func joinColumns(bands [][]run, med float64) [][]run {
	out := bands[:1:1]
	for i := 1; i < len(bands); i++ {
		last := out[len(out)-1]
		if u, ok := sameColumns(last, bands[i], med, true); ok {
			out[len(out)-1] = u
			continue
		}
		if i+1 < len(bands) {
			if u, ok := sameColumns(last, bands[i], med, false); ok {
				if u, ok := sameColumns(u, bands[i+1], med, true); ok {
					out[len(out)-1] = u
					i++
					continue
				}
			}
		}
		out = append(out, bands[i])
	}
	return out
}

// sameColumns joins bands a and b when their union has a gutter and each
// has two lines or more on both sides of it, is one line, or is running
// text on one side; strict false lets b be any text. Blocks of code with a
// comment beside their first line are none of these: they are not joined
// into columns.
func sameColumns(a, b []run, med float64, strict bool) ([]run, bool) {
	u := append(slices.Clone(a), b...)
	left, _, ok := columnCut(u, med)
	if !ok {
		return nil, false
	}
	gutter := math.Inf(-1)
	for _, r := range left {
		gutter = max(gutter, r.x1)
	}
	fits := func(runs []run) bool {
		l := 0
		for _, r := range runs {
			if r.x1 <= gutter {
				l++
			}
		}
		switch {
		case l == 0 || l == len(runs):
			return prose(runs) // on one side
		case !slices.ContainsFunc(runs, func(r run) bool { return math.Abs(r.yb-runs[0].yb) > 0.5*med }):
			return true // one line
		}
		return l >= 2 && len(runs)-l >= 2
	}
	if !fits(a) || strict && !fits(b) {
		return nil, false
	}
	return u, true
}

func makeLeaf(runs []run, column bool) leaf {
	l := leaf{column: column, x0: math.Inf(1), y0: math.Inf(1), x1: math.Inf(-1), y1: math.Inf(-1)}
	l.box = runs[0].box
	for _, r := range runs {
		l.x0, l.x1 = min(l.x0, r.x0), max(l.x1, r.x1)
		l.y0, l.y1 = min(l.y0, r.top()), max(l.y1, r.bot())
		l.box = Box{min(l.box.X0, r.box.X0), min(l.box.Y0, r.box.Y0), max(l.box.X1, r.box.X1), max(l.box.Y1, r.box.Y1)}
	}
	l.size = medianSize(runs)
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b run) int { return cmp.Compare(a.yb, b.yb) })
	for _, r := range sorted {
		n := len(l.lines)
		if n > 0 {
			first := l.lines[n-1][0]
			if math.Abs(r.yb-first.yb) < 0.5*min(r.size, first.size) {
				l.lines[n-1] = append(l.lines[n-1], r)
				continue
			}
		}
		l.lines = append(l.lines, []run{r})
	}
	for _, ln := range l.lines {
		slices.SortStableFunc(ln, func(a, b run) int { return cmp.Compare(a.x0, b.x0) })
	}
	return l
}

// cellGap is the gap between words of a line, in font sizes, from which
// they are table cells joined by " | " (the separator every reader of this
// package uses) even where no column of a table is found.
const cellGap = 2.0

// lineWords are a line's words left to right.
func lineWords(ln []run) []word {
	return appendLineWords(nil, ln)
}

// appendLineWords appends a line's words, left to right, to ws (a scratch
// slice reused across lines, where they need not outlive the line).
func appendLineWords(ws []word, ln []run) []word {
	n := len(ws)
	for _, r := range ln {
		ws = append(ws, r.words...)
	}
	slices.SortStableFunc(ws[n:], func(a, b word) int { return cmp.Compare(a.x0, b.x0) })
	return ws
}

// columns are a table's column edges: x positions where, in several lines,
// a word after a gap starts (a left-aligned column) or a word before a gap
// ends (a right-aligned one), and where lines end in a cell set apart by a
// gap (a right-aligned last column: a totals block's amounts).
type columns struct{ starts, ends, lastEnds []float64 }

func (c columns) empty() bool { return len(c.starts)+len(c.ends)+len(c.lastEnds) == 0 }

// edgeTol is how far apart (in points) edges still align.
const edgeTol = 1.5

// findColumns finds the column edges of a table among lines: edges shared
// by at least three lines and half of them. A table needs two column starts
// (three columns), or else edges after gaps of a font size or more (two
// of them, or one shared by four fifths of three lines or more): a
// numbered list ("1. First", "2. Second") shares one start edge and one
// end edge with a word space between, and stays text. Running text has
// none: its word edges fall anywhere.
func findColumns(lines [][]run, size float64) columns {
	if len(lines) < 3 {
		return columns{}
	}
	// Edges after word-sized gaps are weak evidence: in running text a few
	// lines share some by chance (seen in justified TeX paragraphs split as
	// "create an | overlayed symbol | from the | current font's C"), so
	// they must be shared by four fifths of the lines, where edges after
	// wide gaps need half.
	if c, _ := edgesAfter(lines, 0.15*size, 0.8); len(c.starts) >= 2 {
		return c
	}
	c, best := edgesAfter(lines, size, 0.5)
	if len(c.starts)+len(c.ends)+len(c.lastEnds) < 2 && 5*best < 4*len(lines) {
		return columns{}
	}
	return c
}

// edgesAfter finds the word edges that at least three lines and share of
// them share, counting only words set apart by gap or more; best is the
// most lines sharing one.
func edgesAfter(lines [][]run, gap, share float64) (c columns, best int) {
	type edge struct {
		x, other float64 // the edge, and the word's other edge
		line     int
	}
	var starts, ends, lasts []edge
	for i, ln := range lines {
		ws := lineWords(ln)
		cell := -1 // the line's last cell: the words after its last gap
		for j := 1; j < len(ws); j++ {
			if ws[j].x0-ws[j-1].x1 < gap || leader(ws[j].s) || leader(ws[j-1].s) {
				continue
			}
			starts = append(starts, edge{ws[j].x0, ws[j].x1, i})
			ends = append(ends, edge{ws[j-1].x1, ws[j-1].x0, i})
			cell = j
		}
		if cell > 0 {
			lasts = append(lasts, edge{ws[len(ws)-1].x1, ws[cell].x0, i})
		}
	}
	// aligned clusters edges; words of one width aligned on both edges
	// count once, as starts (equal numbers under a left-aligned heading do
	// not make a right-aligned column).
	aligned := func(es []edge, right bool) (xs []float64) {
		slices.SortFunc(es, func(a, b edge) int { return cmp.Compare(a.x, b.x) })
		for i := 0; i < len(es); {
			j := i
			seen := map[int]bool{}
			lo, hi := es[i].other, es[i].other
			for j < len(es) && es[j].x-es[i].x <= 2*edgeTol {
				seen[es[j].line] = true
				lo, hi = min(lo, es[j].other), max(hi, es[j].other)
				j++
			}
			if n := len(seen); (!right || hi-lo > 2*edgeTol) && n >= 3 && float64(n) >= share*float64(len(lines)) {
				xs = append(xs, es[i].x)
				best = max(best, n)
			}
			i = j
		}
		return xs
	}
	c.starts = aligned(starts, false)
	c.ends = aligned(ends, true)
	c.lastEnds = aligned(lasts, true)
	return c, best
}

// leader reports whether s is part of a dot leader (a table of contents'
// ". . . . 12"): its dots are evenly spaced on every line, like column
// edges, but never make cells.
func leader(s string) bool {
	return strings.Trim(s, ".·…") == ""
}

// splits reports whether a table's column edge falls between words p and
// w: w starts a column, p ends one, or w, a font size or more after p, ends
// one (a right-aligned number after a short left-aligned cell).
func (c columns) splits(p, w word, size float64) bool {
	if leader(p.s) || leader(w.s) {
		return false
	}
	for _, x := range c.starts {
		if w.x0 >= x-edgeTol && w.x0 <= x+3*edgeTol {
			return true
		}
	}
	for _, x := range c.ends {
		if p.x1 >= x-edgeTol && p.x1 <= x+3*edgeTol || math.Abs(w.x1-x) <= edgeTol && w.x0-p.x1 >= size {
			return true
		}
	}
	return false
}

// text renders the leaf's lines: words joined by a space, or by " | "
// across a table's gutter or a wide gap; a word hyphenated at a line's end
// joined (outside tables); a line with right-to-left text in logical order.
// single is the leaf being one row of a table whose rows are set apart by
// padding (tableColumns): its cells that wrap onto lines of their own are
// joined to the row (wrapped).
func (l leaf) text(cols columns, single bool) string {
	var b strings.Builder
	// Only a leaf that is one row of a table, of two lines or more and
	// short, may have wrapped cells; every other leaf (nearly all, a
	// table's row on one line too) writes its lines straight to b, without
	// splitting them into cells first.
	var lines []textLine
	if single && len(l.lines) >= 2 && len(l.lines) <= maxRowLines {
		lines = make([]textLine, len(l.lines))
		for i, ln := range l.lines {
			ws := lineWords(ln)
			row, last := l.row(ws, cols)
			lines[i] = textLine{ws: ws, row: row, last: last}
		}
		if cells := l.wrapped(lines, cols); cells != nil {
			// The row is the leaf's one line: no line before it, and none
			// with right-to-left text (wrapped checks).
			writeCells(&b, cells)
			return b.String()
		}
	}
	var scratch []word // one line's words at a time: they do not outlive it
	for i, ln := range l.lines {
		var t textLine
		if lines != nil {
			t = lines[i]
		} else {
			scratch = appendLineWords(scratch[:0], ln)
			t.ws = scratch
			t.row, t.last = l.row(t.ws, cols)
		}
		ws := t.ws
		// Lines without right-to-left text, most, go straight to b.
		first, rtl := ws[0].s, ""
		if slices.ContainsFunc(ws, func(w word) bool { return hasRTL(w.s) }) {
			var rb strings.Builder
			joined := joinTouching(ws, l.size)
			l.writeLine(&rb, joined, cols, t.row, cols.lastCell(joined, l.size))
			rtl = logicalLine(rb.String())
			first = rtl
		}
		if i > 0 {
			prev := b.String()
			if cols.empty() && hyphenated(prev, first) {
				b.Reset()
				b.WriteString(strings.TrimSuffix(strings.TrimSuffix(prev, "-"), "\u00ad"))
			} else {
				if cut, ok := strings.CutSuffix(prev, "\u00ad"); ok {
					b.Reset() // a soft hyphen where no word goes on is nothing
					b.WriteString(cut)
				}
				b.WriteByte('\n')
			}
		}
		if rtl != "" {
			b.WriteString(rtl)
		} else {
			l.writeLine(&b, ws, cols, t.row, t.last)
		}
	}
	return b.String()
}

// row reports whether a line (its words ws) is a table's row: it meets two
// of the table's column edges (or the one the table has), or ends in a
// cell at its right edge, from index last (cols.lastCell); any other line
// only splits at wide gaps.
func (l leaf) row(ws []word, cols columns) (row bool, last int) {
	last = cols.lastCell(ws, l.size)
	hits := 0
	for j := 1; j < len(ws); j++ {
		if ws[j].x0-ws[j-1].x1 >= 0.15*l.size && cols.splits(ws[j-1], ws[j], l.size) || j == last {
			hits++
		}
	}
	return hits > 0 && hits >= min(2, len(cols.starts)+len(cols.ends)+len(cols.lastEnds)) || last > 0, last
}

// textLine is a line of a leaf that may be one row of a table: its words,
// whether it is the table's row, and where its last cell starts (l.row).
type textLine struct {
	ws   []word
	row  bool
	last int
}

// wrapped joins the lines of cells that wrap to their row, in a leaf that
// is one row of a table (its rows set apart by padding): the leaf's one
// row line of three cells or more, and every other line of it, in the
// table's size and at most 1.6 font sizes from the next, falling in the
// row's cells (starting or ending where a cell does) or between two of
// them, in fewer than half as many cells as the row has. Cells set middle
// (WeasyPrint, Chromium) put as many lines above the row's line as below;
// cells set top, none above. A row with one filled cell, a totals line or
// a paragraph is a leaf of its own, or fails these, and stays apart.
// It returns the row's cells, its wrapped lines joined, or nil when the
// leaf is no such row. The cheap checks (one row line, in the middle or
// first) come before any line is split into cells.
func (l leaf) wrapped(lines []textLine, cols columns) [][]word {
	if len(lines) > maxRowLines {
		return nil
	}
	anchor := -1
	for i, ln := range lines {
		if ln.row {
			if anchor >= 0 {
				return nil
			}
			anchor = i
		}
	}
	if anchor < 0 || anchor > 0 && 2*anchor+1 != len(lines) || slices.ContainsFunc(lines[anchor].ws, func(w word) bool { return hasRTL(w.s) }) {
		return nil
	}
	first := l.cells(lines[anchor].ws, cols, true, lines[anchor].last)
	if len(first) < 3 {
		return nil
	}
	cells := newRowCells(first, anchor)
	for _, dir := range []int{-1, 1} {
		for i := anchor + dir; i >= 0 && i < len(lines); i += dir {
			fits := !slices.ContainsFunc(l.lines[i], func(r run) bool { return math.Abs(r.size-l.size) > 0.1*l.size }) &&
				!slices.ContainsFunc(lines[i].ws, func(w word) bool { return hasRTL(w.s) }) &&
				math.Abs(l.lines[i][0].yb-l.lines[i-dir][0].yb) <= 1.6*l.size
			if !fits || !cells.add(l.cells(lines[i].ws, cols, true, -1), i) {
				return nil
			}
		}
	}
	return cells.words()
}

// maxRowLines is the most lines a leaf that is one row of a table has (a
// cell wrapped onto six lines and the row's own): a longer one with a row
// among lines of two columns (a list of features set as two tables side by
// side in fontspec's manual) is no row.
const maxRowLines = 7

// rowCells are a table row's cells being rebuilt from its lines: each
// cell's x-range and its words tagged by line.
type rowCells []rowCell

type rowCell struct {
	x0, x1 float64
	ws     []word
	line   []int
}

func newRowCells(cells [][]word, line int) rowCells {
	var rc rowCells
	for _, c := range cells {
		rc = append(rc, rowCell{x0: c[0].x0, x1: c[len(c)-1].x1, ws: slices.Clone(c), line: slices.Repeat([]int{line}, len(c))})
	}
	return rc
}

// add places a line's chunks in the row's cells: a chunk overlapping one
// cell, aligned with it on its start or end, joins it; one in the gap
// between two cells or right of the last is a cell of its own (a cell
// empty on the row's line, or one set middle in the last column).
// It reports false, changing nothing, when a chunk overlaps two cells or
// overlaps one out of line.
func (rc *rowCells) add(chunks [][]word, line int) bool {
	if 2*len(chunks) > len(*rc) {
		return false // more than half the row's cells: a row of its own
	}
	next := slices.Clone(*rc)
	for _, c := range chunks {
		x0, x1 := c[0].x0, c[len(c)-1].x1
		over := -1
		for k, cell := range next {
			if x0 < cell.x1 && x1 > cell.x0 {
				if over >= 0 {
					return false
				}
				over = k
			}
		}
		if over < 0 {
			k, _ := slices.BinarySearchFunc(next, x0, func(cell rowCell, x float64) int { return cmp.Compare(cell.x0, x) })
			if k == 0 {
				return false // left of the row (TeX's code beside a row): no cell
			}
			next = slices.Insert(next, k, rowCell{x0: x0, x1: x1})
			over = k
		} else if cell := next[over]; math.Abs(x0-cell.x0) > 2*edgeTol && math.Abs(x1-cell.x1) > 2*edgeTol {
			return false
		}
		cell := &next[over]
		cell.x0, cell.x1 = min(cell.x0, x0), max(cell.x1, x1)
		cell.ws = append(slices.Clone(cell.ws), c...)
		cell.line = append(slices.Clone(cell.line), slices.Repeat([]int{line}, len(c))...)
	}
	*rc = next
	return true
}

// words are the cells' words, top line first; a word hyphenated at the end
// of a cell's line is joined to its rest.
func (rc rowCells) words() [][]word {
	out := make([][]word, len(rc))
	for k, cell := range rc {
		idx := make([]int, len(cell.ws))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(cell.line[a], cell.line[b]) })
		for n, i := range idx {
			w := cell.ws[i]
			if p := len(out[k]) - 1; n > 0 && cell.line[idx[n-1]] != cell.line[i] && hyphenated(out[k][p].s, w.s) {
				out[k][p].s = strings.TrimSuffix(strings.TrimSuffix(out[k][p].s, "-"), "\u00ad") + w.s
				continue
			}
			out[k] = append(out[k], w)
		}
	}
	return out
}

// joinTouching joins words no word gap apart. Producers that draw
// right-to-left text out of visual order (cairo) draw the space glyph
// between two words elsewhere, and a bracket drawn after the word it
// touches came out as a word of its own.
func joinTouching(ws []word, size float64) []word {
	out := []word{ws[0]}
	for _, w := range ws[1:] {
		if p := &out[len(out)-1]; w.x0-p.x1 < wordGapBetween(p.s, w.s)*size {
			p.s += w.s
			p.x1 = max(p.x1, w.x1)
			continue
		}
		out = append(out, w)
	}
	return out
}

// cells splits a line's words left to right into cells: apart across a
// wide gap outside a justified line, a table's gutter on a row, and at the
// row's last cell from index last. writeLine writes them by the same rule.
func (l leaf) cells(ws []word, cols columns, row bool, last int) [][]word {
	wide := !l.justified(ws)
	var out [][]word
	for j, w := range ws {
		if j > 0 {
			p := ws[j-1]
			gap := w.x0 - p.x1
			if !(wide && gap >= cellGap*l.size && !leader(p.s) && !leader(w.s)) && !(row && (gap >= 0.15*l.size && cols.splits(p, w, l.size) || j == last)) {
				out[len(out)-1] = append(out[len(out)-1], w)
				continue
			}
		}
		out = append(out, []word{w})
	}
	return out
}

// writeLine writes a line's words left to right as writeCells writes its
// cells, without building them: " | " between two cells (by cells' rule,
// kept inline here: this runs for every word of every line), a space
// elsewhere.
func (l leaf) writeLine(b *strings.Builder, ws []word, cols columns, row bool, last int) {
	wide := !l.justified(ws)
	for j, w := range ws {
		if j > 0 {
			p := ws[j-1]
			gap := w.x0 - p.x1
			if (wide && gap >= cellGap*l.size && !leader(p.s) && !leader(w.s)) || (row && (gap >= 0.15*l.size && cols.splits(p, w, l.size) || j == last)) {
				b.WriteString(" | ")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(w.s)
	}
}

// writeCells writes cells joined by " | ", their words by a space.
func writeCells(b *strings.Builder, cells [][]word) {
	for k, c := range cells {
		if k > 0 {
			b.WriteString(" | ")
		}
		for j, w := range c {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w.s)
		}
	}
}

// lastCell is the index of the first word of a line's last cell when the
// line ends at a right edge of lastEnds and that cell follows a gap of a
// font size or more (no dot leader in it or before it); -1 otherwise.
func (c columns) lastCell(ws []word, size float64) int {
	if len(ws) < 2 || !slices.ContainsFunc(c.lastEnds, func(x float64) bool { return math.Abs(ws[len(ws)-1].x1-x) <= 2*edgeTol }) {
		return -1
	}
	for j := len(ws) - 1; j >= 1; j-- {
		if leader(ws[j-1].s) { // a table of contents' dot leader
			return -1
		}
		if ws[j].x0-ws[j-1].x1 >= size {
			return j
		}
	}
	return -1
}

// justified reports whether a line's words are spread evenly to the
// leaf's right edge: a justified line of a narrow column, whose few spaces
// may be wider than cellGap without making cells.
func (l leaf) justified(ws []word) bool {
	if len(ws) < 3 || math.Abs(ws[len(ws)-1].x1-l.x1) > edgeTol {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for j := 1; j < len(ws); j++ {
		lo, hi = min(lo, ws[j].x0-ws[j-1].x1), max(hi, ws[j].x0-ws[j-1].x1)
	}
	return hi-lo <= 0.1*l.size
}

// hyphenated reports whether prev ends in a word broken by a hyphen that
// next, starting in lower case, completes; after a soft hyphen (U+00AD,
// one a word processor marked as its own, as Word's ActualText does) a
// word in capitals goes on too.
func hyphenated(prev, next string) bool {
	var cut string
	soft := false
	switch {
	case strings.HasSuffix(prev, "-"):
		cut = strings.TrimSuffix(prev, "-")
	case strings.HasSuffix(prev, "\u00ad"):
		cut, soft = strings.TrimSuffix(prev, "\u00ad"), true
	default:
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(cut)
	after, _ := utf8.DecodeRuneInString(next)
	return unicode.IsLetter(before) && (unicode.IsLower(after) || soft && unicode.IsLetter(after))
}

// spacingAccents maps the spacing accents a font draws over a letter as
// a glyph of their own (TeX's \accent, in every font of the OT1 and OML
// encodings: "grave", "acute", "dieresis", "cedilla"…) to the combining
// marks they stand for, as poppler's TextOutputDev does. TeX's fonts name
// theirs (grave, circumflex, tilde: U+0060, U+02C6, U+02DC); an ASCII ^ or
// ~ over a letter is more likely something else (cmmi's vector arrow, read
// as ~ through its built-in encoding) and stays, as pdftotext keeps it.
var spacingAccents = map[rune]rune{
	'`': '\u0300', '´': '\u0301', 'ˆ': '\u0302', '˜': '\u0303',
	'¯': '\u0304', 'ˉ': '\u0304', '˘': '\u0306', '˙': '\u0307', '¨': '\u0308', '˚': '\u030A',
	'˝': '\u030B', 'ˇ': '\u030C', '¸': '\u0327', '˛': '\u0328',
}

// spacingAccent is the combining mark of s when s is one spacing accent,
// else 0.
func spacingAccent(s string) rune {
	if len(s) == 1 && s[0] != '`' || len(s) > 2 {
		return 0 // the common case, a letter: the accents are `, U+00A8-U+00B8 and U+02C6-U+02DD
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || n != len(s) {
		return 0
	}
	return spacingAccents[r]
}

// overAccent reports whether glyph a is a spacing accent drawn over
// letter b (in reading space, text turned dir): its middle lies within
// b's advance, on b's line (a capital's accent is raised by up to its
// x-height). Glyphs side by side never overlap so; an accent typed as
// text (`ls`, x^2) stays.
func overAccent(a, b glyph, dir int) bool {
	if spacingAccent(a.s) == 0 || b.w <= 0 || !oneLetter(b.s) {
		return false
	}
	ax, ay := toReading(a.x, a.y, dir)
	bx, by := toReading(b.x, b.y, dir)
	mid := ax + a.w/2
	return mid >= bx && mid <= bx+b.w && math.Abs(ay-by) <= 0.6*max(a.size, b.size)
}

// oneLetter reports whether s is one letter (not a spacing accent, some
// of which are modifier letters).
func oneLetter(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && n == len(s) && unicode.IsLetter(r) && spacingAccents[r] == 0
}

// spellAccents writes a left-to-right word's glyphs with each accent drawn
// over a letter (before or after it, TeX draws it first) as that letter's
// combining mark, composed where Unicode has the letter (NFC: "è", "ç");
// a dotless i or j under an accent above is the letter (TeX's \"\i).
// Accents over no letter are written where they are.
func spellAccents(b *strings.Builder, pieces []piece) {
	var buf [32]int
	owner := buf[:0] // an accent's letter; -1 for others
	attached := false
	for i, p := range pieces {
		owner = append(owner, -1)
		if spacingAccent(p.s) == 0 {
			continue
		}
		mid := p.x + p.w/2
		best := math.Inf(1)
		for _, j := range [2]int{i - 1, i + 1} {
			if j < 0 || j >= len(pieces) {
				continue
			}
			q := pieces[j]
			if q.w <= 0 || !oneLetter(q.s) || mid < q.x || mid > q.x+q.w {
				continue
			}
			if d := math.Abs(q.x + q.w/2 - mid); d < best {
				owner[i], best = j, d
				attached = true
			}
		}
	}
	if !attached {
		for _, p := range pieces {
			b.WriteString(p.s)
		}
		return
	}
	var w strings.Builder
	for i, p := range pieces {
		if owner[i] >= 0 {
			continue // written after its letter
		}
		s := p.s
		for k, q := range pieces {
			if owner[k] != i {
				continue
			}
			m := spacingAccent(q.s)
			if m != '\u0327' && m != '\u0328' { // above the letter
				switch s {
				case "ı":
					s = "i"
				case "ȷ":
					s = "j"
				}
			}
			s += string(m)
		}
		w.WriteString(s)
	}
	b.WriteString(norm.NFC.String(w.String()))
}
