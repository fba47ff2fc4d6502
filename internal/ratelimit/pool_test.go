package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// stub is a provider whose every call answers with reply(n) (n counts from 1).
type stub struct {
	calls atomic.Int64
	reply func(n int64, req llm.Request) (*llm.Response, error)
}

func (s *stub) Name() string                   { return "sim:stub" }
func (s *stub) Model() string                  { return "stub" }
func (s *stub) Capabilities() llm.Capabilities { return llm.Capabilities{} }
func (s *stub) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	return s.reply(s.calls.Add(1), req)
}

// answer is a reply reporting used tokens.
func answer(used int) func(int64, llm.Request) (*llm.Response, error) {
	return func(int64, llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: "{}", Usage: llm.Usage{PromptTokens: used / 2, CompletionTokens: used - used/2}}, nil
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testPool is a pool on a fake clock. It paces at the whole share (no
// headroom) so intervals are round numbers; tests of the headroom pass
// WithHeadroom, which overrides it.
func testPool(l Limits, clk *fakeClock, opts ...Option) *Pool {
	return NewPool("sim:stub", l, append([]Option{withClock(clk), WithLogger(quiet()), WithHeadroom(0)}, opts...)...)
}

// req200 is estimated at 200 tokens: 400 prompt characters (100) plus 100.
var req200 = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("x", 400)}}, MaxTokens: 100}

// TestPacingCounts starts many calls at once and counts how many the pool
// lets through in a span of (fake) time.
func TestPacingCounts(t *testing.T) {
	tests := []struct {
		name    string
		limits  Limits
		members int
		calls   int
		span    time.Duration
		want    int
	}{
		{"rpm", Limits{Concurrency: 1000, RPM: 600}, 1, 30, time.Second, 10},
		{"tpm", Limits{Concurrency: 1000, TPM: 60_000}, 1, 30, time.Second, 5},
		{"tpm binds before rpm", Limits{Concurrency: 1000, RPM: 6000, TPM: 60_000}, 1, 30, time.Second, 5},
		{"rpm shared by 4 members", Limits{Concurrency: 1000, RPM: 600}, 4, 30, 2 * time.Second, 5},
		{"rpm over 10s", Limits{Concurrency: 1000, RPM: 120}, 1, 40, 10 * time.Second, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(tc.limits, clk)
			p.setMembers(tc.members, ShareFleet)
			prov := &stub{reply: answer(200)}
			w := p.Wrap(prov)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range tc.calls {
				wg.Go(func() { _, _ = w.Chat(ctx, req200) })
			}
			defer func() { cancel(); wg.Wait() }()
			eventually(t, func() bool { return clk.pending() == tc.calls }, "not every call waits for budget")
			fired := clk.Advance(tc.span)
			if fired < tc.want-1 || fired > tc.want {
				t.Fatalf("calls let through in %v = %d, want %d", tc.span, fired, tc.want)
			}
			eventually(t, func() bool { return prov.calls.Load() == int64(fired) }, "provider saw %d calls, want %d", prov.calls.Load(), fired)
		})
	}
}

// TestTokenCorrection runs calls one after another and checks how much fake
// time they took: the pace must follow the usage reported, not the estimate.
func TestTokenCorrection(t *testing.T) {
	tests := []struct {
		name     string
		used     int // per call; every call is estimated at 200
		min, max time.Duration
	}{
		{"estimate exact", 200, 3900 * time.Millisecond, 4100 * time.Millisecond},
		{"used less: tokens returned", 50, 1000 * time.Millisecond, 1300 * time.Millisecond},
		{"used more: tokens borrowed", 800, 15 * time.Second, 16 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(Limits{Concurrency: 1, TPM: 60_000}, clk) // 1000 tokens/s
			w := p.Wrap(&stub{reply: answer(tc.used)})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range 20 {
					if _, err := w.Chat(context.Background(), req200); err != nil {
						t.Errorf("Chat: %v", err)
						return
					}
				}
			}()
			start := clk.Now()
			deadline := time.Now().Add(20 * time.Second)
		loop:
			for {
				select {
				case <-done:
					break loop
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("calls did not finish")
				}
				if clk.pending() > 0 {
					clk.AdvanceToNext()
				} else {
					time.Sleep(time.Millisecond)
				}
			}
			if got := clk.Now().Sub(start); got < tc.min || got > tc.max {
				t.Fatalf("20 calls took %v of pacing, want %v..%v", got, tc.min, tc.max)
			}
			if s := p.Snapshot(); s.TokensUsed != int64(20*tc.used) {
				t.Fatalf("TokensUsed = %d, want %d", s.TokensUsed, 20*tc.used)
			}
		})
	}
}

