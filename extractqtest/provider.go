// Package extractqtest helps you test code that uses extractq without a
// model: Provider is a scripted llm.Provider whose every call takes the next
// reply from a script (an answer, a truncated answer, a refusal, a provider
// error of a given class with Retry-After, a delay or a hang) and records
// what it was sent, so a test can assert both what came back and what the
// engine asked.
//
//	p := extractqtest.New([]extractqtest.Reply{
//		extractqtest.Text(`{"total": "12,50"}`), // invalid: the engine re-asks
//		extractqtest.Text(`{"total": 12.5}`),
//	})
//	res, err := extractq.Extract(ctx, doc, s, extractq.WithProvider(p))
//	// res.Attempts[0].Violations[0].Pointer == "/total"
//	// p.Requests()[1].Messages holds the feedback the engine sent
package extractqtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"
)

// Reply is what one call returns.
type Reply struct {
	// Text is the answer. Ignored when Err is set.
	Text string
	// Finish defaults to llm.FinishStop.
	Finish llm.FinishReason
	// Refusal is a refusal reported apart from the text (OpenAI's message.refusal).
	Refusal string
	// Usage is reported as given; when zero it is counted as one token per four
	// bytes of prompt and of answer, like a tokenizer on English text.
	Usage llm.Usage
	// Err, when set, makes the call fail with this error.
	Err *llm.Error
	// Block makes the call wait until its context ends, then fail with the
	// context's error (class canceled or timeout): a call that hangs.
	Block bool
	// Delay makes the call take this long before it answers (or fails), as
	// a slow model would; the context still ends it early.
	Delay time.Duration
}

// Text is a normal answer.
func Text(s string) Reply { return Reply{Text: s} }

// Truncated is an answer cut off by the max-tokens limit.
func Truncated(s string) Reply { return Reply{Text: s, Finish: llm.FinishLength} }

// Refused is a refusal reported by the API apart from the answer text.
func Refused(reason string) Reply {
	return Reply{Refusal: reason, Finish: llm.FinishRefusal}
}

// Fail is a failed call of the given class; retryAfter is the Retry-After
// the provider reported (zero for none).
func Fail(class llm.ErrorClass, retryAfter time.Duration) Reply {
	return Reply{Err: &llm.Error{
		Class:     class,
		Status:    statusOf(class),
		Message:   "fake " + string(class),
		RateLimit: llm.RateLimit{RetryAfter: retryAfter},
	}}
}

// Hang is a call that blocks until its context ends.
func Hang() Reply { return Reply{Block: true} }

// Slow is a normal answer that takes d to arrive.
func Slow(s string, d time.Duration) Reply { return Reply{Text: s, Delay: d} }

func statusOf(c llm.ErrorClass) int {
	switch c {
	case llm.ClassRateLimited, llm.ClassQuota:
		return 429
	case llm.ClassOverloaded:
		return 529
	case llm.ClassServer:
		return 500
	case llm.ClassInvalidRequest, llm.ClassContextLength:
		return 400
	case llm.ClassAuth:
		return 401
	case llm.ClassPermission:
		return 403
	case llm.ClassNotFound:
		return 404
	case llm.ClassTooLarge:
		return 413
	}
	return 0
}

// Responder computes a reply from the call number (1-based) and the request;
// it is an alternative to a fixed script for generated tests and benchmarks.
// It is called with the provider's lock held, so it needs no locking itself.
type Responder func(call int, req llm.Request) Reply

// Provider is a scripted provider. It is safe for concurrent use.
type Provider struct {
	name    string
	model   string
	caps    llm.Capabilities
	respond Responder

	mu       sync.Mutex
	script   []Reply
	requests []llm.Request
}

// Option configures a Provider.
type Option func(*Provider)

// WithName sets Name() (default "fake:model").
func WithName(name string) Option { return func(p *Provider) { p.name = name } }

// WithModes sets the modes Capabilities() reports (default text and json).
func WithModes(modes ...llm.Mode) Option {
	return func(p *Provider) { p.caps = llm.Capabilities{Modes: modes} }
}

// WithMedia makes Capabilities() say the model reads images and/or PDFs,
// to test native input.
func WithMedia(images, pdf bool) Option {
	return func(p *Provider) { p.caps.Images, p.caps.PDF = images, pdf }
}

// WithResponder answers calls the script does not cover.
func WithResponder(r Responder) Option { return func(p *Provider) { p.respond = r } }

// New returns a provider that answers call i with script[i]. A call past the
// end of the script (and without a Responder) fails with a fatal
// invalid_request error naming the call, so a test notices an unexpected call.
func New(script []Reply, opts ...Option) *Provider {
	p := &Provider{
		name:   "fake:model",
		model:  "model",
		caps:   llm.Capabilities{Modes: []llm.Mode{llm.ModeText, llm.ModeJSON}},
		script: script,
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.name }

// Model implements llm.Provider.
func (p *Provider) Model() string { return p.model }

// Capabilities implements llm.Provider.
func (p *Provider) Capabilities() llm.Capabilities { return p.caps }

// Chat implements llm.Provider: it records req and plays the next reply.
// An answer longer than req.MaxTokens is cut to that many tokens and reported
// with finish reason length, as a real API would.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	req.Messages = append([]llm.Message(nil), req.Messages...)
	p.requests = append(p.requests, req)
	call := len(p.requests)
	var r Reply
	switch {
	case call <= len(p.script):
		r = p.script[call-1]
	case p.respond != nil:
		r = p.respond(call, req)
	default:
		p.mu.Unlock()
		return nil, &llm.Error{Provider: p.name, Class: llm.ClassInvalidRequest, Status: 400,
			Message: fmt.Sprintf("extractqtest: unexpected call %d: the script has %d replies", call, len(p.script))}
	}
	p.mu.Unlock()

	if r.Block {
		<-ctx.Done()
	} else if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if err := ctx.Err(); err != nil {
		class := llm.ClassCanceled
		if err == context.DeadlineExceeded {
			class = llm.ClassTimeout
		}
		return nil, &llm.Error{Provider: p.name, Class: class, Message: err.Error(), Err: err}
	}
	if r.Err != nil {
		e := *r.Err
		e.Provider = p.name
		return nil, &e
	}
	text, finish := r.Text, r.Finish
	if finish == "" {
		finish = llm.FinishStop
	}
	if req.MaxTokens > 0 && tokens(len(text)) > req.MaxTokens {
		text, finish = text[:req.MaxTokens*bytesPerToken], llm.FinishLength
	}
	usage := r.Usage
	if usage == (llm.Usage{}) {
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content)
		}
		usage = llm.Usage{PromptTokens: tokens(n), CompletionTokens: tokens(len(text) + len(r.Refusal))}
	}
	return &llm.Response{Text: text, FinishReason: finish, Refusal: r.Refusal, Usage: usage, Model: p.model}, nil
}

const bytesPerToken = 4

func tokens(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// Requests returns a copy of every request received, in order.
func (p *Provider) Requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.requests...)
}

// LastRequest returns the most recent request, and false before any call.
func (p *Provider) LastRequest() (llm.Request, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		return llm.Request{}, false
	}
	return p.requests[len(p.requests)-1], true
}

// Calls is the number of calls received.
func (p *Provider) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}
