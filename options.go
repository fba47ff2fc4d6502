package extractq

import (
	"context"
	"encoding/json"
	"text/template"
	"time"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/llm"
)

// Option configures an Extractor. Every option has a documented default; an
// Extractor without options other than WithProvider uses them all.
type Option func(*options)

type options struct {
	provider llm.Provider
	cfg      retry.Config
	chunk    chunkOptions
	input    Input
}

func newOptions(opts []Option) options {
	o := options{cfg: retry.DefaultConfig()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Feedback is how a re-ask tells the model what was wrong.
type Feedback string

// Feedback strategies.
const (
	// FeedbackReflect (default) lists the errors and asks the model to work
	// out what in its answer caused each one before answering again with
	// JSON only: one sentence more than FeedbackDirect, no longer answers.
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
	// SchemaInExample shows a valid example instance (what models imitate
	// best), or the schema when no example can be built.
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
	// HistoryLast (default) sends the system prompt, the task, the last
	// failed answer and its feedback: the prompt does not grow per re-ask.
	HistoryLast History = "last"
	// HistoryFull sends every failed answer and every feedback.
	HistoryFull History = "full"
)

// RepairPolicy is what may be fixed locally before re-asking.
type RepairPolicy string

// Repair policies, from strictest to most helpful.
const (
	// RepairOff accepts only strictly valid JSON (still found in fences,
	// prose and reasoning blocks).
	RepairOff RepairPolicy = "off"
	// RepairSyntax repairs syntax only.
	RepairSyntax RepairPolicy = "syntax"
	// RepairCoerce (default) repairs syntax and applies safe schema-guided
	// coercions; a coerced value is accepted only if it then validates.
	RepairCoerce RepairPolicy = "coerce"
)

// Jitter is how a transport-retry pause is randomised.
type Jitter string

// Jitter kinds.
const (
	// JitterFull (default) pauses a uniformly random time in [0, backoff],
	// so that workers hit by the same outage do not retry in step.
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
	// run out the outcome is llm.OutcomeTransport: worth trying later.
	Retries int
	// Base is the first backoff (default 500ms); it doubles per retry.
	Base time.Duration
	// Cap bounds one backoff (default 20s).
	Cap time.Duration
	// Jitter randomises the backoff (default JitterFull).
	Jitter Jitter
	// MaxRetryAfter is the longest Retry-After waited for in process
	// (default 60s). A provider asking for longer ends the extraction with
	// llm.OutcomeTransport and Result.RetryAfter set, so that the caller can
	// reschedule instead of holding a slot.
	MaxRetryAfter time.Duration
}

// DefaultTransport is the default transport-retry policy, a starting point
// for WithTransport.
func DefaultTransport() Transport {
	d := retry.DefaultTransport()
	return Transport{Retries: d.Retries, Base: d.Base, Cap: d.Cap, Jitter: Jitter(d.Jitter), MaxRetryAfter: d.MaxRetryAfter}
}

// Templates replace the built-in prompts; a nil field keeps the built-in
// one. Each is executed with an llm.PromptData.
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

// Validator checks a value that already validated against the schema, for
// rules JSON Schema cannot say: totals equal the sum of the line items, a
// date not in the future, a lookup in your own database. It returns what is
// wrong, by JSON pointer (Pointer "/total", Message "is 12.5 but the line
// items add up to 15.0"); nil means the value passes. Its violations become
// feedback exactly like schema violations and are recorded on the attempt;
// a value is accepted only when the schema and every validator pass. An
// empty Keyword is recorded as "validator". ctx is the extraction's.
type Validator func(ctx context.Context, value json.RawMessage) []llm.Violation

// Observer receives each attempt as soon as it completes (prompt size,
// answer, repairs, violations, latency, tokens): for progress bars, logs and
// tracing. It runs on the extraction's goroutine, so it should be quick; it
// gets a copy and cannot change the outcome.
type Observer func(ctx context.Context, a llm.Attempt)

// WithProvider sets the model to ask (required): one from NewProvider, or
// your own implementation of llm.Provider.
func WithProvider(p llm.Provider) Option { return func(o *options) { o.provider = p } }

// WithMaxReasks sets how many times an invalid answer is re-asked with
// feedback (default 3: at most 4 calls, not counting transport retries).
func WithMaxReasks(n int) Option { return func(o *options) { o.cfg.MaxReasks = n } }

// WithFeedback sets the re-ask strategy (default FeedbackReflect).
func WithFeedback(f Feedback) Option { return func(o *options) { o.cfg.Feedback = retry.Feedback(f) } }

// WithSchemaIn sets how the schema appears in the prompt (default
// SchemaInAuto: an example instance, or nothing when the mode makes the
// provider enforce the schema).
func WithSchemaIn(in SchemaIn) Option {
	return func(o *options) { o.cfg.SchemaIn = retry.SchemaIn(in) }
}

// WithMode sets how calls ask for structured output (default llm.ModeAuto:
// the strongest mode the provider supports for the schema). llm.ModePrefill
// generates the value field by field on a provider that can continue a
// prefix (llm.Completer); auto never picks it, and New accepts it but
// Extract fails with ErrConfig where the provider cannot continue a prefix.
func WithMode(m llm.Mode) Option { return func(o *options) { o.cfg.Mode = m } }

// WithTemperature sets the sampling temperature (default 0).
func WithTemperature(t float64) Option { return func(o *options) { o.cfg.Temperature = t } }

// WithMaxTokens caps each answer (default: the provider's cap, or what
// remains of the token budget).
func WithMaxTokens(n int) Option { return func(o *options) { o.cfg.MaxTokens = n } }

// WithHistory sets what a re-ask sends (default HistoryLast).
func WithHistory(h History) Option { return func(o *options) { o.cfg.History = retry.History(h) } }

// WithTokenBudget caps the tokens one document may cost over all calls
// (default 0: no cap). Exceeding it ends with llm.ErrBudgetExceeded.
func WithTokenBudget(tokens int) Option { return func(o *options) { o.cfg.TokenBudget = tokens } }

// WithCallTimeout bounds each HTTP call (default: the context's deadline
// only); a timed-out call is retried as a transport failure.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.cfg.CallTimeout = d } }

// WithTransport sets the transport-retry policy (default DefaultTransport:
// 4 retries, 500ms base doubling to a 20s cap, full jitter, Retry-After
// honoured up to 60s).
func WithTransport(t Transport) Option {
	return func(o *options) {
		o.cfg.Transport = retry.Transport{Retries: t.Retries, Base: t.Base, Cap: t.Cap, Jitter: retry.Jitter(t.Jitter), MaxRetryAfter: t.MaxRetryAfter}
	}
}

// WithRepair sets what is repaired locally before re-asking (default
// RepairCoerce).
func WithRepair(p RepairPolicy) Option { return func(o *options) { o.cfg.Repair = jsonx.Policy(p) } }

// WithBreakOnUnextractable sets whether an answer saying the document lacks
// the data (or a refusal) ends the extraction at once with
// llm.ErrUnextractable (default true); when false it is re-asked.
func WithBreakOnUnextractable(b bool) Option {
	return func(o *options) { o.cfg.BreakOnUnextractable = b }
}

// WithAcceptLossy decides what an extraction whose re-asks ran out does
// with a value that validated only after a lossy repair (a cut-off string
// closed, a closing quote guessed): false (default) fails it with
// ErrExhausted; true returns it with llm.OutcomeLossy and a nil error. Such a
// value is never accepted while re-asks remain.
func WithAcceptLossy(b bool) Option { return func(o *options) { o.cfg.AcceptLossy = b } }

// WithRepeatTemperatureStep raises the temperature of the next call by
// step each time the model repeats a mistake it was told about, up to 1
// (default 0.2; 0 keeps the temperature fixed).
func WithRepeatTemperatureStep(step float64) Option {
	return func(o *options) { o.cfg.RepeatTemperatureStep = step }
}

// WithFeedbackMaxChars bounds the error list of one feedback (default 1200).
func WithFeedbackMaxChars(n int) Option { return func(o *options) { o.cfg.FeedbackMaxChars = n } }

// WithTemplates replaces built-in prompts; nil fields keep the built-in
// ones. A Feedback template replaces the feedback strategy.
func WithTemplates(t Templates) Option {
	return func(o *options) {
		o.cfg.Templates = retry.Templates{System: t.System, Task: t.Task, Feedback: t.Feedback}
	}
}

// WithSleeper replaces the pause between transport retries, e.g. in tests:
// sleep must wait d or until ctx ends, returning ctx's error then.
func WithSleeper(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) { o.cfg.Sleep = sleep }
}

// WithValidator adds a rule the value must pass besides the schema (see
// Validator). Validators run in the order given, each on every value that
// validated against the schema; all their violations are reported together.
func WithValidator(v Validator) Option {
	return func(o *options) {
		if v != nil {
			o.cfg.Validators = append(o.cfg.Validators, func(ctx context.Context, value json.RawMessage) []llm.Violation { return v(ctx, value) })
		}
	}
}

// WithObserver adds a function that receives each attempt as it completes
// (see Observer). Observers run in the order given.
func WithObserver(f Observer) Option {
	return func(o *options) {
		if f != nil {
			o.cfg.Observers = append(o.cfg.Observers, func(ctx context.Context, a llm.Attempt) { f(ctx, a) })
		}
	}
}
