package ratelimit

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/extractq/extractq/llm"
)

// completerStub is a provider that continues prefixes.
type completerStub struct {
	stub
	completions atomic.Int64
}

func (s *completerStub) Complete(context.Context, llm.CompletionRequest) (*llm.Response, error) {
	s.completions.Add(1)
	return &llm.Response{Text: "42", Usage: llm.Usage{PromptTokens: 90, CompletionTokens: 10}}, nil
}

// TestWrapKeepsCompleter: a paced provider still continues prefixes
// (prefill mode in the fleet), and those calls are counted and paced.
func TestWrapKeepsCompleter(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 1}, clk) // no pacing: the fake clock never has to move
	inner := &completerStub{}
	w := p.Wrap(inner)
	c, ok := w.(llm.Completer)
	if !ok {
		t.Fatal("Wrap hid the provider's Completer")
	}
	if _, ok := p.Wrap(&stub{}).(llm.Completer); ok {
		t.Fatal("Wrap made a provider without completions look like a Completer")
	}
	resp, err := c.Complete(t.Context(), llm.CompletionRequest{Instructions: strings.Repeat("x", 400), Prefix: "{", MaxTokens: 8})
	if err != nil || resp.Text != "42" || inner.completions.Load() != 1 {
		t.Fatalf("Complete: %v %v, %d calls", resp, err, inner.completions.Load())
	}
	p.mu.Lock()
	calls, used := p.calls, p.tokensUsed
	p.mu.Unlock()
	if calls != 1 || used != 100 {
		t.Errorf("pool counted %d calls and %d tokens, want 1 and 100", calls, used)
	}
}
