package chunk

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/extractq/extractq/llm"
)

// Match kinds of llm.Source.
const (
	MatchExact      = "exact"
	MatchNormalized = "normalized"
)

// Grounding is where the leaves of a value were found.
type Grounding struct {
	Sources    map[string]llm.Source
	Ungrounded []string
}

// Ground locates every string and number leaf of v in doc. origin maps a
// leaf's pointer to the chunk that gave it (absent: chunk 0), and chunks
// give their byte ranges: a leaf is looked for in its chunk first, then
// anywhere. Strings match exactly, then with case and whitespace
// normalised; numbers match a number written in the text with the same
// value (1,234.50 for 1234.5). Within one object, numbers are looked for
// from the line of the object's first grounded string onwards, so that a
// line item's quantity is found on the item's own line.
func Ground(doc string, v any, origin map[string]int, chunks []Chunk) Grounding {
	g := &grounder{doc: doc, origin: origin, chunks: chunks, out: Grounding{Sources: map[string]llm.Source{}}}
	g.walk("", v, -1)
	offs := make([]int, 0, 2*len(g.found))
	for _, f := range g.found {
		offs = append(offs, f.start, f.end)
	}
	chars := CharOffsets(doc, offs)
	for i, f := range g.found {
		g.out.Sources[f.ptr] = llm.Source{Start: chars[2*i], End: chars[2*i+1], Chunk: f.chunk, Match: f.match, Snippet: Snippet(doc, f.start, f.end)}
	}
	slices.Sort(g.out.Ungrounded)
	return g.out
}

type found struct {
	ptr        string
	start, end int // bytes
	chunk      int
	match      string
}

type grounder struct {
	doc    string
	origin map[string]int
	chunks []Chunk
	found  []found
	out    Grounding
}

// walk grounds the leaves under ptr; hint is a byte offset to search from
// first (-1: none).
func (g *grounder) walk(ptr string, v any, hint int) {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		if hint < 0 {
			hint = g.anchor(ptr, x, keys)
		}
		// Strings first: they anchor the object's numbers.
		for _, k := range keys {
			if s, ok := x[k].(string); ok {
				if f, ok := g.locate(ptr+"/"+escape(k), s, false, hint); ok && hint < 0 {
					hint = lineStart(g.doc, f)
				}
			}
		}
		for _, k := range keys {
			if _, ok := x[k].(string); !ok {
				g.walk(ptr+"/"+escape(k), x[k], hint)
			}
		}
	case []any:
		for i, e := range x {
			g.walk(ptr+"/"+strconv.Itoa(i), e, -1)
		}
	case string:
		g.locate(ptr, x, false, hint)
	case json.Number:
		g.locate(ptr, string(x), true, hint)
	}
}

// maxAnchorTries bounds the occurrences of one string tried as an
// object's line.
const maxAnchorTries = 64

// anchor is the byte offset of the line, within the chunk that gave the
// object, that states the most of the object's own strings and numbers
// (the first such line), or -1 when no line states two of them. An item
// whose description repeats another item's is then grounded on its own
// line, found through its other fields.
func (g *grounder) anchor(ptr string, obj map[string]any, keys []string) int {
	var strs, nums []string
	for _, k := range keys {
		switch v := obj[k].(type) {
		case string:
			if strings.TrimSpace(v) != "" {
				strs = append(strs, v)
			}
		case json.Number:
			nums = append(nums, string(v))
		}
	}
	if len(strs) == 0 || len(strs)+len(nums) < 2 {
		return -1
	}
	lo, hi := 0, len(g.doc)
	if c, ok := g.origin[ptr+"/"+escape(firstString(obj, keys))]; ok && c >= 0 && c < len(g.chunks) {
		lo, hi = g.chunks[c].ByteStart, g.chunks[c].ByteEnd
	}
	best, bestN := -1, 1
	tried := map[int]bool{}
	for _, s := range strs {
		for from, n := lo, 0; from < hi && n < maxAnchorTries; n++ {
			i, _, _, ok := findText(g.doc[from:hi], s)
			if !ok {
				break
			}
			ls := lineStart(g.doc, from+i)
			from += i + 1
			if tried[ls] {
				continue
			}
			tried[ls] = true
			le := strings.IndexByte(g.doc[ls:], '\n')
			if le < 0 {
				le = len(g.doc) - ls
			}
			line, count := g.doc[ls:ls+le], 0
			for _, t := range strs {
				if _, _, _, ok := findText(line, t); ok {
					count++
				}
			}
			for _, t := range nums {
				if _, _, _, ok := findNumber(line, t); ok {
					count++
				}
			}
			if count > bestN || count == bestN && best >= 0 && ls < best {
				best, bestN = ls, count
			}
		}
	}
	return best
}

