package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// transitions records a breaker's transitions.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (r *transitions) add(t Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, t.From.String()+">"+t.To.String())
}

func (r *transitions) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func newTestBreaker(s BreakerSettings) (*Breaker, *fakeClock, *transitions) {
	clk := newFakeClock()
	tr := &transitions{}
	return NewBreaker("p", "transport", s, withBreakerClock(clk), WithTransitions(tr.add)), clk, tr
}

var errDown = errors.New("connection refused")

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		calls    []bool // true: success
		wantOpen bool
	}{
		{"two failures stay closed", []bool{false, false}, false},
		{"three failures open", []bool{false, false, false}, true},
		{"a success restarts the count", []bool{false, false, true, false, false}, false},
		{"three after a success open", []bool{false, true, false, false, false}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := newTestBreaker(BreakerSettings{Failures: 3, Open: time.Second})
			for _, ok := range tc.calls {
				if ok {
					b.Success(false)
				} else {
					b.Failure(false, errDown, 0)
				}
			}
			if got := b.State() == CircuitOpen; got != tc.wantOpen {
				t.Fatalf("open = %v, want %v (state %s)", got, tc.wantOpen, b.State())
			}
		})
	}
}

func TestBreakerHalfOpenProbe(t *testing.T) {
	t.Parallel()
	b, clk, tr := newTestBreaker(BreakerSettings{Failures: 1, Open: time.Second, MaxOpen: 3 * time.Second})
	ctx := t.Context()
	b.Failure(false, errDown, 0)

	// While open, Allow waits.
	got := make(chan bool, 4)
	allow := func(held bool) {
		probe, err := b.Allow(ctx, held)
		if err != nil {
			t.Error(err)
		}
		got <- probe
	}
	go allow(false)
	eventually(t, func() bool { return clk.pending() == 1 }, "the waiter never waited for the open period")
	select {
	case <-got:
		t.Fatal("Allow returned while the circuit was open")
	default:
	}

	// The period ends: one probe goes, the others wait for its outcome.
	clk.Advance(time.Second)
	if probe := <-got; !probe {
		t.Fatal("the first caller after the open period did not get the probe")
	}
	go allow(false)
	go allow(true)
	time.Sleep(20 * time.Millisecond)
	if len(got) != 0 {
		t.Fatal("a second caller went while the probe was out")
	}

	// The probe fails: open again for twice as long.
	b.Failure(true, errDown, 0)
	if s := b.Snapshot(); s.State != "open" || !s.OpenUntil.Equal(clk.Now().Add(2*time.Second)) {
		t.Fatalf("after a failed probe: %+v, want open for 2s", s)
	}
	eventually(t, func() bool { return clk.pending() == 2 }, "waiters did not wait for the second period")
	clk.Advance(2 * time.Second)

	// The held job probes before the puller.
	eventually(t, func() bool { return len(got) == 1 }, "no probe after the second period")
	if probe := <-got; !probe {
		t.Fatal("want a probe")
	}
	// The probe made no call: another caller may probe.
	b.Abandon(true)
	eventually(t, func() bool { return len(got) == 1 }, "an abandoned probe was not handed on")
	if probe := <-got; !probe {
		t.Fatal("want the handed-on probe")
	}
	b.Success(true)
	if b.State() != CircuitClosed {
		t.Fatalf("state %s after a successful probe, want closed", b.State())
	}
	want := []string{"closed>open", "open>half_open", "half_open>open", "open>half_open", "half_open>closed"}
	if g := tr.list(); len(g) != len(want) {
		t.Fatalf("transitions %v, want %v", g, want)
	} else {
		for i := range want {
			if g[i] != want[i] {
				t.Fatalf("transitions %v, want %v", g, want)
			}
		}
	}
}

func TestBreakerHeldJobsProbeFirst(t *testing.T) {
	t.Parallel()
	b, clk, _ := newTestBreaker(BreakerSettings{Failures: 1, Open: time.Second})
	ctx := t.Context()
	b.Failure(false, errDown, 0)
	type res struct {
		held, probe bool
	}
	got := make(chan res, 2)
	for _, held := range []bool{false, true} {
		go func() {
			probe, err := b.Allow(ctx, held)
			if err != nil {
				t.Error(err)
			}
			got <- res{held, probe}
		}()
	}
	eventually(t, func() bool { return clk.pending() == 2 }, "callers did not wait")
	clk.Advance(time.Second)
	first := <-got
	if !first.held || !first.probe {
		t.Fatalf("first to go: %+v, want the held job with the probe", first)
	}
	b.Success(true)
	if second := <-got; second.held || second.probe {
		t.Fatalf("second to go: %+v, want the puller, without a probe, once closed", second)
	}
}

