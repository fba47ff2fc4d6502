package jsonx

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/extractq/extractq/llm"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 512

// lookahead bounds every heuristic peek so that parsing stays linear.
const lookahead = 256

// maxRepairs bounds the repairs listed for one value: a hopeless answer
// must not fill an audit row with thousands of them.
const maxRepairs = 200

// Where a value sits; string-closing heuristics depend on it.
const (
	ctxTop = iota
	ctxKey
	ctxValue // the value of an object member
	ctxElem  // an array element
	ctxArg   // the argument of a wrapper call: NumberLong(2)
)

// parser is a tolerant single-pass JSON reader. It reads src[pos:end] and
// appends valid compact JSON to out, noting every repair. It never fails on
// syntax: whatever it cannot read it drops or closes; only excessive nesting
// aborts it.
type parser struct {
	src     string
	pos     int
	end     int
	offsets []int // when set, maps src positions (and len(src)) to positions in the original text
	out     []byte
	repairs []llm.Repair
	stack   []byte // open containers, '{' or '['
	tooDeep bool
	backoff bool // re-reading a string whose closing quote is missing
	// unlisted counts repairs beyond maxRepairs, unlistedLossy the lossy
	// ones among them (so that the cap never hides a lossy repair)
	unlisted, unlistedLossy int
	// raw is set by a Python r prefix for the string that follows it.
	raw bool
	// bareTop is set when a bare word was read as a direct element of an
	// outermost array: "[see above]" in prose is text, not JSON.
	bareTop bool
	// ticks memoises the search for a closing ``` (see ticksAt); Find
	// hands it from one parser to the next so that searches stay linear.
	ticks tickMemo
	// scanned counts bytes read by look-ahead searches beyond the value,
	// charged to Find's work budget.
	scanned int
	// once-per-value notes, so that a long string yields one repair, not hundreds
	badUTF8 bool
}

// note records a repair that keeps the answer's content (see the Kind
// constants for the rule).
func (p *parser) note(kind string, at int, detail string) { p.record(kind, at, detail, false) }

// lossy records a repair that dropped or invented content.
func (p *parser) lossy(kind string, at int, detail string) { p.record(kind, at, detail, true) }

// noteIf records a repair, lossy when lossy is true.
func (p *parser) noteIf(lossy bool, kind string, at int, detail string) {
	p.record(kind, at, detail, lossy)
}

func (p *parser) record(kind string, at int, detail string, lossy bool) {
	if len(p.repairs) >= maxRepairs {
		p.unlisted++
		if lossy {
			p.unlistedLossy++
		}
		return
	}
	p.repairs = append(p.repairs, llm.Repair{Kind: kind, Where: "@" + strconv.Itoa(p.origin(at)), Detail: detail, Lossy: lossy})
}

// dropped records text skipped because it could not be read: lossy when
// it held a letter or digit (content), not for stray punctuation.
func (p *parser) dropped(at int, text, detail string) {
	p.noteIf(hasAlnum(text), KindGarbage, at, detail)
}

// result returns the repairs, with a last entry counting those not listed
// (lossy when any of them was).
func (p *parser) result() []llm.Repair {
	if p.unlisted == 0 {
		return p.repairs
	}
	detail := strconv.Itoa(p.unlisted) + " more repairs not listed"
	if p.unlistedLossy > 0 {
		detail += " (" + strconv.Itoa(p.unlistedLossy) + " lossy)"
	}
	return append(p.repairs, llm.Repair{Kind: KindMoreRepairs, Detail: detail, Lossy: p.unlistedLossy > 0})
}

// origin maps a position in src to one in the original text.
func (p *parser) origin(at int) int {
	if p.offsets == nil {
		return at
	}
	return p.offsets[min(at, len(p.offsets)-1)]
}

// value reads one value at p.pos (which is not whitespace). It reports
// false when nothing usable was there (the input was still consumed) or when
// nesting went too deep.
func (p *parser) value(ctx int) bool {
	c := p.src[p.pos]
	switch {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array(']')
	case c == '(':
		p.note(KindTuple, p.pos, "read tuple as array")
		return p.array(')')
	case p.quoteLen(p.pos) > 0 || p.stringPrefix():
		p.str(ctx)
		p.concat(ctx)
		return true
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		return p.number(ctx)
	default:
		return p.word(ctx)
	}
}

// stringPrefix skips a Python string prefix (u'x', b'x', r'x', f'x',
// r"""x""") at p.pos; after r the string is raw (backslashes are text).
// Only before a single quote or a triple quote: b"... is more often a key
// missing its quote.
func (p *parser) stringPrefix() bool {
	if p.pos+1 >= p.end || p.src[p.pos+1] != '\'' && !strings.HasPrefix(p.src[p.pos+1:p.end], `"""`) {
		return false
	}
	switch p.src[p.pos] {
	case 'u', 'b', 'r', 'f', 'U', 'B', 'R', 'F':
		p.note(KindPythonLiteral, p.pos, "dropped string prefix "+strconv.Quote(p.src[p.pos:p.pos+1]))
		p.raw = p.src[p.pos]|0x20 == 'r'
		p.pos++
		return true
	}
	return false
}

// concat joins "a" + "b" into one string.
func (p *parser) concat(ctx int) {
	for {
		i, _ := p.skipBlank(p.pos)
		if i >= p.end || p.src[i] != '+' {
			return
		}
		j, _ := p.skipBlank(i + 1)
		if p.quoteLen(j) == 0 {
			return
		}
		p.note(KindConcatenation, i, "joined strings")
		p.out = p.out[:len(p.out)-1] // the closing quote
		mark := len(p.out)
		p.pos = j
		p.str(ctx)
		p.out = append(p.out[:mark], p.out[mark+1:]...) // the opening quote
	}
}

func (p *parser) push(c byte) bool {
	if len(p.stack) >= maxDepth {
		p.tooDeep = true
		return false
	}
	p.stack = append(p.stack, c)
	return true
}