func throttled(class llm.ErrorClass, rl llm.RateLimit) error {
	return &llm.Error{Provider: "sim:stub", Class: class, Status: 429, RateLimit: rl}
}

func TestThrottlePausesPool(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantPause  time.Duration
		wantReason string
		want429    int64
		want529    int64
	}{
		{"429 retry-after", throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: 3 * time.Second}), 3 * time.Second, PauseRateLimited, 1, 0},
		{"429 reset only", throttled(llm.ClassRateLimited, llm.RateLimit{ResetRequests: 2 * time.Second, ResetTokens: 1500 * time.Millisecond}), 2 * time.Second, PauseRateLimited, 1, 0},
		{"429 reset of a known limit: until one call refills", throttled(llm.ClassRateLimited, llm.RateLimit{LimitRequests: 600, ResetRequests: time.Minute}), 100 * time.Millisecond, PauseRateLimited, 1, 0},
		{"429 no hint", throttled(llm.ClassRateLimited, llm.RateLimit{}), DefaultPause, PauseRateLimited, 1, 0},
		{"529 overloaded", throttled(llm.ClassOverloaded, llm.RateLimit{RetryAfter: 4 * time.Second}), 4 * time.Second, PauseOverloaded, 0, 1},
		{"retry-after capped", throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: time.Hour}), DefaultMaxPause, PauseRateLimited, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(Limits{Concurrency: 4, RPM: 6000}, clk)
			w := p.Wrap(&stub{reply: func(int64, llm.Request) (*llm.Response, error) { return nil, tc.err }})
			go func() { _, _ = w.Chat(context.Background(), req200) }()
			eventually(t, func() bool { return clk.pending() == 1 }, "call does not wait for its request slot")
			clk.Advance(10 * time.Millisecond) // the first request is due
			eventually(t, func() bool { return p.Snapshot().Calls == 1 }, "call not settled")
			until, paused := p.Paused()
			if !paused || until.Sub(clk.Now()) != tc.wantPause {
				t.Fatalf("Paused() = %v for %v, want paused for %v", paused, until.Sub(clk.Now()), tc.wantPause)
			}
			s := p.Snapshot()
			if s.PauseReason != tc.wantReason || s.RateLimited != tc.want429 || s.Overloaded != tc.want529 || s.Pauses != 1 {
				t.Fatalf("snapshot = %+v", s)
			}
			// No slot while paused; one as soon as the pause ends.
			got := make(chan error, 1)
			go func() {
				release, err := p.AcquireSlot(context.Background())
				if err == nil {
					release()
				}
				got <- err
			}()
			eventually(t, func() bool { return clk.pending() == 1 }, "AcquireSlot does not wait for the pause")
			select {
			case <-got:
				t.Fatal("AcquireSlot returned during the pause")
			default:
			}
			clk.Advance(tc.wantPause)
			eventually(t, func() bool { return len(got) == 1 }, "AcquireSlot still blocked after the pause")
			if err := <-got; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAIMD scripts outcomes and checks the effective concurrency after each.
