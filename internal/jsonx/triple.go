package jsonx

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// tickMemo remembers one search for "```": from position from, bounded by
// end, the next one was at at (-1: none). Later searches from a position
// in [from, at] have the same answer, so a text full of backticks is not
// searched again and again.
type tickMemo struct {
	from, end, at int
	ok            bool
}

// ticksAt returns the position of the next "```" in src[i:end], or -1.
func (p *parser) ticksAt(i int) int {
	m := &p.ticks
	if m.ok && p.offsets == nil && m.end == p.end && m.from <= i && (m.at < 0 || m.at >= i) {
		return m.at
	}
	at := -1
	if k := strings.Index(p.src[i:p.end], "```"); k >= 0 {
		at = i + k
		p.scanned += k + 3
	} else {
		p.scanned += p.end - i
	}
	if p.offsets == nil {
		*m = tickMemo{from: i, end: p.end, at: at, ok: true}
	}
	return at
}

// codeStringAt reports whether the "```" at i opens a string rather than
// a code fence that ends the JSON: it stands where a value belongs (after
// ':', '[', '(' or an array's ','), and a closing "```" follows it, itself
// followed by a separator, a closer or the end.
func (p *parser) codeStringAt(i int) bool {
	b := i - 1
	for b >= 0 && i-b < lookahead && (p.src[b] == ' ' || p.src[b] == '\t' || p.src[b] == '\n' || p.src[b] == '\r') {
		b--
	}
	if b < 0 {
		return false
	}
	switch p.src[b] {
	case ':', '[', '(':
	case ',':
		if len(p.stack) == 0 || p.stack[len(p.stack)-1] == '{' {
			return false
		}
	default:
		return false
	}
	c := p.ticksAt(i + 3)
	if c < 0 {
		return false
	}
	for c < p.end && p.src[c] == '`' {
		c++
	}
	j, _ := p.skipBlank(c)
	return j >= p.end || strings.IndexByte(",}])", p.src[j]) >= 0
}

