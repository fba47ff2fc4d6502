package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, lit := range []string{
		`""`, `"plain"`, `"a\nb\tc\\d\/e\"f"`, `"\b\f\r"`, `"\u00e9t\u00E9"`, `"\ud83d\ude00 smile"`,
		`"lone \ud83d surrogate"`, `"\ude00 low first"`, `"end \\"`, `"ünïcödé <json-schema>"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		got, ok := Unquote([]byte(lit))
		if !ok || got != want {
			t.Errorf("Unquote(%s) = %q, %v; want %q", lit, got, ok, want)
		}
	}
	for _, bad := range []string{`"`, `"\x"`, `"\u12"`, `"abc\"`} {
		if _, ok := Unquote([]byte(bad)); ok {
			t.Errorf("Unquote(%s) accepted a malformed literal", bad)
		}
	}
}

func TestUnquoteStrictRefusesLoneSurrogates(t *testing.T) {
	t.Parallel()
	for _, lit := range []string{`"lone \ud83d surrogate"`, `"\ude00 low first"`, `"\ud83d\u0041"`} {
		if s, ok := UnquoteStrict([]byte(lit)); ok {
			t.Errorf("UnquoteStrict(%s) = %q, want refused", lit, s)
		}
	}
	if s, ok := UnquoteStrict([]byte(`"\ud83d\ude00 \u00e9"`)); !ok || s != "\U0001F600 é" {
		t.Errorf("UnquoteStrict of a pair = %q, %v", s, ok)
	}
}

// TestUnquoteOneAllocation checks that an escaped literal costs one
// allocation (the string shares its buffer) and that the strings of two
// literals do not share bytes. Not parallel: AllocsPerRun.
func TestUnquoteOneAllocation(t *testing.T) {
	lit := []byte(`"{\"total\": \"12.5\", \"vendor\": \"Acme \u00e9\"}\n"`)
	if n := testing.AllocsPerRun(100, func() { _, _ = Unquote(lit) }); n != 1 {
		t.Errorf("Unquote of an escaped literal: %v allocations, want 1", n)
	}
	a, _ := Unquote([]byte(`"a\nb"`))
	b, _ := Unquote([]byte(`"c\td"`))
	if a != "a\nb" || b != "c\td" {
		t.Errorf("two literals: %q, %q", a, b)
	}
}

// FuzzUnquote holds Unquote to encoding/json on every literal both take
// that is what its callers pass: one literal from its opening quote, in
// UTF-8 (the caller's scan refuses invalid UTF-8).
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a\nb"`, `"\u00e9\ud83d\ude00"`, `"\ud83d x"`, `"\\\"\/"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var want string
		if !strings.HasPrefix(lit, `"`) || !utf8.ValidString(lit) || json.Unmarshal([]byte(lit), &want) != nil {
			return
		}
		if got, ok := Unquote([]byte(lit)); ok && got != want {
			t.Fatalf("Unquote(%s) = %q, encoding/json %q", lit, got, want)
		}
	})
}
