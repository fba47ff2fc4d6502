package jsonx

import (
	"bytes"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Scanner reads JSON from B at I, for fast paths that decode one known
// shape without reflection (the job envelope, a chat completion) and
// leave anything else to encoding/json. Every method returns false for
// input it does not take, leaving I anywhere.
type Scanner struct {
	B []byte // the text
	I int    // the offset read to
}

// Ws skips white space.
func (d *Scanner) Ws() {
	// Every white space byte is at most ' ': one comparison settles the
	// usual case, compact text.
	if d.I < len(d.B) && d.B[d.I] > ' ' {
		return
	}
	for d.I < len(d.B) {
		switch d.B[d.I] {
		case ' ', '\t', '\n', '\r':
			d.I++
		default:
			return
		}
	}
}

// Next skips white space and reads c if it comes next.
func (d *Scanner) Next(c byte) bool {
	// Compact text has no space: one look settles the usual case, inline.
	if d.I < len(d.B) && d.B[d.I] == c {
		d.I++
		return true
	}
	return d.next(c)
}

// next is Next after white space.
func (d *Scanner) next(c byte) bool {
	d.Ws()
	if d.I < len(d.B) && d.B[d.I] == c {
		d.I++
		return true
	}
	return false
}

// Object reads {"key": value, …}: member reads each value after its key
// (a key without escapes, else false).
func (d *Scanner) Object(member func(key []byte) bool) bool {
	if !d.Next('{') {
		return false
	}
	if d.Next('}') {
		return true
	}
	for {
		d.Ws()
		key, ok := d.PlainKey()
		if !ok || !d.Next(':') {
			return false
		}
		d.Ws()
		if !member(key) {
			return false
		}
		if d.Next(',') {
			continue
		}
		return d.Next('}')
	}
}

// Member reads an object up to its next member's value: the opening
// brace if first, else the comma after the previous value, then a key
// without escapes (as PlainKey) and its colon. more says a member
// follows; without one, ok says the object ended well. It is Object's
// loop for a decoder that switches on keys without a closure per object,
// and it reads compact text (brace or comma, then quote; key, then colon)
// without a call per delimiter: the chat completion's 24 keys cost
// three calls each through Object.
func (d *Scanner) Member(first bool) (key []byte, more, ok bool) {
	b, i := d.B, d.I
	sep := byte(',')
	if first {
		sep = '{'
	}
	if i+1 < len(b) && b[i] == sep && b[i+1] == '"' {
		i++
	} else {
		if more, ok = d.toMember(first); !more {
			return nil, false, ok
		}
		if i = d.I; i >= len(b) || b[i] != '"' {
			return nil, false, false
		}
	}
	j := keySpan(b, i+1)
	if j >= len(b) || b[j] != '"' {
		return nil, false, false
	}
	key = b[i+1 : j]
	if j+1 < len(b) && b[j+1] == ':' {
		d.I = j + 2
	} else if d.I = j + 1; !d.next(':') {
		return nil, false, false
	}
	d.Ws()
	return key, true, true
}

// toMember is Member's way through white space to a key or the end of
// the object: more says a key may come next; without one, ok says the
// object ended well.
func (d *Scanner) toMember(first bool) (more, ok bool) {
	if first {
		if !d.Next('{') {
			return false, false
		}
		if d.Next('}') {
			return false, true
		}
	} else if !d.Next(',') {
		return false, d.Next('}')
	}
	d.Ws()
	return true, true
}

// Fields reads an object with member, which reads the value after a key
// and returns the key's number among its object's keys (-1 for one it
// does not know) and whether the value read well. A key it does not know
// or has seen before ends the fast path.
func (d *Scanner) Fields(member func(key []byte) (n int, ok bool)) bool {
	var seen uint64
	return d.Object(func(key []byte) bool {
		n, ok := member(key)
		if n < 0 || seen&(1<<n) != 0 {
			return false
		}
		seen |= 1 << n
		return ok
	})
}

// StrInto reads a string into s; n passes through, for fields.
func (d *Scanner) StrInto(n int, s *string) (int, bool) {
	v, ok := d.Str()
	*s = v
	return n, ok
}

// IntInto reads an int into p; n passes through, for fields.
func (d *Scanner) IntInto(n int, p *int) (int, bool) {
	v, ok := d.Int()
	*p = v
	return n, ok
}

// Array reads [value, …], item reading each value.
func (d *Scanner) Array(item func() bool) bool {
	if !d.Next('[') {
		return false
	}
	if d.Next(']') {
		return true
	}
	for {
		d.Ws()
		if !item() {
			return false
		}
		if d.Next(',') {
			continue
		}
		return d.Next(']')
	}
}

// PlainKey reads a string without escapes and returns its bytes.
func (d *Scanner) PlainKey() ([]byte, bool) {
	if d.I >= len(d.B) || d.B[d.I] != '"' {
		return nil, false
	}
	j := keySpan(d.B, d.I+1)
	if j >= len(d.B) || d.B[j] != '"' {
		return nil, false
	}
	key := d.B[d.I+1 : j]
	d.I = j + 1
	return key, true
}

// Str reads a string: valid UTF-8, escapes decoded, a surrogate only in a
// pair.
func (d *Scanner) Str() (string, bool) {
	if d.I >= len(d.B) || d.B[d.I] != '"' {
		return "", false
	}
	start := d.I + 1
	j, high := PlainSpan(d.B, start)
	if j >= len(d.B) {
		return "", false
	}
	switch d.B[j] {
	case '"':
	case '\\':
		return d.escaped(start, j, high)
	default:
		return "", false
	}
	s := d.B[start:j]
	if high && !utf8.Valid(s) {
		return "", false
	}
	d.I = j + 1
	return string(s), true
}

// escaped reads the rest of a string that has escapes, from its first
// byte at start (after the opening quote), its first backslash at j and
// high telling whether a byte before j is at or above 0x80, as Unquote
// decodes the literal, refusing raw control characters as encoding/json
// does. It finds the closing quote (one with an even run of backslashes
// before it) with bytes.IndexByte, and then decodes the text, checking
// its bytes on the way, into one allocation of the length it may take.
// Invalid UTF-8 and lone surrogates are left to encoding/json, which
// replaces them. Only the raw bytes can make the result invalid UTF-8
// (an escape decodes to whole characters), so a literal without high
// bytes is not checked.
func (d *Scanner) escaped(start, j int, high bool) (string, bool) {
	k, ok := d.closingQuote(j)
	if !ok {
		return "", false
	}
	text := d.B[start:k]
	out, h, ok := unquoteOnto(make([]byte, 0, len(text)), text, j-start, true, true)
	if !ok {
		return "", false
	}
	// out is this call's own and never written again: the string takes
	// its bytes instead of a copy.
	s := unsafe.String(unsafe.SliceData(out), len(out))
	if (high || h) && !utf8.ValidString(s) {
		return "", false
	}
	d.I = k + 1
	return s, true
}

// closingQuote finds the quote that closes a string whose first backslash
// is at j: one with an even run of backslashes before it.
func (d *Scanner) closingQuote(j int) (int, bool) {
	k := j
	for {
		q := bytes.IndexByte(d.B[k:], '"')
		if q < 0 {
			return 0, false
		}
		k += q
		n := 0
		for d.B[k-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return k, true
		}
		k++ // an escaped quote
	}
}

// Number reads a JSON number literal; integral says it has no fraction
// or exponent.
func (d *Scanner) Number() (lit []byte, integral, ok bool) {
	start, j := d.I, d.I
	if j < len(d.B) && d.B[j] == '-' {
		j++
	}
	switch {
	case j < len(d.B) && d.B[j] == '0':
		j++
	case j < len(d.B) && '1' <= d.B[j] && d.B[j] <= '9':
		j = digits(d.B, j+1)
	default:
		return nil, false, false
	}
	integral = true
	if j < len(d.B) && d.B[j] == '.' {
		k := digits(d.B, j+1)
		if k == j+1 {
			return nil, false, false
		}
		j, integral = k, false
	}
	if j < len(d.B) && (d.B[j] == 'e' || d.B[j] == 'E') {
		j++
		if j < len(d.B) && (d.B[j] == '+' || d.B[j] == '-') {
			j++
		}
		k := digits(d.B, j)
		if k == j {
			return nil, false, false
		}
		j, integral = k, false
	}
	d.I = j
	return d.B[start:j], integral, true
}

// Null reads null if it comes next.
func (d *Scanner) Null() bool {
	d.Ws()
	return d.literal("null")
}

// Bool reads true or false.
func (d *Scanner) Bool() (v, ok bool) {
	switch {
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	}
	return false, false
}

// literal reads lit if it comes next.
func (d *Scanner) literal(lit string) bool {
	if len(d.B)-d.I >= len(lit) && string(d.B[d.I:d.I+len(lit)]) == lit {
		d.I += len(lit)
		return true
	}
	return false
}

// Int reads an integer literal that fits an int. Up to maxIntDigits
// digits always fit and are summed here; longer ones go to strconv, which
// checks the range.
func (d *Scanner) Int() (int, bool) {
	lit, integral, ok := d.Number()
	if !ok || !integral {
		return 0, false
	}
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > maxIntDigits {
		n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
		return int(n), err == nil
	}
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
	}
	if lit[0] == '-' {
		n = -n
	}
	return n, true
}

