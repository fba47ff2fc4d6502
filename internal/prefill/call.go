package prefill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/extractq/extractq/llm"
)

// step is one call: what it generates and how it is stopped.
type step struct {
	ptr, name string
	stop      []string
	maxTokens int
	inString  bool
}

// Step names recorded on llm.Attempt.Step.
const (
	stepValue    = "value"
	stepPresence = "presence"
	stepMore     = "more"
	stepChoice   = "choice"
	stepWhole    = "whole"
)

// minAnswerTokens is the least answer a call is sent for.
const minAnswerTokens = 2

// ask makes one call continuing the JSON so far (plus extra, written into
// the prefix but not yet into g.out). The attempt comes back unrecorded:
// the caller judges the value, then records it. text is cut at the first
// stop sequence; cut reports that one was found.
func (g *gen) ask(ctx context.Context, st step, extra string) (text string, cut bool, a llm.Attempt, err error) {
	if err := ctx.Err(); err != nil {
		return "", false, a, &stopError{outcome: llm.OutcomeCanceled, cause: err, reason: fmt.Sprintf("canceled before the call for %s: %v", pointerName(st.ptr), context.Cause(ctx))}
	}
	req := llm.CompletionRequest{
		Instructions: g.instructionsNow(), Prefix: g.out + extra, Stop: st.stop,
		Temperature: g.cfg.Temperature, MaxTokens: st.maxTokens, Timeout: g.cfg.CallTimeout,
	}
	a = llm.Attempt{
		N: len(g.r.Attempts) + 1, Provider: g.r.Provider, Model: g.r.Model, Mode: llm.ModePrefill,
		Pointer: st.ptr, Step: st.name, StartedAt: g.cfg.Now(), PromptChars: len(req.Instructions) + len(req.Prefix),
	}
	if g.cfg.TokenBudget > 0 {
		est := (len(req.Instructions)+len(req.Prefix))/3 + 1
		left := g.cfg.TokenBudget - g.r.Usage.Total()
		if est+max(st.maxTokens, minAnswerTokens) > left {
			a.Class, a.Error = llm.ClassBudget, "not sent: token budget exceeded"
			g.record(ctx, a)
			return "", false, a, &stopError{outcome: llm.OutcomeBudgetExceeded, reason: fmt.Sprintf(
				"token budget exceeded at %s: the call needs about %d tokens (prompt ~%d + answer up to %d) but %d of %d remain after %d calls; raise the token budget or shorten the document",
				pointerName(st.ptr), est+st.maxTokens, est, st.maxTokens, left, g.cfg.TokenBudget, g.r.Calls())}
		}
	}
	resp, err := g.call(ctx, req, &a)
	if err != nil {
		var se *stopError
		errors.As(err, &se)
		var pe *llm.Error
		if errors.As(se.cause, &pe) {
			a.Class = llm.AttemptClass(pe.Class)
		} else {
			a.Class = llm.AttemptClass(llm.ClassCanceled)
		}
		a.Error = se.cause.Error()
		g.record(ctx, a)
		return "", false, a, err
	}
	a.Usage, a.FinishReason, a.Raw, a.Batch = resp.Usage, resp.FinishReason, resp.Text, resp.Batch
	g.r.Usage = g.r.Usage.Add(resp.Usage)
	text, cut = cutAtStop(resp.Text, st.stop, st.inString)
	if !cut && resp.FinishReason == llm.FinishStop && len(st.stop) > 0 {
		// The server stopped on a stop sequence it did not return.
		cut = true
	}
	return text, cut, a, nil
}

// call makes the HTTP call, retrying transport failures with exponential
// backoff and jitter (Retry-After honoured) as the chat loop does.
func (g *gen) call(ctx context.Context, req llm.CompletionRequest, a *llm.Attempt) (*llm.Response, error) {
	for retry := 0; ; retry++ {
		a.TransportRetries = retry
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if g.cfg.CallTimeout > 0 {
			callCtx, cancel = context.WithTimeout(ctx, g.cfg.CallTimeout)
		}
		start := g.cfg.Now()
		resp, err := g.c.Complete(callCtx, req)
		a.Latency = g.cfg.Now().Sub(start)
		cancel()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, &stopError{outcome: llm.OutcomeCanceled, cause: ctx.Err(), reason: fmt.Sprintf("canceled during the call for %s: %v", pointerName(a.Pointer), cmp.Or(context.Cause(ctx), ctx.Err()))}
		}
		var pe *llm.Error
		if !errors.As(err, &pe) {
			if errors.Is(err, context.DeadlineExceeded) {
				pe = &llm.Error{Provider: g.p.Name(), Class: llm.ClassTimeout, Message: "call timed out after " + g.cfg.CallTimeout.String(), Err: err}
			} else {
				pe = &llm.Error{Provider: g.p.Name(), Class: llm.ClassBadResponse, Err: err}
				return nil, g.fatal(pe, a)
			}
		}
		if !pe.Retryable() {
			return nil, g.fatal(pe, a)
		}
		ra := pe.RateLimit.RetryAfter
		if retry >= g.cfg.Retries || ra > g.cfg.MaxRetryAfter {
			msg := fmt.Sprintf("provider unavailable: the call for %s failed %d %s; last: %v", pointerName(a.Pointer), retry+1, plural(retry+1, "time", "times"), pe)
			if ra > 0 {
				msg += fmt.Sprintf("; the provider asked to wait %v", ra)
			}
			return nil, &stopError{outcome: llm.OutcomeTransport, cause: pe, retry: ra, reason: msg + "; try again later"}
		}
		if err := g.cfg.Sleep(ctx, max(g.backoff(retry), ra)); err != nil {
			return nil, &stopError{outcome: llm.OutcomeCanceled, cause: cmp.Or(ctx.Err(), err), reason: fmt.Sprintf("canceled while waiting to retry the call for %s", pointerName(a.Pointer))}
		}
	}
}

func (g *gen) fatal(pe *llm.Error, a *llm.Attempt) error {
	return &stopError{outcome: llm.OutcomeFatal, cause: pe, reason: fmt.Sprintf(
		"fatal provider error on the call for %s, not retried: %v; fix the credentials, model or request and run again", pointerName(a.Pointer), pe)}
}

func (g *gen) backoff(retry int) (d time.Duration) {
	d = g.cfg.Cap
	if retry < 32 && g.cfg.Base<<retry > 0 && g.cfg.Base<<retry < g.cfg.Cap {
		d = g.cfg.Base << retry
	}
	if g.cfg.FullJitter && d > 0 {
		d = time.Duration(g.cfg.Rand(int64(d) + 1))
	}
	return d
}

// record appends a to the result and hands observers a copy.
func (g *gen) record(ctx context.Context, a llm.Attempt) {
	g.r.Attempts = append(g.r.Attempts, a)
	for _, observe := range g.cfg.Observers {
		c := a
		c.Value = slices.Clone(a.Value)
		c.Repairs = slices.Clone(a.Repairs)
		c.Violations = slices.Clone(a.Violations)
		observe(ctx, c)
	}
}