func TestBreakerRetryAfterAndCap(t *testing.T) {
	t.Parallel()
	b, clk, _ := newTestBreaker(BreakerSettings{Failures: 1, Open: time.Second, MaxOpen: 4 * time.Second})
	b.Failure(false, errDown, 30*time.Second)
	if s := b.Snapshot(); !s.OpenUntil.Equal(clk.Now().Add(30 * time.Second)) {
		t.Fatalf("open until %s, want the provider's 30s", s.OpenUntil.Sub(clk.Now()))
	}
	periods := []time.Duration{}
	for range 4 {
		clk.Advance(time.Hour)
		probe, err := b.Allow(t.Context(), true)
		if err != nil || !probe {
			t.Fatalf("probe %v err %v", probe, err)
		}
		b.Failure(true, errDown, 0)
		periods = append(periods, b.Snapshot().OpenUntil.Sub(clk.Now()))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if periods[i] != want[i] {
			t.Fatalf("open periods after failed probes %v, want %v", periods, want)
		}
	}
}

func TestBreakerWaitClosedAndCancel(t *testing.T) {
	t.Parallel()
	b, clk, _ := newTestBreaker(BreakerSettings{Failures: 1, Open: time.Second})
	b.Failure(false, errDown, 0)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.WaitClosed(ctx) }()
	clk.Advance(time.Second) // half-open: still not closed
	time.Sleep(20 * time.Millisecond)
	if len(done) != 0 {
		t.Fatal("WaitClosed returned while half-open")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitClosed = %v, want context.Canceled", err)
	}
	go func() { done <- b.WaitClosed(t.Context()) }()
	b.Success(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestGuardedPoolShowsCircuitPauses: a pool guarded by circuits reports
// their pause with its reason (a refused key, an outage, the audit store)
// and cause while they are open or probing, and nothing once they close.
func TestGuardedPoolShowsCircuitPauses(t *testing.T) {
	t.Parallel()
	s := BreakerSettings{Failures: 2, Open: time.Second, MaxOpen: time.Minute}
	tests := []struct {
		name   string
		open   func(provider, audit *Breaker)
		reason string
		cause  string
	}{
		{name: "refused key", open: func(p, _ *Breaker) { p.Trip(false, PauseKey, errors.New("401 invalid api key")) }, reason: PauseKey, cause: "401 invalid api key"},
		{name: "model gone", open: func(p, _ *Breaker) { p.Trip(false, PauseModel, errors.New("404 no such model")) }, reason: PauseModel, cause: "404 no such model"},
		{name: "outage", open: func(p, _ *Breaker) { p.Failure(false, errDown, 0); p.Failure(false, errDown, 0) }, reason: PauseOutage, cause: errDown.Error()},
		{name: "audit store", open: func(_, a *Breaker) {
			a.Failure(false, errors.New("db down"), 0)
			a.Failure(false, errors.New("db down"), 0)
		}, reason: PauseAudit, cause: "db down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			prov := NewBreaker("p", "transport", s, withBreakerClock(clk), WithPauseReason(PauseOutage))
			audit := NewBreaker("*", "audit", s, withBreakerClock(clk))
			pool := testPool(Limits{Concurrency: 2}, clk)
			pool.Guard(prov, audit)
			if snap := pool.Snapshot(); snap.Paused {
				t.Fatalf("paused before any failure: %+v", snap)
			}
			tc.open(prov, audit)
			snap := pool.Snapshot()
			if !snap.Paused || snap.PauseReason != tc.reason || snap.PauseCause != tc.cause || snap.PausedUntil.IsZero() {
				t.Fatalf("snapshot %+v: want paused for %q by %q with an end", snap, tc.reason, tc.cause)
			}
			clk.Advance(2 * time.Minute) // half-open: still paused until the probe succeeds
			if snap := pool.Snapshot(); !snap.Paused || snap.PauseReason != tc.reason {
				t.Fatalf("half-open snapshot %+v: want still paused for %q", snap, tc.reason)
			}
			prov.Success(false)
			audit.Success(false)
			if snap := pool.Snapshot(); snap.Paused || snap.PauseReason != "" || snap.PauseCause != "" {
				t.Fatalf("after the circuits closed: %+v", snap)
			}
		})
	}
}
