package jsonx

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Limits that keep Find linear and bounded on hostile or huge input.
const (
	// MaxInput is how much of a text Find looks at; the rest is ignored.
	MaxInput = 8 << 20
	// MaxCandidates is the most candidates Find returns.
	MaxCandidates = 64
	// workFactor bounds the bytes parsed in total to workFactor×len(text)
	// (plus workSlack), however many starts turn out not to be JSON.
	workFactor = 4
	workSlack  = 64 << 10
)

// Candidate groups, in order of preference.
const (
	groupFenced = iota
	groupProse
	groupReasoning
)

// Find returns every JSON object or array found in a model's answer, each
// repaired according to the policy.
//
// It looks inside ``` fences (also an unterminated fence of a truncated
// answer), in prose around them, and inside <think>/<thinking>/<reasoning>
// blocks. Candidates are ordered by preference and, within a group, by
// position: fenced values first, then values in prose, then values inside
// reasoning blocks (a draft in a model's reasoning is the last resort). A
// value inside a string (`"{\"a\":1}"`) or with escaped quotes is unescaped
// once.
//
// Every returned JSON is valid (json.Valid). With PolicyOff only values that
// needed no repair are returned. Find never decides validity against a schema.
func Find(text string, policy Policy) []Candidate {
	if len(text) > MaxInput {
		text = text[:MaxInput]
	}
	f := finder{text: text, strict: policy == PolicyOff, budget: workFactor*len(text) + workSlack}
	for _, s := range splitReasoning(text) {
		f.scanSpan(s.lo, s.hi, s.reasoning)
	}
	sort.SliceStable(f.found, func(i, j int) bool { return f.found[i].group < f.found[j].group })
	out := make([]Candidate, len(f.found))
	for i, c := range f.found {
		out[i] = c.Candidate
	}
	return out
}

type finder struct {
	text   string
	strict bool
	budget int
	found  []found
}

type found struct {
	Candidate
	group int
}

func (f *finder) full() bool { return f.budget <= 0 || len(f.found) >= MaxCandidates }

type span struct {
	lo, hi    int
	reasoning bool
}

// reasoningTags are the blocks in which models think aloud.
var reasoningTags = [...]struct{ open, close string }{
	{"<think>", "</think>"},
	{"<thinking>", "</thinking>"},
	{"<reasoning>", "</reasoning>"},
}

// splitReasoning cuts text into answer spans and reasoning spans. An
// unclosed block runs to the end (the answer was cut off while thinking); a
// closing tag without an opening one (templates that strip "<think>") makes
// everything before it reasoning.
func splitReasoning(text string) []span {
	var spans []span
	// next[t] caches where tag t next opens at or after i (-1: never again),
	// so that many blocks do not make the search quadratic.
	var next [len(reasoningTags)]int
	for t, tag := range reasoningTags {
		next[t] = strings.Index(text, tag.open)
	}
	i := 0
	firstOpen := len(text)
	for _, k := range next {
		if k >= 0 && k < firstOpen {
			firstOpen = k
		}
	}
	for _, t := range reasoningTags {
		if k := strings.Index(text[:firstOpen], t.close); k >= 0 && (i == 0 || k < i) {
			i = k + len(t.close)
			spans = append(spans[:0], span{0, k, true})
		}
	}
	for i < len(text) {
		at, tag := -1, 0
		for t := range reasoningTags {
			if next[t] >= 0 && next[t] < i {
				if k := strings.Index(text[i:], reasoningTags[t].open); k >= 0 {
					next[t] = i + k
				} else {
					next[t] = -1
				}
			}
			if next[t] >= 0 && (at < 0 || next[t] < at) {
				at, tag = next[t], t
			}
		}
		if at < 0 {
			spans = append(spans, span{i, len(text), false})
			break
		}
		spans = append(spans, span{i, at, false})
		body := at + len(reasoningTags[tag].open)
		k := strings.Index(text[body:], reasoningTags[tag].close)
		if k < 0 {
			spans = append(spans, span{body, len(text), true})
			break
		}
		spans = append(spans, span{body, body + k, true})
		i = body + k + len(reasoningTags[tag].close)
	}
	return spans
}

