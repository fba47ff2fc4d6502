package jsonx

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/extractq/extractq/llm"
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

// Find returns every JSON object or array found in a model's answer, each
// repaired according to the policy.
//
// It looks inside ``` fences (also the unterminated fence of a truncated
// answer), in the prose around them and inside <think>, <thinking> and
// <reasoning> blocks. In prose a '{' or '[' must look like the start of JSON
// (a key and a colon, a value), so that "[1]" citations and "{name}"
// placeholders are not taken. A value written as a string (`"{\"a\":1}"`)
// or with escaped quotes is unescaped once. Objects separated only by commas
// or blank lines are also offered joined into one array, after themselves.
//
// Candidates are ordered by preference, and by position within a rank:
// fenced values, then values in prose, then values inside reasoning blocks
// (a draft in a model's reasoning is the last resort). At most MaxCandidates
// are returned, and work is bounded to a few passes over the text.
//
// Every returned JSON is valid (json.Valid) and compact. With PolicyOff only
// values that needed no repair are returned; any other policy repairs
// syntax. Find never decides validity against a schema.
func Find(text string, policy Policy) []Candidate {
	return FindWith(text, FindOptions{Policy: policy})
}

// FindOptions says what Find looks for.
type FindOptions struct {
	// Policy is the repair policy (see Find).
	Policy Policy
	// Scalars, when not zero, says that the schema's root may be a scalar
	// of these kinds: Find then also offers scalar candidates (see
	// ScalarFrom for where they come from and in which order). Zero means
	// objects and arrays only, as Find.
	Scalars ScalarKinds
}

// FindWith is Find with options. Scalar candidates come after the objects
// and arrays found in fences and prose, except a scalar that is the whole
// answer or the whole content of a fence (ScalarWhole), which ranks with
// them; candidates from reasoning blocks come last.
func FindWith(text string, opt FindOptions) []Candidate {
	if len(text) > MaxInput {
		text = text[:MaxInput]
	}
	f := finder{text: text, strict: opt.Policy == PolicyOff, budget: workFactor*len(text) + workSlack, wantFences: opt.Scalars != 0}
	var room [4]span // what most answers need, without an allocation
	spans := appendReasoning(room[:0], text)
	for _, s := range spans {
		f.scanSpan(s.lo, s.hi, s.reasoning)
	}
	if opt.Scalars != 0 {
		f.scalars(spans, opt.Scalars)
	}
	if len(f.found) > 1 { // sort.SliceStable allocates even for one
		sort.SliceStable(f.found, func(i, j int) bool { return rank(f.found[i]) < rank(f.found[j]) })
	}
	return f.found
}

// rank orders candidates by where they were found and, for scalars, by
// how they were found.
func rank(c Candidate) int {
	switch {
	case c.Reasoning:
		return 5
	case c.Scalar == ScalarLabeled:
		return 2
	case c.Scalar == ScalarSole:
		return 3
	case c.Scalar == ScalarText:
		return 4
	case c.Fenced:
		return 0
	}
	return 1
}

type finder struct {
	text   string
	strict bool
	budget int
	found  []Candidate
	ticks  tickMemo
	// fences lists the content of the fences found outside reasoning
	// blocks, for the scalar pass (when wantFences is set).
	fences     [][2]int
	wantFences bool
	// free is where the next parse writes its output: the room after the
	// candidates found so far, in one buffer sized from the text, so that
	// a candidate costs no allocation per doubling of its output. A
	// candidate's JSON is capped at its own length: appending to it
	// cannot reach the next one.
	free []byte
	// stack is the parsers' stack of open containers, reused.
	stack []byte
}

// maxOutBuffer bounds the buffer free starts with; a longer output grows
// past it as any slice does. Small, since a candidate's JSON keeps the
// buffer alive (a short value in a long prose answer).
const maxOutBuffer = 4 << 10

// startParse gives p the finder's output room and stack.
func (f *finder) startParse(p *parser) {
	if f.free == nil {
		f.free = make([]byte, 0, min(len(f.text)+len(f.text)/8+16, maxOutBuffer))
	}
	if f.stack == nil {
		f.stack = make([]byte, 0, 16)
	}
	p.out, p.stack = f.free[:0], f.stack[:0]
}

