package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
)

// spanCases are texts whose stop bytes fall at every offset of an
// eight-byte step, before and after high bytes.
func spanCases() []string {
	var cases []string
	for _, stop := range []string{`"`, `\`, "\x00", "\x1f", "\n", "é", "\x80", "\xff", "<", ">", "&", "\x7f", ""} {
		for n := 0; n < 20; n++ {
			for _, pad := range []string{"", "abcdefghijklmnopq"} {
				cases = append(cases, strings.Repeat("a", n)+stop+pad, "ü"+strings.Repeat("b", n)+stop+pad)
			}
		}
	}
	return cases
}

// TestPlainSpan checks PlainSpan, keySpan and htmlSpan against byte-by-byte
// scans.
func TestPlainSpan(t *testing.T) {
	for _, c := range spanCases() {
		b := []byte(c)
		for i := 0; i <= len(b); i++ {
			want, wantHigh := i, false
			for want < len(b) && b[want] >= 0x20 && b[want] != '"' && b[want] != '\\' {
				wantHigh = wantHigh || b[want] >= 0x80
				want++
			}
			if j, high := PlainSpan(b, i); j != want || high != wantHigh {
				t.Fatalf("PlainSpan(%q, %d) = %d, %v; want %d, %v", c, i, j, high, want, wantHigh)
			}
			wantKey := i
			for wantKey < len(b) && b[wantKey] >= 0x20 && b[wantKey] < 0x80 && b[wantKey] != '"' && b[wantKey] != '\\' {
				wantKey++
			}
			if j := keySpan(b, i); j != wantKey {
				t.Fatalf("keySpan(%q, %d) = %d; want %d", c, i, j, wantKey)
			}
			wantHTML := i
			for wantHTML < len(b) && b[wantHTML] >= 0x20 && b[wantHTML] < 0x80 && !strings.ContainsRune(`"\\<>&`, rune(b[wantHTML])) {
				wantHTML++
			}
			if j := htmlSpan(c, i); j != wantHTML {
				t.Fatalf("htmlSpan(%q, %d) = %d; want %d", c, i, j, wantHTML)
			}
		}
	}
}

// TestScannerStrMatchesJSON checks Scanner.Str (its escape decoding eight
// bytes a step, \u00XX by look-up) against encoding/json on literals with
// escapes, controls and high bytes at every offset: whenever Str takes
// one, encoding/json reads the same string from the text Str read.
func TestScannerStrMatchesJSON(t *testing.T) {
	var lits []string
	for _, c := range spanCases() {
		for _, esc := range []string{`\n`, `\"`, `\\`, `\u003c`, `\u00e9`, `\u007F`, `\u0080`, `\ud83d\ude00`, `\ud800`, `\x`, `\u00g0`} {
			lits = append(lits, `"`+esc+c+`"`, `"`+c+esc+`"`, `"x`+esc+strings.Repeat("y", len(c)%9)+esc+c+`" `)
		}
	}
	taken := 0
	for _, lit := range lits {
		d := Scanner{B: []byte(lit)}
		got, ok := d.Str()
		var want string
		err := json.Unmarshal([]byte(lit[:min(d.I, len(lit))]), &want)
		if ok {
			taken++
			if err != nil || got != want {
				t.Fatalf("Str(%q) = %q; encoding/json %q, %v", lit, got, want, err)
			}
		}
	}
	if taken < len(lits)/4 {
		t.Fatalf("Str took %d of %d literals", taken, len(lits))
	}
}

// TestScannerInt checks Int's own sum at the edge of strconv's range.
func TestScannerInt(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"123", 123, true}, {"-45", -45, true},
		{"999999999999999999", 999999999999999999, true},
		{"-999999999999999999", -999999999999999999, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"1.5", 0, false}, {"1e3", 0, false}, {"-", 0, false}, {"01", 0, true},
	} {
		d := Scanner{B: []byte(c.lit)}
		n, ok := d.Int()
		if ok != c.ok || ok && n != c.want {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", c.lit, n, ok, c.want, c.ok)
		}
	}
}
