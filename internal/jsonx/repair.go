// Package jsonx finds JSON in messy model output and repairs it locally,
// recording every repair, so that a fixable answer does not cost a paid re-ask.
//
// Find locates candidates (fences, prose, reasoning blocks, several values)
// and runs each through a tolerant single-pass parser that always writes
// valid, compact JSON. Coerce then applies safe schema-guided changes from a
// violation list. jsonx never decides validity: the caller validates.
package jsonx

import (
	"fmt"

	"github.com/extractq/extractq/llm"
)

// Repair kinds. Where is a byte offset "@N" into the text given to Find for
// syntax repairs, the instance JSON pointer for coercions.
//
// The lossy rule: a repair sets llm.Repair.Lossy when the value may differ
// from what the model meant because content was dropped or invented, or
// because the repair chose between readings that give different values.
// Examples: closing a truncated answer or string, null for a missing value,
// dropping an ellipsis that stood for items, dropping words that could not
// be read, a closing quote guessed in the middle of a line, a key the answer
// did not contain. A repair that only changes how the same content is
// written (quotes, commas, comments, Python or JS literals, escapes) is not
// lossy. The engine does not accept a lossy value while re-asks remain.
// Each constant below says when it is lossy.
const (
	KindTrailingComma     = "trailing_comma"       // `[1,2,]`; never lossy
	KindLeadingComma      = "leading_comma"        // `[,1]`, `[1,,2]`; never lossy
	KindMissingComma      = "missing_comma"        // `{"a":1 "b":2}`; never lossy
	KindMissingColon      = "missing_colon"        // `{"a" 1}`; never lossy
	KindMissingValue      = "missing_value"        // `{"a":}` -> null; always lossy (the value is invented)
	KindComment           = "comment"              // `//`, `/* */`, `#`; never lossy
	KindSingleQuotes      = "single_quotes"        // `'text'`; never lossy
	KindCurlyQuotes       = "curly_quotes"         // “text” ‘text’; never lossy
	KindBacktickQuotes    = "backtick_quotes"      // `text` (JS template, may span lines); never lossy
	KindTripleQuotes      = "triple_quotes"        // """text""", '''text''', ```code```; never lossy (a missing closer is close_truncated)
	KindUnquotedKey       = "unquoted_key"         // `{name: 1}`, `{étoiles: 4}`, `{5: "b"}`, `{null: 1}`; never lossy
	KindUnquotedString    = "unquoted_string"      // `{"a": hello}`, `1,250.50` kept as text; never lossy
	KindPythonLiteral     = "python_literal"       // True False None (and other casings), u'' prefixes; never lossy
	KindNonFinite         = "nonfinite_number"     // NaN -> null (not lossy: "no number"); ±Infinity -> null (lossy)
	KindUndefined         = "undefined"            // undefined -> null; never lossy
	KindControlChar       = "control_char"         // raw newline/tab inside a string; never lossy
	KindInvalidEscape     = "invalid_escape"       // `\x41`, `\'`, `C:\Users`; never lossy
	KindUnescapedQuote    = "unescaped_quote"      // `"he said "hi" to me"`; lossy when the quote read as text was followed by , : } or ] (it could have ended the string)
	KindMissingQuote      = "missing_quote"        // a string not closed: lossy when its end is guessed mid-line (before a comma or the closing brackets); not at the end of a line, nor for a key's opening quote
	KindInvalidUTF8       = "invalid_utf8"         // replaced by U+FFFD; always lossy
	KindCloseTruncated    = "close_truncated"      // truncated answer, string, key, number or literal closed or dropped; always lossy
	KindEllipsis          = "ellipsis"             // `...` / `…` placeholder dropped; always lossy (it stood for content)
	KindDoubleEncoded     = "double_encoded"       // `"{\"a\":1}"` or `{\"a\":1}`; never lossy
	KindMismatchedBracket = "mismatched_bracket"   // `[1,2}` / missing `]` / `{"a":1}, "b":2}` closed early; never lossy
	KindNumberFormat      = "number_format"        // `+1`, `.5`, `5.`; never lossy
	KindFunctionCall      = "function_call"        // `NumberLong(2)`, `ISODate("...")`; lossy when arguments were dropped, or none was given (null)
	KindTuple             = "python_tuple"         // `('a', 'b')` -> ["a","b"]; never lossy
	KindConcatenation     = "string_concatenation" // `"a" + "b"`; never lossy
	KindWhitespace        = "special_whitespace"   // NBSP, zero-width space, BOM inside JSON; never lossy
	KindGarbage           = "garbage"              // text skipped: lossy when it held a letter or digit, or was a '{' or '[' where a key belongs or a key's ':' in an array (the structure changes); not for stray punctuation
	KindJoinedValues      = "joined_values"        // `{...},\n{...}` offered as an array too; never lossy
	KindScalarInProse     = "scalar_in_prose"      // a scalar taken from prose (FindOptions.Scalars); never lossy
	KindMoreRepairs       = "more_repairs"         // counts the repairs beyond the listed ones; lossy when any of them was
)

