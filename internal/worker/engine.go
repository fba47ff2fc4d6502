package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/schema"
)

// Engine runs one extraction. The worker knows nothing of prompts: it hands
// the engine a provider, a document, a schema and the job's options and gets
// back everything the audit and the dead-letter stream need.
type Engine interface {
	Extract(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) *Outcome
}

// EngineFunc adapts a function to Engine.
type EngineFunc func(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) *Outcome

// Extract calls f.
func (f EngineFunc) Extract(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) *Outcome {
	return f(ctx, p, document, s, o)
}

// Outcome is how one extraction ended.
type Outcome struct {
	Outcome  llm.Outcome
	Value    json.RawMessage // the validated value when Outcome is ok
	Attempts []llm.Attempt
	Usage    llm.Usage
	Reason   string // readable reason when not ok
	// RetryAfter is the provider's reset or Retry-After when Outcome is
	// transport: the job is nak'd with this delay instead of a backoff.
	RetryAfter time.Duration
}