func TestAIMD(t *testing.T) {
	type step struct {
		after   time.Duration // fake time before the outcome
		ok      bool          // success, else a 429 with Retry-After 1s
		wantEff int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"single 429 only pauses", []step{{0, false, 8}}},
		{"repeated 429s halve", []step{{0, false, 8}, {2 * time.Second, false, 4}, {2 * time.Second, false, 2}, {2 * time.Second, false, 1}, {2 * time.Second, false, 1}}},
		{"429s during one pause are one event", []step{{0, false, 8}, {100 * time.Millisecond, false, 8}, {100 * time.Millisecond, false, 8}}},
		{"429s far apart do not halve", []step{{0, false, 8}, {31 * time.Second, false, 8}}},
		{"successes grow it back one per round", []step{
			{0, false, 8}, {2 * time.Second, false, 4}, {2 * time.Second, false, 2},
			{2 * time.Second, true, 2}, {0, true, 3}, {0, true, 3}, {0, true, 3}, {0, true, 4},
		}},
		{"never above the share", []step{{0, true, 8}, {0, true, 8}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(Limits{Concurrency: 8}, clk)
			for i, s := range tc.steps {
				clk.Advance(s.after)
				if s.ok {
					p.settle(100, &llm.Response{Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 50}}, nil)
				} else {
					p.settle(100, nil, throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: time.Second}))
				}
				if got := p.Snapshot().EffectiveConcurrency; got != s.wantEff {
					t.Fatalf("step %d: effective concurrency = %d, want %d", i, got, s.wantEff)
				}
			}
		})
	}
}

func TestRampAfterPause(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 8, RPM: 600}, clk, WithRampUp(4*time.Second))
	p.settle(100, nil, throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: 2 * time.Second}))
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{2 * time.Second, 300}, {4 * time.Second, 450}, {6 * time.Second, 600}, {60 * time.Second, 600}} {
		clk.Advance(c.at - clk.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
		if got := p.Snapshot().RPMNow; got < c.want-0.01 || got > c.want+0.01 {
			t.Fatalf("at %v after the 429: RPMNow = %.2f, want %.0f", c.at, got, c.want)
		}
	}
}

