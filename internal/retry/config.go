package retry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"text/template"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jsonx"
)

// Feedback is how a re-ask tells the model what was wrong.
type Feedback string

// Feedback strategies.
const (
	// FeedbackReflect lists the errors and asks the model to work out what in
	// its answer caused each one before answering again with JSON only. It is
	// the default: it costs one sentence more than FeedbackDirect, and the
	// extra thought it asks for stays out of the answer (JSON only), so the
	// answer costs no extra tokens.
	FeedbackReflect Feedback = "reflect"
	// FeedbackDirect lists the errors and asks for the corrected JSON.
	FeedbackDirect Feedback = "direct"
	// FeedbackPolite is FeedbackDirect worded as a courteous request, for
	// models that answer terse instructions with apologies instead of JSON.
	FeedbackPolite Feedback = "polite"
)

// SchemaIn is how the schema appears in the prompt.
type SchemaIn string

// Schema placements.
const (
	// SchemaInAuto (default) is SchemaInNone when the mode makes the
	// provider enforce the schema natively (strict, tools), else
	// SchemaInExample.
	SchemaInAuto SchemaIn = "auto"
	// SchemaInExample shows a valid example instance: shorter than the schema
	// and what models imitate best. When no example can be built from the
	// schema, the schema is shown instead.
	SchemaInExample SchemaIn = "example"
	// SchemaInSchema shows the JSON Schema itself.
	SchemaInSchema SchemaIn = "schema"
	// SchemaInNone shows neither.
	SchemaInNone SchemaIn = "none"
)

// History is what a re-ask sends of the conversation so far.
type History string

// History policies.
const (
	// HistoryLast (default) sends the system prompt, the task, the last failed
	// answer and its feedback: the prompt does not grow with every re-ask.
	HistoryLast History = "last"
	// HistoryFull sends every failed answer and every feedback.
	HistoryFull History = "full"
)

// Jitter is how a transport-retry pause is randomised.
type Jitter string

// Jitter kinds.
const (
	// JitterFull (default) pauses a uniformly random time in [0, backoff], so
	// that many workers hit by the same outage do not retry in step.
	JitterFull Jitter = "full"
	// JitterNone pauses exactly the backoff.
	JitterNone Jitter = "none"
)

// Transport is the policy for retrying failed HTTP calls (429, 5xx, 529,
// timeouts, resets). These retries happen inside one attempt and never spend
// a re-ask. A zero Transport means DefaultTransport; otherwise Retries is
// taken as given and zero durations or jitter take their defaults.
type Transport struct {
	// Retries is how many times one call is repeated after a retryable
	// failure (default 4, i.e. at most 5 HTTP calls per attempt). When they
	// run out the outcome is OutcomeTransport: worth redelivery later.
	Retries int
	// Base is the first backoff (default 500ms); it doubles per retry.
	Base time.Duration
	// Cap bounds one backoff (default 20s).
	Cap time.Duration
	// Jitter randomises the backoff (default JitterFull).
	Jitter Jitter
	// MaxRetryAfter is the longest Retry-After the engine waits for in
	// process (default 60s). A provider asking for a longer wait ends the
	// extraction with OutcomeTransport and Result.RetryAfter set, so that the
	// caller (the worker) can reschedule instead of holding a slot.
	MaxRetryAfter time.Duration
}

// DefaultTransport is the default transport-retry policy.
func DefaultTransport() Transport {
	return Transport{Retries: 4, Base: 500 * time.Millisecond, Cap: 20 * time.Second, Jitter: JitterFull, MaxRetryAfter: time.Minute}
}

// Sleeper pauses for d or until ctx ends, returning ctx's error in that case.
// Tests inject one that records the pauses instead of sleeping.
type Sleeper func(ctx context.Context, d time.Duration) error

// Sleep is the real Sleeper.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Templates replace the built-in prompts; a nil field keeps the built-in one.
// Each is executed with an llm.PromptData.
type Templates struct {
	// System is the system message: the rules and the schema or example. It
	// does not depend on the document, so providers can cache it as a prefix.
	System *template.Template
	// Task is the first user message: the fenced document.
	Task *template.Template
	// Feedback is the user message of a re-ask; it replaces the Feedback
	// strategy.
	Feedback *template.Template
}

