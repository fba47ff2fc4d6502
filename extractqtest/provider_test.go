package extractqtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

func req(content string, maxTokens int) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: content}}, MaxTokens: maxTokens}
}

func TestScript(t *testing.T) {
	p := New([]Reply{
		Text("hello"),
		Truncated("cut"),
		Refused("no"),
		Fail(llm.ClassRateLimited, 3*time.Second),
		Text("0123456789abcdef"),
		{Text: "x", Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 7}},
	})
	tests := []struct {
		maxTokens int
		text      string
		finish    llm.FinishReason
		refusal   string
		usage     llm.Usage
		class     llm.ErrorClass
		status    int
		after     time.Duration
	}{
		{text: "hello", finish: llm.FinishStop, usage: llm.Usage{PromptTokens: 2, CompletionTokens: 2}},
		{text: "cut", finish: llm.FinishLength, usage: llm.Usage{PromptTokens: 2, CompletionTokens: 1}},
		{finish: llm.FinishRefusal, refusal: "no", usage: llm.Usage{PromptTokens: 2, CompletionTokens: 1}},
		{class: llm.ClassRateLimited, status: 429, after: 3 * time.Second},
		{maxTokens: 2, text: "01234567", finish: llm.FinishLength, usage: llm.Usage{PromptTokens: 2, CompletionTokens: 2}},
		{text: "x", finish: llm.FinishStop, usage: llm.Usage{PromptTokens: 100, CompletionTokens: 7}},
		{class: llm.ClassInvalidRequest, status: 400}, // past the script
	}
	for i, tt := range tests {
		resp, err := p.Chat(context.Background(), req("hi there", tt.maxTokens))
		if tt.class != "" {
			var pe *llm.Error
			if !errors.As(err, &pe) || pe.Class != tt.class || pe.Status != tt.status || pe.RateLimit.RetryAfter != tt.after || pe.Provider != "fake:model" {
				t.Errorf("call %d: error %#v, want class %s", i+1, err, tt.class)
			}
			continue
		}
		if err != nil || resp.Text != tt.text || resp.FinishReason != tt.finish || resp.Refusal != tt.refusal || resp.Usage != tt.usage {
			t.Errorf("call %d: %+v, %v; want %+v", i+1, resp, err, tt)
		}
	}
	if p.Calls() != len(tests) || len(p.Requests()) != len(tests) {
		t.Errorf("recorded %d calls", p.Calls())
	}
}

func TestRequestsAreCopies(t *testing.T) {
	p := New([]Reply{Text("a")})
	r := req("original", 0)
	if _, err := p.Chat(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Messages[0].Content = "changed by the caller"
	if got := p.Requests()[0].Messages[0].Content; got != "original" {
		t.Errorf("recorded request changed with the caller's slice: %q", got)
	}
}

func TestHangEndsWithContext(t *testing.T) {
	p := New([]Reply{Hang(), Hang()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Chat(ctx, req("x", 0))
	var pe *llm.Error
	if !errors.As(err, &pe) || pe.Class != llm.ClassCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled hang: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := p.Chat(ctx, req("x", 0)); !errors.As(err, &pe) || pe.Class != llm.ClassTimeout || !pe.Retryable() {
		t.Errorf("timed-out hang: %v", err)
	}
}

func TestConcurrentResponder(t *testing.T) {
	p := New(nil, WithName("fake:x"), WithModes(llm.ModeStrict), WithResponder(func(call int, r llm.Request) Reply {
		return Text(r.Messages[0].Content)
	}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if resp, err := p.Chat(context.Background(), req("echo", 0)); err != nil || resp.Text != "echo" {
					t.Errorf("got %v %v", resp, err)
				}
			}
		})
	}
	wg.Wait()
	if p.Calls() != 400 || p.Name() != "fake:x" || p.Capabilities().Auto() != llm.ModeStrict {
		t.Errorf("calls %d, name %s, caps %v", p.Calls(), p.Name(), p.Capabilities())
	}
}

func TestSlowAnswerTakesItsDelayUnlessCanceled(t *testing.T) {
	t.Parallel()
	p := New([]Reply{Slow("late", 30*time.Millisecond), Slow("never", time.Hour)})
	start := time.Now()
	resp, err := p.Chat(t.Context(), req("x", 0))
	if err != nil || resp.Text != "late" || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("slow answer: %v %v after %v", resp, err, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.Chat(ctx, req("y", 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a delay must end with its context: %v", err)
	}
	last, ok := p.LastRequest()
	if !ok || last.Messages[0].Content != "y" {
		t.Fatalf("LastRequest = %+v, %v", last, ok)
	}
	if _, ok := New(nil).LastRequest(); ok {
		t.Fatal("LastRequest before any call reported a request")
	}
}

func TestSimulatorAnswersFromTheDocument(t *testing.T) {
	t.Parallel()
	p, err := Simulator("clean")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "sim:clean" {
		t.Fatalf("name %q", p.Name())
	}
	if _, err := Simulator("no-such-profile"); err == nil {
		t.Fatal("an unknown profile must be an error")
	}
}
