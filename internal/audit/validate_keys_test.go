package audit

import (
	"strings"
	"testing"
)

// plainKeysAgrees: plainKeys never passes keys that checkKey refuses, and
// passes the usual ones (ASCII, short).
func plainKeysAgrees(t testing.TB, keys [10]string) {
	t.Helper()
	if !plainKeys(&keys) {
		return
	}
	for i, k := range keys {
		if err := checkKey("key", k); err != nil {
			t.Fatalf("plainKeys passed key %d %q, which checkKey refuses: %v", i, k, err)
		}
		for j := 0; j < len(k); j++ {
			if k[j] == 0 || k[j] >= 0x80 {
				t.Fatalf("plainKeys passed key %d %q holding byte %#x", i, k, k[j])
			}
		}
	}
}

func TestPlainKeys(t *testing.T) {
	usual := [10]string{"job-1", "doc-1", strings.Repeat("ab", 32), "run1", "invoice", "fp1", "sim:clean", "sim-1", "default", "w1"}
	if !plainKeys(&usual) {
		t.Errorf("plainKeys refused the usual keys")
	}
	for _, bad := range []string{"\x00", "a\x00", "abcdefg\x00", "abcdefgh\x00", "\x00abcdefgh", "é", "abcdefghé", "\xff", strings.Repeat("a", MaxDocumentIDBytes+1), "abcdefghijklmno\x80p"} {
		for i := range usual {
			keys := usual
			keys[i] = bad
			if plainKeys(&keys) {
				t.Errorf("plainKeys passed key %d = %q", i, bad)
			}
			plainKeysAgrees(t, keys)
		}
	}
}

func FuzzPlainKeys(f *testing.F) {
	f.Add("job-1", "doc-1", "abcdefghij\x00")
	f.Add("é", "", "abcdefgh")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		plainKeysAgrees(t, [10]string{a, b, c, a + b, b + c, c + a, "x", "", a, c})
	})
}
