package retry

import (
	"context"
	"errors"
	"fmt"

	"github.com/extractq/extractq/internal/prefill"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// runPrefill hands a ModePrefill extraction to internal/prefill, which
// generates the value field by field. The per-field re-ask budget is
// MaxReasks; Templates, Feedback, History and Repair do not apply (the
// program writes the structure, so there is nothing to repair).
func runPrefill(ctx context.Context, p llm.Provider, document string, s *schema.Schema, cfg Config) (*llm.Result, error) {
	pc := prefill.Config{
		MaxReasks: cfg.MaxReasks, Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens,
		TokenBudget: cfg.TokenBudget, CallTimeout: cfg.CallTimeout,
		Retries: cfg.Transport.Retries, Base: cfg.Transport.Base, Cap: cfg.Transport.Cap,
		MaxRetryAfter: cfg.Transport.MaxRetryAfter, FullJitter: cfg.Transport.Jitter == JitterFull,
		Validators: cfg.Validators, Observers: cfg.Observers,
		Sleep: cfg.Sleep, Rand: cfg.Rand, Now: cfg.Now,
	}
	res, err := prefill.Run(ctx, p, document, s, pc)
	if errors.Is(err, prefill.ErrCannotPrefill) {
		return nil, fmt.Errorf("%w: mode prefill: %w", ErrConfig, err)
	}
	if err != nil && res == nil {
		return nil, fmt.Errorf("%w: mode prefill: %w", ErrConfig, err)
	}
	return res, err
}