// TestLearnFromHeaders feeds reported rate-limit states on successful calls.
func TestLearnFromHeaders(t *testing.T) {
	tests := []struct {
		name   string
		rl     llm.RateLimit
		after  time.Duration // fake time between the call and the check
		check  func(s Snapshot, pausedFor time.Duration) bool
		expect string
	}{
		{"no requests remaining pauses until one refills",
			llm.RateLimit{HasRequests: true, LimitRequests: 600, RemainingRequests: 0, ResetRequests: 60 * time.Second}, 0,
			func(s Snapshot, d time.Duration) bool {
				return s.Paused && d == 100*time.Millisecond && s.PauseReason == PauseNoRequests && s.RateLimited == 0
			}, "paused 100ms (one of 600 requests of a 60s bucket) for no_requests_remaining, no 429 counted"},
		{"no tokens remaining pauses until the call's tokens refill",
			llm.RateLimit{HasTokens: true, LimitTokens: 60000, RemainingTokens: 0, ResetTokens: 30 * time.Second}, 0,
			func(s Snapshot, d time.Duration) bool {
				return s.Paused && d == 50*time.Millisecond && s.PauseReason == PauseNoTokens
			}, "paused 50ms (100 of 60000 tokens of a 30s bucket) for no_tokens_remaining"},
		{"no requests remaining, limit unknown: the whole reset",
			llm.RateLimit{HasRequests: true, RemainingRequests: 0, ResetRequests: 2 * time.Second}, 0,
			func(s Snapshot, d time.Duration) bool { return s.Paused && d == 2*time.Second },
			"paused 2s"},
		{"lower reported limit replaces the configured one",
			llm.RateLimit{HasRequests: true, LimitRequests: 300, RemainingRequests: 290, ResetRequests: time.Second}, 0,
			func(s Snapshot, _ time.Duration) bool {
				return s.LearnedRPM == 300 && s.Share.RPM == 300 && s.RPMNow == 300
			},
			"learned RPM 300"},
		{"higher reported limit is ignored",
			llm.RateLimit{HasRequests: true, LimitRequests: 10000, RemainingRequests: 9000, ResetRequests: time.Second}, 0,
			func(s Snapshot, _ time.Duration) bool {
				return s.LearnedRPM == 0 && s.Share.RPM == 600 && s.RPMNow == 600
			},
			"configured RPM 600 kept"},
		{"nearly empty bucket: a little under the share",
			llm.RateLimit{HasRequests: true, LimitRequests: 600, RemainingRequests: 30, ResetRequests: 10 * time.Second}, 0,
			func(s Snapshot, _ time.Duration) bool { return s.RPMNow > 590.9 && s.RPMNow < 591.1 && !s.Paused },
			"RPMNow 591 (half way to the low-water mark: 98.5%)"},
		{"nearly empty bucket state ends at its reset",
			llm.RateLimit{HasRequests: true, LimitRequests: 600, RemainingRequests: 1, ResetRequests: time.Millisecond}, time.Millisecond,
			func(s Snapshot, _ time.Duration) bool { return s.RPMNow == 600 },
			"RPMNow 600"},
		{"plenty remaining paces at the share",
			llm.RateLimit{HasRequests: true, LimitRequests: 600, RemainingRequests: 500, ResetRequests: 10 * time.Second}, 0,
			func(s Snapshot, _ time.Duration) bool { return s.RPMNow == 600 },
			"RPMNow 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(Limits{Concurrency: 8, RPM: 600, TPM: 120000}, clk)
			p.settle(100, &llm.Response{Usage: llm.Usage{PromptTokens: 60, CompletionTokens: 40}, RateLimit: tc.rl}, nil)
			clk.Advance(tc.after)
			until, _ := p.Paused()
			if s := p.Snapshot(); !tc.check(s, until.Sub(clk.Now())) {
				t.Fatalf("want %s; snapshot = %+v", tc.expect, s)
			}
		})
	}
}

