package batchpool_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

const (
	pool = "openai:sim-fleet"
	spec = "openai:sim-fleet"
)

// simBuilder builds OpenAI adapters that reach srv in-process.
func simBuilder(srv *sim.Server) func(string) (llm.Provider, error) {
	hc := &http.Client{Transport: srv.Transport()}
	return func(string) (llm.Provider, error) {
		return providers.New(spec, providers.WithBaseURL("http://sim.invalid/v1"),
			providers.WithHTTPClient(hc), providers.WithAPIKey("sk-batch-test-not-a-key"))
	}
}

// fast are settings that run a test's batches in well under a second.
func fast(maxRequests int) batchpool.Settings {
	return batchpool.Settings{MaxRequests: maxRequests, MaxWait: 50 * time.Millisecond,
		PollMin: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, Lease: 400 * time.Millisecond}
}

// startRunner runs a Runner until the test ends (or stop is called).
func startRunner(t *testing.T, store batchpool.Store, worker string, s batchpool.Settings, srv *sim.Server) (r *batchpool.Runner, stop func()) {
	t.Helper()
	r, err := batchpool.New(pool, worker, store, s, simBuilder(srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return r, stop
}

// extractor is the engine on a batch pool's provider.
func extractor(t *testing.T, r *batchpool.Runner, srv *sim.Server, opts ...extractq.Option) *extractq.Extractor {
	t.Helper()
	p, err := simBuilder(srv)(spec)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := r.Provider(spec, p)
	if err != nil {
		t.Fatal(err)
	}
	base := []extractq.Option{extractq.WithProvider(bp), extractq.WithMaxReasks(3),
		extractq.WithTransport(extractq.Transport{Retries: 4, Base: time.Millisecond, Cap: 10 * time.Millisecond})}
	x, err := extractq.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func invoiceSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJobsGoThroughRoundsOfBatches: answers come from batches, re-asks go
// into batches of later rounds, expired lines are sent again without
// spending a re-ask, and nothing is asked twice.
func TestJobsGoThroughRoundsOfBatches(t *testing.T) {
	t.Parallel()
	store, _ := audittest.Store(t)
	prof := fleettest.FaultyProfile()
	prof.Errors = sim.ErrorRates{} // line errors come from the batch rates below
	prof.Batch = sim.BatchProfile{Delay: 30 * time.Millisecond, Expire: 0.05}
	srv := sim.New(prof, sim.WithSeed(5))
	t.Cleanup(srv.Close)
	const maxRequests = 16
	r, _ := startRunner(t, store, "w1", fast(maxRequests), srv)
	x := extractor(t, r, srv)
	s := invoiceSchema(t)

	const n = 60
	results := make([]*llm.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(batchpool.WithJob(t.Context(), fmt.Sprintf("job%02d", i), 1), time.Minute)
			defer cancel()
			results[i], _ = x.Extract(ctx, fleettest.Document(i), s)
		})
	}
	wg.Wait()

	var ok, reasked, attempts, retries int
	for i, res := range results {
		switch res.Outcome {
		case llm.OutcomeOK, llm.OutcomeExhausted, llm.OutcomeUnextractable:
		default:
			t.Fatalf("job %d: outcome %s (%s); want a verdict on its answers", i, res.Outcome, res.Reason)
		}
		if res.Outcome == llm.OutcomeOK {
			ok++
		}
		if len(res.Attempts) > 1 {
			reasked++
		}
		for _, a := range res.Attempts {
			attempts++
			retries += a.TransportRetries
			if !a.Batch {
				t.Fatalf("job %d attempt %d is not marked as a batch answer", i, a.N)
			}
		}
	}
	if ok == 0 || reasked == 0 {
		t.Fatalf("%d ok, %d re-asked of %d: the profile should give both", ok, reasked, n)
	}
	st := srv.Stats()
	if st.BatchExpired == 0 || retries == 0 {
		t.Fatalf("no expired line was retried (expired %d, transport retries %d): the test proves nothing about them", st.BatchExpired, retries)
	}
	// Every line the provider answered is an attempt or a transport retry:
	// nothing was sent twice, and an expired line spent no re-ask.
	if int(st.BatchRequests) != attempts+retries {
		t.Fatalf("provider answered %d lines; jobs made %d attempts and %d transport retries", st.BatchRequests, attempts, retries)
	}
	batches := allBatches(t, store)
	rounds := map[int]int{}
	for _, b := range batches {
		if !b.closed || !llm.BatchState(b.state).Final() {
			t.Errorf("batch %s: state %s, closed %v; want every batch final and closed", b.id, b.state, b.closed)
		}
		if b.requests > maxRequests {
			t.Errorf("batch %s holds %d requests; max_requests is %d", b.id, b.requests, maxRequests)
		}
		rounds[b.round]++
	}
	if rounds[1] == 0 || rounds[2] == 0 {
		t.Fatalf("batches per round %v; want first asks and re-asks", rounds)
	}
	t.Logf("%d jobs: %d ok, %d re-asked; %d batches by round %v; %d lines, %d expired", n, ok, reasked, len(batches), rounds, st.BatchRequests, st.BatchExpired)
}

// TestAnotherWorkerTakesOverABatch: the worker that submitted a batch
// stops (gracefully: it gives up its leases; a killed one's run out, as in
// internal/e2e); the job, redelivered to another worker, waits for that
// same batch, which the other worker takes over at once, long before the
// minute-long lease would have run out. The provider is asked once.
func TestAnotherWorkerTakesOverABatch(t *testing.T) {
	t.Parallel()
	store, _ := audittest.Store(t)
	prof := fleettest.CleanProfile()
	prof.Batch = sim.BatchProfile{Delay: 300 * time.Millisecond}
	srv := sim.New(prof, sim.WithSeed(6))
	t.Cleanup(srv.Close)
	s := invoiceSchema(t)

	long := fast(8)
	long.Lease = time.Minute
	r1, stop1 := startRunner(t, store, "w1", long, srv)
	x1 := extractor(t, r1, srv)
	ctx1, die := context.WithCancel(t.Context())
	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _ = x1.Extract(batchpool.WithJob(ctx1, "job-k", 1), fleettest.Document(1), s)
	}()
	waitFor(t, func() bool {
		open, err := store.OpenBatches(t.Context(), pool)
		return err == nil && len(open) == 1
	})
	die() // the first worker dies with its batch running
	stop1()
	<-first

	r2, _ := startRunner(t, store, "w2", long, srv)
	x2 := extractor(t, r2, srv)
	ctx, cancel := context.WithTimeout(batchpool.WithJob(t.Context(), "job-k", 2), 20*time.Second)
	defer cancel()
	res, err := x2.Extract(ctx, fleettest.Document(1), s)
	if err != nil {
		t.Fatalf("redelivered job: %v", err)
	}
	if st := srv.Stats(); st.Batches != 1 || st.BatchRequests != 1 {
		t.Fatalf("provider saw %d batches and %d lines; want the one batch, asked once", st.Batches, st.BatchRequests)
	}
	if all := allBatches(t, store); len(all) != 1 || all[0].worker != "w2" || !all[0].closed {
		t.Fatalf("batches = %+v; want the one batch, finished by w2", all)
	}
	if len(res.Attempts) != 1 || !res.Attempts[0].Batch {
		t.Fatalf("attempts = %+v", res.Attempts)
	}
}

