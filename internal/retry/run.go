package retry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// Run extracts s from document with p: it asks, validates, and re-asks with
// feedback until the answer is valid or a budget is spent. It returns the
// Result and a nil error on OutcomeOK; otherwise the Result and an *Error
// carrying it. Only a wrong Config, provider or schema gives a nil Result
// (the error matches ErrConfig).
func Run(ctx context.Context, p llm.Provider, document string, s *schema.Schema, cfg Config) (*llm.Result, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("%w: no provider", ErrConfig)
	}
	if s == nil {
		return nil, fmt.Errorf("%w: no schema", ErrConfig)
	}
	if cfg.Mode == llm.ModePrefill {
		return runPrefill(ctx, p, document, s, cfg)
	}
	mode, err := resolveMode(cfg.Mode, p)
	if err != nil {
		return nil, err
	}
	data := promptData(document, s, cfg.SchemaIn, mode)
	sysT, taskT, fbT := cfg.Templates.System, cfg.Templates.Task, cfg.Templates.Feedback
	if sysT == nil {
		sysT = defaultSystem
	}
	if taskT == nil {
		taskT = defaultTask
	}
	if fbT == nil {
		fbT = feedbackTemplates[cfg.Feedback]
	}
	system, err := render(sysT, data)
	if err != nil {
		return nil, err
	}
	task, err := render(taskT, data)
	if err != nil {
		return nil, err
	}
	if _, err := render(fbT, data); err != nil { // fail now, not after paid calls
		return nil, err
	}

	e := &engine{cfg: &cfg, p: p}
	r := &llm.Result{Provider: p.Name(), Model: p.Model(), Mode: mode}
	var turns []turn
	maxAttempts := cfg.MaxReasks + 1
	for n := 1; n <= maxAttempts; n++ {
		if err := ctx.Err(); err != nil {
			return end(r, llm.OutcomeCanceled, err, "canceled before attempt %d: %v", n, context.Cause(ctx))
		}
		msgs := messages(system, task, turns, cfg.History)
		a := llm.Attempt{N: n, Provider: r.Provider, Model: r.Model, Mode: mode, StartedAt: cfg.Now(), PromptChars: promptChars(msgs)}
		req := llm.Request{
			Messages: msgs, Mode: mode, Schema: s, SchemaName: s.Name(),
			Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, Timeout: cfg.CallTimeout,
		}
		if cfg.TokenBudget > 0 {
			est := estimateTokens(msgs)
			left := cfg.TokenBudget - r.Usage.Total()
			answer := cfg.MaxTokens
			if answer == 0 {
				// Cap the answer so that this call cannot overrun the budget,
				// and below what every chat API accepts as max tokens.
				answer = min(left-est, budgetAnswerCap)
			}
			if est+answer > left || answer < minAnswerTokens {
				a.Class, a.Error = llm.ClassBudget, "not sent: token budget exceeded"
				e.record(ctx, r, a)
				return end(r, llm.OutcomeBudgetExceeded, nil,
					"token budget exceeded: attempt %d needs about %d tokens (prompt ~%d + answer up to %d) but %d of %d remain; raise the token budget or shorten the document%s",
					n, est+max(answer, minAnswerTokens), est, max(answer, minAnswerTokens), left, cfg.TokenBudget, history(r))
			}
			req.MaxTokens = answer
		}

		resp, cerr := e.call(ctx, req, &a)
		if cerr != nil {
			a.Class, a.Error = llm.AttemptClass(cerr.class), cerr.err.Error()
			e.record(ctx, r, a)
			r.RetryAfter = cerr.retryAfter
			return end(r, cerr.outcome, cerr.err, "%s", cerr.describe(n, a.TransportRetries))
		}
		a.Usage, a.FinishReason, a.Raw = resp.Usage, resp.FinishReason, resp.Text
		r.Usage = r.Usage.Add(resp.Usage)
		ev := e.validate(ctx, evaluate(resp, s, &cfg))
		a.Value, a.Repairs, a.Violations, a.Class = ev.value, ev.repairs, ev.violations, ev.class
		if ev.class == llm.ClassRefusal {
			a.Error = ev.reason
		}
		e.record(ctx, r, a)

		switch {
		case ev.class == llm.ClassNone:
			r.Value, r.Outcome = ev.value, llm.OutcomeOK
			return r, nil
		case ev.class == llm.ClassRefusal && cfg.BreakOnUnextractable:
			return end(r, llm.OutcomeUnextractable, nil, "unextractable: %s (attempt %d); no re-ask, as the model says the data is not there",
				quoteReason(ev.reason), n)
		case n == maxAttempts:
			continue // no feedback is needed after the last attempt
		}
		data.Attempt, data.Class, data.Errors, data.Violations, data.Previous = n, ev.class, ev.problem, ev.violations, resp.Text
		fb, err := render(fbT, data)
		if err != nil { // the template passed a dry run but fails on this data
			return end(r, llm.OutcomeFatal, err, "feedback template failed after attempt %d: %v", n, err)
		}
		turns = append(turns, turn{answer: previousForHistory(resp.Text, ev.class), feedback: fb})
	}
	return end(r, llm.OutcomeExhausted, nil, "%s", exhausted(r))
}