// endParse takes back the output room and stack of p, whose output
// stays a candidate's JSON when keep is set; it returns that JSON.
func (f *finder) endParse(p *parser, keep bool) []byte {
	f.stack = p.stack[:0]
	if !keep {
		f.free = p.out[:0]
		return nil
	}
	n := len(p.out)
	f.free = p.out[n:n]
	return p.out[:n:n]
}

func (f *finder) full() bool { return f.budget <= 0 || len(f.found) >= MaxCandidates }

type span struct {
	lo, hi    int
	reasoning bool
}

// reasoningTags are the blocks in which models think aloud; every tag
// starts with '<' (appendReasoning relies on it).
var reasoningTags = [...]struct{ open, close string }{
	{"<think>", "</think>"},
	{"<thinking>", "</thinking>"},
	{"<reasoning>", "</reasoning>"},
}

// splitReasoning cuts text into answer spans and reasoning spans. An
// unclosed block runs to the end (the answer was cut off while thinking); a
// closing tag without an opening one (templates that strip "<think>") makes
// everything before it reasoning.
func splitReasoning(text string) []span { return appendReasoning(nil, text) }

// appendReasoning is splitReasoning appending to spans. Every tag holds a
// '<': text without one (the usual answer) is one answer span, found by a
// single byte search instead of six substring searches (a thirtieth of
// evaluating a clean answer).
func appendReasoning(spans []span, text string) []span {
	if strings.IndexByte(text, '<') < 0 {
		if text == "" {
			return spans
		}
		return append(spans, span{0, len(text), false})
	}
	return appendTagged(spans, text)
}

