package chunk

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunk is one part of a document: its text and [Start, End) offsets in
// the original, in characters (code points), and ByteStart/ByteEnd in bytes.
type Chunk struct {
	Index              int
	Start, End         int // characters
	ByteStart, ByteEnd int // bytes
	Text               string
}

// Split cuts doc into parts of at most size tokens (as Tokens counts them
// for family) whose neighbours share about overlap tokens. Cuts fall at
// the strongest boundary available near the target: a heading or blank
// line, then a line end, then a sentence end, then a space; never inside a
// word (a single word longer than size is the only part that may exceed
// it). A document within size is one part. size must be positive.
func Split(family, doc string, size, overlap int) []Chunk {
	return SplitAt(family, doc, size, overlap, nil)
}

// SplitAt is Split preferring breaks (byte offsets, sorted: where pages
// start) to every other boundary: a long paged document is cut between
// pages, and within a page only when a page alone exceeds size.
func SplitAt(family, doc string, size, overlap int, breaks []int) []Chunk {
	if size <= 0 {
		size = 1
	}
	if overlap < 0 || overlap >= size/2 {
		overlap = max(0, size/2-1)
	}
	var out []Chunk
	start := 0
	for start < len(doc) {
		end := cutPoint(family, doc, start, size, breaks)
		out = append(out, Chunk{Index: len(out), ByteStart: start, ByteEnd: end, Text: doc[start:end]})
		if end >= len(doc) {
			break
		}
		next := overlapStart(family, doc, start, end, overlap)
		if next <= start {
			next = end
		}
		start = next
	}
	// Character offsets in one pass over the document.
	offs := make([]int, 0, 2*len(out))
	for _, c := range out {
		offs = append(offs, c.ByteStart, c.ByteEnd)
	}
	chars := CharOffsets(doc, offs)
	for i := range out {
		out[i].Start, out[i].End = chars[2*i], chars[2*i+1]
	}
	return out
}

// cutPoint is the byte offset where the part starting at start ends.
func cutPoint(family, doc string, start, size int, breaks []int) int {
	// Find the furthest byte within size tokens; estimate by growing a
	// window, measuring at word boundaries only.
	limit := start
	tok := 0
	for i := start; i < len(doc); {
		j := nextWordEnd(doc, i)
		t := Tokens(family, doc[i:j])
		if tok+t > size && limit > start {
			break
		}
		tok += t
		limit = j
		i = j
	}
	if limit >= len(doc) {
		return len(doc)
	}
	// Prefer a page break anywhere past the start, then a structural
	// boundary in the last part of the window.
	if i, _ := slices.BinarySearch(breaks, limit+1); i > 0 && breaks[i-1] > start {
		return breaks[i-1]
	}
	floor := start + (limit-start)/2
	for _, find := range []func(string) int{lastParagraph, lastLine, lastSentence, lastSpace} {
		if k := find(doc[floor:limit]); k >= 0 {
			return floor + k
		}
	}
	return limit
}

// nextWordEnd is the end of the word at i plus the spaces after it.
func nextWordEnd(doc string, i int) int {
	j := i
	for j < len(doc) && !isSpaceAt(doc, j) {
		_, sz := utf8.DecodeRuneInString(doc[j:])
		j += sz
	}
	for j < len(doc) && isSpaceAt(doc, j) {
		_, sz := utf8.DecodeRuneInString(doc[j:])
		j += sz
	}
	if j == i {
		_, sz := utf8.DecodeRuneInString(doc[i:])
		j += sz
	}
	return j
}

func isSpaceAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r)
}

// The boundary finders return the offset just after the boundary in s, or
// -1: the part ends after the blank line, line end, sentence or space.
func lastParagraph(s string) int {
	best := -1
	if k := strings.LastIndex(s, "\n\n"); k >= 0 {
		best = k + 2
	}
	if k := strings.LastIndex(s, "\n#"); k >= 0 && k+1 > best {
		best = k + 1 // before a Markdown heading
	}
	return best
}

func lastLine(s string) int {
	if k := strings.LastIndexByte(s, '\n'); k >= 0 {
		return k + 1
	}
	return -1
}

func lastSentence(s string) int {
	best := -1
	for _, p := range []string{". ", "! ", "? ", ".\t", "。"} {
		if k := strings.LastIndex(s, p); k >= 0 && k+len(p) > best {
			best = k + len(p)
		}
	}
	return best
}

func lastSpace(s string) int {
	k := strings.LastIndexFunc(s, unicode.IsSpace)
	if k < 0 {
		return -1
	}
	_, sz := utf8.DecodeRuneInString(s[k:])
	return k + sz
}

// overlapStart is where the next part starts: about overlap tokens before
// end, moved forward to the start of a line, sentence or word.
func overlapStart(family, doc string, start, end, overlap int) int {
	if overlap == 0 {
		return end
	}
	i, tok := end, 0
	for i > start && tok < overlap {
		k := strings.LastIndexFunc(strings.TrimRightFunc(doc[start:i], unicode.IsSpace), unicode.IsSpace)
		if k < 0 {
			break
		}
		k += start
		_, sz := utf8.DecodeRuneInString(doc[k:])
		tok += Tokens(family, doc[k+sz:i])
		i = k + sz
	}
	if i <= start {
		return end
	}
	// Prefer starting at a line or sentence inside the overlap.
	seg := doc[i:end]
	for _, find := range []func(string) int{firstLine, firstSentence} {
		if k := find(seg); k >= 0 && i+k < end {
			return i + k
		}
	}
	return i
}

func firstLine(s string) int {
	if k := strings.IndexByte(s, '\n'); k >= 0 && k < len(s)/2 {
		return k + 1
	}
	return -1
}

func firstSentence(s string) int {
	if k := strings.Index(s, ". "); k >= 0 && k < len(s)/2 {
		return k + 2
	}
	return -1
}

// CharOffsets converts byte offsets into doc to character (code point)
// offsets, in one pass however the offsets are ordered.
func CharOffsets(doc string, byteOffs []int) []int {
	idx := make([]int, len(byteOffs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return byteOffs[a] - byteOffs[b] })
	out := make([]int, len(byteOffs))
	pos, chars := 0, 0
	for _, i := range idx {
		b := min(max(byteOffs[i], 0), len(doc))
		chars += utf8.RuneCountInString(doc[pos:b])
		pos = b
		out[i] = chars
	}
	return out
}