// maxIntDigits is how many decimal digits always fit an int.
const maxIntDigits = 9 + 9*(strconv.IntSize/64)

// Float reads a number literal as a float64.
func (d *Scanner) Float() (float64, bool) {
	lit, _, ok := d.Number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// Raw reads a value of any kind but null and returns its bytes, checked
// with Valid (json.Valid's answer), as encoding/json checks a RawMessage's.
func (d *Scanner) Raw() ([]byte, bool) {
	v, ok := d.span()
	return v, ok && string(v) != "null"
}

// Skip reads a value of any kind, null included, checked with Valid (json.Valid's answer)
// as encoding/json checks the whole text before it decodes any of it.
func (d *Scanner) Skip() bool {
	_, ok := d.span()
	return ok
}

// span reads a value of any kind and returns its bytes if valid, in one
// pass (validValue).
func (d *Scanner) span() ([]byte, bool) {
	end := -1
	// A string or a number, the usual values skipped, is read without
	// validValue's stack of containers.
	if d.I < len(d.B) {
		switch c := d.B[d.I]; {
		case c == '"':
			end = validString(d.B, d.I)
		case c == '-' || '0' <= c && c <= '9':
			end = validNumber(d.B, d.I)
		default:
			end = validValue(d.B, d.I)
		}
	}
	if end < 0 {
		return nil, false
	}
	v := d.B[d.I:end]
	d.I = end
	return v, true
}
