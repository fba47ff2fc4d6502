package retry

import (
	"cmp"
	"context"
	"encoding/json"
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
		if len(cfg.Attachments) > 0 {
			return nil, fmt.Errorf("%w: prefill mode sends text only, and this document has pictures or files for the model: use another mode, or read the pages by OCR", ErrConfig)
		}
		return runPrefill(ctx, p, document, s, cfg)
	}
	marked, marker, err := markAttachments(document, cfg.Attachments)
	if err != nil {
		return nil, err
	}
	mode, err := resolveMode(cfg.Mode, p)
	if err != nil {
		return nil, err
	}
	sysT, taskT, fbT := cfg.Templates.System, cfg.Templates.Task, cfg.Templates.Feedback
	if fbT == nil {
		fbT = feedbackTemplates[cfg.Feedback]
	}
	caps := p.Capabilities()
	lp := leanPrompts{strict: caps.Supports(llm.ModeStrict), alone: caps.StructuredRoles && sysT == nil && taskT == nil}
	facts := factsCache.get(s)
	// prepare renders the prompt for a mode; note says why the mode is not
	// the one asked for.
	prepare := func(mode llm.Mode, note string) (data *llm.PromptData, system, task string, j *judge, err error) {
		in := cfg.SchemaIn
		if note != "" && in == SchemaInAuto {
			// The provider's form would forbid part of what the schema
			// allows, so the prompt carries the schema itself: an example
			// cannot show that an object may hold any properties.
			in = SchemaInSchema
		}
		data = promptData(marked, s, facts, in, mode)
		data.MaxAttempts = cfg.MaxReasks + 1
		st := sysT
		if st == nil {
			st = systemTemplate(data, lp) // lean where the provider enforces the schema
		}
		if system, err = render(st, data); err != nil {
			return
		}
		tt := taskT
		if tt == nil {
			tt = taskTemplate(data, lp)
		}
		if task, err = render(tt, data); err != nil {
			return
		}
		if !builtinFeedback(fbT) { // a built-in one cannot fail
			if _, err = render(fbT, data); err != nil { // fail now, not after paid calls
				return
			}
		}
		return data, system, task, newJudge(s, facts, &cfg, document, data), nil
	}
	var note string
	data, system, task, j, err := prepare(mode, note)
	if err != nil {
		return nil, err
	}

	e := &engine{cfg: &cfg, p: p}
	r := &llm.Result{Provider: p.Name(), Model: p.Model(), Mode: mode}
	var (
		turns  []turn
		seen   = map[string]int{} // mistake → attempts that made it
		lossy  *lossyValue        // the best value that needed a lossy repair
		temp   = cfg.Temperature
		maxAtt = cfg.MaxReasks + 1
	)
	for n := 1; n <= maxAtt; n++ {
		if err := ctx.Err(); err != nil {
			return end(r, llm.OutcomeCanceled, err, "canceled before attempt %d: %v", n, context.Cause(ctx))
		}
		msgs := messages(system, task, turns, cfg.History)
		if marker != "" {
			msgs[1] = withAttachments(msgs[1], marker, cfg.Attachments)
		}
		a := llm.Attempt{N: n, Provider: r.Provider, Model: r.Model, Mode: mode, ModeNote: note, StartedAt: cfg.Now(), PromptChars: promptChars(msgs)}
		req := llm.Request{
			Messages: msgs, Mode: mode, Schema: s, SchemaName: s.Name(),
			Temperature: temp, MaxTokens: cfg.MaxTokens, Timeout: cfg.CallTimeout,
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
				if lossy != nil && cfg.AcceptLossy {
					return acceptLossy(r, lossy, "the token budget ran out")
				}
				return end(r, llm.OutcomeBudgetExceeded, nil,
					"token budget exceeded: attempt %d needs about %d tokens (prompt ~%d + answer up to %d) but %d of %d remain; raise the token budget or shorten the document%s",
					n, est+max(answer, minAnswerTokens), est, max(answer, minAnswerTokens), left, cfg.TokenBudget, history(r))
			}
			req.MaxTokens = answer
		}

		resp, cerr := e.call(ctx, req, &a)
		if cerr != nil && cfg.Mode == llm.ModeAuto && note == "" && errors.Is(cerr.err, schema.ErrProviderForm) {
			// The adapter refused to send the schema in its strict or tools
			// form: it would forbid part of what the schema allows, or
			// exceed the API's limits. Nothing was sent; ask again in JSON
			// mode (or text) with the schema in the prompt.
			mode, note = fallbackMode(p.Capabilities(), mode, cerr.err)
			if data, system, task, j, err = prepare(mode, note); err != nil {
				return nil, err
			}
			r.Mode = mode
			n--
			continue
		}
		if cerr != nil {
			a.Class, a.Error = llm.AttemptClass(cerr.class), cerr.err.Error()
			e.record(ctx, r, a)
			r.RetryAfter = cerr.retryAfter
			return end(r, cerr.outcome, cerr.err, "%s", cerr.describe(n, a.TransportRetries))
		}
		a.Usage, a.FinishReason, a.Raw, a.Batch = resp.Usage, resp.FinishReason, resp.Text, resp.Batch
		r.Usage = r.Usage.Add(resp.Usage)
		ev := e.validate(ctx, evaluate(resp, j))
		a.Value, a.Repairs, a.Violations, a.Class = ev.value, ev.repairs, ev.violations, ev.class
		a.Error = attemptError(ev)
		e.record(ctx, r, a)
		if ev.class == llm.ClassLossy && (lossy == nil || len(ev.lossy) <= len(lossy.repairs)) {
			lossy = &lossyValue{value: ev.value, repairs: ev.lossy, n: n}
		}

		switch {
		case ev.class == llm.ClassNone:
			r.Value, r.Outcome = ev.value, llm.OutcomeOK
			return r, nil
		case ev.class == llm.ClassRefusal && cfg.BreakOnUnextractable:
			return end(r, llm.OutcomeUnextractable, nil, "unextractable: %s (attempt %d); no re-ask, as the model says the data is not there",
				quoteReason(ev.reason), n)
		case n == maxAtt:
			continue // no feedback is needed after the last attempt
		}
		repeats := noteRepeats(seen, ev)
		data.Attempt, data.Next, data.Class, data.Violations, data.Previous, data.Repeats = n, n+1, ev.class, ev.violations, resp.Text, repeats
		data.Errors = ev.problem
		if len(repeats) > 0 {
			data.Errors += "\n" + strings.Join(repeats, "\n")
			if cfg.RepeatTemperatureStep > 0 {
				// The same mistake again: the most likely reading is not
				// the right one, so let the model consider others.
				temp = min(temp+cfg.RepeatTemperatureStep, max(1, cfg.Temperature))
			}
		}
		fb, err := render(fbT, data)
		if err != nil { // the template passed a dry run but fails on this data
			return end(r, llm.OutcomeFatal, err, "feedback template failed after attempt %d: %v", n, err)
		}
		turns = append(turns, turn{answer: boundPrevious(previousForHistory(resp.Text, ev.class), ev.violations), feedback: fb})
	}
	if lossy != nil && cfg.AcceptLossy {
		return acceptLossy(r, lossy, "every re-ask was used")
	}
	return end(r, llm.OutcomeExhausted, nil, "%s", exhausted(r))
}