// openBelow reports whether a container of kind c ('{' or '[', which also
// matches a tuple) is open below the current one.
func (p *parser) openBelow(c byte) bool {
	for i := len(p.stack) - 2; i >= 0; i-- {
		if p.stack[i] == c || c == '[' && p.stack[i] == '(' {
			return true
		}
	}
	return false
}

func (p *parser) object() bool {
	if !p.push('{') {
		return false
	}
	defer func() { p.stack = p.stack[:len(p.stack)-1] }()
	p.pos++
	p.out = append(p.out, '{')
	n := 0
	for !p.tooDeep {
		p.skipSpace()
		if p.pos >= p.end {
			p.lossy(KindCloseTruncated, p.pos, "closed object")
			break
		}
		c := p.src[p.pos]
		if c == '}' {
			if comma := p.membersAfterClose(p.pos); comma > 0 {
				// {"a": 1}, "b": 2}: closed too early; ending here would drop "b".
				p.note(KindMismatchedBracket, p.pos, `skipped "}" followed by more members`)
				p.pos = comma + 1
				continue
			}
			p.pos++
			break
		}
		if c == ']' || c == ')' {
			next, _ := p.skipBlank(p.pos + 1)
			switch {
			case p.openBelow('['):
				p.note(KindMismatchedBracket, p.pos, `inserted missing "}"`)
			case next < p.end && p.src[next] == ',':
				p.note(KindMismatchedBracket, p.pos, "skipped stray "+strconv.Quote(string(c)))
				p.pos = next + 1 // and its comma
				continue
			default:
				p.note(KindMismatchedBracket, p.pos, "read "+strconv.Quote(string(c))+` as "}"`)
				p.pos++
			}
			break
		}
		if c == ',' {
			p.note(KindLeadingComma, p.pos, `removed extra ","`)
			p.pos++
			continue
		}
		if p.ellipsis() {
			continue
		}
		if (c == '{' || c == '[') && p.openBelow('[') {
			// [{"i":1{"i":2}]: the object ended before the next element.
			p.note(KindMismatchedBracket, p.pos, `inserted missing "}"`)
			break
		}
		mark := len(p.out)
		if n > 0 {
			p.out = append(p.out, ',')
		}
		keyAt := p.pos
		switch p.key() {
		case keyTruncated:
			p.out = p.out[:mark]
			p.lossy(KindCloseTruncated, keyAt, "dropped truncated key")
			continue
		case keyGarbage:
			p.out = p.out[:mark]
			continue
		}
		p.skipSpace()
		if p.pos >= p.end {
			p.out = p.out[:mark]
			p.lossy(KindCloseTruncated, keyAt, "dropped dangling key")
			continue
		}
		switch c := p.src[p.pos]; {
		case c == ':':
			p.pos++
		case c == '=':
			p.note(KindMissingColon, p.pos, `read "=" as ":"`)
			p.pos++
			if p.pos < p.end && p.src[p.pos] == '>' {
				p.pos++ // "a" => 1
			}
		case c == ',' || c == '}' || c == ']':
			p.lossy(KindMissingValue, p.pos, "key without value set to null")
			p.out = append(p.out, ":null"...)
			n++
			p.afterValue('}')
			continue
		default:
			p.note(KindMissingColon, p.pos, `inserted ":"`)
		}
		p.out = append(p.out, ':')
		p.skipSpace()
		if p.pos >= p.end {
			p.out = p.out[:mark]
			p.lossy(KindCloseTruncated, keyAt, "dropped dangling key")
			continue
		}
		if c := p.src[p.pos]; c == ',' || c == '}' || c == ']' {
			p.lossy(KindMissingValue, p.pos, "missing value set to null")
			p.out = append(p.out, "null"...)
		} else if p.ellipsis() {
			p.out = p.out[:mark]
			p.afterValue('}')
			continue
		} else if !p.value(ctxValue) {
			p.out = p.out[:mark]
			continue
		}
		n++
		p.afterValue('}')
	}
	p.out = append(p.out, '}')
	return !p.tooDeep
}

// afterValue consumes the separator after a member or element and notes a
// trailing or missing comma.
func (p *parser) afterValue(closer byte) {
	p.skipSpace()
	if p.pos >= p.end {
		return
	}
	switch p.src[p.pos] {
	case ',':
		at := p.pos
		p.pos++
		p.skipSpace()
		if p.pos < p.end && (p.src[p.pos] == closer || p.src[p.pos] == '}' || p.src[p.pos] == ']') {
			p.note(KindTrailingComma, at, `removed ","`)
		}
	case '}', ']', closer:
	case '"':
		if j, _ := p.skipBlank(p.pos + 1); j >= p.end || strings.IndexByte(",}]", p.src[j]) >= 0 {
			p.note(KindGarbage, p.pos, "skipped stray quote")
			p.pos++
			p.afterValue(closer)
			return
		}
		p.note(KindMissingComma, p.pos, `inserted ","`)
	case ':':
		// A stray colon after a value: skip it, the member loop resynchronises.
		// After an array element it is a key's colon (["k": "v"}] lacks its
		// "{"): skipping it makes the key and its value two elements.
		p.noteIf(closer != '}', KindGarbage, p.pos, `skipped ":"`)
		p.pos++
	default:
		c := p.src[p.pos]
		if closer == '}' && (c == '{' || c == '[') && p.openBelow('[') {
			return // the object ends here; the array inserts the comma
		}
		if p.ellipsisAt(p.pos) == 0 {
			p.note(KindMissingComma, p.pos, `inserted ","`)
		}
	}
}

