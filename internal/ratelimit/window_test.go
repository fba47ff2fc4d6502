package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// admission is one call the provider admitted: when, and its tokens.
type admission struct {
	at     time.Time
	tokens int
}

// recorder is a provider that admits every call at the fake clock's time,
// reporting used tokens, except the calls refuse names (by number, from 1),
// which it answers with a 429 and Retry-After.
type recorder struct {
	clk    *fakeClock
	used   int
	usage  func(n int) int // when set, the tokens the nth call used, instead of used
	refuse map[int]time.Duration

	mu   sync.Mutex
	n    int
	seen []admission
}

func (r *recorder) Name() string                   { return "sim:recorder" }
func (r *recorder) Model() string                  { return "recorder" }
func (r *recorder) Capabilities() llm.Capabilities { return llm.Capabilities{} }
func (r *recorder) Chat(_ context.Context, _ llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if d, ok := r.refuse[r.n]; ok {
		return nil, throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: d})
	}
	used := r.used
	if r.usage != nil {
		used = r.usage(r.n)
	}
	r.seen = append(r.seen, admission{at: r.clk.Now(), tokens: used})
	return &llm.Response{Text: "{}", Usage: llm.Usage{PromptTokens: used / 2, CompletionTokens: used - used/2}}, nil
}

// phase is a span of back-to-back calls followed by a gap without any.
type phase struct{ busy, idle time.Duration }

// TestPacingFitsAStrictWindow drives one pool with calls back to back,
// broken by idle gaps and 429 pauses, on a fake clock, and checks what a
// strict sliding-window limiter enforces: in no trailing minute did the
// pool's admitted calls exceed its share of the limit. A token bucket
// forgives a burst after a gap (it refilled meanwhile); a sliding window
// counts it against the same minute as the steady calls that follow, so
// a pool that saves up unused budget and spends it at once overflows the
// window by what it saved.
func TestPacingFitsAStrictWindow(t *testing.T) {
	t.Parallel()
	gappy := []phase{{61 * time.Second, 2500 * time.Millisecond}, {61 * time.Second, 700 * time.Millisecond}, {61 * time.Second, 0}}
	tests := []struct {
		name    string
		limits  Limits
		members int
		prompt  int // characters; the call is estimated at prompt/4 + maxTokens and uses as much
		max     int
		usage   func(n int) int
		refuse  map[int]time.Duration
		phases  []phase
		minUse  float64 // of the share in the busiest minute; 0 means 0.95
	}{
		// Calls of 50 tokens against a share of 200 tokens a second: a
		// limiter holding a second's worth sends four at once after a gap.
		{"tokens, small calls, idle gaps", Limits{Concurrency: 4, TPM: 12_000}, 1, 100, 25, nil, nil, gappy, 0},
		{"tokens, small calls, 429 pauses", Limits{Concurrency: 4, TPM: 12_000}, 1, 100, 25, nil, map[int]time.Duration{300: 2 * time.Second, 500: 1500 * time.Millisecond}, []phase{{190 * time.Second, 0}}, 0},
		{"tokens shared by 4 members", Limits{Concurrency: 4, TPM: 48_000}, 4, 100, 25, nil, nil, gappy, 0},
		// Answers of 5 to 95 tokens under a max of 100: the estimate is off
		// both ways, and a share of 1,500 tokens a minute is only about 25
		// calls, so being one call ahead at a minute's edge is 4% of it.
		{"tokens, answers of varied size, small share", Limits{Concurrency: 4, TPM: 6_000}, 4, 100, 100,
			func(n int) int { return 25 + []int{5, 60, 20, 95}[n%4] }, nil, gappy, 0.92},
		{"requests, idle gaps", Limits{Concurrency: 4, RPM: 120}, 1, 100, 25, nil, nil, gappy, 0},
		{"requests, 429 pauses", Limits{Concurrency: 4, RPM: 120}, 1, 100, 25, nil, map[int]time.Duration{100: 2 * time.Second, 200: time.Second}, []phase{{190 * time.Second, 0}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			p := testPool(tc.limits, clk, withJitter(func() float64 { return 0.5 }), WithHeadroom(DefaultHeadroom))
			if tc.members > 1 {
				p.setMembers(tc.members, ShareFleet)
			}
			est := tc.prompt/4 + tc.max
			prov := &recorder{clk: clk, used: est, usage: tc.usage, refuse: tc.refuse}
			w := p.Wrap(prov)
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("x", tc.prompt)}}, MaxTokens: tc.max}

			ctx := t.Context()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, ph := range tc.phases {
					for end := clk.Now().Add(ph.busy); clk.Now().Before(end); {
						if _, err := w.Chat(ctx, req); err != nil && !isThrottled(err) {
							t.Errorf("Chat: %v", err)
							return
						}
					}
					if ph.idle > 0 {
						c, stop := clk.Timer(ph.idle)
						<-c
						stop()
					}
				}
			}()
			drive(t, clk, done)

			share := float64(tc.limits.RPM) / float64(tc.members)
			count := func(a admission) float64 { return 1 }
			if tc.limits.TPM > 0 {
				share = float64(tc.limits.TPM) / float64(tc.members)
				count = func(a admission) float64 { return float64(a.tokens) }
			}
			seen := prov.seen
			if len(seen) < 50 {
				t.Fatalf("only %d calls admitted", len(seen))
			}
			// Every trailing minute that ends at an admission: (at-60s, at].
			var worst float64
			var worstAt time.Time
			for i, a := range seen {
				sum := 0.0
				for j := i; j >= 0 && seen[j].at.After(a.at.Add(-time.Minute)); j-- {
					sum += count(seen[j])
				}
				if sum > worst {
					worst, worstAt = sum, a.at
				}
			}
			// What the pool promises. Requests go at least one interval
			// apart at the share less the headroom, so no trailing minute
			// carries more than that. Tokens are paced at the share less
			// the headroom less one average call a minute, and a minute can
			// also hold the call on its edge, paced before it began: at
			// most the share less the headroom, less the average call, plus
			// the largest (give or take 1% for the moving average). A
			// limiter that saves up unused budget exceeds this by what it
			// saved; one without headroom, by the headroom.
			bound := math.Ceil(share * (1 - DefaultHeadroom))
			if tc.limits.TPM > 0 {
				total, largest := 0.0, 0.0
				for _, a := range seen {
					total += count(a)
					largest = max(largest, count(a))
				}
				bound = share*(1-DefaultHeadroom) - total/float64(len(seen)) + largest + share/100
			}
			if worst > bound {
				t.Fatalf("the minute ending %v after the start carried %.0f, more than the pool paces for (%.0f of a share of %.0f): a strict sliding window filled by the fleet refuses the excess",
					worstAt.Sub(seen[0].at), worst, bound, share)
			}
			// And the pacing still uses the share: the busiest minute is
			// within a few percent of it.
			minUse := cmp.Or(tc.minUse, 0.95)
			if worst < minUse*share {
				t.Fatalf("the busiest minute carried %.0f, under %.0f%% of the share of %.0f", worst, 100*minUse, share)
			}
		})
	}
}

