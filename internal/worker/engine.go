package worker

import (
	"context"
	"slices"
	"sync/atomic"

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
	return &libraryEngine{base: slices.Clip(append(slices.Clip(base), extractq.WithObserver(tracing.Observe)))}
}

// libraryEngine is NewEngine's engine: the worker's base options, and the
// Extractor of a job that adds none, built by the first such job and
// given each later one's provider (Extractor.WithProvider), since most
// jobs add none.
type libraryEngine struct {
	base  []extractq.Option
	plain atomic.Pointer[extractq.Extractor]
}

// extractor is the Extractor of a job with options o and provider p:
// New(base, o's options, WithProvider(p)).
func (e *libraryEngine) extractor(p llm.Provider, o jobs.Options) (*extractq.Extractor, error) {
	opts := o.ExtractOptions()
	if len(opts) > 0 {
		return extractq.New(append(append(slices.Clip(e.base), opts...), extractq.WithProvider(p))...)
	}
	if x := e.plain.Load(); x != nil {
		return x.WithProvider(p)
	}
	x, err := extractq.New(append(slices.Clip(e.base), extractq.WithProvider(p))...)
	if err == nil {
		e.plain.Store(x)
	}
	return x, err
}

// Extract implements Engine.
func (e *libraryEngine) Extract(ctx context.Context, p llm.Provider, text string, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
	x, err := e.extractor(p, o)
	if err != nil {
		return nil, err
	}
	return x.Extract(ctx, text, s)
}

// ExtractDocument implements DocumentEngine.
func (e *libraryEngine) ExtractDocument(ctx context.Context, p llm.Provider, doc *document.Document, original []byte, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
	x, err := e.extractor(p, o)
	if err != nil {
		return nil, err
	}
	return x.ExtractOriginal(ctx, doc, original, s)
}