// array reads an array; closer is ']', or ')' for a Python tuple.
func (p *parser) array(closer byte) bool {
	open := byte('[')
	if closer == ')' {
		open = '('
	}
	if !p.push(open) {
		return false
	}
	defer func() { p.stack = p.stack[:len(p.stack)-1] }()
	p.pos++
	p.out = append(p.out, '[')
	n := 0
	for !p.tooDeep {
		p.skipSpace()
		if p.pos >= p.end {
			p.lossy(KindCloseTruncated, p.pos, "closed array")
			break
		}
		c := p.src[p.pos]
		if c == closer {
			p.pos++
			break
		}
		if c == '}' || c == ']' {
			next, _ := p.skipBlank(p.pos + 1)
			more := next < p.end && p.src[next] == ','
			switch {
			case more && p.openBelow('{') && p.memberAfter(next):
				p.note(KindMismatchedBracket, p.pos, "read "+strconv.Quote(string(c))+` as "]"`)
				p.pos++
			case c == '}' && p.openBelow('{'):
				p.note(KindMismatchedBracket, p.pos, `inserted missing "]"`)
			case more:
				p.note(KindMismatchedBracket, p.pos, "skipped stray "+strconv.Quote(string(c)))
				p.pos = next + 1 // and its comma
				continue
			default:
				p.note(KindMismatchedBracket, p.pos, "read "+strconv.Quote(string(c))+` as "]"`)
				p.pos++
			}
			break
		}
		if c == ',' {
			p.note(KindLeadingComma, p.pos, `removed extra ","`)
			p.pos++
			continue
		}
		if c == ':' {
			p.note(KindGarbage, p.pos, `skipped ":"`)
			p.pos++
			continue
		}
		if p.ellipsis() {
			continue
		}
		mark := len(p.out)
		if n > 0 {
			p.out = append(p.out, ',')
		}
		if !p.value(ctxElem) {
			p.out = p.out[:mark]
			continue
		}
		n++
		p.afterValue(closer)
	}
	p.out = append(p.out, ']')
	return !p.tooDeep
}

// membersAfterClose returns the position of the comma after the '}' at i
// when that '}' would close the outermost object and the comma is followed
// by a quoted key and a colon: the object was closed before its last
// members (`{"a": 1}, "b": 2}`). Otherwise it returns 0. Only the outermost
// object: inside another container, "}, "b":" is how a nested value ends.
func (p *parser) membersAfterClose(i int) int {
	if len(p.stack) != 1 {
		return 0
	}
	j, _ := p.skipBlank(i + 1)
	if j >= p.end || p.src[j] != ',' {
		return 0
	}
	k, _ := p.skipBlank(j + 1)
	if p.quoteLen(k) == 0 || !p.quotedThenColon(k) {
		return 0
	}
	return j
}

// memberAfter reports whether an object member (key and colon) follows the
// comma at i.
func (p *parser) memberAfter(i int) bool {
	j, _ := p.skipBlank(i + 1)
	return j < p.end && (p.quotedThenColon(j) || p.identThenColon(j))
}

// ellipsis skips a "..." or "…" placeholder at p.pos.
func (p *parser) ellipsis() bool {
	n := p.ellipsisAt(p.pos)
	if n == 0 {
		return false
	}
	p.lossy(KindEllipsis, p.pos, "dropped placeholder")
	p.pos += n
	// "... (more items)" style remarks are part of the placeholder.
	if p.pos < p.end && (p.src[p.pos] == ' ' || p.src[p.pos] == '(') {
		i := p.pos
		for i < p.end && p.src[i] == ' ' {
			i++
		}
		if i < p.end && p.src[i] == '(' {
			if j := strings.IndexByte(p.src[i:min(p.end, i+lookahead)], ')'); j >= 0 {
				p.pos = i + j + 1
			}
		}
	}
	return true
}

func (p *parser) ellipsisAt(i int) int {
	if strings.HasPrefix(p.src[i:p.end], "…") {
		return len("…")
	}
	j := i
	for j < p.end && p.src[j] == '.' {
		j++
	}
	if j-i >= 2 {
		return j - i
	}
	return 0
}

type keyResult int

const (
	keyOK keyResult = iota
	keyTruncated
	keyGarbage
)

func (p *parser) key() keyResult {
	if p.quoteLen(p.pos) > 0 || p.stringPrefix() {
		if p.str(ctxKey) {
			return keyTruncated
		}
		return keyOK
	}
	start := p.pos
	j := start
	for j < p.end {
		c := p.src[j]
		if c == ':' || c == ',' || c == '{' || c == '}' || c == '[' || c == ']' || c == '"' || c == '\n' || c == '\r' || c == '=' {
			break
		}
		j++
	}
	if j >= p.end {
		p.pos = p.end
		return keyTruncated
	}
	k := strings.TrimRightFunc(p.src[start:j], unicode.IsSpace)
	if k == "" {
		c := p.src[start]
		// A '{' or '[' where a key belongs opens a value whose key is
		// missing: dropping it lifts that value's members into this object
		// and lets its closer end this one, so it is not stray punctuation.
		// A doubled brace ({{"a": 1}}, a template's escape) is.
		opener := c == '[' || c == '{' && (start == 0 || p.src[start-1] != '{')
		p.noteIf(opener, KindGarbage, start, "skipped "+strconv.QuoteRune(rune(c)))
		p.pos = start + 1
		return keyGarbage
	}
	if p.src[j] == '"' {
		if after, _ := p.skipBlank(j + 1); after < p.end && p.src[after] == ':' {
			// a": the opening quote is missing.
			p.note(KindMissingQuote, start, "added opening quote to key "+strconv.Quote(clip(strings.TrimSpace(p.src[start:j]))))
			p.out = appendQuoted(p.out, strings.TrimSpace(p.src[start:j]))
			p.pos = j + 1
			return keyOK
		}
	}
	if p.src[j] != ':' && p.src[j] != '=' {
		// A bare token that is not followed by a colon is not a key: drop it.
		p.dropped(start, k, "dropped "+strconv.Quote(clip(k)))
		p.pos = j
		return keyGarbage
	}
	p.note(KindUnquotedKey, start, "quoted "+strconv.Quote(clip(k)))
	p.out = appendQuoted(p.out, k)
	p.pos = start + len(k)
	return keyOK
}

// quoteLen returns the byte length of a string-opening quote at i, or 0.
func (p *parser) quoteLen(i int) int {
	if i >= p.end {
		return 0
	}
	switch c := p.src[i]; c {
	case '"', '\'', '`':
		return 1
	case 0xE2:
		if r := p.curly(i); r != 0 {
			return 3
		}
	}
	return 0
}

