package jsonx

import (
	"bytes"
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
	out := make([]byte, 0, len(b))
	for i >= 0 {
		out = append(out, b[:i]...)
		if i+1 >= len(b) {
			return "", false
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
				return "", false
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
					return "", false
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
		b = b[i+2:]
		i = bytes.IndexByte(b, '\\')
	}
	// out is this call's own and never written again: the string takes
	// its bytes instead of a copy (a model's answer, which a provider's
	// response holds as an escaped string, and a job's document are read
	// through here, on every document). Unescaping only shortens, so the
	// rest fits out's capacity.
	out = append(out, b...)
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