// Coercion kinds (Where is the instance JSON pointer).
const (
	KindCoerceStringToInteger = "coerce_string_to_integer" // "42" -> 42, "1,234" -> 1234 (see Coerce); never lossy
	KindCoerceStringToNumber  = "coerce_string_to_number"  // "3.5" -> 3.5, "$1,234.50" -> 1234.50; never lossy
	KindCoerceStringToBool    = "coerce_string_to_boolean" // "true" -> true; never lossy
	KindCoerceToString        = "coerce_to_string"         // 42 -> "42"; never lossy
	KindCoerceWrapArray       = "coerce_wrap_array"        // x -> [x]; lossy when x is a string holding a list separator (, ; or a line break: its items may have been meant separately) or an object holding an array (it may wrap the wanted items)
	KindCoerceUnwrapArray     = "coerce_unwrap_array"      // [x] -> x; never lossy
	KindCoerceEnum            = "coerce_enum"              // "Active" -> "active", "Café" -> "cafe", an alias -> its value; never lossy
	KindCoerceJSONString      = "coerce_json_string"       // "[1,2]" -> [1,2]; never lossy
	KindCoerceDropNull        = "coerce_drop_null"         // {"a":null} -> {} where a may not be null; never lossy
	KindCoerceUnwrapObject    = "coerce_unwrap_object"     // {"items":[...]} -> [...], {"answer":42} -> 42; never lossy
	KindCoerceKey             = "coerce_key"               // {"First Name": x} -> {"first_name": x}; never lossy
	KindCoerceEmptyArray      = "coerce_empty_array"       // a missing required array -> []; always lossy (the answer did not say)
)

// Policy says how much local repair is allowed before a re-ask.
type Policy string

// Policies, from strictest to most helpful.
const (
	// PolicyOff accepts only strictly valid JSON (still found in fences,
	// prose and reasoning blocks).
	PolicyOff Policy = "off"
	// PolicySyntax repairs syntax only.
	PolicySyntax Policy = "syntax"
	// PolicyCoerce repairs syntax and lets the caller apply Coerce. It is
	// the default; Find treats it like PolicySyntax.
	PolicyCoerce Policy = "coerce"
)

// ParsePolicy reads a policy name; "" means PolicyCoerce.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case "":
		return PolicyCoerce, nil
	case PolicyOff, PolicySyntax, PolicyCoerce:
		return Policy(s), nil
	}
	return "", fmt.Errorf("unknown repair policy %q: use off, syntax or coerce", s)
}

// Candidate is one JSON value found in a text.
type Candidate struct {
	// JSON is the value, compact and always valid JSON.
	JSON []byte
	// Repairs lists every change made to the text to get JSON, in order.
	Repairs []llm.Repair
	// Start and End delimit the source of the value in the text (bytes).
	Start, End int
	// Fenced is true when the value came from a ``` code fence.
	Fenced bool
	// Reasoning is true when the value sat inside a <think> block.
	Reasoning bool
	// Joined is true for the array Find made of a run of separate objects
	// (KindJoinedValues). Its parts are offered too, before it; a ranking
	// by coverage should count the join once, not add up its parts. Every
	// other object or array candidate is an outermost value: Find never
	// offers a value nested inside another candidate.
	Joined bool
	// Scalar says why a scalar candidate was offered (see ScalarFrom); it
	// is NotScalar for objects and arrays. Scalars are offered only when
	// FindOptions.Scalars asks for them.
	Scalar ScalarFrom
}

// Lossy reports whether any repair made to get the candidate dropped or
// invented content (see the Kind constants).
func (c Candidate) Lossy() bool { return AnyLossy(c.Repairs) }

// AnyLossy reports whether any of rs is lossy.
func AnyLossy(rs []llm.Repair) bool {
	for _, r := range rs {
		if r.Lossy {
			return true
		}
	}
	return false
}