// curly returns the curly quote rune at i, or 0.
func (p *parser) curly(i int) rune {
	if i+3 > p.end || p.src[i] != 0xE2 || p.src[i+1] != 0x80 {
		return 0
	}
	switch p.src[i+2] {
	case 0x9C, 0x9D, 0x9E: // “ ” „
		return '“'
	case 0x98, 0x99: // ‘ ’
		return '‘'
	}
	return 0
}

// closerLen returns the length of a quote at i that may close a string
// opened by open (one of " ' ` “ ‘), or 0.
func (p *parser) closerLen(open rune, i int) int {
	c := p.src[i]
	switch open {
	case '"', '\'', '`':
		if rune(c) == open {
			return 1
		}
		if open == '`' && c == 0xC2 && i+1 < p.end && p.src[i+1] == 0xB4 {
			return 2 // `text´
		}
	case '“':
		if c == '"' {
			return 1
		}
		if p.curly(i) == '“' {
			return 3
		}
	case '‘':
		if c == '\'' {
			return 1
		}
		if p.curly(i) == '‘' {
			return 3
		}
	}
	return 0
}

// str reads a string opened at p.pos and writes it as a JSON string. It
// reports whether the string ran into the end of the input.
func (p *parser) str(ctx int) (truncated bool) {
	if ctx != ctxKey && p.pos+2 < p.end {
		if c := p.src[p.pos]; (c == '"' || c == '\'' || c == '`') && p.src[p.pos+1] == c && p.src[p.pos+2] == c {
			return p.tripleStr(c)
		}
	}
	start, outStart, repStart := p.pos, len(p.out), len(p.repairs)
	raw := p.raw
	p.raw = false
	var open rune
	switch c := p.src[p.pos]; c {
	case '"':
		open = '"'
		p.pos++
	case '\'':
		open = '\''
		p.pos++
		p.note(KindSingleQuotes, start, "replaced ' with \"")
	case '`':
		open = '`'
		p.pos++
		p.note(KindBacktickQuotes, start, "replaced ` with \"")
	default:
		open = p.curly(p.pos)
		p.pos += 3
		p.note(KindCurlyQuotes, start, "replaced curly quotes with \"")
	}
	p.out = append(p.out, '"')
	ctrl, ctrlAt := 0, 0
	// The last quote read as content, in case it was the real end after all.
	type mark struct{ pos, out, rep, ctrl int }
	skipped := mark{pos: -1}
	for p.pos < p.end {
		c := p.src[p.pos]
		if c >= 0x20 && c < utf8.RuneSelf && c != '\\' && c != '"' && c != '\'' && c != '`' {
			j := p.pos + 1
			for j < p.end {
				d := p.src[j]
				if d < 0x20 || d >= utf8.RuneSelf || d == '\\' || d == '"' || d == '\'' || d == '`' {
					break
				}
				j++
			}
			p.out = append(p.out, p.src[p.pos:j]...)
			p.pos = j
			continue
		}
		switch {
		case c == '\\' && raw:
			// r'\d+': the backslash is text, and it keeps a quote after it
			// inside the string, as in Python.
			p.out = append(p.out, '\\', '\\')
			p.pos++
			if p.pos < p.end && rune(p.src[p.pos]) == open {
				if open == '"' {
					p.out = append(p.out, '\\')
				}
				p.out = append(p.out, p.src[p.pos])
				p.pos++
			}
			continue
		case c == '\\':
			p.escape(open)
			continue
		case c < 0x20:
			// A backtick string is a JS template literal: it may span lines.
			if c == '\n' && ctx != ctxKey && open != '`' && p.nextLineIsMember(p.pos+1, ctx) {
				// The closing quote is missing at the end of the line.
				p.trimOut()
				p.out = append(p.out, '"')
				p.note(KindMissingQuote, p.pos, "closed string at end of line")
				p.noteCtrl(ctrl, ctrlAt)
				return false
			}
			if ctrl == 0 {
				ctrlAt = p.pos
			}
			ctrl++
			p.out = appendCtrl(p.out, c)
			p.pos++
			continue
		}
		if n := p.closerLen(open, p.pos); n > 0 {
			if p.closes(ctx, p.pos+n, skipped.pos >= 0) {
				p.pos += n
				p.out = append(p.out, '"')
				p.noteCtrl(ctrl, ctrlAt)
				if open == '`' && ctrl > 0 {
					p.textBlock(outStart)
				}
				return false
			}
			if comma := p.commaBefore(start, p.pos); comma >= 0 && (ctx == ctxValue && p.quotedThenColon(p.pos) || ctx == ctxElem && p.quotedThenEnd(p.pos)) {
				// "New York, "gender": the string should have ended before the comma.
				p.trimOut()
				p.out = append(p.out, '"')
				p.lossy(KindMissingQuote, comma, "closed string before the next member")
				p.noteCtrl(ctrl, ctrlAt)
				p.pos = comma
				return false
			}
			skipped = mark{p.pos + n, len(p.out), len(p.repairs), ctrl}
			// A quote followed by a separator could have ended the string:
			// reading it as inner text is a guess about where the string ends.
			p.noteIf(p.separatorAfter(p.pos+n), KindUnescapedQuote, p.pos, "escaped inner quote")
		}
		if c == '"' {
			p.out = append(p.out, '\\', '"')
			p.pos++
			continue
		}
		if c < utf8.RuneSelf {
			p.out = append(p.out, c)
			p.pos++
			continue
		}
		r, size := utf8.DecodeRuneInString(p.src[p.pos:p.end])
		if r == utf8.RuneError && size == 1 && !utf8.FullRuneInString(p.src[p.pos:p.end]) {
			p.pos = p.end // a character cut by the end of a truncated answer
			continue
		}
		if r == utf8.RuneError && size == 1 {
			if !p.badUTF8 {
				p.badUTF8 = true
				p.lossy(KindInvalidUTF8, p.pos, "replaced invalid UTF-8 with U+FFFD")
			}
			p.out = append(p.out, "\uFFFD"...)
		} else {
			p.out = append(p.out, p.src[p.pos:p.pos+size]...)
		}
		p.pos += size
	}
	// The input ended inside the string. If it ends with closing brackets
	// or a fence, the answer was not cut off: the closing quote is missing
	// or was taken for an inner quote.
	if q := p.closersTail(start + 1); !p.backoff && q >= 0 {
		if skipped.pos >= 0 && p.onlyValueBetween(skipped.pos, q) {
			p.out = append(p.out[:skipped.out], '"')
			p.repairs = p.repairs[:skipped.rep]
			p.noteCtrl(skipped.ctrl, ctrlAt)
			p.pos = skipped.pos
			return false
		}
		p.out, p.repairs = p.out[:outStart], p.repairs[:repStart]
		p.pos, p.backoff = start, true
		end := p.end
		p.end = q
		p.str(ctx)
		p.end, p.backoff = end, false
		return false
	}
	p.noteCtrl(ctrl, ctrlAt)
	if p.backoff {
		for len(p.out) > outStart+1 && (p.out[len(p.out)-1] == ' ' || p.out[len(p.out)-1] == '\t') {
			p.out = p.out[:len(p.out)-1]
		}
		p.lossy(KindMissingQuote, p.pos, "closed string before the closing brackets")
	} else {
		p.lossy(KindCloseTruncated, p.pos, "closed string")
	}
	p.out = append(p.out, '"')
	return true
}

