package jsonx

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Unquote decodes the JSON string literal b (quotes included) as
// encoding/json does: escapes decoded, a lone surrogate as U+FFFD. It
// reports false for a malformed literal (a bad escape, no closing quote);
// it does not check for raw control characters or invalid UTF-8, which
// the caller's scan of the literal has dealt with.
func Unquote(b []byte) (string, bool) { return unquote(b, false) }

// UnquoteStrict is Unquote that also reports false for a lone surrogate,
// for a fast path that leaves every unusual literal to encoding/json.
func UnquoteStrict(b []byte) (string, bool) { return unquote(b, true) }

func unquote(b []byte, strict bool) (string, bool) {
	if len(b) < 2 || b[len(b)-1] != '"' {
		return "", false
	}
	b = b[1 : len(b)-1]
	i := bytes.IndexByte(b, '\\')
	if i < 0 {
		return string(b), true
	}
	out, _, ok := unquoteOnto(make([]byte, 0, len(b)), b, i, strict, false)
	if !ok {
		return "", false
	}
	// out is this call's own and never written again: the string takes
	// its bytes instead of a copy (a model's answer, which a provider's
	// response holds as an escaped string, and a job's document are read
	// through here, on every document).
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

// unquoteOnto appends b, a literal's text without its quotes whose first
// backslash is at i, decoded. It writes into out's spare capacity
// (growing it to len(b) more first if need be: unescaping only
// shortens) and passes over the text between escapes eight bytes a step:
// a search and a copy per escape were most of a job text's decoding.
// With ctl, a raw control character after i makes it report false; high
// tells whether a byte after i is at or above 0x80.
func unquoteOnto(out, b []byte, i int, strict, ctl bool) (_ []byte, high, ok bool) {
	if i < 0 {
		return append(out, b...), false, true
	}
	out = slices.Grow(out, len(b))
	// w-len(out) never passes r: every escape is longer than its bytes.
	w := len(out) + copy(out[len(out):cap(out)], b[:i])
	out = out[:cap(out)]
	r := i
	var hi uint64
	for {
		// b[r] is a backslash. A one-byte escape is decoded here, by a
		// look-up.
		if r+1 < len(b) && oneByteEscape[b[r+1]] != 0 {
			out[w] = oneByteEscape[b[r+1]]
			w, r = w+1, r+2
		} else if c, ok := asciiEscape(b, r); ok {
			// \u00XX for an ASCII byte, as encoding/json writes <, >, &
			// and control characters, here too.
			out[w] = c
			w, r = w+1, r+6
		} else {
			o, next := unescape(out[:w], b, r, strict)
			if next < 0 {
				return o, false, false
			}
			w, r = len(o), next
		}
		// Copy up to the next backslash or control character, eight
		// bytes a step (all eight are stored; w moves only past those
		// before the stop).
		for r+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[r:])
			s := x ^ ('\\' * ones8)
			binary.LittleEndian.PutUint64(out[w:], x)
			if z := ((s-ones8)&^s | (x-0x20*ones8)&^x) & highs8; z != 0 {
				k := bits.TrailingZeros64(z) &^ 7
				hi |= x & (1<<k - 1)
				w, r = w+k/8, r+k/8
				break
			}
			hi |= x
			w, r = w+8, r+8
		}
		for r < len(b) && b[r] != '\\' && b[r] >= 0x20 {
			out[w] = b[r]
			hi |= uint64(b[r])
			w, r = w+1, r+1
		}
		if r >= len(b) {
			return out[:w], hi&highs8 != 0, true
		}
		if b[r] != '\\' { // a control character
			if ctl {
				return out, false, false
			}
			out[w] = b[r]
			w, r = w+1, r+1
			for r < len(b) && b[r] != '\\' {
				out[w] = b[r]
				hi |= uint64(b[r])
				w, r = w+1, r+1
			}
			if r >= len(b) {
				return out[:w], hi&highs8 != 0, true
			}
		}
	}
}

// unescape decodes the escape whose backslash is at b[i] onto out and
// returns the index after it, or -1 for a malformed escape (a lone
// surrogate too if strict; else it decodes as U+FFFD). b ends where the
// literal's text ends, or runs on past its closing quote: a quote is
// neither a hex digit nor a backslash, so an escape never reads past it.
func unescape(out, b []byte, i int, strict bool) ([]byte, int) {
	if i+1 >= len(b) {
		return out, -1
	}
	switch e := b[i+1]; e {
	case '"', '\\', '/':
		out = append(out, e)
	case 'b':
		out = append(out, '\b')
	case 'f':
		out = append(out, '\f')
	case 'n':
		out = append(out, '\n')
	case 'r':
		out = append(out, '\r')
	case 't':
		out = append(out, '\t')
	case 'u':
		r, ok := hex4(b[i+2:])
		if !ok {
			return out, -1
		}
		i += 4
		if utf16.IsSurrogate(r) {
			r2, ok := rune(0), false
			if i+7 < len(b) && b[i+2] == '\\' && b[i+3] == 'u' {
				r2, ok = hex4(b[i+4:])
			}
			if r = utf16.DecodeRune(r, r2); ok && r != utf8.RuneError {
				i += 6
			} else if strict {
				return out, -1
			}
		}
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
		} else {
			out = utf8.AppendRune(out, r)
		}
	default:
		return out, -1
	}
	return out, i + 2
}

// asciiEscape reports the byte that the escape at b[i] stands for if it
// is \u00XX for an ASCII byte (XX below 80).
func asciiEscape(b []byte, i int) (byte, bool) {
	if i+5 >= len(b) || b[i+1] != 'u' || b[i+2] != '0' || b[i+3] != '0' {
		return 0, false
	}
	h, l := hexValue[b[i+4]], hexValue[b[i+5]]
	if h < 0 || l < 0 || h >= 8 {
		return 0, false
	}
	return byte(h<<4 | l), true
}

// oneByteEscape is the byte each one-byte escape (\n, \", …) stands
// for, by the letter after the backslash; 0 for any other letter.
var oneByteEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hexValue is each hex digit's value; -1 for any other byte.
var hexValue = func() (t [256]int8) {
	for c := range t {
		switch {
		case c >= '0' && c <= '9':
			t[c] = int8(c - '0')
		case c >= 'a' && c <= 'f':
			t[c] = int8(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			t[c] = int8(c - 'A' + 10)
		default:
			t[c] = -1
		}
	}
	return t
}()

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	h0, h1, h2, h3 := hexValue[b[0]], hexValue[b[1]], hexValue[b[2]], hexValue[b[3]]
	if h0|h1|h2|h3 < 0 {
		return 0, false
	}
	return rune(h0)<<12 | rune(h1)<<8 | rune(h2)<<4 | rune(h3), true
}
