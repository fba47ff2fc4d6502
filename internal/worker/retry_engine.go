package worker

import (
	"context"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/schema"
)

// NewEngine returns the real engine (retry.Run) starting from base, or
// retry.DefaultConfig when base is nil; each job's options override it.
func NewEngine(base *retry.Config) Engine {
	cfg := retry.DefaultConfig()
	if base != nil {
		cfg = *base
	}
	return EngineFunc(func(ctx context.Context, p llm.Provider, document string, s *schema.Schema, o jobs.Options) *Outcome {
		c := cfg
		if o.MaxReasks > 0 {
			c.MaxReasks = o.MaxReasks
		}
		if o.Mode != "" {
			c.Mode = llm.Mode(o.Mode)
		}
		if o.MaxTokens > 0 {
			c.MaxTokens = o.MaxTokens
		}
		if o.TokenBudget > 0 {
			c.TokenBudget = o.TokenBudget
		}
		if o.Temperature != 0 {
			c.Temperature = o.Temperature
		}
		if o.RepairPolicy != "" {
			c.Repair = jsonx.Policy(o.RepairPolicy)
		}
		res, err := retry.Run(ctx, p, document, s, c)
		if res == nil { // a wrong configuration: retrying cannot help
			return &Outcome{Outcome: llm.OutcomeFatal, Reason: err.Error()}
		}
		return &Outcome{
			Outcome: res.Outcome, Value: res.Value, Attempts: res.Attempts, Usage: res.Usage,
			Reason: res.Reason, RetryAfter: res.RetryAfter,
		}
	})
}