// appendTagged is appendReasoning for text that may hold a tag.
func appendTagged(spans []span, text string) []span {
	// next[t] caches where tag t next opens at or after i (-1: never again),
	// so that many blocks do not make the search quadratic.
	var next [len(reasoningTags)]int
	for t, tag := range reasoningTags {
		next[t] = openTag(text, 0, tag.open)
	}
	i := 0
	firstOpen := len(text)
	for _, k := range next {
		if k >= 0 && k < firstOpen {
			firstOpen = k
		}
	}
	// A closing tag before any opening one: a template stripped "<think>".
	stray := -1
	for _, t := range reasoningTags {
		if k := strayClose(text[:firstOpen], t.close); k >= 0 && (stray < 0 || k < stray) {
			stray, i = k, k+len(t.close)
		}
	}
	if stray >= 0 {
		spans = append(spans, span{0, stray, true})
	}
	for i < len(text) {
		at, tag := -1, 0
		for t := range reasoningTags {
			if next[t] >= 0 && next[t] < i {
				next[t] = openTag(text, i, reasoningTags[t].open)
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

// strayClose returns the position of the first closing tag in text that
// ends its line (only blanks after it), or -1.
func strayClose(text, tag string) int {
	for i := 0; i < len(text); {
		k := strings.Index(text[i:], tag)
		if k < 0 {
			return -1
		}
		e := i + k + len(tag)
		for e < len(text) && (text[e] == ' ' || text[e] == '\t' || text[e] == '\r') {
			e++
		}
		if e >= len(text) || text[e] == '\n' {
			return i + k
		}
		i = e
	}
	return -1
}

// openTag returns the position of the next opening tag at or after i that
// starts a line (blanks allowed before it), or -1. A tag inside a sentence
// or a JSON string ("<think>" as a value) does not open a block.
func openTag(text string, i int, tag string) int {
	for i < len(text) {
		k := strings.Index(text[i:], tag)
		if k < 0 {
			return -1
		}
		at := i + k
		b := at - 1
		for b >= 0 && (text[b] == ' ' || text[b] == '\t' || text[b] == '\r') {
			b--
		}
		if b < 0 || text[b] == '\n' {
			return at
		}
		i = at + len(tag)
	}
	return -1
}

// scanSpan finds fences in text[lo:hi] and scans them and the prose between.
func (f *finder) scanSpan(lo, hi int, reasoning bool) {
	prose, fence := place{reasoning: reasoning}, place{fenced: true, reasoning: reasoning}
	i := lo
	for i < hi && !f.full() {
		o := fenceOpen(f.text, i, hi)
		if o < 0 {
			f.scanRegion(i, hi, i == lo, prose)
			return
		}
		f.scanRegion(i, o, i == lo, prose)
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
		if c := fenceClose(f.text, j, hi, f.text[o:o+ticks]); c >= 0 {
			end, next = c, c+ticks
		}
		if !reasoning && f.wantFences {
			f.fences = append(f.fences, [2]int{j, end})
		}
		f.scanRegion(j, end, true, fence)
		i = next
	}
}

// place says where a region of the text sits.
type place struct{ fenced, reasoning bool }

// fenceClose returns the position of the fence that closes one opened with
// ticks, searching text[i:hi], or -1. It must start a line or end one, so
// that backticks inside a JSON string ("use ```code```") do not close it.
// A ``` that stands where a JSON value belongs (after ':', '[' or ',' on
// its line) opens a code string inside the JSON: it and the ``` that
// closes it are skipped.
func fenceClose(text string, i, hi int, ticks string) int {
	for i < hi {
		k := strings.Index(text[i:hi], ticks)
		if k < 0 {
			return -1
		}
		at := i + k
		b := at - 1
		for b >= 0 && (text[b] == ' ' || text[b] == '\t') {
			b--
		}
		if next, ok := innerCode(text, b, at, hi); ok {
			i = next
			continue
		}
		e := at + len(ticks)
		for e < hi && (text[e] == ' ' || text[e] == '\t' || text[e] == '\r') {
			e++
		}
		if b < 0 || text[b] == '\n' || e >= hi || text[e] == '\n' {
			return at
		}
		i = at + len(ticks)
	}
	return -1
}

// innerCode reports whether the ``` at text[at] opens a code string inside
// JSON (text[b] is the last non-blank character before it on its line: a
// ':', '[' or ','), and returns where the ``` that closes it ends.
func innerCode(text string, b, at, hi int) (int, bool) {
	if b < 0 || (text[b] != ':' && text[b] != '[' && text[b] != ',') {
		return 0, false
	}
	e := at + 3
	for e < hi && text[e] == '`' {
		e++
	}
	c := strings.Index(text[e:hi], "```")
	if c < 0 {
		return 0, false
	}
	return e + c + 3, true
}

// fenceOpen returns the position of the next ``` at the start of a line in
// text[i:hi], or -1. A code string inside JSON ("code": ```…```) is
// skipped whole, so that its closing ``` does not open a fence.
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
		if next, ok := innerCode(text, b, at, hi); ok {
			i = next
			continue
		}
		i = at + 3
		for i < hi && text[i] == '`' {
			i++
		}
	}
	return -1
}

// scanRegion finds candidates in text[lo:hi]. A value that opens the region
// (opening: a fence, or the answer itself) is taken as it is; elsewhere a
// '{' or '[' must look like JSON.
func (f *finder) scanRegion(lo, hi int, opening bool, at place) {
	first := len(f.found)
	defer f.joinRuns(first)
	i := lo
	for i < hi && !f.full() {
		k := strings.IndexAny(f.text[i:hi], "{[")
		if k < 0 {
			return
		}
		start := i + k
		trusted := opening && strings.TrimSpace(f.text[lo:start]) == ""
		if !trusted && !f.looksLikeJSON(start, hi) {
			i = start + 1
			continue
		}
		c, end, ok := f.parseAt(i, start, hi, !trusted)
		if !ok {
			i = max(end, start+1)
			continue
		}
		c.Fenced, c.Reasoning = at.fenced, at.reasoning
		f.found = append(f.found, c)
		i = c.End
	}
}

// joinRuns follows every run of objects separated only by commas and
// blanks (found from index first on) with one more candidate: the run as an
// array. A model asked for a list sometimes forgets the brackets.
func (f *finder) joinRuns(first int) {
	if f.strict || len(f.found)-first < 2 {
		return
	}
	region := append([]Candidate(nil), f.found[first:]...)
	f.found = f.found[:first]
	for i := 0; i < len(region); {
		j := i + 1
		for j < len(region) && region[j].JSON[0] == '{' && region[j-1].JSON[0] == '{' &&
			strings.Trim(f.text[region[j-1].End:region[j].Start], ", \t\r\n") == "" {
			j++
		}
		f.found = append(f.found, region[i:j]...)
		if j-i >= 2 && !f.full() {
			f.found = append(f.found, joined(region[i:j]))
		}
		i = j
	}
}

// joined makes one array candidate of a run of candidates.
func joined(run []Candidate) Candidate {
	last := run[len(run)-1]
	c := Candidate{Start: run[0].Start, End: last.End, Fenced: run[0].Fenced, Reasoning: run[0].Reasoning}
	c.JSON = append(c.JSON, '[')
	for k, r := range run {
		if k > 0 {
			c.JSON = append(c.JSON, ',')
		}
		c.JSON = append(c.JSON, r.JSON...)
		c.Repairs = append(c.Repairs, r.Repairs...)
	}
	c.JSON = append(c.JSON, ']')
	c.Repairs = append(c.Repairs, llm.Repair{Kind: KindJoinedValues, Where: "@" + strconv.Itoa(c.Start),
		Detail: "joined " + strconv.Itoa(len(run)) + " objects into an array"})
	c.Joined = true
	return c
}

// parseAt parses the value starting at text[at], bounded by hi; text before
// lo belongs to earlier candidates. It returns where the value ended even
// when the candidate is rejected, so that the scan does not re-read the
// inside of a rejected value.
func (f *finder) parseAt(lo, at, hi int, prose bool) (Candidate, int, bool) {
	if c, end, ok := f.plainAt(at, hi, prose); ok {
		return c, end, true
	}
	p := parser{src: f.text, pos: at, end: hi, ticks: f.ticks}
	start := at
	escapedJSON := escapedAt(f.text, at, hi)
	if escapedJSON {
		src, offsets := unescapeOnce(f.text, at, hi)
		f.budget -= len(src)
		p = parser{src: src, end: len(src), offsets: offsets}
		p.repairs = append(p.repairs, llm.Repair{Kind: KindDoubleEncoded, Where: "@" + strconv.Itoa(at), Detail: "unescaped JSON written as a string"})
	}
	f.startParse(&p)
	ok := p.value(ctxTop) && !p.tooDeep
	f.budget -= p.scanned
	if !escapedJSON {
		f.ticks = p.ticks
	}
	end := p.origin(p.pos)
	if escapedJSON {
		if start > lo && f.text[start-1] == '"' && end < hi && f.text[end] == '"' {
			start, end = start-1, end+1
		}
	}
	f.budget -= end - at
	if !ok {
		// Nested beyond maxDepth: hostile or broken; skip the rest of the region.
		f.endParse(&p, false)
		return Candidate{}, hi, false
	}
	if f.strict && len(p.repairs) > 0 {
		f.endParse(&p, false)
		return Candidate{}, end, false
	}
	if prose && p.out[0] == '[' && (p.bareTop || citation.Match(p.out)) {
		// "[see above]", "[2024-01-05]" or "[3]" in prose is text, not JSON.
		f.endParse(&p, false)
		return Candidate{}, at + 1, false
	}
	if !Valid(p.out) {
		f.endParse(&p, false)
		return Candidate{}, end, false
	}
	return Candidate{JSON: f.endParse(&p, true), Repairs: p.result(), Start: start, End: end}, end, true
}

// copyPlain lets parseAt take plainAt's shortcut; a test turns it off to
// compare the shortcut with the parser.
var copyPlain = true

// plainMaxDepth bounds the nesting plainAt takes, well within the
// parser's maxDepth.
const plainMaxDepth = 32

// plainAt is parseAt's shortcut for the usual answer of a JSON, strict or
// tools mode: an object or array at text[at] written as strict, compact
// JSON (no white space outside strings, no escapes or control characters
// in them, valid UTF-8, not nested deeply), which the parser would copy
// unchanged and unrepaired. It returns the candidate parseAt returns for
// it, with ok set, or ok false for anything else, which parseAt parses.
// Parsing it took a fifth of the engine's work on a clean fleet document;
// TestPlainMatchesParser and FuzzPlain check that the result is the
// parser's.
func (f *finder) plainAt(at, hi int, prose bool) (Candidate, int, bool) {
	if !copyPlain {
		return Candidate{}, 0, false
	}
	end, ascii := plainEnd(f.text, at, hi)
	if end < 0 || closedEarly(f.text, end, hi) {
		return Candidate{}, 0, false
	}
	if f.free == nil {
		f.free = make([]byte, 0, min(len(f.text)+len(f.text)/8+16, maxOutBuffer))
	}
	out := append(f.free[:0], f.text[at:end]...)
	if !Valid(out) || !ascii && !utf8.Valid(out) {
		f.free = out[:0]
		return Candidate{}, 0, false
	}
	if prose && out[0] == '[' && citation.Match(out) {
		// As parseAt: "[3]" in prose is a citation.
		f.free = out[:0]
		return Candidate{}, 0, false
	}
	f.budget -= end - at
	n := len(out)
	f.free = out[n:n]
	return Candidate{JSON: out[:n:n], Start: at, End: end}, end, true
}

// plainEnd returns the end of the object or array at text[at] when what
// it spans before hi has no white space, comment or parenthesis outside
// strings and no backslash or control character inside them, nesting at
// most plainMaxDepth; -1 otherwise. ascii reports that the strings hold
// no other bytes. Whether it is JSON is left to Valid.
func plainEnd(text string, at, hi int) (end int, ascii bool) {
	depth := 0
	ascii = true
	for i := at; i < hi; i++ {
		switch plainClass[text[i]] {
		case plainOther:
		case plainQuote:
			// A string: plain bytes up to its closing quote.
			i++
			for i < hi && plainInString[text[i]] {
				i++
			}
			for i < hi && text[i] != '"' {
				c := text[i]
				if c == '\\' || c < 0x20 {
					return -1, false
				}
				ascii = ascii && c < utf8.RuneSelf
				i++
			}
			if i >= hi {
				return -1, false
			}
		case plainOpen:
			if depth++; depth > plainMaxDepth {
				return -1, false
			}
		case plainClose:
			if depth--; depth == 0 {
				return i + 1, ascii
			}
		default:
			return -1, false
		}
	}
	return -1, false
}

// closedEarly reports whether the value ending at text[end] is followed by
// a comma and a quote, as in `{"a":1},"b":2}`: the object may have been
// closed before its last members, which only the parser reads
// (membersAfterClose).
func closedEarly(text string, end, hi int) bool {
	if end >= hi || text[end] != ',' {
		return false
	}
	i := end + 1
	for i < hi && isBlank(text[i]) {
		i++
	}
	return i < hi && text[i] == '"'
}

// Byte classes outside strings, for plainEnd.
const (
	plainOther = iota // a byte of a number, a literal or a separator
	plainQuote
	plainOpen
	plainClose
	plainRefuse // white space, comments, parentheses, backslashes, other bytes
)

var (
	// plainClass classes the bytes outside strings.
	plainClass = func() (t [256]byte) {
		for c := range t {
			switch {
			case c == '"':
				t[c] = plainQuote
			case c == '{' || c == '[':
				t[c] = plainOpen
			case c == '}' || c == ']':
				t[c] = plainClose
			case c <= ' ' || c >= utf8.RuneSelf || c == '/' || c == '#' || c == '(' || c == ')' || c == '\\':
				t[c] = plainRefuse
			}
		}
		return t
	}()
	// plainInString marks the ASCII bytes a string holds as they are.
	plainInString = func() (t [256]bool) {
		for c := ' '; c < utf8.RuneSelf; c++ {
			t[c] = c != '"' && c != '\\'
		}
		return t
	}()
)

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

func hasKind(rs []llm.Repair, kind string) bool {
	for _, r := range rs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
