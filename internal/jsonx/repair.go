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

// Syntax repair kinds (Where is a byte offset "@N" into the text given to Find).
const (
	KindTrailingComma     = "trailing_comma"       // `[1,2,]`
	KindLeadingComma      = "leading_comma"        // `[,1]`, `[1,,2]`
	KindMissingComma      = "missing_comma"        // `{"a":1 "b":2}`
	KindMissingColon      = "missing_colon"        // `{"a" 1}`
	KindMissingValue      = "missing_value"        // `{"a":}` -> null
	KindComment           = "comment"              // `//`, `/* */`, `#`
	KindSingleQuotes      = "single_quotes"        // `'text'`
	KindCurlyQuotes       = "curly_quotes"         // “text” ‘text’
	KindBacktickQuotes    = "backtick_quotes"      // `text` (JS template)
	KindUnquotedKey       = "unquoted_key"         // `{name: 1}`
	KindUnquotedString    = "unquoted_string"      // `{"a": hello}`
	KindPythonLiteral     = "python_literal"       // True False None (and other casings)
	KindNonFinite         = "nonfinite_number"     // NaN Infinity -Infinity -> null
	KindUndefined         = "undefined"            // undefined -> null
	KindControlChar       = "control_char"         // raw newline/tab inside a string
	KindInvalidEscape     = "invalid_escape"       // `\x41`, `\'`, `C:\Users`
	KindUnescapedQuote    = "unescaped_quote"      // `"he said "hi" to me"`
	KindMissingQuote      = "missing_quote"        // string not closed before the next member
	KindInvalidUTF8       = "invalid_utf8"         // replaced by U+FFFD
	KindCloseTruncated    = "close_truncated"      // truncated answer closed
	KindEllipsis          = "ellipsis"             // `...` / `…` placeholder dropped
	KindDoubleEncoded     = "double_encoded"       // `"{\"a\":1}"` or `{\"a\":1}`
	KindMismatchedBracket = "mismatched_bracket"   // `[1,2}` / missing `]`
	KindNumberFormat      = "number_format"        // `+1`, `.5`, `5.`, `007`
	KindFunctionCall      = "function_call"        // `NumberLong(2)`, `ISODate("...")`
	KindTuple             = "python_tuple"         // `('a', 'b')` -> ["a","b"]
	KindConcatenation     = "string_concatenation" // `"a" + "b"`
	KindWhitespace        = "special_whitespace"   // NBSP, zero-width space, BOM inside JSON
	KindGarbage           = "garbage"              // a stray character skipped
	KindJoinedValues      = "joined_values"        // `{...},\n{...}` offered as an array too
	KindMoreRepairs       = "more_repairs"         // counts the repairs beyond the listed ones
)

// Coercion kinds (Where is the instance JSON pointer).
const (
	KindCoerceStringToInteger = "coerce_string_to_integer"
	KindCoerceStringToNumber  = "coerce_string_to_number"
	KindCoerceStringToBool    = "coerce_string_to_boolean"
	KindCoerceToString        = "coerce_to_string"
	KindCoerceWrapArray       = "coerce_wrap_array"
	KindCoerceUnwrapArray     = "coerce_unwrap_array"
	KindCoerceEnum            = "coerce_enum"
	KindCoerceJSONString      = "coerce_json_string"
	KindCoerceDropNull        = "coerce_drop_null"     // {"a":null} -> {} where a may not be null
	KindCoerceUnwrapObject    = "coerce_unwrap_object" // {"items":[...]} -> [...] where an array is wanted
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
}
