package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDocumentIDBytes bounds a document id. Ids are keys of several indexes
// (a B-tree entry holds at most about 2.7 KB); 1024 bytes leaves room for
// the other key columns and is longer than any path a file system gives.
const MaxDocumentIDBytes = 1024

// ErrBadDocument matches the errors of CheckDocumentID, CheckText and
// CheckMetadata: a document that PostgreSQL cannot store as it is.
var ErrBadDocument = errors.New("document cannot be stored")

// CheckDocumentID reports why id cannot be a document id: empty, longer
// than MaxDocumentIDBytes, not UTF-8, or holding a control character (NUL,
// newline, ESC, DEL, C1 codes …), which PostgreSQL refuses (NUL) or which
// would corrupt the terminal and the logs that print ids.
func CheckDocumentID(id string) error {
	if id != "" && len(id) <= MaxDocumentIDBytes && printableASCII(id) {
		return nil // the usual id: checkDocumentID's rules in one pass
	}
	return checkDocumentID(id)
}

// checkDocumentID is CheckDocumentID rule by rule, for any id; it names
// what is wrong. TestCheckDocumentIDAsBefore holds the fast path to it.
func checkDocumentID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: the document id is empty", ErrBadDocument)
	case len(id) > MaxDocumentIDBytes:
		return fmt.Errorf("%w: the document id is %d bytes, more than %d: use a shorter id (a hash of the long one, say)",
			ErrBadDocument, len(id), MaxDocumentIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: the document id is not UTF-8: rename it", ErrBadDocument)
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(id[i:])
		return fmt.Errorf("%w: the document id holds the control character %U at byte %d: remove control characters from ids",
			ErrBadDocument, r, i)
	}
	return nil
}

// printableASCII reports that every byte of s is ASCII and not a control
// character (0x20 to 0x7e): then s is UTF-8 without a control character,
// what CheckDocumentID asks, in one pass eight bytes at a time. Submit
// checks every document's id (utf8.ValidString and a call of
// unicode.IsControl per rune before).
func printableASCII(s string) bool {
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c > 0x7e {
				return false
			}
		}
		return true
	}
	// A byte below 0x20 sets its top bit in w-0x20*lo8, one at or above
	// 0x80 in w, a 0x7f byte in (d-lo8)&^d with d = w^0x7f*lo8. A borrow
	// sets a bit only above a byte that is flagged already.
	var acc uint64
	for i := 0; i+8 <= len(s); i += 8 {
		w := le64(s[i:])
		d := w ^ 0x7f*lo8
		acc |= w | (w - 0x20*lo8) | ((d - lo8) &^ d)
	}
	w := le64(s[len(s)-8:]) // the tail, overlapping bytes already checked
	d := w ^ 0x7f*lo8
	acc |= w | (w - 0x20*lo8) | ((d - lo8) &^ d)
	return acc&hi8 == 0
}

// CheckText reports why text cannot be stored: PostgreSQL text holds no
// NUL byte (every other character is kept as it is).
func CheckText(text string) error {
	if i := strings.IndexByte(text, 0); i >= 0 {
		return fmt.Errorf("%w: the text holds a NUL byte at offset %d (is it a binary file?): remove NUL bytes or convert it to text first",
			ErrBadDocument, i)
	}
	return nil
}

// CheckMetadata reports why metadata cannot be stored: not a JSON object,
// or holding the escape \u0000, which PostgreSQL's jsonb refuses.
func CheckMetadata(meta json.RawMessage) error {
	if len(meta) == 0 {
		return nil
	}
	if !json.Valid(meta) || bytes.TrimSpace(meta)[0] != '{' {
		return fmt.Errorf("%w: its metadata is not a JSON object", ErrBadDocument)
	}
	if jsonHasNUL(meta) {
		return fmt.Errorf(`%w: its metadata holds the character \u0000, which PostgreSQL cannot store: remove it`, ErrBadDocument)
	}
	return nil
}

// jsonHasNUL reports whether JSON text b holds the escape \u0000 (an
// escaped backslash followed by "u0000" is text, not the escape).
func jsonHasNUL(b []byte) bool { return nulEscape(b) >= 0 }