// tripleStr reads a string delimited by three double quotes, three single
// quotes or three backticks (Python and Markdown habits) at p.pos and writes
// it as one JSON string. It reports whether the string ran into the end of
// the input.
//
// The delimiters follow the text-block rule of Swift and Java: a line break
// right after the opening delimiter is not content; when the closing
// delimiter starts its own line, the line break before it is not content
// and its indentation is removed from every line (if every non-blank line
// has it). A run of more than three closing quotes ends the string with the
// last three: the others are content ("""say "hi"""" is `say "hi"`).
// Between triple quotes backslash escapes are read as in any string (not
// after a Python r prefix); between backticks (code) the text is verbatim,
// and a language tag on the opening line (```python) is dropped. Quotes,
// backslashes and line breaks inside are content: nothing is guessed, so
// the repair is not lossy unless the closing delimiter is missing.
func (p *parser) tripleStr(q byte) (truncated bool) {
	start := p.pos
	delim := p.src[start : start+3]
	code := q == '`'
	verbatim := code || p.raw // ``` and r""" keep backslashes as text
	p.raw = false
	i := start + 3
	if code {
		j := i + strings.IndexAny(p.src[i:p.end], "\r\n")
		if j > i && infoString(p.src[i:j]) {
			i = j // "```typescript main.ts": the fence's info string
		}
	}
	closeAt := -1
	if code {
		closeAt = p.ticksAt(i)
	} else {
		for j := i; j+2 < p.end; j++ {
			if p.src[j] == '\\' {
				j++
				continue
			}
			if p.src[j] == q && p.src[j+1] == q && p.src[j+2] == q {
				closeAt = j
				break
			}
		}
	}
	lo, hi, run := i, p.end, 0
	if closeAt >= 0 {
		k := closeAt + 3
		for k < p.end && p.src[k] == q {
			k++
		}
		run = k - closeAt
		hi = k - 3
	}
	switch {
	case strings.HasPrefix(p.src[lo:hi], "\r\n"):
		lo += 2
	case strings.HasPrefix(p.src[lo:hi], "\n"):
		lo++
	}
	indent := ""
	if run == 3 {
		b := closeAt
		for b > lo && (p.src[b-1] == ' ' || p.src[b-1] == '\t') {
			b--
		}
		switch {
		case b > lo && p.src[b-1] == '\n':
			hi = b - 1
			if hi > lo && p.src[hi-1] == '\r' {
				hi--
			}
		case b == lo && lo > i:
			hi = lo // only the closing line's indentation: an empty string
		}
	}
	if lo > i || closeAt >= 0 && hi < closeAt {
		// The text starts or ends on its own line: the indentation every
		// line shares is the JSON layout's, not the code's.
		indent = commonIndent(p.src[lo:hi])
	}
	p.note(KindTripleQuotes, start, "read "+delim+"…"+delim+" string")
	p.out = append(p.out, '"')
	end := p.end
	p.end = hi // escapes must not read past the content
	p.pos = lo
	bad := false
	for lineStart := true; p.pos < hi; {
		if lineStart && indent != "" && strings.HasPrefix(p.src[p.pos:hi], indent) {
			p.pos += len(indent)
		}
		lineStart = false
		if p.pos >= hi {
			break
		}
		switch c := p.src[p.pos]; {
		case c == '\\' && !verbatim:
			p.escape(rune(q))
		case c == '"':
			p.out = append(p.out, '\\', '"')
			p.pos++
		case c == '\\':
			p.out = append(p.out, '\\', '\\')
			p.pos++
		case c < 0x20:
			p.out = appendCtrl(p.out, c)
			lineStart = c == '\n'
			p.pos++
		case c < utf8.RuneSelf:
			p.out = append(p.out, c)
			p.pos++
		default:
			r, size := utf8.DecodeRuneInString(p.src[p.pos:hi])
			if r == utf8.RuneError && size == 1 {
				if !bad {
					bad = true
					p.lossy(KindInvalidUTF8, p.pos, "replaced invalid UTF-8 with U+FFFD")
				}
				p.out = append(p.out, "\uFFFD"...)
			} else {
				p.out = append(p.out, p.src[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
	p.end = end
	p.out = append(p.out, '"')
	if closeAt < 0 {
		p.pos = p.end
		p.lossy(KindCloseTruncated, p.end, "closed "+delim+" string")
		return true
	}
	p.pos = closeAt + run
	return false
}

// commonIndent returns the longest run of blanks every non-blank line of
// s starts with.
func commonIndent(s string) string {
	indent, first := "", true
	for len(s) > 0 {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		if strings.TrimSpace(line) == "" {
			continue
		}
		n := len(line) - len(strings.TrimLeft(line, " \t"))
		if first {
			indent, first = line[:n], false
			continue
		}
		k := 0
		for k < len(indent) && k < n && indent[k] == line[k] {
			k++
		}
		indent = indent[:k]
	}
	return indent
}

// infoString reports whether the rest of a code fence's opening line is
// its info string, not code: a language name ("python", "c++",
// "objective-c") and at most two words naming a file or an attribute
// ("main.ts", "src/app.go", `title="x"`).
func infoString(line string) bool {
	words := strings.Fields(line)
	if len(words) == 0 || len(words) > 3 || strings.TrimSpace(line) != line {
		return false
	}
	for i, w := range words {
		for k := 0; k < len(w); k++ {
			if c := w[k]; !isIdent(c) && strings.IndexByte("+-#./=\"'", c) < 0 {
				return false
			}
		}
		if i == 0 && (!isLetter(w[0]) || strings.ContainsAny(w, "/=\"'")) || i > 0 && !strings.ContainsAny(w, "./=") {
			return false
		}
	}
	return true
}

// textBlock applies the text-block rule of tripleStr to the backtick
// string just written at p.out[from:]: a line break after the opening
// backtick and the blank line before the closing one are layout, and so
// is the indentation every line shares when the text stands on its own
// lines.
func (p *parser) textBlock(from int) {
	var t string
	if json.Unmarshal(p.out[from:], &t) != nil {
		return
	}
	own := false
	if rest, ok := strings.CutPrefix(strings.TrimLeft(t, " \t"), "\n"); ok {
		t, own = rest, true
	}
	if i := strings.LastIndexByte(t, '\n'); i >= 0 && strings.TrimSpace(t[i:]) == "" {
		t, own = strings.TrimSuffix(t[:i], "\r"), true
	}
	if !own {
		return
	}
	if indent := commonIndent(t); indent != "" {
		lines := strings.Split(t, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, indent)
		}
		t = strings.Join(lines, "\n")
	}
	p.out = appendQuoted(p.out[:from], t)
}
