package jsonx

import (
	"strconv"
	"unicode/utf8"
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
	for j := d.I + 1; j < len(d.B); j++ {
		switch c := d.B[j]; {
		case c == '"':
			key := d.B[d.I+1 : j]
			d.I = j + 1
			return key, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// Str reads a string: valid UTF-8, escapes decoded, a surrogate only in a
// pair.
func (d *Scanner) Str() (string, bool) {
	if d.I >= len(d.B) || d.B[d.I] != '"' {
		return "", false
	}
	start := d.I + 1
	ascii := true
	j := start
	for ; j < len(d.B); j++ {
		c := d.B[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			return d.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if j == len(d.B) {
		return "", false
	}
	s := d.B[start:j]
	if !ascii && !utf8.Valid(s) {
		return "", false
	}
	d.I = j + 1
	return string(s), true
}

// escaped reads the rest of a string that has escapes, from its first
// byte at start (after the opening quote): it finds the closing quote,
// refusing raw control characters as encoding/json does, and decodes the
// literal with UnquoteStrict. Invalid UTF-8 and lone surrogates are
// left to encoding/json, which replaces them.
func (d *Scanner) escaped(start int) (string, bool) {
	for j := start; j < len(d.B); j++ {
		switch c := d.B[j]; {
		case c == '\\':
			j++ // the escaped byte; Unquote checks the escape
		case c == '"':
			s, ok := UnquoteStrict(d.B[start-1 : j+1])
			if !ok || !utf8.ValidString(s) {
				return "", false
			}
			d.I = j + 1
			return s, true
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// Number reads a JSON number literal; integral says it has no fraction
// or exponent.
func (d *Scanner) Number() (lit []byte, integral, ok bool) {
	start, j := d.I, d.I
	digits := func() int {
		k := j
		for j < len(d.B) && '0' <= d.B[j] && d.B[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(d.B) && d.B[j] == '-' {
		j++
	}
	if j < len(d.B) && d.B[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false, false
	}
	integral = true
	if j < len(d.B) && d.B[j] == '.' {
		j++
		integral = false
		if digits() == 0 {
			return nil, false, false
		}
	}
	if j < len(d.B) && (d.B[j] == 'e' || d.B[j] == 'E') {
		j++
		integral = false
		if j < len(d.B) && (d.B[j] == '+' || d.B[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false, false
		}
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

// Int reads an integer literal that fits an int.
func (d *Scanner) Int() (int, bool) {
	lit, integral, ok := d.Number()
	if !ok || !integral {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
	return int(n), err == nil
}

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

// span reads a value of any kind and returns its bytes if valid.
func (d *Scanner) span() ([]byte, bool) {
	start, depth := d.I, 0
	for d.I < len(d.B) {
		switch c := d.B[d.I]; c {
		case '"':
			j := d.I + 1
			for j < len(d.B) && d.B[j] != '"' {
				if d.B[j] == '\\' {
					j++
				}
				j++
			}
			d.I = j + 1
		case '{', '[':
			depth++
			d.I++
		case '}', ']':
			if depth == 0 {
				return d.rawEnd(start)
			}
			depth--
			d.I++
		case ',':
			if depth == 0 {
				return d.rawEnd(start)
			}
			d.I++
		default:
			d.I++
		}
	}
	return d.rawEnd(start)
}

func (d *Scanner) rawEnd(start int) ([]byte, bool) {
	if d.I > len(d.B) {
		return nil, false
	}
	v := d.B[start:d.I]
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\n' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	if len(v) == 0 || !Valid(v) {
		return nil, false
	}
	return v, true
}
