package extractq

import (
	"context"
	"fmt"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/schema"
)

// Types re-exported so that library users never import internal packages.
type (
	// Result is everything one extraction produced: the valid value, every
	// attempt, summed usage and the outcome.
	Result = llm.Result
	// Attempt is one call to the model and what became of its answer.
	Attempt = llm.Attempt
	// AttemptClass says why an attempt did not produce a valid value.
	AttemptClass = llm.AttemptClass
	// Outcome is how an extraction ended.
	Outcome = llm.Outcome
	// Error is a failed extraction carrying its whole Result.
	Error = llm.ExtractionError
	// Provider is one model behind one API.
	Provider = llm.Provider
	// ProviderOption configures NewProvider.
	ProviderOption = providers.Option
	// Mode is how a call asks the provider for structured output.
	Mode = llm.Mode
	// Usage is a token count.
	Usage = llm.Usage
	// Repair is one local fix made to a model's answer.
	Repair = llm.Repair
	// RepairPolicy is what may be fixed locally before re-asking.
	RepairPolicy = jsonx.Policy
	// Violation is one way a value fails its schema.
	Violation = schema.Violation
	// Feedback is a re-ask strategy.
	Feedback = retry.Feedback
	// SchemaIn is how the schema appears in the prompt.
	SchemaIn = retry.SchemaIn
	// History is what a re-ask sends of the conversation so far.
	History = retry.History
	// Transport is the transport-retry policy.
	Transport = retry.Transport
	// Jitter randomises transport-retry pauses.
	Jitter = retry.Jitter
	// Templates replace the built-in prompts.
	Templates = retry.Templates
	// PromptData is what prompt templates are executed with.
	PromptData = retry.PromptData
	// Sleeper pauses between transport retries.
	Sleeper = retry.Sleeper
)

// Outcomes.
const (
	OutcomeOK             = llm.OutcomeOK
	OutcomeLossy          = llm.OutcomeLossy
	OutcomeExhausted      = llm.OutcomeExhausted
	OutcomeUnextractable  = llm.OutcomeUnextractable
	OutcomeBudgetExceeded = llm.OutcomeBudgetExceeded
	OutcomeFatal          = llm.OutcomeFatal
	OutcomeTransport      = llm.OutcomeTransport
	OutcomeCanceled       = llm.OutcomeCanceled
)

// Modes.
const (
	ModeAuto   = llm.ModeAuto
	ModeText   = llm.ModeText
	ModeJSON   = llm.ModeJSON
	ModeStrict = llm.ModeStrict
	ModeTools  = llm.ModeTools
)

// Feedback strategies, schema placements, history policies, repair
// policies and jitter kinds; see the retry package's documentation of each.
const (
	FeedbackReflect = retry.FeedbackReflect
	FeedbackDirect  = retry.FeedbackDirect
	FeedbackPolite  = retry.FeedbackPolite

	SchemaInAuto    = retry.SchemaInAuto
	SchemaInExample = retry.SchemaInExample
	SchemaInSchema  = retry.SchemaInSchema
	SchemaInNone    = retry.SchemaInNone

	HistoryLast = retry.HistoryLast
	HistoryFull = retry.HistoryFull

	RepairOff    = jsonx.PolicyOff
	RepairSyntax = jsonx.PolicySyntax
	RepairCoerce = jsonx.PolicyCoerce

	JitterFull = retry.JitterFull
	JitterNone = retry.JitterNone
)

// Errors a failed extraction matches with errors.Is, one per outcome, and
// ErrConfig for a wrong option, a missing provider or schema.
var (
	ErrExhausted      = llm.ErrExhausted
	ErrUnextractable  = llm.ErrUnextractable
	ErrBudgetExceeded = llm.ErrBudgetExceeded
	ErrFatal          = llm.ErrFatal
	ErrTransport      = llm.ErrTransport
	ErrCanceled       = llm.ErrCanceled
	ErrConfig         = retry.ErrConfig
)

// Extractor extracts with one set of options; it is safe for concurrent
// use. New checks the options once, so that a wrong one fails before any
// document is read.
type Extractor struct {
	provider Provider
	cfg      retry.Config
}

// New returns an Extractor. The error matches ErrConfig when an option is
// wrong or WithProvider is missing.
func New(opts ...Option) (*Extractor, error) {
	o := newOptions(opts)
	if o.provider == nil {
		return nil, fmt.Errorf("extractq: %w: no provider: pass extractq.WithProvider(p), with p from extractq.NewProvider(\"openai:gpt-4o-mini\") or another spec", ErrConfig)
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("extractq: %w", err)
	}
	return &Extractor{provider: o.provider, cfg: o.cfg}, nil
}

// Provider is the provider the Extractor asks.
func (x *Extractor) Provider() Provider { return x.provider }

// Extract asks for s's data in document, validates the answer and re-asks
// with feedback until it is valid or a budget is spent. On success the error
// is nil and Result.Value validated against s. Otherwise the error is an
// *Error carrying the Result (also returned), matching the outcome's
// sentinel (ErrExhausted, ErrUnextractable, …). A nil schema, or a mode the
// provider does not support, gives a nil Result and an error matching
// ErrConfig.
func (x *Extractor) Extract(ctx context.Context, document string, s *schema.Schema) (*Result, error) {
	if s == nil {
		return nil, fmt.Errorf("extractq: %w: no schema: compile one with schema.Compile, schema.CompileFile or schema.FromStruct", ErrConfig)
	}
	res, err := retry.Run(ctx, x.provider, document, s, x.cfg)
	if err != nil && res == nil {
		return nil, fmt.Errorf("extractq: %w", err)
	}
	return res, err
}

// Extract is New(opts...) followed by Extract: the one-call form.
func Extract(ctx context.Context, document string, s *schema.Schema, opts ...Option) (*Result, error) {
	x, err := New(opts...)
	if err != nil {
		return nil, err
	}
	return x.Extract(ctx, document, s)
}

// ExtractInto extracts into a T whose schema comes from T itself (see
// schema.FromStruct: field names from json tags, descriptions and
// constraints from jsonschema tags). It derives the schema on every call;
// in a hot loop derive it once with schema.FromStruct and use Extract and
// Result.Decode.
func ExtractInto[T any](ctx context.Context, document string, opts ...Option) (T, *Result, error) {
	var zero T
	s, err := schema.FromStruct(new(T))
	if err != nil {
		return zero, nil, fmt.Errorf("extractq: %w: schema of %T: %w", ErrConfig, zero, err)
	}
	res, err := Extract(ctx, document, s, opts...)
	if err != nil {
		return zero, res, err
	}
	var v T
	if err := res.Decode(&v); err != nil {
		// The value validated against T's own schema, so this means the
		// schema and the Go type disagree: a bug worth reporting.
		return zero, res, fmt.Errorf("extractq: the validated value does not decode into %T: %w", zero, err)
	}
	return v, res, nil
}

// NewProvider makes a provider from a spec such as "openai:gpt-4o-mini",
// "anthropic:claude-haiku-4-5", "ollama:llama3.1:8b" or "sim:sloppy" (an
// in-process simulator). API keys and base URLs come from the conventional
// environment variables unless set with the options.
func NewProvider(spec string, opts ...ProviderOption) (Provider, error) {
	return providers.New(spec, opts...)
}

// DefaultTransport is the default transport-retry policy, a starting point
// for WithTransport.
func DefaultTransport() Transport { return retry.DefaultTransport() }
