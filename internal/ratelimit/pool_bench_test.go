package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// BenchmarkPoolCall is a pool's and a breaker's work for one job of one
// call that never waits (limits far above the rate): the breaker's check,
// the job's slot, the paced call's reservation and settlement, the slot's
// release and the breaker's success, on the real clock.
func BenchmarkPoolCall(b *testing.B) {
	p := NewPool("sim:stub", Limits{Concurrency: 4, RPM: 1 << 30, TPM: 1 << 40}, WithLogger(quiet()))
	br := NewBreaker("sim:stub", "outage", BreakerSettings{Failures: 5, Open: time.Second, MaxOpen: time.Minute})
	// The provider reports plenty left, as a busy pool's does: no idle jitter.
	plenty := llm.RateLimit{LimitRequests: 1 << 30, RemainingRequests: 1 << 30, ResetRequests: time.Minute, HasRequests: true,
		LimitTokens: 1 << 40, RemainingTokens: 1 << 40, ResetTokens: time.Minute, HasTokens: true}
	prov := p.Wrap(&stub{reply: func(int64, llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: "{}", Usage: llm.Usage{PromptTokens: 150, CompletionTokens: 150}, RateLimit: plenty}, nil
	}})
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "an invoice of forty characters, or so.."}}, MaxTokens: 200}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		probe, err := br.Allow(ctx, true)
		if err != nil {
			b.Fatal(err)
		}
		release, err := p.AcquireSlot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := prov.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
		release()
		br.Success(probe)
	}
}

// TestBroadcastWithoutWaitersAllocatesNothing: a release or a breaker's
// verdict nobody waits for makes no channel (each used to allocate one).
func TestBroadcastWithoutWaitersAllocatesNothing(t *testing.T) {
	p := NewPool("sim:stub", Limits{Concurrency: 1}, WithLogger(quiet()))
	b := NewBreaker("sim:stub", "outage", BreakerSettings{})
	if n := testing.AllocsPerRun(100, func() {
		p.mu.Lock()
		p.wake.broadcast()
		p.mu.Unlock()
		b.Success(false)
	}); n != 0 {
		t.Errorf("a broadcast with no waiter allocated %v times, want 0", n)
	}
	// A waiter's channel is still closed by the next broadcast.
	p.mu.Lock()
	woken := p.wake.channel()
	p.wake.broadcast()
	p.mu.Unlock()
	select {
	case <-woken:
	default:
		t.Fatal("the broadcast left its waiter's channel open")
	}
}

// countingClock is the real clock counting its readings.
type countingClock struct {
	realClock
	reads int
}

func (c *countingClock) Now() time.Time { c.reads++; return c.realClock.Now() }

// TestReserveReadsTheClockOnce: a reservation nothing blocks reads the
// clock once; the pause check before it and after it (when no pause
// started meanwhile) reuse that reading. It used to take three.
func TestReserveReadsTheClockOnce(t *testing.T) {
	clk := &countingClock{}
	p := NewPool("sim:stub", Limits{Concurrency: 1, RPM: 1 << 30, TPM: 1 << 40}, WithLogger(quiet()), withClock(clk))
	// Reported plenty left: no idle jitter either.
	p.mu.Lock()
	p.learnLocked(clk.realClock.Now(), llm.RateLimit{LimitRequests: 1 << 30, RemainingRequests: 1 << 30, ResetRequests: time.Minute, HasRequests: true,
		LimitTokens: 1 << 40, RemainingTokens: 1 << 40, ResetTokens: time.Minute, HasTokens: true}, 100)
	p.mu.Unlock()
	clk.reads = 0
	if err := p.reserve(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	if clk.reads != 1 {
		t.Errorf("reserve read the clock %d times, want 1", clk.reads)
	}
}

// TestLimiterRatesKeptInStep: the rates and burst applyRatesLocked
// compares with are the limiters' own, through construction, answers that
// move the token rate, a membership change and a provider's lower limit.
func TestLimiterRatesKeptInStep(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 2, RPM: 600, TPM: 60000}, clk)
	check := func(when string) {
		t.Helper()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.reqRate != p.reqLim.Limit() || p.tokRate != p.tokLim.Limit() || p.tokBurst != p.tokLim.Burst() {
			t.Errorf("%s: kept %v, %v, %d; limiters %v, %v, %d", when, p.reqRate, p.tokRate, p.tokBurst,
				p.reqLim.Limit(), p.tokLim.Limit(), p.tokLim.Burst())
		}
	}
	check("new")
	for i, used := range []int{100, 900, 4000} {
		p.settle(200, &llm.Response{Usage: llm.Usage{PromptTokens: used / 2, CompletionTokens: used - used/2}}, nil)
		clk.Advance(time.Duration(i+1) * time.Second)
		check("after an answer")
	}
	p.countMembers(3, ShareFleet, 0)
	check("after a membership count")
	p.settle(200, &llm.Response{RateLimit: llm.RateLimit{LimitTokens: 30000, RemainingTokens: 1000, ResetTokens: time.Second, HasTokens: true}}, nil)
	check("after a lower reported limit")
}

// TestSlotReleaseOneAllocation: a slot taken and given back costs one
// allocation (its release; a sync.Once and a closure over it were two),
// and a release called again, after the slot went to another job, does
// not free the other job's slot.
func TestSlotReleaseOneAllocation(t *testing.T) {
	p := NewPool("sim:stub", Limits{Concurrency: 1}, WithLogger(quiet()))
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		release, err := p.AcquireSlot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		release()
		release, ok := p.TryAcquireSlot()
		if !ok {
			t.Fatal("no slot free")
		}
		release()
	}); n > 2 {
		t.Errorf("two slots taken and given back allocated %v times, want 2", n)
	}
	first, _ := p.TryAcquireSlot()
	first()
	second, ok := p.TryAcquireSlot()
	if !ok {
		t.Fatal("the slot given back is not free")
	}
	first() // stale: the slot is the second job's now
	if got := p.Snapshot().InUse; got != 1 {
		t.Errorf("InUse = %d after a stale release, want 1", got)
	}
	second()
	if got := p.Snapshot().InUse; got != 0 {
		t.Errorf("InUse = %d after the release, want 0", got)
	}
}
