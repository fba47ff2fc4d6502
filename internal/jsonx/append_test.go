package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString checks AppendString against encoding/json, with HTML
// escaping (json.Marshal) and without (an Encoder with SetEscapeHTML(false)).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\`, "\x00\x1f\b\f\n\r\t", "<a>&amp;", "\u2028\u2029",
		"\xff\xfe", "\xed\xa0\x80", "é✓😀", "\ufeffbom", "a\x7fz",
		// Longer than a word: asciiSpan's eight bytes at a time, a stop at
		// each place in a word, and the bytes after the last whole word.
		"0123456789abcdef\"ghijklm\\nopqrst\x01uvwxyz✓0123456\u20289abcdef\xffghijk<>&\x7f~ 01234567",
		"abcdefg\"", "abcdefgh\\", "abcdefghi\n", "Extract the fields.", "<document-00112233aabbccdd>Invoice from ACME, total 12.50, paid.</document-00112233aabbccdd>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		html, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s, true); !bytes.Equal(got, html) {
			t.Fatalf("AppendString(%q, html) = %s, json.Marshal %s", s, got, html)
		}
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := append(AppendString(nil, s, false), '\n'); !bytes.Equal(got, plain.Bytes()) {
			t.Fatalf("AppendString(%q) = %s, Encoder without HTML escaping %s", s, got, plain.Bytes())
		}
	})
}
