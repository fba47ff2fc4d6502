package jsonx

import (
	"encoding/json"
	"testing"
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
