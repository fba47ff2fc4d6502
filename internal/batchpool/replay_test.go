package batchpool_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
)

// lookupFails is a store whose first BatchAnswer lookups fail.
type lookupFails struct {
	*audit.Store
	failures atomic.Int32 // lookups still to fail
	lookups  atomic.Int32
}

func (s *lookupFails) BatchAnswer(ctx context.Context, pool, job string, round int) (audit.BatchAnswer, error) {
	s.lookups.Add(1)
	if s.failures.Add(-1) >= 0 {
		return audit.BatchAnswer{}, errors.New("connection refused")
	}
	return s.Store.BatchAnswer(ctx, pool, job, round)
}

// TestRoundIsLookedUpBeforeItIsSent: a job redelivered while its request
// rides in a running batch must wait for that batch even when the first
// lookups fail: the retries ask the store again rather than send the
// request a second time.
func TestRoundIsLookedUpBeforeItIsSent(t *testing.T) {
	t.Parallel()
	base, _ := audittest.Store(t)
	prof := fleettest.CleanProfile()
	prof.Batch = sim.BatchProfile{Delay: 200 * time.Millisecond}
	srv := sim.New(prof, sim.WithSeed(9))
	t.Cleanup(srv.Close)
	s := invoiceSchema(t)

	// The first worker sends the job's request, then dies.
	r1, stop1 := startRunner(t, base, "w1", fast(4), srv)
	ctx1, die := context.WithCancel(t.Context())
	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _ = extractor(t, r1, srv).Extract(batchpool.WithJob(ctx1, "job-r", 1), fleettest.Document(3), s)
	}()
	waitFor(t, func() bool {
		open, err := base.OpenBatches(t.Context(), pool)
		return err == nil && len(open) == 1
	})
	die()
	stop1()
	<-first

	// The second worker's store fails its first two lookups.
	flaky := &lookupFails{Store: base}
	flaky.failures.Store(2)
	r2, _ := startRunner(t, flaky, "w2", fast(4), srv)
	ctx, cancel := context.WithTimeout(batchpool.WithJob(t.Context(), "job-r", 2), 30*time.Second)
	defer cancel()
	res, err := extractor(t, r2, srv).Extract(ctx, fleettest.Document(3), s)
	if err != nil {
		t.Fatalf("redelivered job: %v", err)
	}
	if n := flaky.lookups.Load(); n < 3 {
		t.Fatalf("%d lookups; want the failed ones retried before anything is sent", n)
	}
	if st := srv.Stats(); st.Batches != 1 || st.BatchRequests != 1 {
		t.Fatalf("provider saw %d batches, %d lines; want the request sent once", st.Batches, st.BatchRequests)
	}
	if res.Attempts[0].TransportRetries != 2 {
		t.Fatalf("attempt %+v: want the two failed lookups as transport retries", res.Attempts[0])
	}
}

// TestBatchPoolSendsDocumentsWhole: the batch provider hides the context
// window, so the library never splits a document into parts whose calls
// a job's rounds could not tell apart.
func TestBatchPoolSendsDocumentsWhole(t *testing.T) {
	t.Parallel()
	srv := sim.New(fleettest.CleanProfile())
	t.Cleanup(srv.Close)
	base, _ := audittest.Store(t)
	r, _ := startRunner(t, base, "w1", fast(4), srv)
	p, err := providers.New("openai:gpt-4o-mini", providers.WithBaseURL("http://sim.invalid/v1"), providers.WithAPIKey("sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Capabilities().ContextWindow == 0 {
		t.Fatal("the adapter knows no context window: the test proves nothing")
	}
	bp, err := r.Provider("openai:gpt-4o-mini", p)
	if err != nil {
		t.Fatal(err)
	}
	if c := bp.Capabilities(); c.ContextWindow != 0 || !c.Batch.Supported() {
		t.Fatalf("batch provider capabilities %+v: want no context window, the batch limits kept", c)
	}
}

// TestStatsCountWhatIsHeld: requests gathered and not yet submitted show
// in Stats, then the batch polled once max_requests is reached.
func TestStatsCountWhatIsHeld(t *testing.T) {
	t.Parallel()
	store, _ := audittest.Store(t)
	prof := fleettest.CleanProfile()
	prof.Batch = sim.BatchProfile{Delay: time.Minute}
	srv := sim.New(prof)
	t.Cleanup(srv.Close)
	set := fast(4)
	set.MaxWait = time.Minute
	r, _ := startRunner(t, store, "w1", set, srv)
	x := extractor(t, r, srv)
	s := invoiceSchema(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 3 {
		go func() { _, _ = x.Extract(batchpool.WithJob(ctx, fmt.Sprintf("s%d", i), 1), fleettest.Document(i), s) }()
	}
	waitFor(t, func() bool { return r.Stats() == batchpool.Stats{Gathering: 3} })
	go func() { _, _ = x.Extract(batchpool.WithJob(ctx, "s3", 1), fleettest.Document(3), s) }()
	waitFor(t, func() bool { return r.Stats() == batchpool.Stats{Polling: 1} })
}
