package llm

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/extractq/extractq/schema"
)

// Violation is one way a value fails its schema: a JSON pointer, the
// keyword, a message, the offending value and what was wanted. It is the
// schema package's type, named here so that validators and observers need
// only this package.
type Violation = schema.Violation

// Outcome is how an extraction ended.
type Outcome string

// Outcomes.
const (
	OutcomeOK             Outcome = "ok"              // a schema-valid value, read from the answer without guessing
	OutcomeLossy          Outcome = "ok_lossy"        // a schema-valid value that needed a lossy repair (see below)
	OutcomeExhausted      Outcome = "exhausted"       // every re-ask used, still invalid
	OutcomeUnextractable  Outcome = "unextractable"   // the model said the document lacks it, or refused
	OutcomeBudgetExceeded Outcome = "budget_exceeded" // the per-document token budget ran out
	OutcomeFatal          Outcome = "fatal"           // a fatal provider error (auth, bad request, quota…)
	OutcomeTransport      Outcome = "transport"       // transport retries ran out (outage); worth redelivery later
	OutcomeCanceled       Outcome = "canceled"        // the caller's context ended
)

// OutcomeOK is the only fully trusted outcome. OutcomeLossy is returned
// only when the caller opted in (the engine's AcceptLossy) and every re-ask
// was spent: its Value validates, but some repair dropped or invented
// content (a cut-off string closed, a quote guessed), so it may differ from
// what the model meant; Reason names the repairs. Without the opt-in such a
// document ends OutcomeExhausted instead.

// Sentinel errors, one per failed outcome, so callers can branch with
// errors.Is on the *ExtractionError a failed extraction returns.
var (
	ErrExhausted      = errors.New("extraction exhausted its re-asks")
	ErrUnextractable  = errors.New("document unextractable")
	ErrBudgetExceeded = errors.New("token budget exceeded")
	ErrFatal          = errors.New("fatal provider error")
	ErrTransport      = errors.New("provider unavailable")
	ErrCanceled       = errors.New("extraction canceled")
)

// Err is the sentinel error of the outcome: nil for OutcomeOK and
// OutcomeLossy (and for an unknown outcome).
func (o Outcome) Err() error {
	switch o {
	case OutcomeExhausted:
		return ErrExhausted
	case OutcomeUnextractable:
		return ErrUnextractable
	case OutcomeBudgetExceeded:
		return ErrBudgetExceeded
	case OutcomeFatal:
		return ErrFatal
	case OutcomeTransport:
		return ErrTransport
	case OutcomeCanceled:
		return ErrCanceled
	}
	return nil
}

// Accepted reports whether the outcome carries a value: OutcomeOK, or
// OutcomeLossy which the caller opted into.
func (o Outcome) Accepted() bool { return o == OutcomeOK || o == OutcomeLossy }

// AttemptClass says why an attempt did not produce a valid value.
type AttemptClass string

// Attempt classes (empty for a valid attempt). Provider failures use the
// provider's ErrorClass string.
const (
	ClassNone      AttemptClass = ""
	ClassNoJSON    AttemptClass = "no_json"   // nothing JSON-like found or repairable
	ClassSchema    AttemptClass = "schema"    // JSON found, schema violations remain
	ClassTruncated AttemptClass = "truncated" // finish reason length: the answer was cut off
	ClassRefusal   AttemptClass = "refusal"   // the model refused or said the data is absent
	ClassBudget    AttemptClass = "budget"    // not sent: the token budget would be exceeded
	// ClassLossy: the value validates only after a repair that dropped or
	// invented content (Repair.Lossy); Value holds it, it is not accepted
	// while re-asks remain.
	ClassLossy AttemptClass = "lossy"
	// ClassEcho: the only value that validates is the example the prompt
	// showed, repeated instead of extracted.
	ClassEcho AttemptClass = "example_echo"
	// ClassAmbiguous: the answer holds several different values that fit
	// the schema and nothing says which one is meant.
	ClassAmbiguous AttemptClass = "ambiguous"
	// ClassTemplate: the only value is a template, every string of it a
	// placeholder the document does not contain ({"name": "..."}): the
	// shape the model means to fill, not an answer. Value holds it.
	ClassTemplate AttemptClass = "template"
)

