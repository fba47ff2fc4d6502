package ratelimit

import (
	"context"
	"math"

	"github.com/extractq/extractq/llm"
)

// pacedCompleter is a paced provider that keeps its inner provider's
// llm.Completer side (prefill mode), paced the same way as Chat.
type pacedCompleter struct {
	*paced
	completer llm.Completer
}

func (w *pacedCompleter) Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Response, error) {
	est := w.pool.estimateCompletion(req)
	if err := w.pool.reserve(ctx, est); err != nil {
		return nil, &llm.Error{Provider: w.inner.Name(), Class: llm.ClassCanceled, Message: "waiting for rate-limit budget", Err: err}
	}
	resp, err := w.completer.Complete(ctx, req)
	w.pool.settle(est, resp, err)
	return resp, err
}

// estimateCompletion is estimate for a completion call: the prompt's
// characters and the answer cap, as the pool has learnt it.
func (p *Pool) estimateCompletion(req llm.CompletionRequest) int {
	answer := req.MaxTokens
	if answer <= 0 {
		answer = p.defaultMaxTokens
	}
	p.mu.Lock()
	if p.answerAvg > 0 {
		answer = min(answer, int(math.Ceil(p.answerAvg*answerHeadroom)))
	}
	p.mu.Unlock()
	return (len(req.Instructions)+len(req.Prefix))/4 + answer
}