func firstString(obj map[string]any, keys []string) string {
	for _, k := range keys {
		if _, ok := obj[k].(string); ok {
			return k
		}
	}
	return ""
}

// locate finds one leaf and records it; it returns its byte start.
func (g *grounder) locate(ptr, val string, number bool, hint int) (int, bool) {
	if strings.TrimSpace(val) == "" {
		return 0, false
	}
	c := g.origin[ptr]
	lo, hi := 0, len(g.doc)
	if c >= 0 && c < len(g.chunks) {
		lo, hi = g.chunks[c].ByteStart, g.chunks[c].ByteEnd
	}
	var ranges [][2]int
	if hint >= lo && hint < hi {
		ranges = append(ranges, [2]int{hint, hi})
	}
	ranges = append(ranges, [2]int{lo, hi}, [2]int{0, len(g.doc)})
	for _, r := range ranges {
		var s, e int
		var m string
		var ok bool
		if number {
			s, e, m, ok = findNumber(g.doc[r[0]:r[1]], val)
		} else {
			s, e, m, ok = findText(g.doc[r[0]:r[1]], val)
		}
		if ok {
			g.found = append(g.found, found{ptr: ptr, start: r[0] + s, end: r[0] + e, chunk: c, match: m})
			return r[0] + s, true
		}
	}
	g.out.Ungrounded = append(g.out.Ungrounded, ptr)
	return 0, false
}

func lineStart(doc string, i int) int {
	return strings.LastIndexByte(doc[:i], '\n') + 1
}

// findText finds val in s exactly, else ignoring case and collapsing
// whitespace; it returns byte offsets into s.
func findText(s, val string) (start, end int, match string, ok bool) {
	if i := strings.Index(s, val); i >= 0 {
		return i, i + len(val), MatchExact, true
	}
	words := strings.Fields(val)
	if len(words) == 0 {
		return 0, 0, "", false
	}
	// Normalised: each word case-insensitively, any whitespace between.
	// ASCII-only lower-casing keeps byte offsets the same as s's.
	first := asciiLower(words[0])
	ls := asciiLower(s)
	for from := 0; from < len(ls); {
		i := strings.Index(ls[from:], first)
		if i < 0 {
			break
		}
		i += from
		j := i + len(first)
		okAll := true
		for _, w := range words[1:] {
			k := j
			for k < len(ls) && isSpaceByte(ls[k]) {
				k++
			}
			if k == j || !strings.HasPrefix(ls[k:], asciiLower(w)) {
				okAll = false
				break
			}
			j = k + len(w)
		}
		if okAll {
			return i, j, MatchNormalized, true
		}
		from = i + 1
	}
	return 0, 0, "", false
}

// asciiLower lower-cases ASCII letters only, keeping byte offsets.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// findNumber finds a number written in s whose value is val's: the same
// text (exact), or another format of it (normalized): thousands
// separators, trailing zeros, a leading currency sign.
func findNumber(s, val string) (start, end int, match string, ok bool) {
	want, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return 0, 0, "", false
	}
	for i := 0; i < len(s); {
		c := s[i]
		startsNum := c >= '0' && c <= '9' || c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'
		glued := i > 0 && (isWordByte(s[i-1]) || s[i-1] == '.' || s[i-1] == ',' || s[i-1] == '-' && i > 1 && isWordByte(s[i-2]))
		if !startsNum || glued {
			_, sz := utf8.DecodeRuneInString(s[i:])
			i += sz
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || (s[j] == ',' || s[j] == '.') && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
			j++
		}
		if j < len(s) && isWordByte(s[j]) {
			i = j
			continue // part of a word such as AB-12x
		}
		tok := s[i:j]
		if f, err := strconv.ParseFloat(strings.ReplaceAll(tok, ",", ""), 64); err == nil && f == want {
			if tok == val {
				return i, j, MatchExact, true
			}
			return i, j, MatchNormalized, true
		}
		i = j
	}
	return 0, 0, "", false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= utf8.RuneSelf && unicode.IsLetter(rune(c))
}