func isThrottled(err error) bool {
	var pe *llm.Error
	return errors.As(err, &pe) && pe.Class == llm.ClassRateLimited
}

// drive moves the fake clock to each next timer until done is closed.
func drive(t *testing.T, clk *fakeClock, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the calls did not finish")
		}
		if clk.pending() > 0 {
			clk.AdvanceToNext()
		} else {
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// TestFleetStartFitsAStrictWindow starts 16 workers' pools together, as a
// fleet rolled out at once: each first count sees only the workers that
// beat before it (1, 2, … 16), and every worker counts all 16 at its next
// round, one heartbeat interval later. A newcomer that took its share of
// what it saw would run the fleet at limit × (1 + 1/2 + … + 1/16), 3.4
// times the limit, until then; the whole fleet's trailing minute would
// carry about 8% more than the limit. Newcomers that find peers hold
// their calls until the peers have counted them.
func TestFleetStartFitsAStrictWindow(t *testing.T) {
	t.Parallel()
	const (
		workers  = 16
		rpm      = 480
		interval = 2 * time.Second // heartbeat interval
		run      = 70 * time.Second
	)
	clk := newFakeClock()
	prov := &recorder{clk: clk, used: 50}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("x", 100)}}, MaxTokens: 25}
	pools := make([]*Pool, workers)
	for i := range pools {
		pools[i] = testPool(Limits{Concurrency: 4, RPM: rpm}, clk, withJitter(func() float64 { return 0.5 }), WithHeadroom(DefaultHeadroom))
		pools[i].countMembers(i+1, ShareFleet, interval+interval/5) // the first round: a join
	}
	ctx := t.Context()
	end := clk.Now().Add(run)
	var wg sync.WaitGroup
	for _, p := range pools {
		w := p.Wrap(prov)
		wg.Go(func() {
			for clk.Now().Before(end) {
				if _, err := w.Chat(ctx, req); err != nil {
					t.Errorf("Chat: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() { // every worker's second round
		c, stop := clk.Timer(interval)
		defer stop()
		<-c
		for _, p := range pools {
			p.countMembers(workers, ShareFleet, 0)
		}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// Step only when every goroutine waits on the clock, so none misses
	// time it should have had.
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			goto check
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the calls did not finish")
		}
		if clk.pending() >= live(pools, clk, end) {
			clk.AdvanceToNext()
		} else {
			time.Sleep(100 * time.Microsecond)
		}
	}
check:
	seen := prov.seen
	worst, worstAt := 0, time.Time{}
	for i, a := range seen {
		n := 0
		for j := i; j >= 0 && seen[j].at.After(a.at.Add(-time.Minute)); j-- {
			n++
		}
		if n > worst {
			worst, worstAt = n, a.at
		}
	}
	// Each worker may have one call on the minute's edge.
	if bound := int(math.Floor(rpm*(1-DefaultHeadroom))) + workers; worst > bound {
		t.Fatalf("the minute ending %v after the start carried %d requests, more than the limit of %d less the headroom (and one call per worker): %d",
			worstAt.Sub(seen[0].at), worst, rpm, bound)
	}
	if worst < rpm*95/100 {
		t.Fatalf("the busiest minute carried %d requests, under 95%% of the limit of %d", worst, rpm)
	}
}

// live is how many goroutines of TestFleetStartFitsAStrictWindow still
// wait on the clock: one caller per pool until the run ends, and the
// second round until it has run.
func live(pools []*Pool, clk *fakeClock, end time.Time) int {
	n := 0
	if clk.Now().Before(end) {
		n = len(pools)
	}
	if pools[0].Snapshot().Members != len(pools) {
		n++
	}
	return n
}
