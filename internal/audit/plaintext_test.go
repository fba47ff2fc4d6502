package audit

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/extractq/extractq/llm"
)

// plainTextSearch is what plainText replaces: no NUL byte, valid UTF-8.
func plainTextSearch(s string) bool { return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) }

// TestPlainText holds plainText to the two checks it replaces, with the
// NUL byte, a byte above 0x7f and broken UTF-8 at every position of words
// and tails, and a zero byte's borrow next to a 0x01 byte.
func TestPlainText(t *testing.T) {
	t.Parallel()
	cases := []string{"", "a", "job-1", "sim:clean", "0123456789abcdef", "\x01\x00\x01\x01\x01\x01\x01\x01\x01",
		"\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f", "invoice ü 2024", "\u212a", "\xff"}
	for n := 1; n <= 19; n++ {
		for i := range n {
			for _, bad := range []string{"\x00", "\x80", "é", "\xc3", "\x01"} {
				cases = append(cases, strings.Repeat("a", i)+bad+strings.Repeat("b", n-i-1))
			}
		}
	}
	for _, s := range cases {
		if got, want := plainText(s), plainTextSearch(s); got != want {
			t.Errorf("plainText(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzPlainText(f *testing.F) {
	for _, s := range []string{"", "job-1", "a\x00b", "ü", "\xc3", "01234567\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := plainText(s), plainTextSearch(s); got != want {
			t.Fatalf("plainText(%q) = %v, want %v", s, got, want)
		}
	})
}

// TestToPendingAllocations: a clean record of one attempt and a result
// costs its pending, its done channel (one allocation: a chan error was
// two) and one buffer for all its rows.
func TestToPendingAllocations(t *testing.T) {
	rec := testRecord("job-1", "doc-1", 1, 1, llm.OutcomeOK)
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := toPending(rec, now); err != nil {
			t.Fatal(err)
		}
	}); n > 3 {
		t.Errorf("toPending allocated %v times, want at most 3", n)
	}
}