// scanSpan finds fences in text[lo:hi] and scans them and the prose between.
func (f *finder) scanSpan(lo, hi int, reasoning bool) {
	group := func(g int) int {
		if reasoning {
			return groupReasoning
		}
		return g
	}
	i := lo
	for i < hi && !f.full() {
		o := fenceOpen(f.text, i, hi)
		if o < 0 {
			f.scanRegion(i, hi, group(groupProse), i == lo, false)
			return
		}
		f.scanRegion(i, o, group(groupProse), i == lo, false)
		j := o
		for j < hi && f.text[j] == '`' {
			j++
		}
		ticks := j - o
		for j < hi && (isIdent(f.text[j]) || f.text[j] == '-' || f.text[j] == '+') {
			j++ // language tag
		}
		k := j
		for k < hi && (f.text[k] == ' ' || f.text[k] == '\t') {
			k++
		}
		if k < hi && (f.text[k] == '\n' || f.text[k] == '\r') {
			j = k
		}
		end, next := hi, hi
		if c := strings.Index(f.text[j:hi], f.text[o:o+ticks]); c >= 0 {
			end, next = j+c, j+c+ticks
		}
		f.scanRegion(j, end, group(groupFenced), true, true)
		i = next
	}
}

// fenceOpen returns the position of the next ``` at the start of a line in
// text[i:hi], or -1.
func fenceOpen(text string, i, hi int) int {
	for i < hi {
		k := strings.Index(text[i:hi], "```")
		if k < 0 {
			return -1
		}
		at := i + k
		b := at - 1
		for b >= 0 && (text[b] == ' ' || text[b] == '\t') {
			b--
		}
		if b < 0 || text[b] == '\n' {
			return at
		}
		i = at + 3
		for i < hi && text[i] == '`' {
			i++
		}
	}
	return -1
}

// scanRegion finds candidates in text[lo:hi]. A value that opens the region
// (a fence, or the answer itself) is taken as it is; elsewhere a '{' or '['
// must look like JSON, so that "[1]" citations and "{name}" placeholders in
// prose are not taken.
func (f *finder) scanRegion(lo, hi int, group int, opening, fenced bool) {
	i := lo
	for i < hi && !f.full() {
		k := strings.IndexAny(f.text[i:hi], "{[")
		if k < 0 {
			return
		}
		at := i + k
		trusted := opening && strings.TrimSpace(f.text[lo:at]) == ""
		if !trusted && !f.looksLikeJSON(at, hi) {
			i = at + 1
			continue
		}
		c, end, ok := f.parseAt(at, hi, !trusted)
		if !ok {
			i = max(end, at+1)
			continue
		}
		c.Fenced = fenced
		c.Reasoning = group == groupReasoning
		f.found = append(f.found, found{c, group})
		i = c.End
	}
}

