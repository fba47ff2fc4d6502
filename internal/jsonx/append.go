package jsonx

import (
	"math/bits"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// plainASCII says which ASCII bytes AppendString copies as they are:
// [0] without html, [1] with. One load per byte instead of five
// comparisons: the simulator's replies and the worker's requests are
// mostly such bytes.
var plainASCII = func() (t [2][utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		plain := c != '"' && c != '\\'
		t[0][c] = plain
		t[1][c] = plain && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s quoted as encoding/json quotes a string: '"', '\\'
// and control characters escaped (\b \f \n \r \t by name, the rest as
// \u00XX), each byte of invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029, everything else as it is. With html, '<', '>' and '&'
// are escaped too (\u003c, \u003e, \u0026), as json.Marshal does; without,
// as an Encoder with SetEscapeHTML(false) writes them. The hot paths that
// write JSON by appending (the job envelope, a provider's request, the
// simulator's reply) must stay byte for byte what encoding/json wrote:
// FuzzAppendString holds this to that.
func AppendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	plain := &plainASCII[0]
	if html {
		plain = &plainASCII[1]
	}
	start := 0
	for i := 0; i < len(s); {
		// Plain ASCII eight bytes at a time: the loop below then starts at
		// the first byte that may need escaping or decoding.
		if html {
			i = htmlSpan(s, i)
		} else {
			i = keySpan(s, i)
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// htmlSpan is keySpan for AppendString with html: it stops at '<', '>'
// and '&' too. The job envelope, which submit encodes for every document,
// is json.Marshal's and so escapes them: byte by byte, its strings (the
// text, the ids and hashes, the schema's fingerprint) cost about a quarter
// of submit's own instructions per document.
func htmlSpan(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8] // constant indexes below: one load, no bounds checks
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		q := x ^ ('"' * ones8)
		b := x ^ ('\\' * ones8)
		lt := x ^ ('<' * ones8)
		gt := x ^ ('>' * ones8)
		amp := x ^ ('&' * ones8)
		// As in keySpan: a borrow may flag a byte above the first stop,
		// never one below it, so the lowest byte flagged is the first stop.
		stop := (((q - ones8) &^ q) | ((b - ones8) &^ b) | ((lt - ones8) &^ lt) | ((gt - ones8) &^ gt) |
			((amp - ones8) &^ amp) | (x - 0x20*ones8) | x) & highs8
		if stop != 0 {
			return i + bits.TrailingZeros64(stop)/8
		}
	}
	for ; i < len(s) && s[i] < utf8.RuneSelf && plainASCII[1][s[i]]; i++ {
	}
	return i
}
