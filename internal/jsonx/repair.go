// Package jsonx finds JSON in messy model output and repairs it locally,
// recording every repair, so that a fixable answer does not cost a paid re-ask.
package jsonx

// Repair is one change made to a model's answer to make it usable.
type Repair struct {
	// Kind names the repair, e.g. "trailing_comma", "single_quotes",
	// "python_literal", "close_truncated", "coerce_string_to_integer".
	Kind string `json:"kind"`
	// Where is a JSON pointer (coercions) or a byte offset ("@123") in the text.
	Where string `json:"where,omitempty"`
	// Detail is a short human description, e.g. `"42" -> 42`.
	Detail string `json:"detail,omitempty"`
}
