package redact

import (
	"strings"
	"testing"
)

// TestCleanAgreesWithAnchors checks the allocation-free pre-check against
// the anchor search it replaces (strings.ToLower and strings.Contains):
// whenever the old search finds an anchor, clean must not report the text
// clean, or a credential could be stored.
func TestCleanAgreesWithAnchors(t *testing.T) {
	t.Parallel()
	old := func(s string) bool {
		lower := strings.ToLower(s)
		for _, p := range patterns {
			for _, a := range p.anchors {
				if strings.Contains(lower, a) {
					return false
				}
			}
		}
		return true
	}
	cases := []string{
		"", "plain text", `{"total": "12.5", "items": [{"sku": "A-1", "qty": 2}]}`,
		"Authorization: BEARER abcdefgh", "SK-abcdefghij", "x-Api-Key: 123456789", "https://u:P@ss@host",
		"api-\u212aey: 1234567890", // Kelvin sign: lower-cases to k
		"ToKeN=abcdefgh", "nats://TOKEN@host", "AIzaSyA0123456789abcdefghij", "GSK_0123456789abcdef",
		"Ünïcödé without anchors", "Pass\u0130word",
	}
	for _, s := range cases {
		if clean(s) && !old(s) {
			t.Errorf("clean(%q) = true, but the anchor search finds an anchor", s)
		}
		if clean([]byte(s)) != clean(s) {
			t.Errorf("clean of %q differs between string and []byte", s)
		}
		if clean(s) && Credentials(s) != s {
			t.Errorf("clean(%q) but Credentials changes it to %q", s, Credentials(s))
		}
	}
	// Every ASCII text the old search calls clean is clean, and the reverse.
	for _, s := range cases[:13] {
		if isASCII(s) && clean(s) != old(s) {
			t.Errorf("ASCII %q: clean %v, anchor search %v", s, clean(s), old(s))
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func BenchmarkCredentialsClean(b *testing.B) {
	s := `{"total": "12.5", "items": [{"sku": "A-1", "qty": 2}]}`
	b.ReportAllocs()
	for b.Loop() {
		if Credentials(s) != s {
			b.Fatal("changed")
		}
	}
}

// cleanSearch is the check clean replaced: ASCII, lowered into a buffer,
// searched for each anchor in turn.
func cleanSearch(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	lower := strings.ToLower(s)
	for _, p := range patterns {
		for _, a := range p.anchors {
			if strings.Contains(lower, a) {
				return false
			}
		}
	}
	return true
}

// TestCleanMatchesSearch holds the one-pass clean to the search it
// replaced, on texts with each anchor in several cases and positions.
func TestCleanMatchesSearch(t *testing.T) {
	t.Parallel()
	var cases []string
	for _, p := range patterns {
		for _, a := range p.anchors {
			for _, v := range []string{a, strings.ToUpper(a), strings.ToUpper(a[:1]) + a[1:], a[:len(a)-1]} {
				cases = append(cases, v, "x"+v, v+"y", `{"f": "`+v+`"}`, "é"+v, v+"\u212a")
			}
		}
	}
	cases = append(cases, "", "plain", `{"total": "12.5"}`, "s", "sk", "SK-", "a:/", ":/", "://")
	for _, s := range cases {
		if got, want := clean(s), cleanSearch(s); got != want {
			t.Errorf("clean(%q) = %v, the search says %v", s, got, want)
		}
		if clean([]byte(s)) != clean(s) {
			t.Errorf("clean of %q differs between string and []byte", s)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "plain text", "Bearer abc", "sk-1234", "nats://T@h", "PassWord=x", "\u212aey="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := clean(s), cleanSearch(s); got != want {
			t.Fatalf("clean(%q) = %v, the search says %v", s, got, want)
		}
		if clean([]byte(s)) != clean(s) {
			t.Fatalf("clean of %q differs between string and []byte", s)
		}
	})
}

func BenchmarkClean(b *testing.B) {
	s := strings.Repeat(`{"invoice_number": "INV-2024-0001", "vendor": {"name": "Acme GmbH", "vat_id": "DE123456789"}, "total": 1234.5, "items": [{"description": "Widget", "qty": 3}]}`, 4)
	for _, bc := range []struct {
		name string
		f    func(string) bool
	}{{"onepass", clean[string]}, {"search", cleanSearch}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bc.f(s) {
					b.Fatal("not clean")
				}
			}
		})
	}
}