// lossyValue is a value that validated only after a lossy repair.
type lossyValue struct {
	value   json.RawMessage
	repairs []llm.Repair // the lossy ones
	n       int          // its attempt
}

// acceptLossy ends the run with the lossy value (Config.AcceptLossy).
func acceptLossy(r *llm.Result, l *lossyValue, why string) (*llm.Result, error) {
	r.Value, r.Outcome = l.value, llm.OutcomeLossy
	r.Reason = fmt.Sprintf("accepted with lossy repairs because %s: the value of attempt %d validates, but it needed %s; check it before relying on it",
		why, l.n, lossyList(l.repairs))
	return r, nil
}

// lossyList names lossy repairs on one line.
func lossyList(rs []llm.Repair) string {
	parts := make([]string, 0, min(len(rs), 3))
	for i, rp := range rs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(rs)-i))
			break
		}
		parts = append(parts, rp.String())
	}
	return strings.Join(parts, ", ")
}

// attemptError is the failure in words recorded on an attempt whose
// answer was not accepted for a reason other than its violations.
func attemptError(ev evaluation) string {
	switch ev.class {
	case llm.ClassRefusal:
		return ev.reason
	case llm.ClassLossy:
		return "not accepted: lossy repairs " + lossyList(ev.lossy)
	case llm.ClassEcho:
		return "not accepted: the answer repeats the prompt's example"
	case llm.ClassAmbiguous:
		return "not accepted: several different values fit the schema"
	}
	return ""
}

// noteRepeats records the mistakes of ev in seen and says which of them
// the model made before: "This is the second time /issued was \"3 March
// 2024\"." A re-ask that says so differs from the last one even for a
// model that answers the same thing word for word.
func noteRepeats(seen map[string]int, ev evaluation) []string {
	const maxNotes = 5
	var notes []string
	count := func(key, what string) {
		seen[key]++
		if n := seen[key]; n >= 2 && len(notes) < maxNotes {
			notes = append(notes, fmt.Sprintf("This is the %s time %s.", ordinal(n), what))
		}
	}
	switch ev.class {
	case llm.ClassSchema:
		done := make(map[string]bool, len(ev.violations))
		for _, v := range ev.violations {
			key := "v\x00" + v.Pointer + "\x00" + v.Keyword + "\x00" + v.Value
			if done[key] {
				continue
			}
			done[key] = true
			switch {
			case v.Keyword == "required":
				count(key, pointerName(v.Pointer)+" was missing")
			case v.Value != "":
				count(key, pointerName(v.Pointer)+" was "+v.Value)
			default:
				count(key, pointerName(v.Pointer)+" failed the same way ("+v.Message+")")
			}
		}
	case llm.ClassLossy:
		for _, rp := range ev.lossy {
			count("l\x00"+rp.Kind, "your answer needed a guess ("+strings.ReplaceAll(rp.Kind, "_", " ")+")")
		}
	case llm.ClassNoJSON:
		count("c\x00no_json", "your answer contained no JSON")
	case llm.ClassTruncated:
		count("c\x00truncated", "your answer was cut off")
	case llm.ClassEcho:
		count("c\x00echo", "your answer repeated the example")
	case llm.ClassAmbiguous:
		count("c\x00ambiguous", "your answer gave several different values")
	case llm.ClassTemplate:
		count("c\x00template", "your answer was a template")
	case llm.ClassRefusal:
		count("c\x00refusal", "you answered that the data is not there")
	}
	return notes
}