// closersTail returns where a trailing run of blanks, closing brackets and
// backticks at the end of the input starts, or -1 when the input does not
// end with a bracket or backtick. from bounds the search.
func (p *parser) closersTail(from int) int {
	i := p.end
	seen := false
	for i > from {
		switch p.src[i-1] {
		case '}', ']', '`':
			seen = true
		case ' ', '\t', '\n', '\r':
		default:
			if seen {
				return i
			}
			return -1
		}
		i--
	}
	if seen {
		return i
	}
	return -1
}

// onlyValueBetween reports whether src[i:j] is blank or one bare word (a
// literal, a number, a stray token): what may follow a string closed at i.
func (p *parser) onlyValueBetween(i, j int) bool {
	t := strings.TrimSpace(p.src[i:j])
	if t == "" {
		return true
	}
	for k := 0; k < len(t); k++ {
		if !isIdent(t[k]) && t[k] != '.' && t[k] != '-' && t[k] != '+' {
			return false
		}
	}
	return true // a literal, a number or a stray word
}

// commaBefore returns the position of a comma that ends the string content
// before position i (blanks allowed between), or -1. lo is the string start.
func (p *parser) commaBefore(lo, i int) int {
	for j := i - 1; j > lo && i-j < lookahead; j-- {
		switch p.src[j] {
		case ' ', '\t':
		case ',':
			return j
		default:
			return -1
		}
	}
	return -1
}

// trimOut removes trailing blanks and one separator comma written into a
// string whose closing quote was missing before a line break.
func (p *parser) trimOut() {
	o := p.out
	for {
		switch {
		case len(o) > 0 && (o[len(o)-1] == ' ' || o[len(o)-1] == '\t'):
			o = o[:len(o)-1]
			continue
		case len(o) >= 2 && o[len(o)-1] == 'r' && escaped(o, len(o)-1):
			o = o[:len(o)-2]
			continue
		}
		break
	}
	if len(o) > 0 && o[len(o)-1] == ',' && !escaped(o, len(o)-1) {
		o = o[:len(o)-1]
	}
	p.out = o
}

// escaped reports whether b[i] is preceded by an odd number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for i--; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func (p *parser) noteCtrl(n, at int) {
	if n > 0 {
		p.note(KindControlChar, at, "escaped "+strconv.Itoa(n)+" raw control character(s) in string")
	}
}

func appendCtrl(out []byte, c byte) []byte {
	switch c {
	case '\n':
		return append(out, '\\', 'n')
	case '\r':
		return append(out, '\\', 'r')
	case '\t':
		return append(out, '\\', 't')
	case '\b':
		return append(out, '\\', 'b')
	case '\f':
		return append(out, '\\', 'f')
	}
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
}

// escape handles a backslash inside a string.
func (p *parser) escape(open rune) {
	at := p.pos
	if p.pos+1 >= p.end {
		p.pos++
		p.lossy(KindCloseTruncated, at, "dropped trailing backslash")
		return
	}
	switch n := p.src[p.pos+1]; n {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.out = append(p.out, '\\', n)
		p.pos += 2
	case 'u':
		if p.isHex(p.pos+2, 4) {
			p.out = append(p.out, p.src[p.pos:p.pos+6]...)
			p.pos += 6
			return
		}
		if rest := p.end - p.pos - 2; rest < 4 && p.isHex(p.pos+2, rest) {
			p.lossy(KindCloseTruncated, at, "dropped truncated \\u escape")
			p.pos = p.end
			return
		}
		p.note(KindInvalidEscape, at, `kept "\u" as text`)
		p.out = append(p.out, '\\', '\\')
		p.pos++
	case '\'':
		if open != '\'' {
			p.note(KindInvalidEscape, at, `replaced \' with '`)
		}
		p.out = append(p.out, '\'')
		p.pos += 2
	case 'x':
		if p.isHex(p.pos+2, 2) {
			p.note(KindInvalidEscape, at, `replaced \x with \u00`)
			p.out = append(p.out, '\\', 'u', '0', '0', p.src[p.pos+2], p.src[p.pos+3])
			p.pos += 4
			return
		}
		p.note(KindInvalidEscape, at, "kept backslash as text")
		p.out = append(p.out, '\\', '\\')
		p.pos++
	case '\n':
		p.note(KindInvalidEscape, at, "removed line continuation")
		p.pos += 2
	default:
		if rune(n) == open || (open != '"' && p.closerLen(open, p.pos+1) > 0) {
			// \` or \’ inside a string with that delimiter: a literal quote.
			p.pos++
			size := p.closerLen(open, p.pos)
			p.out = append(p.out, p.src[p.pos:p.pos+size]...)
			p.pos += size
			return
		}
		p.note(KindInvalidEscape, at, "kept backslash as text")
		p.out = append(p.out, '\\', '\\')
		p.pos++
	}
}

