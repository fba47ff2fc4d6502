package extractq

import (
	"context"
	"fmt"

	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Errors a failed extraction matches with errors.Is, one per outcome: the
// same values as llm.ErrExhausted and its siblings, repeated here so that a
// caller of Extract needs one import. ErrConfig is a wrong option, a missing
// provider or schema.
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
	provider llm.Provider
	cfg      retry.Config
	chunk    chunkOptions
	input    Input
}

// New returns an Extractor. The error matches ErrConfig when an option is
// wrong or WithProvider is missing.
func New(opts ...Option) (*Extractor, error) {
	o := newOptions(opts)
	if o.provider == nil {
		return nil, fmt.Errorf("extractq: %w: no provider: pass extractq.WithProvider(p), with p from extractq.NewProvider(\"openai:gpt-4o-mini\") or your own llm.Provider", ErrConfig)
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("extractq: %w", err)
	}
	if err := o.chunk.validate(); err != nil {
		return nil, fmt.Errorf("extractq: %w", err)
	}
	if _, err := ParseInput(string(o.input)); err != nil {
		return nil, fmt.Errorf("extractq: %w", err)
	}
	return &Extractor{provider: o.provider, cfg: o.cfg, chunk: o.chunk, input: o.input}, nil
}

// WithProvider returns a copy of x that asks p: the Extractor New returns
// for x's options followed by WithProvider(p), without applying and
// checking the options again (no option reads the provider). A caller
// that extracts with one set of options and a provider per call (the
// fleet's worker wraps each job's provider to take its call slots) builds
// the Extractor once: New per document was 2% of a worker's CPU.
func (x *Extractor) WithProvider(p llm.Provider) (*Extractor, error) {
	if p == nil {
		return New() // New's error for a missing provider
	}
	y := *x
	y.provider = p
	return &y, nil
}

// Provider is the provider the Extractor asks.
func (x *Extractor) Provider() llm.Provider { return x.provider }

// Extract asks for s's data in document, validates the answer and re-asks
// with feedback until it is valid or a budget is spent. On success the error
// is nil and Result.Value validated against s (and every WithValidator).
// Otherwise the error is an *llm.ExtractionError carrying the Result (also
// returned), matching the outcome's sentinel (ErrExhausted,
// ErrUnextractable, …). A nil schema, or a mode the provider does not
// support, gives a nil Result and an error matching ErrConfig.
func (x *Extractor) Extract(ctx context.Context, document string, s *schema.Schema) (*llm.Result, error) {
	return x.extract(ctx, document, s, nil)
}

// extract is Extract; a long document is cut at breaks (where its pages
// start) first.
func (x *Extractor) extract(ctx context.Context, document string, s *schema.Schema, breaks []int) (*llm.Result, error) {
	if s == nil {
		return nil, fmt.Errorf("extractq: %w: no schema: compile one with schema.Compile, schema.CompileFile or schema.FromStruct", ErrConfig)
	}
	if size := x.chunkSize(document, s); size > 0 {
		return x.extractChunked(ctx, document, s, size, breaks)
	}
	res, err := retry.Run(ctx, x.provider, document, s, x.cfg)
	if err != nil && res == nil {
		return nil, fmt.Errorf("extractq: %w", err)
	}
	return res, err
}

// Extract is New(opts...) followed by Extract: the one-call form.
func Extract(ctx context.Context, document string, s *schema.Schema, opts ...Option) (*llm.Result, error) {
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
func ExtractInto[T any](ctx context.Context, document string, opts ...Option) (T, *llm.Result, error) {
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
