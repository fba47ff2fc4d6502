package worker

import (
	"context"
	"slices"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Engine runs one extraction. The worker knows nothing of prompts: it hands
// the engine a provider, a document, a schema and the job's options, and
// gets back the library's Result (value, every attempt, usage, outcome).
// The Result is nil only for a configuration the library refuses (the
// error says why); the worker dead-letters such a job.
type Engine interface {
	Extract(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) (*llm.Result, error)
}

// EngineFunc adapts a function to Engine.
type EngineFunc func(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) (*llm.Result, error)

// Extract calls f.
func (f EngineFunc) Extract(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
	return f(ctx, p, document, s, o)
}

// NewEngine returns the library as the worker's engine: each job runs
// through an extractq.Extractor built from base (the worker's defaults,
// e.g. the transport policy), then the job's options
// (jobs.Options.ExtractOptions), then the job's provider.
func NewEngine(base ...extractq.Option) Engine {
	// Each attempt is a span of its job's trace when traces are on.
	base = slices.Clip(append(slices.Clip(base), extractq.WithObserver(tracing.Observe)))
	return EngineFunc(func(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
		x, err := extractq.New(append(append(base, o.ExtractOptions()...), extractq.WithProvider(p))...)
		if err != nil {
			return nil, err
		}
		return x.Extract(ctx, document, s)
	})
}
