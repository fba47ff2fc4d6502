// Package prefill generates a value field by field for small models: the
// program writes the JSON structure itself (`{"name":"`), asks the model to
// continue with only the next value, stops it at the value's end with stop
// sequences, checks the value against the field's own subschema, and moves
// on. The model never writes structure, so the structure is always valid.
//
// It covers every schema shape: nested objects in schema order, arrays
// (element, then a decision whether another follows, up to maxItems),
// optional fields whose presence the model decides, enums, booleans, null
// and const by literal match, numbers read whole (a thousands separator is
// no stop) by jsonx's rule for numbers written for people and
// bound-checked, strings escaped by the program, and anyOf/oneOf of simple
// branches picked by the first token (other subtrees are generated whole).
// A field that fails is re-asked alone with the violation as feedback,
// within a per-field budget and the document's token budget; the whole
// value is validated against the user's schema at the end. Every call is an
// llm.Attempt carrying the field's pointer.
//
// The engine is reached through internal/retry (Config.Mode llm.ModePrefill);
// it shares no code with the chat loop but the llm types and jsonx's
// reading of numbers written for people.
package prefill

import (
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

// ErrCannotPrefill is returned (before any call) when the provider cannot
// continue a prefix: it does not implement llm.Completer or does not list
// llm.ModePrefill in its Capabilities.
var ErrCannotPrefill = errors.New("the provider cannot continue a prefix")

// Config tunes one prefill extraction. internal/retry fills it from its own
// Config; every field must be set (no defaults are applied here except
// where said).
type Config struct {
	// MaxReasks is the per-field re-ask budget: how many times one field
	// may be asked again after a value that failed.
	MaxReasks   int
	Temperature float64
	// MaxTokens caps a string or whole-value answer (default 256 and 1024).
	MaxTokens int
	// TokenBudget caps the tokens of every call together; 0 means no cap.
	TokenBudget int
	CallTimeout time.Duration
	// Transport retries: a retryable provider failure is repeated up to
	// Retries times after a backoff of Base·2^n capped at Cap (FullJitter:
	// uniformly random below it), Retry-After honoured up to MaxRetryAfter.
	Retries                  int
	Base, Cap, MaxRetryAfter time.Duration
	FullJitter               bool
	// Validators check the finished value (after the schema) as in the other
	// modes; a failure ends the extraction exhausted.
	Validators []func(ctx context.Context, value json.RawMessage) []llm.Violation
	Observers  []func(ctx context.Context, a llm.Attempt)
	Sleep      func(ctx context.Context, d time.Duration) error
	Rand       func(n int64) int64
	Now        func() time.Time
}

// Run extracts s from document with p, field by field. It returns the
// Result and a nil error on llm.OutcomeOK; otherwise the Result and an
// *llm.ExtractionError carrying it. A provider that cannot continue a
// prefix gives a nil Result and an error matching ErrCannotPrefill.
func Run(ctx context.Context, p llm.Provider, document string, s *schema.Schema, cfg Config) (*llm.Result, error) {
	c, ok := p.(llm.Completer)
	if !ok || !p.Capabilities().Supports(llm.ModePrefill) {
		return nil, fmt.Errorf("%w: provider %s supports %v; use a completion endpoint (vllm, lmstudio, llamacpp, ollama) or anthropic, or another mode", ErrCannotPrefill, p.Name(), p.Capabilities().Modes)
	}
	root, t, err := newTree(s)
	if err != nil {
		return nil, err
	}
	g := &gen{
		cfg: cfg, p: p, c: c, t: t,
		r:    &llm.Result{Provider: p.Name(), Model: p.Model(), Mode: llm.ModePrefill},
		head: instructions(document, s),
	}
	if err := g.field(ctx, root, ""); err != nil {
		return g.fail(err)
	}
	value := json.RawMessage(g.out)
	var v any
	dec := json.NewDecoder(strings.NewReader(g.out))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil { // a bug: the program wrote the structure
		return g.end(llm.OutcomeFatal, err, "prefill wrote invalid JSON (a bug, please report): %v", err)
	}
	vs := s.Validate(v)
	if len(vs) == 0 {
		for _, val := range cfg.Validators {
			for _, x := range val(ctx, slices.Clone(value)) {
				if x.Keyword == "" {
					x.Keyword = "validator"
				}
				vs = append(vs, x)
			}
		}
	}
	if len(vs) > 0 {
		g.r.Value = nil
		return g.end(llm.OutcomeExhausted, nil, "every field was valid on its own but the whole value fails at %s: %s (%d calls made)",
			pointerName(vs[0].Pointer), vs[0].Message, g.r.Calls())
	}
	g.r.Value, g.r.Outcome = value, llm.OutcomeOK
	return g.r, nil
}

// gen is one extraction's state: the JSON written so far and the record.
type gen struct {
	cfg  Config
	p    llm.Provider
	c    llm.Completer
	t    *tree
	r    *llm.Result
	head string // instructions without feedback
	out  string // the JSON written so far
	// feedback is the current field's re-ask note, "" on a first ask.
	feedback string
	// dot and comma: numbers written for people so far showed "." or ","
	// as their decimal mark (see convention).
	dot, comma bool
}

// fieldError is a value the model wrote that the field cannot take; it is
// re-asked with msg as feedback.
type fieldError struct {
	class      llm.AttemptClass
	msg        string
	violations []llm.Violation
}

func (e *fieldError) Error() string { return e.msg }

// stopError ends the extraction with an outcome.
type stopError struct {
	outcome llm.Outcome
	cause   error
	reason  string
	retry   time.Duration
}

func (e *stopError) Error() string { return e.reason }

// field generates the value of n at ptr, validates it against n's own
// schema and re-asks it alone, with the failure as feedback, within the
// per-field budget.
func (g *gen) field(ctx context.Context, n *node, ptr string) error {
	mark := len(g.out)
	// A member of a container being re-asked sees the container's
	// feedback until it has its own.
	outer := g.feedback
	defer func() { g.feedback = outer }()
	var last *fieldError
	for try := 0; try <= g.cfg.MaxReasks; try++ {
		g.out = g.out[:mark]
		err := g.value(ctx, n, ptr)
		var fe *fieldError
		switch {
		case err == nil:
			// Scalars were checked before their attempt was recorded;
			// containers are checked once their members are written.
			var vs []llm.Violation
			if n.kind == kindObject || n.kind == kindArray || n.kind == kindChoice {
				vs = g.check(n, ptr, g.out[mark:])
			}
			if len(vs) == 0 {
				return nil
			}
			fe = &fieldError{class: llm.ClassSchema, msg: describe(vs), violations: vs}
		case errors.As(err, &fe):
		default:
			return err
		}
		last = fe
		g.feedback = fmt.Sprintf("The value at %s was rejected: %s. Write it again, correctly.", pointerName(ptr), fe.msg)
	}
	g.out = g.out[:mark]
	return &stopError{outcome: llm.OutcomeExhausted,
		reason: fmt.Sprintf("no valid value at %s after %d %s: %s (%d calls made)", pointerName(ptr), g.cfg.MaxReasks+1, plural(g.cfg.MaxReasks+1, "try", "tries"), last.msg, g.r.Calls())}
}

// check validates a generated value against the node's own schema, with
// violation pointers made absolute.
func (g *gen) check(n *node, ptr, text string) []llm.Violation {
	if n.kind == kindConst {
		return nil
	}
	val := g.t.validator(n)
	if val == nil {
		return nil
	}
	vs, err := val.ValidateJSON([]byte(text))
	if err != nil {
		return []llm.Violation{{Pointer: ptr, Keyword: "type", Message: "is not JSON"}}
	}
	for i := range vs {
		vs[i].Pointer = ptr + vs[i].Pointer
	}
	return vs
}

func describe(vs []llm.Violation) string {
	v := vs[0]
	msg := v.Message
	if v.Value != "" {
		msg += " (got " + v.Value + ")"
	}
	if len(vs) > 1 {
		msg += fmt.Sprintf(" and %d more %s", len(vs)-1, plural(len(vs)-1, "problem", "problems"))
	}
	return msg
}

// fail turns a stopError into the result.
func (g *gen) fail(err error) (*llm.Result, error) {
	var se *stopError
	if !errors.As(err, &se) {
		return g.end(llm.OutcomeFatal, err, "prefill failed: %v", err)
	}
	g.r.RetryAfter = se.retry
	return g.end(se.outcome, se.cause, "%s", se.reason)
}

func (g *gen) end(o llm.Outcome, cause error, format string, args ...any) (*llm.Result, error) {
	g.r.Outcome, g.r.Cause = o, cause
	g.r.Reason = fmt.Sprintf(format, args...)
	return g.r, &llm.ExtractionError{Result: g.r}
}

func pointerName(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// escapePointer escapes one JSON pointer token.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