func TestAcquireSlot(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 2}, clk)
	ctx := context.Background()
	r1, err1 := p.AcquireSlot(ctx)
	r2, err2 := p.AcquireSlot(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := p.AcquireSlot(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	time.Sleep(20 * time.Millisecond)
	if len(got) != 0 {
		t.Fatal("a third slot was granted with concurrency 2")
	}
	r1()
	r1() // a second release must not free another slot
	r3 := <-got
	if s := p.Snapshot(); s.InUse != 2 {
		t.Fatalf("InUse = %d after double release, want 2", s.InUse)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.AcquireSlot(cctx); err == nil {
		t.Fatal("AcquireSlot with a full pool and a cancelled context succeeded")
	}
	r2()
	r3()
	if s := p.Snapshot(); s.InUse != 0 {
		t.Fatalf("InUse = %d, want 0", s.InUse)
	}
}

// TestTryAcquireSlot: a slot is taken without waiting only when
// AcquireSlot would grant it at once: never beyond the concurrency, during
// a pause, or while calls are owed.
func TestTryAcquireSlot(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		before func(p *Pool, clk *fakeClock)
		want   int // slots a series of tries takes
	}{
		{"free slots", Limits{Concurrency: 3}, func(*Pool, *fakeClock) {}, 3},
		{"one held by a job", Limits{Concurrency: 3}, func(p *Pool, _ *fakeClock) {
			if _, err := p.AcquireSlot(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"paused after a 429", Limits{Concurrency: 3}, func(p *Pool, _ *fakeClock) {
			p.settle(1, nil, throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: time.Second}))
		}, 0},
		{"a granted job's call still owed", Limits{Concurrency: 3, RPM: 60}, func(p *Pool, _ *fakeClock) {
			// The request bucket starts empty: the job granted here owes
			// the next second's request.
			if _, err := p.AcquireSlot(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			p := testPool(tc.limits, clk)
			tc.before(p, clk)
			var releases []func()
			for range 5 {
				if r, ok := p.TryAcquireSlot(); ok {
					releases = append(releases, r)
				}
			}
			if len(releases) != tc.want {
				t.Fatalf("tries took %d slots, want %d", len(releases), tc.want)
			}
			inUse := p.Snapshot().InUse
			for _, r := range releases {
				r()
				r() // a second release must not free another slot
			}
			if got := p.Snapshot().InUse; got != inUse-tc.want {
				t.Fatalf("InUse = %d after releasing the tries, want %d", got, inUse-tc.want)
			}
		})
	}
}

// TestAcquireSlotWaitsForDebt: calls already waiting for request budget
// keep new jobs from being pulled.
func TestAcquireSlotWaitsForDebt(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 100, RPM: 60}, clk) // one request a second
	w := p.Wrap(&stub{reply: answer(10)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 3 {
		go func() { _, _ = w.Chat(ctx, req200) }()
	}
	eventually(t, func() bool { return clk.pending() == 3 }, "calls do not wait")
	got := make(chan error, 1)
	go func() { _, err := p.AcquireSlot(ctx); got <- err }()
	eventually(t, func() bool { return clk.pending() == 4 }, "AcquireSlot does not wait for the debt")
	clk.Advance(2 * time.Second)
	if len(got) != 0 {
		t.Fatal("AcquireSlot returned while requests were still owed")
	}
	clk.Advance(1100 * time.Millisecond)
	eventually(t, func() bool { return len(got) == 1 }, "AcquireSlot still blocked after the debt was paid")
}

func TestShareFollowsMembers(t *testing.T) {
	tests := []struct {
		name     string
		limits   Limits
		members  int
		cut      bool // a repeated 429 first halved the concurrency
		wantConc int
		wantEff  int
		wantRPM  int
	}{
		{"alone", Limits{Concurrency: 64, RPM: 6000, TPM: 1000}, 1, false, 64, 64, 6000},
		{"three", Limits{Concurrency: 64, RPM: 6000, TPM: 1000}, 3, false, 21, 21, 2000},
		{"more members than slots", Limits{Concurrency: 2, RPM: 6000}, 5, false, 1, 1, 1200},
		{"AIMD cut kept within the share", Limits{Concurrency: 64, RPM: 6000}, 2, true, 32, 16, 3000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(tc.limits, clk)
			if tc.cut {
				for range 2 {
					p.settle(1, nil, throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: time.Second}))
					clk.Advance(2 * time.Second)
				}
			}
			p.setMembers(tc.members, ShareFleet)
			s := p.Snapshot()
			if s.Share.Concurrency != tc.wantConc || s.EffectiveConcurrency != tc.wantEff || s.Share.RPM != tc.wantRPM || s.Members != tc.members || s.ShareSource != ShareFleet {
				t.Fatalf("snapshot = %+v, want share concurrency %d, effective %d, rpm %d", s, tc.wantConc, tc.wantEff, tc.wantRPM)
			}
		})
	}
}

// TestAcquireSlotCountsUnclaimedGrants: a slot whose job has not called yet
// counts as a call to come, so grants are paced like calls; a job that ends
// without calling gives its claim back.
func TestAcquireSlotCountsUnclaimedGrants(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 100, RPM: 60}, clk) // one request a second, starting empty
	ctx := context.Background()
	release, err := p.AcquireSlot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := p.AcquireSlot(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	eventually(t, func() bool { return clk.pending() == 1 }, "a second grant does not wait for the first job's call")
	clk.Advance(500 * time.Millisecond)
	if len(got) != 0 {
		t.Fatal("second slot granted before the budget had room for two calls")
	}
	release() // the first job made no call
	eventually(t, func() bool { return len(got) == 1 }, "the first job's unclaimed grant was not given back")
	(<-got)()
}