// Config tunes one extraction. Start from DefaultConfig: its zero value asks
// once and keeps asking after an unextractable answer. Empty enum fields
// and a zero Transport take their defaults.
type Config struct {
	// MaxReasks is how many times an invalid answer is re-asked (default 3:
	// at most 4 calls to the model, not counting transport retries).
	MaxReasks int
	// Feedback is the re-ask strategy (default FeedbackReflect).
	Feedback Feedback
	// SchemaIn is how the schema appears in the prompt (default SchemaInAuto).
	SchemaIn SchemaIn
	// Mode asks the provider for structured output (default ModeAuto: the
	// strongest mode the provider supports).
	Mode llm.Mode
	// Temperature is sent with every call (default 0: extraction wants the
	// most likely reading, not variety).
	Temperature float64
	// MaxTokens caps each answer (default 0: the provider's own cap, or with
	// a TokenBudget what remains of it, at most 4096).
	MaxTokens int
	// History is what a re-ask sends (default HistoryLast).
	History History
	// TokenBudget caps the tokens (prompt + answer, summed over calls) spent
	// on one document; 0 means no cap. Before each call the engine estimates
	// the prompt (one token per 3 bytes, an over-estimate for most text) plus
	// the largest answer it allows; if that exceeds what is left the outcome
	// is OutcomeBudgetExceeded.
	TokenBudget int
	// CallTimeout bounds one HTTP call (default 0: the context's deadline
	// only). A call that times out is a retryable transport failure.
	CallTimeout time.Duration
	// Transport is the transport-retry policy (default DefaultTransport).
	Transport Transport
	// Repair is what is fixed locally before re-asking (default
	// jsonx.PolicyCoerce). A repaired value is accepted only if it validates.
	Repair jsonx.Policy
	// BreakOnUnextractable ends the extraction at once (OutcomeUnextractable,
	// no re-ask) when the model answers {"_unextractable": reason} or refuses
	// (default true). When false such an answer is re-asked like any other
	// invalid one.
	BreakOnUnextractable bool
	// AcceptLossy decides the end of an extraction whose best answer
	// validated only after a lossy repair (one that dropped or invented
	// content: a cut-off string closed, a closing quote guessed mid-line, a
	// key the answer did not contain). Such a value is never accepted while
	// re-asks remain: the model is asked again, told what was ambiguous.
	// When the re-asks (or the token budget) run out, false (the default)
	// ends the extraction OutcomeExhausted like any invalid answer, and
	// true returns the value with llm.OutcomeLossy and a Reason naming the
	// repairs. The default suits a warehouse: a dead letter explains
	// itself, a silently altered value does not. Whatever the setting, an
	// answer cut off at the token limit, the prompt's example repeated, or
	// an ambiguous answer is never returned.
	AcceptLossy bool
	// RepeatTemperatureStep is added to the temperature of the next call
	// each time the model repeats a mistake it was told about (the same
	// value at the same pointer, no JSON again, …), up to 1 (or Temperature
	// when higher). Default 0.2; 0 keeps Temperature for every call. A model
	// at temperature 0 that keeps its reading despite the feedback is
	// otherwise likely to give it again.
	RepeatTemperatureStep float64
	// FeedbackMaxChars bounds the error list in one feedback (default 1200).
	FeedbackMaxChars int
	// Templates replace the built-in prompts.
	Templates Templates
	// Validators check a value that validated against the schema, for rules
	// the schema cannot say. Their violations are treated exactly like
	// schema violations (feedback, re-ask, recorded on the attempt); an empty
	// Keyword is recorded as "validator".
	Validators []func(ctx context.Context, value json.RawMessage) []llm.Violation
	// Observers receive a copy of each attempt as soon as it completes.
	Observers []func(ctx context.Context, a llm.Attempt)
	// Sleep pauses between transport retries (default Sleep).
	Sleep Sleeper
	// Rand returns a uniform random number in [0, n) for jitter (default
	// math/rand/v2.Int64N).
	Rand func(n int64) int64
	// Now reads the clock for attempt timestamps and latencies (default time.Now).
	Now func() time.Time
	// Attachments are pictures and files shown to the model with this one
	// document (a scanned page, the original PDF), each at its place in the
	// document's text. Set per document (extractq.ExtractDocument); only for
	// a provider whose capabilities say it reads them.
	Attachments []Attachment
}