func (p *parser) isHex(i, n int) bool {
	if i+n > p.end {
		return false
	}
	for k := i; k < i+n; k++ {
		c := p.src[k]
		if !isDigit(c) && (c|0x20 < 'a' || c|0x20 > 'f') {
			return false
		}
	}
	return true
}

// closes decides whether a quote that could close the current string really
// does, by looking at what follows it (position q). In valid JSON the answer
// is always yes; the heuristics only matter for unescaped inner quotes.
func (p *parser) closes(ctx, q int, skippedAny bool) bool {
	switch ctx {
	case ctxTop:
		return true
	case ctxKey:
		// "k"e"y": a quote followed at once by a letter is inside the key.
		return q >= p.end || !isIdent(p.src[q])
	}
	i, newline := p.skipBlank(q)
	if i >= p.end || newline {
		return true
	}
	if p.src[i] == ')' && (ctx == ctxArg || len(p.stack) > 0 && p.stack[len(p.stack)-1] == '(') {
		return true
	}
	if ctx == ctxArg {
		ctx = ctxElem
	}
	switch c := p.src[i]; c {
	case '}', ']', ':':
		return true
	case '/':
		return i+1 < p.end && (p.src[i+1] == '/' || p.src[i+1] == '*') // a comment
	case '#':
		return i > q
	case '+':
		j, _ := p.skipBlank(i + 1)
		return p.quoteLen(j) > 0 // "a" + "b"
	case ',':
		j, _ := p.skipBlank(i + 1)
		if j >= p.end {
			return true
		}
		d := p.src[j]
		if p.quoteLen(j) > 0 || d == '}' || d == ']' || d == '{' || d == '[' || d == '/' || d == '#' || p.ellipsisAt(j) > 0 {
			return true
		}
		if ctx == ctxValue {
			return p.identThenColon(j) || p.wordThenKey(j)
		}
		return d == '-' || isDigit(d) || p.literalAt(j)
	}
	if p.quoteLen(i) > 0 {
		if ctx == ctxElem {
			return true
		}
		return p.quotedThenColon(i)
	}
	if i == q {
		return false // "v"alue: a quote inside a word
	}
	if ctx == ctxValue && p.identThenColon(i) {
		return true // "x" b: 4: a comma is missing before an unquoted key
	}
	// ["a" 1]: a missing comma between elements.
	c := p.src[i]
	if ctx == ctxElem && (c == '-' || c == '{' || c == '[' || isDigit(c) || p.literalAt(i)) {
		return true
	}
	// ["a" b", "c"]: the next element lacks its opening quote.
	return ctx == ctxElem && !skippedAny && p.wordThenEnd(i)
}

// wordThenEnd reports whether a single bare word at i is followed by a
// closing quote and a separator, or directly by a separator.
func (p *parser) wordThenEnd(i int) bool {
	j := i
	for j < p.end && j-i < lookahead {
		c := p.src[j]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == ',' || c == ']' || c == '}' || c == ':' {
			break
		}
		j++
	}
	if j == i || j >= p.end {
		return false
	}
	if p.src[j] == '"' {
		k, _ := p.skipBlank(j + 1)
		return k >= p.end || p.src[k] == ',' || p.src[k] == ']' || p.src[k] == '}'
	}
	return p.src[j] == ',' || p.src[j] == ']'
}

// skipBlank skips plain whitespace from i, at most lookahead bytes (it only
// serves heuristics), and reports whether it crossed a newline.
func (p *parser) skipBlank(i int) (int, bool) {
	nl := false
	lim := min(p.end, i+lookahead)
	for i < lim {
		switch p.src[i] {
		case ' ', '\t', '\r':
		case '\n':
			nl = true
		default:
			return i, nl
		}
		i++
	}
	return i, nl
}

// identThenColon reports whether an unquoted key and a colon start at i.
func (p *parser) identThenColon(i int) bool {
	j := p.keyWordEnd(i)
	if j == i {
		return false
	}
	if j < p.end && p.src[j] == '"' {
		j++ // b": a key missing its opening quote
	}
	j, _ = p.skipBlank(j)
	return j < p.end && p.src[j] == ':'
}

// keyWordEnd returns where a word that may be an unquoted key, starting at
// i, ends (i when there is none): letters and digits of any script, '_',
// '$', and inside the word '-' and '.' (e-mail, 2.17). At most lookahead
// bytes are read.
func (p *parser) keyWordEnd(i int) int {
	j := i
	lim := min(p.end, i+lookahead)
	if j < lim && p.src[j] == '-' && j+1 < lim && isDigit(p.src[j+1]) {
		j++ // -1: a negative number as a key
	}
	for j < lim {
		c := p.src[j]
		switch {
		case isIdent(c):
			j++
		case (c == '-' || c == '.') && j > i && j+1 < lim && (isIdent(p.src[j+1]) || p.src[j+1] >= utf8.RuneSelf):
			j++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(p.src[j:lim])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
				return j
			}
			j += n
		default:
			return j
		}
	}
	return j
}

// separatorAfter reports whether the next non-blank character from i is
// a separator or closer (, : } ]): text after which a string could end.
func (p *parser) separatorAfter(i int) bool {
	j, _ := p.skipBlank(i)
	return j < p.end && strings.IndexByte(",:}]", p.src[j]) >= 0
}