func TestEstimate(t *testing.T) {
	prompt := llm.Message{Role: llm.RoleUser, Content: strings.Repeat("x", 400)} // 100 tokens
	tests := []struct {
		name      string
		maxTokens int
		answers   []int // completion tokens reported before
		want      int
	}{
		{"max tokens before any answer", 500, nil, 600},
		{"default max tokens", 0, nil, 100 + DefaultMaxTokens},
		{"learned answer size with headroom", 500, []int{80, 80, 80}, 200},
		{"never above max tokens", 50, []int{80}, 150},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPool(Limits{Concurrency: 1, TPM: 1000}, newFakeClock())
			for _, c := range tc.answers {
				p.settle(1000, &llm.Response{Usage: llm.Usage{PromptTokens: 10, CompletionTokens: c}}, nil)
			}
			if got := p.estimate(llm.Request{Messages: []llm.Message{prompt}, MaxTokens: tc.maxTokens}); got != tc.want {
				t.Fatalf("estimate = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestChatCancelledWhileWaiting: a call given up while it waits for budget
// never reaches the provider, fails as canceled, and hands its reservation
// back so the next call is not delayed by it.
func TestChatCancelledWhileWaiting(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 10, RPM: 60}, clk) // one request a second
	prov := &stub{reply: answer(10)}
	w := p.Wrap(prov)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := w.Chat(ctx, req200); got <- err }()
	eventually(t, func() bool { return clk.pending() == 1 }, "call does not wait for budget")
	cancel()
	err := <-got
	var pe *llm.Error
	if !errors.As(err, &pe) || pe.Class != llm.ClassCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want a llm.Error of class canceled wrapping context.Canceled", err)
	}
	if prov.calls.Load() != 0 {
		t.Fatal("the provider was called")
	}
	// The cancelled reservation is back: the next call is due after one
	// interval, not two.
	go func() { _, err := w.Chat(context.Background(), req200); got <- err }()
	eventually(t, func() bool { return clk.pending() == 1 }, "second call does not wait for budget")
	clk.Advance(time.Second)
	eventually(t, func() bool { return len(got) == 1 }, "the cancelled call's reservation still delays the next one")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestIdleJitter: a call finding its pool idle waits a random part of one
// interval, unless the provider last reported plenty remaining.
func TestIdleJitter(t *testing.T) {
	little := &llm.RateLimit{HasRequests: true, LimitRequests: 60, RemainingRequests: 2, ResetRequests: time.Minute}
	tests := []struct {
		name     string
		reported *llm.RateLimit // before the pool goes idle; nil: nothing
		idle     time.Duration  // since the previous call (one at the start)
		want     time.Duration  // with the random draw fixed at one half
	}{
		{"nothing reported yet", nil, 5 * time.Second, 500 * time.Millisecond},
		// Little remaining also slows the pace to 98% (headerFactor): half of
		// an interval of 1/0.98 s is 510.204081ms.
		{"little remaining", little, 5 * time.Second, 510204081},
		{"plenty remaining", &llm.RateLimit{HasRequests: true, LimitRequests: 60, RemainingRequests: 50, ResetRequests: time.Minute}, 5 * time.Second, 0},
		{"little remaining, but the reset has passed", &llm.RateLimit{HasRequests: true, LimitRequests: 60, RemainingRequests: 2, ResetRequests: 2 * time.Second}, 5 * time.Second, 0},
		{"busy: the previous call was under two intervals ago", little, 1500 * time.Millisecond, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := testPool(Limits{Concurrency: 10, RPM: 60}, clk, withJitter(func() float64 { return 0.5 })) // one request a second
			w := p.Wrap(&stub{reply: answer(10)})
			got := make(chan error, 1)
			go func() { _, err := w.Chat(context.Background(), req200); got <- err }()
			eventually(t, func() bool { return clk.pending() == 1 }, "first call does not wait for the empty bucket")
			clk.Advance(time.Second)
			eventually(t, func() bool { return len(got) == 1 }, "first call not done")
			<-got
			if tc.reported != nil {
				p.settle(10, &llm.Response{RateLimit: *tc.reported}, nil)
			}
			clk.Advance(tc.idle) // the request bucket is full again
			go func() { _, err := w.Chat(context.Background(), req200); got <- err }()
			if tc.want == 0 {
				eventually(t, func() bool { return len(got) == 1 }, "call waited although the pool was busy or the provider reported plenty remaining")
				return
			}
			eventually(t, func() bool { return clk.pending() == 1 }, "idle call did not wait")
			if fired := clk.Advance(tc.want - time.Millisecond); fired != 0 {
				t.Fatal("idle call went before its jitter")
			}
			clk.Advance(2 * time.Millisecond)
			eventually(t, func() bool { return len(got) == 1 }, "idle call still waiting after its jitter")
		})
	}
}

