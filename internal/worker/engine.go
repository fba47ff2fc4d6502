package worker

import (
	"context"
	"slices"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
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

// DocumentEngine is an Engine that also extracts from a document a format
// reader made, keeping its pages to the result's sources and showing the
// model its pictures or the original file (extractq.ExtractOriginal). The
// worker uses it for such jobs when its engine has it; NewEngine's does.
type DocumentEngine interface {
	Engine
	ExtractDocument(ctx context.Context, p llm.Provider, doc *document.Document, original []byte, s *schema.Schema, o jobs.Options) (*llm.Result, error)
}

// NewEngine returns the library as the worker's engine: each job runs
// through an extractq.Extractor built from base (the worker's defaults,
// e.g. the transport policy), then the job's options
// (jobs.Options.ExtractOptions), then the job's provider. It is a
// DocumentEngine.
func NewEngine(base ...extractq.Option) Engine {
	// Each attempt is a span of its job's trace when traces are on.
	return libraryEngine(slices.Clip(append(slices.Clip(base), extractq.WithObserver(tracing.Observe))))
}

// libraryEngine is NewEngine's engine: the worker's base options.
type libraryEngine []extractq.Option

func (base libraryEngine) extractor(p llm.Provider, o jobs.Options) (*extractq.Extractor, error) {
	return extractq.New(append(append(base, o.ExtractOptions()...), extractq.WithProvider(p))...)
}

// Extract implements Engine.
func (base libraryEngine) Extract(ctx context.Context, p llm.Provider, text string, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
	x, err := base.extractor(p, o)
	if err != nil {
		return nil, err
	}
	return x.Extract(ctx, text, s)
}

// ExtractDocument implements DocumentEngine.
func (base libraryEngine) ExtractDocument(ctx context.Context, p llm.Provider, doc *document.Document, original []byte, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
	x, err := base.extractor(p, o)
	if err != nil {
		return nil, err
	}
	return x.ExtractOriginal(ctx, doc, original, s)
}