// hasAlnum reports whether s holds a letter or digit (of any script).
func hasAlnum(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// wordThenKey reports whether a stray word and then a quoted key start at
// i: `"a": "x", COMMENT "b": 1`.
func (p *parser) wordThenKey(i int) bool {
	j := p.keyWordEnd(i)
	k, _ := p.skipBlank(j)
	return j > i && k > j && k < p.end && p.src[k] == '"' && p.quotedThenColon(k)
}

// quotedThenEnd reports whether a quoted string starting at i is followed
// by a separator or a closing bracket: a whole array element.
func (p *parser) quotedThenEnd(i int) bool {
	for j := i + p.quoteLen(i); j < p.end && j-i < lookahead; j++ {
		switch c := p.src[j]; {
		case c == '\\':
			j++
		case c == '\n':
			return false
		case p.quoteLen(j) > 0:
			k, _ := p.skipBlank(j + p.quoteLen(j))
			return k >= p.end || p.src[k] == ',' || p.src[k] == ']'
		}
	}
	return false
}

// quotedThenColon reports whether a quoted key and a colon start at i.
func (p *parser) quotedThenColon(i int) bool {
	n := p.quoteLen(i)
	j := i + n
	for j < p.end && j-i < lookahead {
		c := p.src[j]
		if c == '\\' {
			j += 2
			continue
		}
		if c == '\n' {
			return false
		}
		if m := p.quoteLen(j); m > 0 {
			k, _ := p.skipBlank(j + m)
			return k < p.end && p.src[k] == ':'
		}
		j++
	}
	return false
}

// nextLineIsMember reports whether the line starting at i begins a new
// member or closes the container: the sign of a string whose closing quote
// was forgotten at the end of the previous line.
func (p *parser) nextLineIsMember(i, ctx int) bool {
	j, _ := p.skipBlank(i)
	if j >= p.end {
		return false
	}
	switch p.src[j] {
	case '"':
		if ctx == ctxElem {
			return true // one element per line
		}
		return ctx == ctxValue && p.quotedThenColon(j)
	case '}', ']':
		k, _ := p.skipBlank(j + 1)
		return k >= p.end || p.src[k] == ',' || p.src[k] == '}' || p.src[k] == ']'
	}
	return false
}

var literals = [...]string{"true", "false", "null", "True", "False", "None", "NaN", "undefined", "Infinity"}

func (p *parser) literalAt(i int) bool {
	for _, l := range literals {
		if strings.HasPrefix(p.src[i:p.end], l) {
			return true
		}
	}
	return false
}

func (p *parser) number(ctx int) bool {
	start := p.pos
	mark := len(p.out)
	i := p.pos
	if p.ellipsisAt(i) > 0 {
		// "..." where a value belongs: nothing to keep.
		p.lossy(KindEllipsis, i, "dropped placeholder")
		p.pos += p.ellipsisAt(i)
		return false
	}
	switch p.src[i] {
	case '+':
		i++
	case '-':
		p.out = append(p.out, '-')
		i++
	}
	if strings.HasPrefix(p.src[i:p.end], "Infinity") {
		p.out = p.out[:mark]
		p.lossy(KindNonFinite, start, strconv.Quote(p.src[start:i+8])+" -> null")
		p.out = append(p.out, "null"...)
		p.pos = i + 8
		return true
	}
	if p.src[start] == '+' {
		p.note(KindNumberFormat, start, `removed leading "+"`)
	}
	d := i
	for d < p.end && isDigit(p.src[d]) {
		d++
	}
	switch {
	case d == i && d < p.end-1 && p.src[d] == '.' && isDigit(p.src[d+1]):
		p.note(KindNumberFormat, start, `added leading "0"`)
		p.out = append(p.out, '0')
	case d == i && d >= p.end:
		p.out = p.out[:mark]
		p.lossy(KindCloseTruncated, start, "dropped truncated number")
		p.pos = d
		return false
	case d == i:
		p.out = p.out[:mark]
		return p.word(ctx)
	case d-i > 1 && p.src[i] == '0':
		// 007 is an identifier, not a number: keep its digits.
		p.out = p.out[:mark]
		return p.word(ctx)
	default:
		p.out = append(p.out, p.src[i:d]...)
	}
	i = d
	if i < p.end && p.src[i] == '.' && p.ellipsisAt(i) == 0 {
		f := i + 1
		for f < p.end && isDigit(p.src[f]) {
			f++
		}
		if f == i+1 {
			if f >= p.end {
				p.lossy(KindCloseTruncated, i, `dropped truncated "."`)
			} else {
				p.note(KindNumberFormat, i, `dropped trailing "."`)
			}
		} else {
			p.out = append(p.out, p.src[i:f]...)
		}
		i = f
	}
	if i < p.end && (p.src[i] == 'e' || p.src[i] == 'E') {
		e := i + 1
		if e < p.end && (p.src[e] == '+' || p.src[e] == '-') {
			e++
		}
		k := e
		for k < p.end && isDigit(p.src[k]) {
			k++
		}
		switch {
		case k > e:
			p.out = append(p.out, p.src[i:k]...)
			i = k
		case k >= p.end:
			p.lossy(KindCloseTruncated, i, "dropped truncated exponent")
			i = k
		}
	}
	if ctx == ctxValue && i+1 < p.end && p.src[i] == ',' && isDigit(p.src[i+1]) {
		// 1,250.50 or 12,50 as a member value: a number written for people.
		// Kept as text, so that validation reports it instead of a guess.
		j := i + 1
		for j < p.end && (isDigit(p.src[j]) || p.src[j] == ',' || p.src[j] == '.') {
			j++
		}
		if k, _ := p.skipBlank(j); k >= p.end || p.src[k] != ':' {
			t := strings.TrimRight(p.src[start:j], ",")
			p.note(KindUnquotedString, start, "kept "+strconv.Quote(clip(t))+" as text")
			p.out = appendQuoted(p.out[:mark], t)
			p.pos = start + len(t)
			return true
		}
	}
	if i < p.end && (!isDelim(p.src[i]) || p.src[i] == '/' && i+1 < p.end && isDigit(p.src[i+1])) {
		// 2024-01-15, 30kg, 1.2.3: text that starts with digits. So are
		// 1/3 and 12/05/2024 ('/' is a delimiter only for a comment):
		// reading the 1 and dropping "/3" would change the value.
		p.out = p.out[:mark]
		p.pos = start
		return p.word(ctx)
	}
	p.pos = i
	return true
}

// word reads a bare word: a literal (true, None, NaN...), a function call
// wrapper (NumberLong(2)) or an unquoted string.
func (p *parser) word(ctx int) bool {
	start := p.pos
	i := start
	if i < p.end && p.src[i] == '-' {
		i++
	}
	for i < p.end && (isIdent(p.src[i]) || p.src[i] == '.' && i+1 < p.end && isLetter(p.src[i+1])) {
		i++ // datetime.date(...) is one name
	}
	w := p.src[start:i]
	next, _ := p.skipBlank(i)
	alone := next >= p.end || !isIdent(p.src[next])
	if w != "" && alone {
		if lit, kind := literal(w); lit != "" {
			if kind != "" {
				// NaN means "no number"; an infinity replaced by null is lost.
				p.noteIf(kind == KindNonFinite && !strings.HasSuffix(w, "NaN") && w != "nan", kind, start, strconv.Quote(w)+" -> "+lit)
			}
			p.out = append(p.out, lit...)
			p.pos = i
			return true
		}
		if i >= p.end && w[0] != '-' {
			for _, l := range [...]string{"true", "false", "null"} {
				if strings.HasPrefix(l, w) {
					p.lossy(KindCloseTruncated, start, "completed truncated "+l)
					p.out = append(p.out, l...)
					p.pos = i
					return true
				}
			}
		}
		if i < p.end && p.src[i] == '(' && isLetter(w[0]) {
			return p.call(start, i)
		}
	}
	j, depth, quoteEnd := start, 0, false
scan:
	for ; j < p.end; j++ {
		switch p.src[j] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				break scan
			}
			depth--
		case ',':
			if depth == 0 {
				break scan
			}
		case '\n', '\r':
			break scan
		case '`':
			if strings.HasPrefix(p.src[j:p.end], "```") {
				break scan
			}
		case '"':
			if p.quotedThenColon(j) {
				break scan // the next member's key: a comma is missing
			}
			if k, _ := p.skipBlank(j + 1); k >= p.end || strings.IndexByte(",}]", p.src[k]) >= 0 {
				quoteEnd = true // abc": the opening quote is missing
				break scan
			}
		}
	}
	s := strings.TrimRightFunc(p.src[start:j], unicode.IsSpace)
	if s != "" && len(p.stack) == 1 && p.stack[0] != '{' {
		p.bareTop = true
	}
	if s == "" {
		p.dropped(start, p.src[start:start+1], "skipped "+strconv.QuoteRune(rune(p.src[start])))
		p.pos = start + 1
		return false
	}
	p.out = appendQuoted(p.out, s)
	if quoteEnd {
		p.note(KindMissingQuote, start, "added opening quote to "+strconv.Quote(clip(s)))
		p.pos = j + 1
		return true
	}
	p.note(KindUnquotedString, start, "quoted "+strconv.Quote(clip(s)))
	p.pos = start + len(s)
	return true
}