// record appends a to the result and hands observers a copy that shares no
// memory with it, so that no observer can change the outcome.
func (e *engine) record(ctx context.Context, r *llm.Result, a llm.Attempt) {
	r.Attempts = append(r.Attempts, a)
	for _, observe := range e.cfg.Observers {
		c := a
		c.Value = slices.Clone(a.Value)
		c.Repairs = slices.Clone(a.Repairs)
		c.Violations = slices.Clone(a.Violations)
		observe(ctx, c)
	}
}

// validate runs the user's validators on a schema-valid answer; their
// violations turn it into an invalid one, re-asked like any other.
func (e *engine) validate(ctx context.Context, ev evaluation) evaluation {
	if ev.class != llm.ClassNone || len(e.cfg.Validators) == 0 {
		return ev
	}
	var vs []llm.Violation
	for _, v := range e.cfg.Validators {
		for _, x := range v(ctx, slices.Clone(ev.value)) {
			if x.Keyword == "" {
				x.Keyword = "validator"
			}
			vs = append(vs, x)
		}
	}
	if len(vs) == 0 {
		return ev
	}
	ev.class, ev.violations = llm.ClassSchema, vs
	ev.problem = problemSchema(vs, e.cfg.FeedbackMaxChars)
	return ev
}

// resolveMode turns ModeAuto into the provider's strongest mode and checks
// an explicit mode against the provider's capabilities. Text always works.
func resolveMode(m llm.Mode, p llm.Provider) (llm.Mode, error) {
	caps := p.Capabilities()
	switch {
	case m == llm.ModeAuto:
		return caps.Auto(), nil
	case m == llm.ModeText || caps.Supports(m):
		return m, nil
	}
	return "", fmt.Errorf("%w: provider %s does not support mode %s (it supports %v); use mode auto", ErrConfig, p.Name(), m, caps.Modes)
}

// promptData prepares what the templates show: the schema, an example
// when placed as one, and the document's fence.
func promptData(document string, s *schema.Schema, in SchemaIn, mode llm.Mode) *llm.PromptData {
	if in == SchemaInAuto {
		in = SchemaInExample
		if mode == llm.ModeStrict || mode == llm.ModeTools {
			in = SchemaInNone
		}
	}
	d := &llm.PromptData{Document: document, Nonce: newNonce(document), SchemaIn: string(in), Schema: string(s.JSON()), Mode: mode}
	d.Open, d.Close = "<document-"+d.Nonce+">", "</document-"+d.Nonce+">"
	if in == SchemaInExample {
		ex, err := s.Example()
		if err != nil {
			d.SchemaIn = string(SchemaInSchema) // the schema itself still tells the model everything
		} else {
			d.Example = string(ex)
		}
	}
	return d
}

// engine holds what every call of one Run shares.
type engine struct {
	cfg *Config
	p   llm.Provider
}

// callError is a call that produced no answer.
type callError struct {
	outcome    llm.Outcome
	class      llm.ErrorClass
	err        error
	cause      error // context.Cause of a cancellation
	retryAfter time.Duration
}

// canceled is the callError of a context that ended; the reason names the
// cancellation's cause where one was given.
func canceled(ctx context.Context) *callError {
	err := ctx.Err()
	if err == nil { // a Sleeper that failed on its own
		err = context.Canceled
	}
	return &callError{outcome: llm.OutcomeCanceled, class: llm.ClassCanceled, err: err, cause: context.Cause(ctx)}
}

func (c *callError) describe(n, retries int) string {
	switch c.outcome {
	case llm.OutcomeCanceled:
		return fmt.Sprintf("canceled during attempt %d: %v", n, cmp.Or(c.cause, c.err))
	case llm.OutcomeFatal:
		return fmt.Sprintf("fatal provider error on attempt %d, not retried: %v; fix the credentials, model or request and run again", n, c.err)
	}
	msg := fmt.Sprintf("provider unavailable: attempt %d failed %d %s (%d transport %s); last: %v",
		n, retries+1, plural(retries+1, "time", "times"), retries, plural(retries, "retry", "retries"), c.err)
	if c.retryAfter > 0 {
		msg += fmt.Sprintf("; the provider asked to wait %v", c.retryAfter)
	}
	return msg + "; try again later"
}