// Repair is one change made to a model's answer to make it usable.
type Repair struct {
	// Kind names the repair, e.g. "trailing_comma", "single_quotes",
	// "python_literal", "close_truncated", "coerce_string_to_integer".
	Kind string `json:"kind"`
	// Where is a JSON pointer (coercions) or a byte offset ("@123") in the text.
	Where string `json:"where,omitempty"`
	// Detail is a short human description, e.g. `"42" -> 42`.
	Detail string `json:"detail,omitempty"`
	// Lossy marks a repair that dropped or invented content (a truncated
	// string closed, a key the answer did not contain, a closing quote
	// guessed mid-line): the value may differ from what the model meant, so
	// the engine does not accept it while re-asks remain.
	Lossy bool `json:"lossy,omitempty"`
}

// String renders the repair on one line, e.g. `trailing_comma @41: removed ","`.
func (r Repair) String() string {
	s := r.Kind
	if r.Where != "" {
		s += " " + r.Where
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// Attempt is one call to the model and what became of its answer. It holds
// everything the audit trail and the dead-letter diagnostics need.
type Attempt struct {
	// N is the 1-based validation attempt number; in ModePrefill, the
	// 1-based number of the call (one per generated value or decision).
	N int `json:"n"`
	// Pointer is the JSON pointer of the value a ModePrefill step generated
	// ("" for the root, and for every attempt of the other modes).
	Pointer string `json:"pointer,omitempty"`
	// Step is what a ModePrefill call asked for: "value", "presence" (is
	// an optional field there), "more" (does an array go on), "choice" (which
	// anyOf branch) or "whole" (a subtree generated at once); "" in the
	// other modes.
	Step string `json:"step,omitempty"`
	// Provider and Model name who was asked, e.g. "openai:gpt-4o-mini" and
	// "gpt-4o-mini".
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Mode is how the call asked for structured output.
	Mode Mode `json:"mode"`
	// ModeNote says why the mode differs from what was asked, e.g. why
	// ModeAuto chose JSON mode over a strict form that could not express the
	// schema faithfully; empty when the mode is what was asked for.
	ModeNote string `json:"mode_note,omitempty"`
	// StartedAt is when the attempt began.
	StartedAt time.Time `json:"started_at"`
	// Latency is that of the answering (or last failed) call, without
	// transport-retry pauses.
	Latency time.Duration `json:"latency_ns"`
	// PromptChars is the size of the prompt sent, in bytes.
	PromptChars int `json:"prompt_chars"`
	// Usage is the tokens the provider reported for the answering call.
	Usage Usage `json:"usage"`
	// FinishReason is why the model stopped.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Raw is the model's answer text as received.
	Raw string `json:"raw,omitempty"`
	// Value is the JSON extracted (after repairs), valid or not; empty if none.
	Value json.RawMessage `json:"value,omitempty"`
	// Repairs lists every local fix applied to get Value.
	Repairs []Repair `json:"repairs,omitempty"`
	// Violations lists what is wrong with Value (schema and user validators).
	Violations []Violation `json:"violations,omitempty"`
	// Class is why the attempt failed; ClassNone for a valid answer.
	Class AttemptClass `json:"class,omitempty"`
	// Error is the failure in words, for provider errors and refusals.
	Error string `json:"error,omitempty"`
	// TransportRetries counts the failed HTTP calls retried with backoff
	// before this attempt got an answer (they never spend a re-ask).
	TransportRetries int `json:"transport_retries,omitempty"`
	// Batch says the answer came through a provider batch (Response.Batch),
	// so its Usage is billed at the batch price.
	Batch bool `json:"batch,omitempty"`
	// Adjustments lists what the provider adapter learned during this
	// attempt: request parts the server refused, changed and sent again
	// without spending a re-ask (Response.Adjustments).
	Adjustments []Adjustment `json:"adjustments,omitempty"`
	// Chunk is the part of the document the attempt was given when a long
	// document was split (extractq.WithChunking); nil for a whole document
	// and for the final call that resolves conflicting chunk answers.
	Chunk *Span `json:"chunk,omitempty"`
	// Ungrounded lists the JSON pointers of the strings and numbers of a
	// chunked extraction's Value that were not found in the document text
	// (see Result.Sources); set on the last attempt of each chunk.
	Ungrounded []string `json:"ungrounded,omitempty"`
}

// Span is one part of a document: its number (0-based, in document order)
// and its [Start, End) character offsets in the original document.
// Offsets count Unicode code points (characters), not bytes.
type Span struct {
	Index int `json:"index"`
	Start int `json:"start"`
	End   int `json:"end"`
}

// Source is where one extracted value was found: [Start, End) character
// (code point) offsets into the original document and the chunk whose
// answer gave it (0 for a document sent whole). Match says how it was
// found: "exact", or "normalized" (whitespace, case or number format
// differed). For a document read with pages (extractq.ExtractDocument),
// Page is the 1-based page holding Start, PageStart and PageEnd the same
// range counted from the page's first character, and Box where the value
// lies on the page when the reader has layout. Snippet is the document's
// text there with a little context, as a reviewer reads it.
type Source struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Chunk int    `json:"chunk"`
	Match string `json:"match"`
	// Page is 0 when the document has no pages.
	Page      int    `json:"page,omitempty"`
	PageLabel string `json:"page_label,omitempty"`
	PageStart int    `json:"page_start,omitempty"`
	PageEnd   int    `json:"page_end,omitempty"`
	Box       *Box   `json:"box,omitempty"`
	// Snippet is the value as the document writes it, with up to 30
	// characters of its line either side ("…" where cut; white space
	// runs as one space).
	Snippet string `json:"snippet,omitempty"`
}

// Box is a rectangle on a page in points (1/72 inch), origin at the top
// left.
type Box struct {
	X0 float64 `json:"x0"`
	Y0 float64 `json:"y0"`
	X1 float64 `json:"x1"`
	Y1 float64 `json:"y1"`
}

// Result is everything one extraction produced.
type Result struct {
	// Value is the schema-valid value; set only when Outcome is OutcomeOK
	// or OutcomeLossy (Outcome.Accepted), and then it always validated
	// against the caller's schema.
	Value json.RawMessage `json:"value,omitempty"`
	// Outcome is how the extraction ended.
	Outcome Outcome `json:"outcome"`
	// Reason is one readable paragraph saying why, when Outcome is not ok.
	Reason string `json:"reason,omitempty"`
	// Attempts lists every call to the model, in order.
	Attempts []Attempt `json:"attempts"`
	// Usage is summed over every call.
	Usage Usage `json:"usage"`
	// Provider, Model and Mode say who was asked and how.
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Mode     Mode   `json:"mode"`
	// RetryAfter is the wait the provider asked for when transport retries
	// ran out (OutcomeTransport): the delay to reschedule the job with.
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	// Cause is the underlying error: the provider's *Error for fatal and
	// transport outcomes, the context's error for canceled.
	Cause error `json:"-"`

	// The fields below are set only when the document was split into
	// chunks (extractq.WithChunking); Attempts then holds every chunk's
	// attempts in chunk order, each with its Chunk span.

	// Chunks lists the parts the document was split into.
	Chunks []Span `json:"chunks,omitempty"`
	// Sources maps the JSON pointer of each string and number in Value
	// (e.g. "/items/3/sku") to where it was found in the document.
	Sources map[string]Source `json:"sources,omitempty"`
	// Ungrounded lists the JSON pointers of Value's strings and numbers
	// found nowhere in the document: likely invented by the model.
	Ungrounded []string `json:"ungrounded,omitempty"`
	// FailedChunk is the chunk whose extraction failed, when one did (and
	// then Outcome is that chunk's); nil otherwise.
	FailedChunk *Span `json:"failed_chunk,omitempty"`
}

// Repairs counts the local repairs over every attempt.
func (r *Result) Repairs() int {
	n := 0
	for _, a := range r.Attempts {
		n += len(a.Repairs)
	}
	return n
}

// Calls counts the answered-or-failed calls the model was asked for, not
// counting transport retries: at most MaxReasks+1.
func (r *Result) Calls() int {
	n := 0
	for _, a := range r.Attempts {
		if a.Class != ClassBudget {
			n++
		}
	}
	return n
}

// Decode unmarshals Value into v; it fails when the extraction produced no
// value (OutcomeLossy decodes: the caller opted into it).
func (r *Result) Decode(v any) error {
	if !r.Outcome.Accepted() {
		return &ExtractionError{Result: r}
	}
	return json.Unmarshal(r.Value, v)
}

// ExtractionError is a failed extraction. It carries the whole Result: every
// attempt with its raw answer, repairs, violations, error class, latency and
// tokens. It matches (errors.Is) the sentinel of its outcome (ErrExhausted,
// ErrUnextractable, …), and unwraps to the cause: the provider's *Error, or
// the context's.
type ExtractionError struct {
	Result *Result
}

// Error is one readable paragraph, e.g. `no valid answer after 4 attempts;
// the last failed at /items/2/price: expected number, got "12,50"; 2 syntax
// repairs applied`.
func (e *ExtractionError) Error() string { return e.Result.Reason }

// Is matches the sentinel of the outcome.
func (e *ExtractionError) Is(target error) bool {
	return target != nil && e.Result.Outcome.Err() == target
}

// Unwrap returns the underlying cause, if any.
func (e *ExtractionError) Unwrap() error { return e.Result.Cause }
