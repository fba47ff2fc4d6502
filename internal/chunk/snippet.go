package chunk

import (
	"strings"
	"unicode/utf8"
)

// Bounds of a snippet, in characters: the context either side of a value
// and the value itself (a longer one keeps its start and end).
const (
	snippetContext = 30
	snippetValue   = 80
)

// Snippet is the document's text at the byte range [start, end) with up to
// 30 characters of context either side, within its line: what a reviewer
// reads to check a value (the label before a total, a normalised match as
// the document spells it). Runs of white space become one space; "…" marks
// where the line or a long value was cut. At most about 140 characters.
func Snippet(doc string, start, end int) string {
	start, end = max(0, min(start, len(doc))), max(0, min(end, len(doc)))
	if start > end {
		start, end = end, start
	}
	lo := start
	for n := 0; lo > 0 && n < snippetContext; n++ {
		r, size := utf8.DecodeLastRuneInString(doc[:lo])
		if r == '\n' {
			break
		}
		lo -= size
	}
	hi := end
	for n := 0; hi < len(doc) && n < snippetContext; n++ {
		r, size := utf8.DecodeRuneInString(doc[hi:])
		if r == '\n' {
			break
		}
		hi += size
	}
	// A cut context starts and ends at a word.
	if lo > 0 && doc[lo-1] != '\n' {
		if i := strings.IndexAny(doc[lo:start], " \t"); i >= 0 {
			lo += i + 1
		}
	}
	if hi < len(doc) && doc[hi] != '\n' {
		if i := strings.LastIndexAny(doc[end:hi], " \t"); i >= 0 {
			hi = end + i
		}
	}
	v := doc[start:end]
	if r := []rune(v); len(r) > snippetValue {
		v = string(r[:snippetValue/2]) + " … " + string(r[len(r)-snippetValue/2:])
	}
	out := strings.Join(strings.Fields(doc[lo:start]+v+doc[end:hi]), " ")
	if lo > 0 && doc[lo-1] != '\n' {
		out = "…" + out
	}
	if hi < len(doc) && doc[hi] != '\n' && doc[hi] != '\r' {
		out += "…"
	}
	return out
}
