// Package termsafe makes untrusted text safe to print to a terminal. Ids,
// model answers and error messages come from documents and models; printed
// raw, an ESC sequence in them can clear the screen, move the cursor,
// rewrite earlier lines, change the window title or hide text, and a
// bidirectional override can reorder what the reader sees. Human output
// escapes them; JSON output is escaped by the encoder already.
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String returns s with every control character escaped, newlines and tabs
// included: for one-line fields such as ids, reasons and table cells.
func String(s string) string { return escape(s, false) }

// Text returns s with every control character escaped except newline and
// tab: for multi-line text such as a raw model answer.
func Text(s string) string { return escape(s, true) }

// escape writes C0 controls as \n, \r, \t, \x1b…, DEL and C1 controls
// (U+0080–U+009F, which terminals also obey: U+009B is CSI) as \u00XX,
// Unicode bidirectional controls as \uXXXX, and invalid UTF-8 bytes as
// \xNN. A backslash is kept as it is: the output is for reading, not for
// parsing back.
func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s needs no escaping (the common case: no copy).
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && !(keepLines && (c == '\n' || c == '\t')) || c == 0x7f {
			return false
		}
		if c >= 0x80 { // check the rest rune by rune
			for _, r := range s[i:] {
				if r == utf8.RuneError || r < 0x20 && !(keepLines && (r == '\n' || r == '\t')) ||
					r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// bidi reports whether r is a Unicode bidirectional control (embeddings,
// overrides, isolates, marks): invisible characters that reorder text.
func bidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}