// TestIdleJitterShiftsSchedule: the hold moves the pool's pacing with it, so
// a call queued behind the jittered one follows it by a full interval instead
// of firing at the unshifted time (which, fleet-wide, would be one instant).
func TestIdleJitterShiftsSchedule(t *testing.T) {
	clk := newFakeClock()
	p := testPool(Limits{Concurrency: 10, RPM: 60}, clk, withJitter(func() float64 { return 0.5 })) // one request a second
	clk.Advance(5 * time.Second)                                                                    // idle, nothing reported yet
	prov := &stub{reply: answer(10)}
	w := p.Wrap(prov)
	for range 2 {
		go func() { _, _ = w.Chat(context.Background(), req200) }()
	}
	eventually(t, func() bool { return clk.pending() == 2 }, "calls do not wait for the hold")
	clk.Advance(500 * time.Millisecond)
	eventually(t, func() bool { return prov.calls.Load() == 1 && clk.pending() == 1 }, "after the hold one call should go and one wait")
	clk.Advance(900 * time.Millisecond)
	// The waiter may be between two timers (woken by the first call's end,
	// it looks again and sets a new one): wait for it to be waiting again.
	// The fake clock does not move meanwhile, so a call that went early
	// would show.
	eventually(t, func() bool { return clk.pending() == 1 || prov.calls.Load() != 1 }, "the second call neither waits nor went")
	if prov.calls.Load() != 1 {
		t.Fatal("the second call went less than an interval after the first")
	}
	clk.Advance(100 * time.Millisecond)
	eventually(t, func() bool { return prov.calls.Load() == 2 }, "the second call did not go one interval after the first")
}