// call unwraps NumberLong(2), ISODate("..."), Decimal('1.5') and similar.
func (p *parser) call(start, paren int) bool {
	p.note(KindFunctionCall, start, "unwrapped "+clip(p.src[start:paren])+"(...)")
	p.pos = paren + 1
	p.skipSpace()
	ok := false
	if p.pos < p.end && p.src[p.pos] != ')' {
		ok = p.value(ctxArg)
		p.skipSpace()
	}
	if !ok {
		p.lossy(KindFunctionCall, paren, "no argument: wrote null")
		p.out = append(p.out, "null"...)
	}
	// datetime(2024, 1, 5): keep the first argument only.
	for extra := false; p.pos < p.end && p.src[p.pos] == ','; {
		if !extra {
			extra = true
			p.lossy(KindFunctionCall, p.pos, "dropped further arguments")
		}
		p.pos++
		p.skipSpace()
		if p.pos >= p.end || p.src[p.pos] == ')' {
			break
		}
		mark := len(p.out)
		p.value(ctxArg)
		p.out = p.out[:mark]
		p.skipSpace()
	}
	if p.pos < p.end && p.src[p.pos] == ')' {
		p.pos++
	}
	return true
}

// literal maps a bare word to JSON and the repair kind it needs ("" = none).
func literal(w string) (lit, kind string) {
	switch w {
	case "true", "false", "null":
		return w, ""
	case "True", "TRUE":
		return "true", KindPythonLiteral
	case "False", "FALSE":
		return "false", KindPythonLiteral
	case "None", "NULL", "Null", "nil":
		return "null", KindPythonLiteral
	case "NaN", "-NaN", "nan", "Infinity", "-Infinity", "inf", "-inf":
		return "null", KindNonFinite
	case "undefined":
		return "null", KindUndefined
	}
	return "", ""
}

func (p *parser) skipSpace() {
	for p.pos < p.end {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < p.end && p.src[p.pos+1] == '/':
			p.note(KindComment, p.pos, "removed // comment")
			p.skipLine()
		case c == '/' && p.pos+1 < p.end && p.src[p.pos+1] == '*':
			p.note(KindComment, p.pos, "removed /* */ comment")
			if i := strings.Index(p.src[p.pos+2:p.end], "*/"); i >= 0 {
				p.pos += i + 4
			} else {
				p.pos = p.end
			}
		case c == '#':
			p.note(KindComment, p.pos, "removed # comment")
			p.skipLine()
		case c == '`' && strings.HasPrefix(p.src[p.pos:p.end], "```"):
			if p.codeStringAt(p.pos) {
				return // a ```-delimited string where a value belongs
			}
			p.end = p.pos // a code fence ends the JSON
			return
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(p.src[p.pos:p.end])
			if r != '\uFEFF' && r != '\u200B' && !unicode.IsSpace(r) {
				return
			}
			p.note(KindWhitespace, p.pos, "removed "+strconv.QuoteRune(r))
			p.pos += size
		default:
			return
		}
	}
}

func (p *parser) skipLine() {
	if i := strings.IndexByte(p.src[p.pos:p.end], '\n'); i >= 0 {
		p.pos += i + 1
	} else {
		p.pos = p.end
	}
}

// appendQuoted appends s as a JSON string, replacing invalid UTF-8.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = appendCtrl(dst, c)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isIdent(c byte) bool  { return isLetter(c) || isDigit(c) || c == '_' || c == '$' }

// isDelim reports whether c may follow a number.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']', ':', '/', '#', ')', '"', '\'', '{', '[', '`':
		return true
	}
	return false
}

// clip shortens s for a repair detail.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	i := 40
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
