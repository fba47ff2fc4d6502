// Package retry runs the validate-and-reprompt loop: it asks a provider for
// JSON, finds and repairs it, validates it against the user's schema and, when
// it is wrong, asks again with precise feedback until the answer is valid or a
// budget is spent. Transport failures and validation failures have separate
// budgets that never mix.
package retry

import (
	"encoding/json"
	"time"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/schema"
)

// Outcome is how an extraction ended.
type Outcome string

// Outcomes.
const (
	OutcomeOK             Outcome = "ok"              // a schema-valid value
	OutcomeExhausted      Outcome = "exhausted"       // every re-ask used, still invalid
	OutcomeUnextractable  Outcome = "unextractable"   // the model said the document lacks it, or refused
	OutcomeBudgetExceeded Outcome = "budget_exceeded" // the per-document token budget ran out
	OutcomeFatal          Outcome = "fatal"           // a fatal provider error (auth, bad request, quota…)
	OutcomeTransport      Outcome = "transport"       // transport retries ran out (outage); worth redelivery later
	OutcomeCanceled       Outcome = "canceled"        // the caller's context ended
)

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
)

// Attempt is one call to the model and what became of its answer. It holds
// everything the audit trail and the dead-letter diagnostics need.
type Attempt struct {
	N            int                    `json:"n"` // 1-based validation attempt number
	Provider     string                 `json:"provider"`
	Model        string                 `json:"model"`
	Mode         providers.Mode         `json:"mode"`
	StartedAt    time.Time              `json:"started_at"`
	Latency      time.Duration          `json:"latency_ns"` // of the answering (or last failed) call, without retry pauses
	PromptChars  int                    `json:"prompt_chars"`
	Usage        providers.Usage        `json:"usage"`
	FinishReason providers.FinishReason `json:"finish_reason,omitempty"`
	// Raw is the model's answer text as received.
	Raw string `json:"raw,omitempty"`
	// Value is the JSON extracted (after repairs), valid or not; empty if none.
	Value      json.RawMessage    `json:"value,omitempty"`
	Repairs    []jsonx.Repair     `json:"repairs,omitempty"`
	Violations []schema.Violation `json:"violations,omitempty"`
	Class      AttemptClass       `json:"class,omitempty"`
	Error      string             `json:"error,omitempty"`
	// TransportRetries counts the failed HTTP calls retried with backoff
	// before this attempt got an answer (they never spend a re-ask).
	TransportRetries int `json:"transport_retries,omitempty"`
}