// nulEscape is the offset of the first \u0000 escape in JSON text b, or -1.
func nulEscape(b []byte) int {
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(`\u0000`))
		if i < 0 {
			return -1
		}
		i += off
		bs := 0 // backslashes right before this one: an odd count escapes it
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return i
		}
		off = i + 1
	}
}

// replaceNULEscapes replaces every \u0000 escape in JSON text b with
// \ufffd (the replacement character), for diagnostics that must be stored
// whatever a model sent.
func replaceNULEscapes(b []byte) []byte {
	i := nulEscape(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i >= 0 {
		out = append(append(out, b[:i]...), `\ufffd`...)
		b = b[i+len(`\u0000`):]
		i = nulEscape(b) // the rest follows a '0': its backslash counts hold
	}
	return append(out, b...)
}

// storableText makes text from a model or a provider storable in a text
// column: invalid UTF-8 and NUL bytes become U+FFFD. Diagnostics only
// (raw answers, errors, reasons); ids and values are never changed.
func storableText(s string) string {
	if plainText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// plainText reports that s holds no NUL byte and is valid UTF-8, what
// strings.IndexByte and utf8.ValidString tell in two calls: ASCII text,
// every id and nearly every answer, is checked eight bytes at a time in
// one pass, which on the short keys and texts of an audit record costs a
// fraction of those calls. Text that is not ASCII is left to them.
func plainText(s string) bool {
	i := 0
	if len(s) >= 8 {
		for ; i+8 <= len(s); i += 8 {
			if w := le64(s[i:]); (w|(w-lo8))&hi8 != 0 {
				return plainTextFrom(s, i)
			}
		}
		// The last 8 bytes, overlapping those checked: no byte-wise tail.
		w := le64(s[len(s)-8:])
		return (w|(w-lo8))&hi8 == 0 || plainTextFrom(s, len(s)-8)
	}
	for ; i < len(s); i++ {
		if s[i]-1 >= utf8.RuneSelf-1 { // 0, or 0x80 and above
			return plainTextFrom(s, i)
		}
	}
	return true
}

// plainKeys reports that every key is at most MaxDocumentIDBytes long,
// holds no NUL byte and is ASCII: checkKey passes each. It is checkKey's
// usual answer in one pass over the keys, which are short, instead of a
// call per key; false only means checkKey must be asked key by key.
func plainKeys(keys *[10]string) bool {
	var acc uint64 // the top bit of a byte is set for a byte 0 or above 0x7f (or after a 0: a false alarm at worst)
	for _, s := range keys {
		if len(s) > MaxDocumentIDBytes {
			return false
		}
		if len(s) < 8 {
			for i := 0; i < len(s); i++ {
				c := uint64(s[i])
				acc |= c | (c - 1) // c-1 of 0 sets every bit
			}
			continue
		}
		for i := 0; i+8 <= len(s); i += 8 {
			w := le64(s[i:])
			acc |= w | (w - lo8)
		}
		w := le64(s[len(s)-8:]) // the tail, overlapping bytes already checked
		acc |= w | (w - lo8)
	}
	return acc&hi8 == 0
}

// lo8 and hi8 test eight bytes w at once: a byte at or above 0x80 sets
// its top bit in w, a zero byte sets it in w-lo8 (so may the bytes after
// one, which are then not decided on). With neither, (w|(w-lo8))&hi8 is
// 0: no byte is 0 or above 0x7f.
const lo8, hi8 = 0x0101010101010101, 0x8080808080808080

// le64 is the first 8 bytes of s, little-endian.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plainTextFrom is plainText of s whose bytes before i are ASCII and not
// 0: UTF-8 sequences can only start from i.
func plainTextFrom(s string, i int) bool {
	return strings.IndexByte(s[i:], 0) < 0 && utf8.ValidString(s[i:])
}

// checkKey reports why a key column value (an id, a run or schema name)
// cannot be stored: a row with it would make PostgreSQL refuse its whole
// batch.
func checkKey(what, s string) error {
	switch {
	case len(s) > MaxDocumentIDBytes:
		return fmt.Errorf("%s is %d bytes, more than %d", what, len(s), MaxDocumentIDBytes)
	case plainText(s): // the usual: the two checks below in one pass
		return nil
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s holds a NUL byte", what)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not UTF-8", what)
	}
	return nil
}