// call makes one attempt's call, retrying transport failures with
// exponential backoff and jitter (Retry-After honoured) without spending a
// re-ask. It records retries and latency on a.
func (e *engine) call(ctx context.Context, req llm.Request, a *llm.Attempt) (*llm.Response, *callError) {
	t := e.cfg.Transport
	for retry := 0; ; retry++ {
		a.TransportRetries = retry
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if e.cfg.CallTimeout > 0 {
			callCtx, cancel = context.WithTimeout(ctx, e.cfg.CallTimeout)
		}
		start := e.cfg.Now()
		resp, err := e.p.Chat(callCtx, req)
		a.Latency = e.cfg.Now().Sub(start)
		cancel()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, canceled(ctx)
		}
		var pe *llm.Error
		if !errors.As(err, &pe) {
			if errors.Is(err, context.DeadlineExceeded) { // our CallTimeout
				pe = &llm.Error{Provider: e.p.Name(), Class: llm.ClassTimeout, Message: "call timed out after " + e.cfg.CallTimeout.String(), Err: err}
			} else { // a Provider outside this module broke the contract: do not guess
				pe = &llm.Error{Provider: e.p.Name(), Class: llm.ClassBadResponse, Err: err}
				return nil, &callError{outcome: llm.OutcomeFatal, class: pe.Class, err: pe}
			}
		}
		if !pe.Retryable() {
			return nil, &callError{outcome: llm.OutcomeFatal, class: pe.Class, err: pe}
		}
		ra := pe.RateLimit.RetryAfter
		if retry == t.Retries || ra > t.MaxRetryAfter {
			return nil, &callError{outcome: llm.OutcomeTransport, class: pe.Class, err: pe, retryAfter: ra}
		}
		wait := max(e.backoff(retry), ra)
		if err := e.cfg.Sleep(ctx, wait); err != nil {
			return nil, canceled(ctx)
		}
	}
}

// backoff is the pause before retry number retry+1: Base·2^retry capped at
// Cap, with jitter.
func (e *engine) backoff(retry int) time.Duration {
	t := e.cfg.Transport
	d := t.Cap
	if retry < 32 && t.Base<<retry > 0 && t.Base<<retry < t.Cap {
		d = t.Base << retry
	}
	if t.Jitter == JitterFull && d > 0 {
		d = time.Duration(e.cfg.Rand(int64(d) + 1))
	}
	return d
}

// end sets the outcome and reason and returns the error carrying r.
func end(r *llm.Result, o llm.Outcome, cause error, format string, args ...any) (*llm.Result, error) {
	r.Outcome, r.Cause = o, cause
	r.Reason = fmt.Sprintf(format, args...)
	return r, &llm.ExtractionError{Result: r}
}

// exhausted describes a run that used every re-ask.
func exhausted(r *llm.Result) string {
	return fmt.Sprintf("no valid answer after %s%s", attemptsPhrase(len(r.Attempts)), lastFailure(r))
}

// history summarises earlier attempts for a budget message.
func history(r *llm.Result) string {
	done := r.Calls()
	if done == 0 {
		return ""
	}
	return fmt.Sprintf("; %s made%s", attemptsPhrase(done), lastFailure(r))
}

// lastFailure says how the last answered attempt failed and what was
// repaired: "; the last failed at /a: expected number, got \"x\"; 2 syntax
// repairs applied".
func lastFailure(r *llm.Result) string {
	var last *llm.Attempt
	for i := len(r.Attempts) - 1; i >= 0; i-- {
		if r.Attempts[i].Class != llm.ClassBudget {
			last = &r.Attempts[i]
			break
		}
	}
	if last == nil {
		return ""
	}
	var b strings.Builder
	switch last.Class {
	case llm.ClassSchema:
		v := last.Violations[0]
		fmt.Fprintf(&b, "; the last failed at %s: %s", pointerName(v.Pointer), describe(v))
		if n := len(last.Violations) - 1; n > 0 {
			fmt.Fprintf(&b, " (and %d more %s)", n, plural(n, "problem", "problems"))
		}
	case llm.ClassTruncated:
		b.WriteString("; the last was cut off at the length limit: raise the answer's max tokens or ask for less")
	case llm.ClassNoJSON:
		b.WriteString("; the last contained no JSON")
	case llm.ClassRefusal:
		fmt.Fprintf(&b, "; the last said the data is not there: %s", quoteReason(last.Error))
	}
	syntax, coerced := 0, 0
	for _, a := range r.Attempts {
		for _, rp := range a.Repairs {
			if strings.HasPrefix(rp.Kind, "coerce") {
				coerced++
			} else {
				syntax++
			}
		}
	}
	if syntax > 0 {
		fmt.Fprintf(&b, "; %d syntax %s applied", syntax, plural(syntax, "repair", "repairs"))
	}
	if coerced > 0 {
		fmt.Fprintf(&b, "; %d %s applied", coerced, plural(coerced, "coercion", "coercions"))
	}
	return b.String()
}

// describe renders a violation for a person: `expected number, got "12,50"`.
func describe(v schema.Violation) string {
	msg := v.Message
	if strings.HasSuffix(v.Keyword, "type") && len(v.Want) > 0 {
		msg = "expected " + strings.Join(v.Want, " or ")
	}
	if v.Value != "" {
		msg += ", got " + v.Value
	}
	return msg
}

func pointerName(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func attemptsPhrase(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "attempt", "attempts")) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteReason(s string) string {
	if s == "" {
		return "no reason given"
	}
	return fmt.Sprintf("%q", s)
}