// TestQueueQuotaSplitsTheBatch: a batch refused for the enqueued-token
// quota is sent again in halves until its parts fit.
func TestQueueQuotaSplitsTheBatch(t *testing.T) {
	t.Parallel()
	store, _ := audittest.Store(t)
	prof := fleettest.CleanProfile()
	// About four invoice prompts fit; a batch of 16 does not.
	prof.Batch = sim.BatchProfile{Delay: 300 * time.Millisecond, MaxEnqueuedTokens: 4 * 700}
	srv := sim.New(prof, sim.WithSeed(7))
	t.Cleanup(srv.Close)
	r, _ := startRunner(t, store, "w1", fast(16), srv)
	x := extractor(t, r, srv)
	s := invoiceSchema(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(batchpool.WithJob(t.Context(), fmt.Sprintf("q%02d", i), 1), time.Minute)
			defer cancel()
			_, errs[i] = x.Extract(ctx, fleettest.Document(i), s)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	st := srv.Stats()
	if st.BatchesRejected == 0 || st.Batches < 3 {
		t.Fatalf("stats %+v: want a refused batch, then smaller ones", st)
	}
	if st.BatchRequests != n {
		t.Fatalf("%d lines answered; want each of the %d requests once", st.BatchRequests, n)
	}
	// Halved only until a part fits (about four prompts; two always do);
	// the rest waited for room instead of being broken into ever smaller
	// batches, down to single requests.
	for _, b := range allBatches(t, store) {
		if b.state != string(llm.BatchFailed) && b.requests < 2 {
			t.Errorf("batch %s of %d requests: halved below what fits instead of waiting for room", b.id, b.requests)
		}
	}
}

// batchRow is what the tests check of a batches row.
type batchRow struct {
	id, state, worker string
	round, requests   int
	closed            bool
}

func allBatches(t *testing.T, store *audit.Store) []batchRow {
	t.Helper()
	rows, err := store.Pool().Query(t.Context(), `SELECT provider_batch_id, state, worker_id, round, requests, closed_at IS NOT NULL FROM batches ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []batchRow
	for rows.Next() {
		var b batchRow
		if err := rows.Scan(&b.id, &b.state, &b.worker, &b.round, &b.requests, &b.closed); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