func ordinal(n int) string {
	if n >= 2 && n <= 10 {
		return [...]string{"second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}[n-2]
	}
	return fmt.Sprintf("%dth", n)
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

// validate runs the user's validators on a schema-valid answer (also one
// that needed a lossy repair, which AcceptLossy may return in the end);
// their violations turn it into an invalid one, re-asked like any other.
func (e *engine) validate(ctx context.Context, ev evaluation) evaluation {
	if ev.class != llm.ClassNone && ev.class != llm.ClassLossy || len(e.cfg.Validators) == 0 {
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
	ev.class, ev.violations, ev.lossy = llm.ClassSchema, vs, nil
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

// fallbackMode is the mode ModeAuto uses when the provider cannot send the
// schema in mode (strict or tools) without changing it: JSON mode where
// supported, else text. note says why, for the attempt record.
func fallbackMode(caps llm.Capabilities, mode llm.Mode, err error) (llm.Mode, string) {
	fallback := llm.ModeText
	if caps.Supports(llm.ModeJSON) {
		fallback = llm.ModeJSON
	}
	why := err.Error()
	var ue *schema.UnfaithfulError
	if errors.As(err, &ue) && len(ue.Reasons) > 0 {
		why = "it cannot express " + ue.Reasons[0]
		if len(ue.Reasons) > 1 {
			why += fmt.Sprintf(" (and %d more)", len(ue.Reasons)-1)
		}
	}
	return fallback, fmt.Sprintf("auto chose %s mode with the schema in the prompt instead of %s: %s", fallback, mode, why)
}

// promptData prepares what the templates show: the schema, an example
// when placed as one, and the document's fence. f is s's facts
// (factsCache).
func promptData(document string, s *schema.Schema, f *schemaFacts, in SchemaIn, mode llm.Mode) *llm.PromptData {
	if in == SchemaInAuto {
		in = SchemaInExample
		if mode == llm.ModeStrict || mode == llm.ModeTools {
			in = SchemaInNone
		}
	}
	d := &llm.PromptData{Document: document, SchemaIn: string(in), Schema: f.text, Mode: mode}
	d.Nonce, d.Open, d.Close = newFence(document)
	if in == SchemaInExample {
		ex := exampleCache.get(s)
		if ex.err != nil {
			d.SchemaIn = string(SchemaInSchema) // the schema itself still tells the model everything
		} else {
			// The example shows the shape; the guide what it cannot:
			// descriptions, allowed values, formats and patterns.
			d.Example, d.FieldGuide = ex.text, ex.guide
		}
	}
	return d
}

// promptExample is a schema's example as the prompt shows it, with the
// field guide that goes with it.
type promptExample struct {
	text, guide string
	err         error // from s.Example: the prompt shows the schema instead
}

// exampleCache keeps promptExample of the schemas in use; built only for
// a prompt that shows an example.
var exampleCache = &schemaCache[promptExample]{build: func(s *schema.Schema) promptExample {
	ex, err := s.Example()
	if err != nil {
		return promptExample{err: err}
	}
	return promptExample{text: string(ex), guide: s.FieldGuide()}
}}

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
			a.Adjustments = append(a.Adjustments, resp.Adjustments...)
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
		a.Adjustments = append(a.Adjustments, pe.Adjustments...)
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
	case llm.ClassLossy:
		fmt.Fprintf(&b, "; the last validated only after repairs that guess (%s), which are not accepted", lossyList(lossyOf(last.Repairs)))
	case llm.ClassEcho:
		b.WriteString("; the last repeated the prompt's example instead of extracting")
	case llm.ClassAmbiguous:
		b.WriteString("; the last gave several different values and did not say which one is the answer")
	case llm.ClassTemplate:
		fmt.Fprintf(&b, "; the last was refused as a template, every string a placeholder: %s", clip(string(last.Value), 80))
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

// lossyOf returns the lossy repairs among rs.
func lossyOf(rs []llm.Repair) []llm.Repair {
	var out []llm.Repair
	for _, r := range rs {
		if r.Lossy {
			out = append(out, r)
		}
	}
	return out
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