// Attachment is a picture or a file shown to the model at byte offset At of
// the document's text.
type Attachment struct {
	At   int
	Part llm.Part
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		MaxReasks:             3,
		Feedback:              FeedbackReflect,
		SchemaIn:              SchemaInAuto,
		Mode:                  llm.ModeAuto,
		History:               HistoryLast,
		Transport:             DefaultTransport(),
		Repair:                jsonx.PolicyCoerce,
		BreakOnUnextractable:  true,
		RepeatTemperatureStep: 0.2,
		FeedbackMaxChars:      1200,
	}
}

// ErrConfig is matched by every error that means the Config (or a missing
// provider or schema) is wrong, not the extraction.
var ErrConfig = errors.New("invalid extraction config")

// Validate reports a wrong field (the error matches ErrConfig). Run
// validates too; Validate lets a caller fail before any document is read.
func (c Config) Validate() error {
	_, err := c.normalized()
	return err
}

// normalized fills empty fields with defaults and checks the rest.
func (c Config) normalized() (Config, error) {
	d := DefaultConfig()
	if c.Feedback == "" {
		c.Feedback = d.Feedback
	}
	if c.SchemaIn == "" {
		c.SchemaIn = d.SchemaIn
	}
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.History == "" {
		c.History = d.History
	}
	if c.Transport == (Transport{}) {
		c.Transport = d.Transport
	}
	t := &c.Transport
	t.Base = cmp.Or(t.Base, d.Transport.Base)
	t.Cap = cmp.Or(t.Cap, d.Transport.Cap)
	t.MaxRetryAfter = cmp.Or(t.MaxRetryAfter, d.Transport.MaxRetryAfter)
	t.Jitter = cmp.Or(t.Jitter, d.Transport.Jitter)
	if c.FeedbackMaxChars <= 0 {
		c.FeedbackMaxChars = d.FeedbackMaxChars
	}
	if c.Sleep == nil {
		c.Sleep = Sleep
	}
	if c.Rand == nil {
		c.Rand = rand.Int64N
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	bad := func(format string, a ...any) (Config, error) {
		return c, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case c.MaxReasks < 0:
		return bad("max re-asks is %d; use 0 (ask once) or more", c.MaxReasks)
	case c.TokenBudget < 0 || c.MaxTokens < 0:
		return bad("token budget and max tokens cannot be negative")
	case c.Transport.Retries < 0 || c.Transport.Base < 0 || c.Transport.Cap < 0 || c.Transport.MaxRetryAfter < 0:
		return bad("transport retries and delays cannot be negative")
	case c.Temperature < 0 || c.Temperature > 2:
		return bad("temperature %g is outside 0..2", c.Temperature)
	case c.RepeatTemperatureStep < 0 || c.RepeatTemperatureStep > 1:
		return bad("repeat temperature step %g is outside 0..1", c.RepeatTemperatureStep)
	}
	switch c.Feedback {
	case FeedbackReflect, FeedbackDirect, FeedbackPolite:
	default:
		return bad("feedback %q is unknown; use reflect, direct or polite (or a template)", c.Feedback)
	}
	switch c.SchemaIn {
	case SchemaInAuto, SchemaInExample, SchemaInSchema, SchemaInNone:
	default:
		return bad("schema placement %q is unknown; use auto, example, schema or none", c.SchemaIn)
	}
	switch c.History {
	case HistoryLast, HistoryFull:
	default:
		return bad("history %q is unknown; use last or full", c.History)
	}
	repair, err := jsonx.ParsePolicy(string(c.Repair))
	if err != nil {
		return bad("%v", err)
	}
	c.Repair = repair
	switch c.Transport.Jitter {
	case JitterFull, JitterNone:
	default:
		return bad("jitter %q is unknown; use full or none", c.Transport.Jitter)
	}
	switch c.Mode {
	case llm.ModeAuto, llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools, llm.ModePrefill:
	default:
		return bad("mode %q is unknown; use auto, text, json, strict, tools or prefill", c.Mode)
	}
	return c, nil
}
