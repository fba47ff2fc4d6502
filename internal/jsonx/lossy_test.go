package jsonx

import (
	"strings"
	"testing"
)

// neverLossy lists the kinds that only change how the same content is
// written (see the Kind constants).
var neverLossy = map[string]bool{
	KindTrailingComma: true, KindLeadingComma: true, KindMissingComma: true, KindMissingColon: true,
	KindComment: true, KindSingleQuotes: true, KindCurlyQuotes: true, KindBacktickQuotes: true,
	KindTripleQuotes: true, KindUnquotedKey: true, KindUnquotedString: true, KindPythonLiteral: true,
	KindUndefined: true, KindControlChar: true, KindInvalidEscape: true, KindDoubleEncoded: true,
	KindMismatchedBracket: true, KindNumberFormat: true, KindTuple: true, KindConcatenation: true,
	KindWhitespace: true, KindJoinedValues: true, KindScalarInProse: true,
}

// sometimesLossy lists the kinds whose lossiness depends on the case.
var sometimesLossy = map[string]bool{
	KindMissingQuote: true, KindUnescapedQuote: true, KindGarbage: true, KindNonFinite: true,
	KindFunctionCall: true, KindMoreRepairs: true,
}

// TestLossy checks every kind that can be lossy both ways: an answer where
// the repair drops or invents content (marked lossy, and so the candidate)
// and a near answer where it does not (no lossy repair of that kind, and a
// candidate that is not lossy).
func TestLossy(t *testing.T) {
	t.Parallel()
	// cap builds an answer with more repairs than are listed; tail ends it.
	cap := func(tail string) string {
		return "[" + strings.Repeat("[1,],", maxRepairs+5) + tail
	}
	tests := []struct {
		name  string
		in    string
		kind  string
		lossy bool
	}{
		{"truncated string closed", "Here it is:\n```json\n{\"a\": 1, \"b\": \"hel", KindCloseTruncated, true},
		{"complete string", "Here it is:\n```json\n{\"a\": 1, \"b\": \"hello\"}\n```", KindCloseTruncated, false},
		{"truncated object closed", `{"a": 1, "b": 2`, KindCloseTruncated, true},
		{"dangling key dropped", `{"a": 1, "bb`, KindCloseTruncated, true},
		{"truncated literal completed", `{"ok": tr`, KindCloseTruncated, true},
		{"truncated triple-quoted string", `{"q": '''unterminated`, KindCloseTruncated, true},
		{"terminated triple-quoted string", `{"q": '''terminated'''}`, KindCloseTruncated, false},
		{"missing value invented", `{"a": , "b": 1}`, KindMissingValue, true},
		{"value present", `{"a": null, "b": 1}`, KindMissingValue, false},
		{"key without value", `{"a", "b": 1}`, KindMissingValue, true},
		{"ellipsis dropped", "The items:\n[1, 2, ...]", KindEllipsis, true},
		{"ellipsis inside a string is content", `[1, 2, "..."]`, KindEllipsis, false},
		{"closing quote guessed mid-line", `{"city": "New York, "zip": "10001"}`, KindMissingQuote, true},
		{"closing quote guessed before brackets", `{"tags": ["red]}`, KindMissingQuote, true},
		{"closing quote at the end of the line", "{\n  \"name\": \"John,\n  \"age\": 30\n}", KindMissingQuote, false},
		{"key's opening quote added", `{a": "x"}`, KindMissingQuote, false},
		{"inner quote before a comma", `{"q": "She said "yes", then left", "n": 1}`, KindUnescapedQuote, true},
		{"inner quotes inside words", `{"text": "He said "hello" to me", "n": 1}`, KindUnescapedQuote, false},
		{"word dropped", `{"a": "x", NOTE "b": 1}`, KindGarbage, true},
		{"stray quote dropped", `{"n": 12345", "m": 1}`, KindGarbage, false},
		{"key's colon dropped in an array", `["name": "Ada"}]`, KindGarbage, true},
		{"brace of a keyless value dropped", `{"a": 1, {"b": 2}}`, KindGarbage, true},
		{"bracket of a keyless value dropped", `{"a": 1, ["b", "c"]}`, KindGarbage, true},
		{"doubled template braces dropped", `{{"a": {{"b": 1}}}}`, KindGarbage, false},
		{"invalid UTF-8 replaced", "{\"a\": \"x\xffy\"}", KindInvalidUTF8, true},
		{"valid UTF-8", `{"a": "xÿy"}`, KindInvalidUTF8, false},
		{"infinity replaced", `{"a": Infinity, "b": -inf}`, KindNonFinite, true},
		{"NaN is no number", `{"a": NaN}`, KindNonFinite, false},
		{"call arguments dropped", `{"d": datetime.date(2024, 1, 5)}`, KindFunctionCall, true},
		{"call without argument", `{"id": ObjectId()}`, KindFunctionCall, true},
		{"call unwrapped", `{"n": NumberLong(42)}`, KindFunctionCall, false},
		{"lossy repair beyond the cap", cap(`"cut`), KindMoreRepairs, true},
		{"syntax repairs beyond the cap", cap("1]"), KindMoreRepairs, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := Find(tt.in, PolicySyntax)
			if len(cs) == 0 {
				t.Fatalf("Find(%q) found nothing", tt.in)
			}
			c := cs[0]
			var of []bool
			for _, r := range c.Repairs {
				if r.Kind == tt.kind {
					of = append(of, r.Lossy)
				}
			}
			if tt.lossy {
				if !containsTrue(of) {
					t.Errorf("Find(%q) = %s: no lossy %s in %v", tt.in, c.JSON, tt.kind, c.Repairs)
				}
				if !c.Lossy() {
					t.Errorf("candidate %s not lossy despite %v", c.JSON, c.Repairs)
				}
				return
			}
			if containsTrue(of) || c.Lossy() {
				t.Errorf("Find(%q) = %s: lossy repairs %v, want none", tt.in, c.JSON, c.Repairs)
			}
			if sometimesLossy[tt.kind] && len(of) == 0 {
				t.Errorf("Find(%q) = %s: no %s repair in %v, want one that is not lossy", tt.in, c.JSON, tt.kind, c.Repairs)
			}
		})
	}
}

func containsTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}