// parseAt parses the value starting at text[at], bounded by hi. It returns
// where the value ended even when the candidate is rejected, so that the
// scan does not re-read the inside of a rejected value.
func (f *finder) parseAt(at, hi int, prose bool) (Candidate, int, bool) {
	p := parser{src: f.text, pos: at, end: hi}
	start := at
	escapedJSON := escapedAt(f.text, at, hi)
	if escapedJSON {
		src, offsets := unescapeOnce(f.text, at, hi)
		f.budget -= len(src)
		p = parser{src: src, end: len(src), offsets: offsets}
		p.repairs = append(p.repairs, Repair{Kind: KindDoubleEncoded, Where: "@" + strconv.Itoa(at), Detail: "unescaped JSON written as a string"})
	}
	ok := p.parseValue()
	end := p.origin(p.pos)
	if escapedJSON {
		if start > 0 && f.text[start-1] == '"' && end < hi && f.text[end] == '"' {
			start, end = start-1, end+1
		}
	}
	f.budget -= end - at
	if !ok {
		// Nested beyond maxDepth: hostile or broken; skip the rest of the region.
		return Candidate{}, hi, false
	}
	if f.strict && len(p.repairs) > 0 {
		return Candidate{}, end, false
	}
	if prose && p.out[0] == '[' && (hasKind(p.repairs, KindUnquotedString) || citation.Match(p.out)) {
		// "[see above]", "[2024-01-05]" or "[3]" in prose is text, not JSON.
		return Candidate{}, at + 1, false
	}
	if !json.Valid(p.out) {
		return Candidate{}, end, false
	}
	return Candidate{JSON: p.out, Repairs: p.repairs, Start: start, End: end}, end, true
}

// looksLikeJSON is the gate for values in prose: an object must start with
// a key and a colon (or be empty), an array with a value.
func (f *finder) looksLikeJSON(at, hi int) bool {
	lim := min(hi, at+lookahead)
	p := parser{src: f.text, pos: at + 1, end: lim}
	p.skipSpace()
	if p.pos >= lim {
		return lim == hi // "{" at the very end: a truncated answer
	}
	c := f.text[p.pos]
	if f.text[at] == '{' {
		switch {
		case c == '}' || p.quoteLen(p.pos) > 0:
			return true
		case c == '\\':
			return escapedAt(f.text, at, lim)
		}
		return p.identThenColon(p.pos)
	}
	switch {
	case c == ']' || c == '{' || c == '[' || c == '-' || isDigit(c) || p.quoteLen(p.pos) > 0:
		return true
	case c == '\\':
		return escapedAt(f.text, at, lim)
	}
	j := p.pos
	for j < hi && isIdent(f.text[j]) {
		j++
	}
	lit, _ := literal(f.text[p.pos:j])
	return lit != ""
}

// escapedAt reports whether the value at text[at] is written with escaped
// quotes: `{\"a\": 1}`.
func escapedAt(text string, at, hi int) bool {
	i := at + 1
	for i < hi && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t') {
		i++
	}
	if i+1 < hi && text[i] == '\\' && text[i+1] == 'n' {
		// pretty-printed, then escaped: {\n  \"a\": 1}
		i += 2
		for i < hi && (text[i] == ' ' || text[i] == '\\' && i+1 < hi && text[i+1] == 't') {
			if text[i] == '\\' {
				i++
			}
			i++
		}
	}
	return i+1 < hi && text[i] == '\\' && text[i+1] == '"'
}

// unescapeOnce removes one level of string escaping from text[lo:hi]: \" -> ",
// \\ -> \, \n -> newline... It returns the result and, for each of its
// bytes, the position in text it came from.
func unescapeOnce(text string, lo, hi int) (string, []int) {
	var b strings.Builder
	b.Grow(hi - lo)
	offsets := make([]int, 0, hi-lo+1)
	i := lo
	for i < hi {
		c := text[i]
		if c == '\\' && i+1 < hi {
			var r byte
			switch text[i+1] {
			case '"', '\\', '/':
				r = text[i+1]
			case 'n':
				r = '\n'
			case 't':
				r = '\t'
			case 'r':
				r = '\r'
			}
			if r != 0 {
				b.WriteByte(r)
				offsets = append(offsets, i)
				i += 2
				continue
			}
		}
		if c == '"' {
			break // an unescaped quote ends the outer string
		}
		b.WriteByte(c)
		offsets = append(offsets, i)
		i++
	}
	// The final entry maps the end of the result.
	return b.String(), append(offsets, i)
}

// citation matches a lone bracketed integer, a reference marker in prose.
var citation = regexp.MustCompile(`^\[[0-9]+\]$`)

func hasKind(rs []Repair, kind string) bool {
	for _, r := range rs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