// TestCountMembersHysteresis: more members apply at once; fewer only when
// two rounds in a row count fewer, and then the larger of the two counts.
func TestCountMembersHysteresis(t *testing.T) {
	t.Parallel()
	type round struct {
		n    int
		src  ShareSource
		want int // divisor in force after the round
	}
	tests := []struct {
		name   string
		rounds []round
	}{
		{"first count applies", []round{{4, ShareFleet, 4}}},
		{"a joiner applies at once", []round{{4, ShareFleet, 4}, {5, ShareFleet, 5}}},
		{"one low count is ignored", []round{{4, ShareFleet, 4}, {3, ShareFleet, 4}, {4, ShareFleet, 4}, {3, ShareFleet, 4}, {4, ShareFleet, 4}}},
		{"two low counts apply", []round{{4, ShareFleet, 4}, {3, ShareFleet, 4}, {3, ShareFleet, 3}}},
		{"two falling counts apply the larger", []round{{4, ShareFleet, 4}, {3, ShareFleet, 4}, {2, ShareFleet, 3}, {2, ShareFleet, 3}, {2, ShareFleet, 2}}},
		{"fallback applies at once", []round{{4, ShareFleet, 4}, {5, ShareFallback, 5}}},
		{"back from a fallback applies at once", []round{{4, ShareFleet, 4}, {5, ShareFallback, 5}, {4, ShareFleet, 4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPool(Limits{Concurrency: 64, RPM: 6000}, newFakeClock())
			for i, r := range tc.rounds {
				p.countMembers(r.n, r.src, 0)
				if s := p.Snapshot(); s.Members != r.want {
					t.Fatalf("round %d (count %d, %s): divisor %d (%s), want %d", i, r.n, r.src, s.Members, s.ShareSource, r.want)
				}
			}
		})
	}
}

// TestNewcomerHolds: a worker whose first count finds peers makes no call
// and takes no slot until the hold passes; one that finds none starts at
// once.
func TestNewcomerHolds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		limits   Limits
		members  int
		wantHold bool
	}{
		{"finds peers", Limits{Concurrency: 8, RPM: 6000}, 4, true},
		{"finds peers, tokens only", Limits{Concurrency: 8, TPM: 60_000}, 4, true},
		{"alone", Limits{Concurrency: 8, RPM: 6000}, 1, false},
		{"finds peers, concurrency only: nothing a window remembers", Limits{Concurrency: 8}, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			p := testPool(tc.limits, clk)
			p.countMembers(tc.members, ShareFleet, 2400*time.Millisecond)
			if s := p.Snapshot(); s.JoiningUntil.IsZero() == tc.wantHold {
				t.Fatalf("JoiningUntil = %v, want a hold: %v", s.JoiningUntil, tc.wantHold)
			}
			got := make(chan error, 1)
			go func() {
				release, err := p.AcquireSlot(t.Context())
				if err == nil {
					release()
				}
				got <- err
			}()
			if !tc.wantHold {
				eventually(t, func() bool { return len(got) == 1 }, "AcquireSlot blocked with no hold")
				return
			}
			eventually(t, func() bool { return clk.pending() == 1 }, "AcquireSlot does not wait for the hold")
			if clk.Advance(2399 * time.Millisecond); len(got) != 0 {
				t.Fatal("a slot was granted during the hold")
			}
			eventually(t, func() bool { return clk.pending() == 1 }, "AcquireSlot stopped waiting before the hold ended")
			clk.Advance(time.Millisecond)
			eventually(t, func() bool { return len(got) == 1 }, "AcquireSlot still blocked after the hold")
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			// The next count (every peer has counted it) does not hold again.
			p.countMembers(tc.members, ShareFleet, 0)
			if s := p.Snapshot(); !s.JoiningUntil.IsZero() {
				t.Fatalf("still joining after the hold: %v", s.JoiningUntil)
			}
		})
	}
}

// TestHeadroom: the pacing rate is the share less the headroom, and header
// pacing does not compound with it (the lower factor wins).
func TestHeadroom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		headroom float64
		rl       *llm.RateLimit
		want     float64 // RPMNow
	}{
		{"default headroom", DefaultHeadroom, nil, 588},
		{"little remaining: header pacing is lower and wins", DefaultHeadroom, &llm.RateLimit{HasRequests: true, LimitRequests: 600, RemainingRequests: 0, ResetRequests: 10 * time.Second}, 582},
		{"some remaining: the headroom is lower and wins", DefaultHeadroom, &llm.RateLimit{HasRequests: true, LimitRequests: 600, RemainingRequests: 30, ResetRequests: 10 * time.Second}, 588},
		{"no headroom", 0, nil, 600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			p := testPool(Limits{Concurrency: 8, RPM: 600}, clk, WithHeadroom(tc.headroom))
			if tc.rl != nil {
				p.settle(100, &llm.Response{Usage: llm.Usage{PromptTokens: 60, CompletionTokens: 40}, RateLimit: *tc.rl}, nil)
				clk.Advance(time.Second) // past the pause "none remaining" asks for
			}
			if got := p.Snapshot().RPMNow; got < tc.want-0.01 || got > tc.want+0.01 {
				t.Fatalf("RPMNow = %.2f, want %.0f", got, tc.want)
			}
		})
	}
}
