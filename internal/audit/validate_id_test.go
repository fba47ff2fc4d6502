package audit

import (
	"strings"
	"testing"
)

func sameCheck(t *testing.T, id string) {
	t.Helper()
	got, want := CheckDocumentID(id), checkDocumentID(id)
	if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
		t.Fatalf("CheckDocumentID(%q) = %v, rule by rule %v", id, got, want)
	}
}

// TestCheckDocumentIDAsBefore holds CheckDocumentID, fast path included,
// to checkDocumentID's rules one by one (its code before the fast path),
// with every byte value at every position of words and tails, and at the
// length limit.
func TestCheckDocumentIDAsBefore(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 19; n++ {
		for i := range n {
			for c := range 256 {
				sameCheck(t, strings.Repeat("a", i)+string([]byte{byte(c)})+strings.Repeat("b", n-i-1))
			}
			for _, s := range []string{"é", "\u0085", "\u2028", "\xc3", "\x1f\x7f"} {
				sameCheck(t, strings.Repeat("a", i)+s+strings.Repeat("b", n-i-1))
			}
		}
	}
	for _, s := range []string{"", "doc-0000001", strings.Repeat("x", MaxDocumentIDBytes), strings.Repeat("x", MaxDocumentIDBytes+1),
		strings.Repeat("x", MaxDocumentIDBytes-1) + "\x7f", "\x20\x7e\x20\x7e\x20\x7e\x20\x7e\x20"} {
		sameCheck(t, s)
	}
}

func FuzzCheckDocumentID(f *testing.F) {
	for _, s := range []string{"", "doc-1", "a\x00b", "ü", "\xc3", "01234567\x7f", "0123456\x1f89", "path/to/file.pdf#att 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameCheck(t, s) })
}
