package batchpool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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
)

// The shapes of batches real providers document, beyond the OpenAI rounds
// of batchpool_test.go: Anthropic's Message Batches (a quota refusal is a
// 429 at submit), a batch canceled by an operator, a batch refused for good,
// an audit store failing as a batch ends, and a lease lost to another worker.

// family is one provider family's batch adapter on the simulator.
type family struct {
	spec, baseURL, key string
}

var (
	openAIFamily    = family{spec, "http://sim.invalid/v1", "sk-batch-test-not-a-key"}
	anthropicFamily = family{"anthropic:claude-haiku-4-5", "http://sim.invalid", "sk-ant-batch-test-not-a-key"}
)

// builder builds f's adapters reaching srv in-process, each passed through
// wrap when it is not nil.
func (f family) builder(srv *sim.Server, wrap func(llm.Provider) llm.Provider) func(string) (llm.Provider, error) {
	hc := &http.Client{Transport: srv.Transport()}
	return func(string) (llm.Provider, error) {
		p, err := providers.New(f.spec, providers.WithBaseURL(f.baseURL), providers.WithHTTPClient(hc), providers.WithAPIKey(f.key))
		if err != nil || wrap == nil {
			return p, err
		}
		return wrap(p), nil
	}
}

// shape is one test's runners, all on one simulator and one family.
type shape struct {
	t     *testing.T
	f     family
	srv   *sim.Server
	build func(string) (llm.Provider, error)
}

func newShape(t *testing.T, f family, prof sim.Profile, seed uint64, wrap func(llm.Provider) llm.Provider) *shape {
	t.Helper()
	srv := sim.New(prof, sim.WithSeed(seed))
	t.Cleanup(srv.Close)
	return &shape{t: t, f: f, srv: srv, build: f.builder(srv, wrap)}
}

// runner runs a Runner of the family's pool on store until the test ends.
func (sh *shape) runner(store batchpool.Store, worker string, s batchpool.Settings) *batchpool.Runner {
	sh.t.Helper()
	r, err := batchpool.New(sh.f.spec, worker, store, s, sh.build)
	if err != nil {
		sh.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	sh.t.Cleanup(func() { cancel(); <-done })
	return r
}

// extractor is the engine on r's provider for the family.
func (sh *shape) extractor(r *batchpool.Runner) *extractq.Extractor {
	sh.t.Helper()
	p, err := sh.build(sh.f.spec)
	if err != nil {
		sh.t.Fatal(err)
	}
	bp, err := r.Provider(sh.f.spec, p)
	if err != nil {
		sh.t.Fatal(err)
	}
	x, err := extractq.New(extractq.WithProvider(bp), extractq.WithMaxReasks(3),
		extractq.WithTransport(extractq.Transport{Retries: 4, Base: time.Millisecond, Cap: 10 * time.Millisecond}))
	if err != nil {
		sh.t.Fatal(err)
	}
	return x
}

// batcher is a plain adapter of the family, for what an operator does.
func (sh *shape) batcher() llm.Batcher {
	sh.t.Helper()
	p, err := sh.build(sh.f.spec)
	if err != nil {
		sh.t.Fatal(err)
	}
	return p.(llm.Batcher)
}

// jobOutcome is what one job's Extract returned.
type jobOutcome struct {
	res *llm.Result
	err error
}

// extractAll runs one job per id at once, document i for job i.
func (sh *shape) extractAll(x *extractq.Extractor, ids []string) []jobOutcome {
	sh.t.Helper()
	s := invoiceSchema(sh.t)
	out := make([]jobOutcome, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(batchpool.WithJob(sh.t.Context(), id, 1), 20*time.Second)
			defer cancel()
			out[i].res, out[i].err = x.Extract(ctx, fleettest.Document(i), s)
		})
	}
	wg.Wait()
	return out
}

func jobIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

// requireOK fails unless every job got a valid value in one attempt: no
// re-ask spent, every answer from a batch.
func requireOK(t *testing.T, ids []string, outs []jobOutcome) (transportRetries int) {
	t.Helper()
	for i, o := range outs {
		if o.err != nil {
			t.Fatalf("job %s: %v", ids[i], o.err)
		}
		if len(o.res.Attempts) != 1 || !o.res.Attempts[0].Batch {
			t.Fatalf("job %s: %d attempts (batch %v); want one batch answer, no re-ask", ids[i], len(o.res.Attempts), o.res.Attempts[0].Batch)
		}
		transportRetries += o.res.Attempts[0].TransportRetries
	}
	return transportRetries
}

// batchDetail is a batches row with its counts.
type batchDetail struct {
	id, state, worker string
	round, requests   int
	succeeded         int
	closed            bool
}

func batchDetails(t *testing.T, store *audit.Store) []batchDetail {
	t.Helper()
	rows, err := store.Pool().Query(t.Context(), `SELECT provider_batch_id, state, worker_id, round, requests, succeeded,
		closed_at IS NOT NULL FROM batches ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []batchDetail
	for rows.Next() {
		var b batchDetail
		if err := rows.Scan(&b.id, &b.state, &b.worker, &b.round, &b.requests, &b.succeeded, &b.closed); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// storedLines counts the stored result lines and their distinct custom ids.
func storedLines(t *testing.T, store *audit.Store) (lines, distinct int) {
	t.Helper()
	err := store.Pool().QueryRow(t.Context(), `SELECT count(*), count(DISTINCT custom_id) FROM batch_lines`).Scan(&lines, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	return lines, distinct
}

// TestAnthropicMessageBatches runs jobs through the Anthropic adapter: the
// rounds of re-asks with expired lines, and the enqueued-token quota, which
// Anthropic enforces with a 429 at submit (OpenAI fails the batch later).
func TestAnthropicMessageBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		prof func() sim.Profile
		n    int
		set  batchpool.Settings
	}{
		{"rounds", func() sim.Profile {
			p := fleettest.FaultyProfile()
			p.Errors = sim.ErrorRates{}
			p.Batch = sim.BatchProfile{Delay: 30 * time.Millisecond, Expire: 0.05}
			return p
		}, 48, fast(16)},
		{"queue quota", func() sim.Profile {
			p := fleettest.CleanProfile()
			// About four invoice requests fit; a batch of 16 does not.
			p.Batch = sim.BatchProfile{Delay: 20 * time.Millisecond, MaxEnqueuedTokens: 4 * 400}
			return p
		}, 16, oneGathering(16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, _ := audittest.Store(t)
			sh := newShape(t, anthropicFamily, tc.prof(), 21, nil)
			x := sh.extractor(sh.runner(store, "w1", tc.set))
			ids := jobIDs("a", tc.n)
			outs := sh.extractAll(x, ids)

			var ok, reasked, attempts, retries int
			for i, o := range outs {
				switch o.res.Outcome {
				case llm.OutcomeOK, llm.OutcomeExhausted, llm.OutcomeUnextractable:
				default:
					t.Fatalf("job %s: outcome %s (%s); want a verdict on its answers", ids[i], o.res.Outcome, o.res.Reason)
				}
				if o.res.Outcome == llm.OutcomeOK {
					ok++
				}
				if len(o.res.Attempts) > 1 {
					reasked++
				}
				for _, a := range o.res.Attempts {
					attempts++
					retries += a.TransportRetries
					if !a.Batch {
						t.Fatalf("job %s attempt %d is not a batch answer", ids[i], a.N)
					}
				}
			}
			st := sh.srv.Stats()
			// Each line the provider answered is an attempt or a transport
			// retry: nothing was asked twice.
			if int(st.BatchRequests) != attempts+retries {
				t.Fatalf("provider answered %d lines; jobs made %d attempts and %d transport retries", st.BatchRequests, attempts, retries)
			}
			batches := batchDetails(t, store)
			rounds := map[int]int{}
			for _, b := range batches {
				if !b.closed || !llm.BatchState(b.state).Final() || b.state == string(llm.BatchFailed) {
					t.Errorf("batch %s: state %s, closed %v; want it ended and closed (Anthropic never fails a batch as a whole)", b.id, b.state, b.closed)
				}
				if !strings.HasPrefix(b.id, "msgbatch_") {
					t.Errorf("batch %s is not a message batch", b.id)
				}
				rounds[b.round]++
			}
			switch tc.name {
			case "rounds":
				if ok == 0 || reasked == 0 || rounds[2] == 0 || st.BatchExpired == 0 || retries == 0 {
					t.Fatalf("%d ok, %d re-asked, batches by round %v, %d expired, %d retries: the profile should give each",
						ok, reasked, rounds, st.BatchExpired, retries)
				}
			case "queue quota":
				if ok != tc.n || attempts != tc.n || st.BatchRequests != int64(tc.n) {
					t.Fatalf("%d ok, %d attempts, %d lines answered; want each of the %d requests answered once", ok, attempts, st.BatchRequests, tc.n)
				}
				if st.BatchesRejected == 0 || len(batches) < 3 {
					t.Fatalf("%d refusals, %d batches: want the batch refused at submit, then sent in parts", st.BatchesRejected, len(batches))
				}
				for _, b := range batches {
					if b.requests > tc.n/2 {
						t.Fatalf("batch %s holds %d requests; the refused batch of %d should have been halved", b.id, b.requests, tc.n)
					}
				}
			}
			t.Logf("%d jobs: %d ok, %d re-asked; %d batches by round %v; %d lines, %d expired, %d refused at submit",
				tc.n, ok, reasked, len(batches), rounds, st.BatchRequests, st.BatchExpired, st.BatchesRejected)
		})
	}
}

// TestCanceledBatchIsSentAgain: an operator cancels a running batch
// (`extractq batch cancel`). The requests it answered before the cancel
// keep their answers; the others come back canceled and go into a later
// batch of the same round, spending no re-ask.
func TestCanceledBatchIsSentAgain(t *testing.T) {
	t.Parallel()
	for _, f := range []family{openAIFamily, anthropicFamily} {
		t.Run(f.spec, func(t *testing.T) {
			t.Parallel()
			store, _ := audittest.Store(t)
			prof := fleettest.CleanProfile()
			const delay = 400 * time.Millisecond
			prof.Batch = sim.BatchProfile{Delay: delay}
			sh := newShape(t, f, prof, 22, nil)
			const n = 8
			// The canceled requests make a gathering of their own: it is
			// submitted after max_wait.
			set := fast(n)
			set.MaxWait = 200 * time.Millisecond
			x := sh.extractor(sh.runner(store, "w1", set))
			ids := jobIDs("c", n)
			done := make(chan []jobOutcome)
			go func() { done <- sh.extractAll(x, ids) }()

			var open []audit.Batch
			waitFor(t, func() bool {
				var err error
				open, err = store.OpenBatches(t.Context(), f.spec)
				return err == nil && len(open) > 0
			})
			// Cancel halfway: the simulator has answered the first half of
			// the lines by then.
			time.Sleep(time.Until(open[0].SubmittedAt.Add(delay / 2)))
			if _, err := sh.batcher().CancelBatch(t.Context(), llm.BatchID(open[0].ProviderBatchID)); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			outs := <-done
			retries := requireOK(t, ids, outs)

			// A slow machine may have gathered the first requests in two
			// batches: the first is the one canceled.
			batches := batchDetails(t, store)
			first, later := batches[0], 0
			// OpenAI counts canceled lines as failed: count the unanswered.
			canceled := first.requests - first.succeeded
			if first.id != open[0].ProviderBatchID || first.state != string(llm.BatchCanceled) || canceled == 0 || canceled == first.requests {
				t.Fatalf("first batch %+v: want it canceled with some of its %d requests answered and some not", first, first.requests)
			}
			for _, b := range batches[1:] {
				if b.round != 1 || b.state != string(llm.BatchEnded) {
					t.Fatalf("batch %+v: want round 1, ended: a canceled request spends no re-ask", b)
				}
				later += b.requests
			}
			if want := canceled + n - first.requests; later != want {
				t.Fatalf("later batches hold %d requests; want the %d canceled and the %d never in the first", later, canceled, n-first.requests)
			}
			if retries != canceled {
				t.Fatalf("%d transport retries; want one per canceled request (%d)", retries, canceled)
			}
			if st := sh.srv.Stats(); st.BatchRequests != n {
				t.Fatalf("provider answered %d lines; want each of the %d requests once", st.BatchRequests, n)
			}
		})
	}
}

// refusingBatcher is a real adapter whose SubmitBatch refuses, as a 400
// does, every batch that carries a request of a poisoned job (every batch
// when poison is empty). With duplicate it sends that request twice
// instead, which the simulator's OpenAI batches fail at validation, after
// the submission.
type refusingBatcher struct {
	llm.Provider
	llm.Batcher
	poison    string
	duplicate bool
	refused   *atomic.Int64
}

const refusal = "requests.0.params.metadata: unexpected field"

func (b *refusingBatcher) SubmitBatch(ctx context.Context, reqs []llm.BatchRequest) (llm.BatchID, error) {
	for _, r := range reqs {
		if job, _, _ := llm.ParseBatchCustomID(r.CustomID); b.poison == "" || job == b.poison {
			b.refused.Add(1)
			if b.duplicate {
				return b.Batcher.SubmitBatch(ctx, append(reqs[:len(reqs):len(reqs)], r))
			}
			return "", &llm.Error{Provider: b.Name(), Class: llm.ClassInvalidRequest, Status: 400, Type: "invalid_request_error", Message: refusal}
		}
	}
	return b.Batcher.SubmitBatch(ctx, reqs)
}

// TestRefusedRequestsFailAlone: a request the provider refuses for good
// ends its job with a fatal outcome naming why; the other jobs gathered
// with it are answered. A refusal of every request costs a bounded number
// of submissions and fails every job. A batch that fails validation after
// it was submitted (OpenAI's "failed") fails the jobs it carries, naming
// why, and is not sent again.
func TestRefusedRequestsFailAlone(t *testing.T) {
	t.Parallel()
	const n = 8
	long := strings.Repeat("x", 64)
	for _, tc := range []struct {
		name   string
		poison string // the job refused; "" for all
		wrap   bool   // refuse at submit (else the adapter cannot encode it)
		// duplicate fails the batch at validation instead: every job of
		// the batch fails.
		duplicate bool
		want      string // in the fatal job's reason
		// maxRefused bounds the refused submissions: narrowing one bad
		// request down costs two per halving.
		maxRefused int64
	}{
		{"adapter cannot encode", long, false, false, "must be 1 to 64 characters", 0},
		{"provider refuses one", "p03", true, false, refusal, 1 + 2*3},
		{"provider refuses all", "", true, false, refusal, 3},
		{"batch fails validation", "p03", true, true, "is a duplicate of another request", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, _ := audittest.Store(t)
			var refused atomic.Int64
			var wrap func(llm.Provider) llm.Provider
			if tc.wrap {
				wrap = func(p llm.Provider) llm.Provider {
					return &refusingBatcher{Provider: p, Batcher: p.(llm.Batcher), poison: tc.poison, duplicate: tc.duplicate, refused: &refused}
				}
			}
			prof := fleettest.CleanProfile()
			prof.Batch = sim.BatchProfile{Delay: 20 * time.Millisecond}
			sh := newShape(t, openAIFamily, prof, 23, wrap)
			x := sh.extractor(sh.runner(store, "w1", oneGathering(n)))
			ids := jobIDs("p", n)
			if tc.poison == long {
				ids[3] = long
			}
			outs := sh.extractAll(x, ids)
			var answered int64
			for i, o := range outs {
				bad := tc.poison == "" || ids[i] == tc.poison || tc.duplicate
				switch {
				case bad && (o.res.Outcome != llm.OutcomeFatal || !errors.Is(o.err, extractq.ErrFatal) || !strings.Contains(o.res.Reason, tc.want)):
					t.Errorf("job %s: outcome %s, reason %q; want fatal, naming %q", ids[i], o.res.Outcome, o.res.Reason, tc.want)
				case bad && len(o.res.Attempts) != 1:
					t.Errorf("job %s: %d attempts; the refusal is final", ids[i], len(o.res.Attempts))
				case !bad && o.err != nil:
					t.Errorf("job %s, gathered with a refused one: %v", ids[i], o.err)
				case !bad:
					answered++
				}
			}
			st := sh.srv.Stats()
			if st.BatchRequests != answered {
				t.Errorf("provider answered %d lines; want the %d good requests, once each", st.BatchRequests, answered)
			}
			if got := refused.Load(); got > tc.maxRefused || tc.wrap && got == 0 {
				t.Errorf("%d submissions refused; want 1 to %d", got, tc.maxRefused)
			}
			if tc.duplicate && (st.Batches != 1 || st.BatchesRejected != 0) {
				t.Errorf("provider saw %d batches; want the one that failed validation, not sent again", st.Batches)
			}
			t.Logf("%d answered, %d refused submissions, %d batches", answered, refused.Load(), st.Batches)
		})
	}
}

// faultyStore is the real audit store with faults: FinishBatch fails the
// first failFinish times (after committing when afterCommit); and the store
// of worker stallWorker stalls for stallFor from its first call of method
// stallOn ("UpdateBatch" or "FinishBatch"): that call and every claim it
// makes meanwhile wait until the stall ends.
type faultyStore struct {
	*audit.Store
	failFinish  atomic.Int64
	afterCommit bool
	finishCalls atomic.Int64

	stallWorker, stallOn string
	stallFor             time.Duration
	mu                   sync.Mutex
	stallUntil           time.Time
	stalled              atomic.Bool // a stall began
	leaseLost            atomic.Int64
}

// stall waits out worker's stall, beginning it at the first call of method.
func (s *faultyStore) stall(worker, method string) {
	if worker != s.stallWorker {
		return
	}
	s.mu.Lock()
	if method == s.stallOn && s.stallUntil.IsZero() {
		s.stallUntil = time.Now().Add(s.stallFor)
		s.stalled.Store(true)
	}
	until := s.stallUntil
	s.mu.Unlock()
	time.Sleep(time.Until(until))
}

func (s *faultyStore) ClaimBatches(ctx context.Context, pool, worker string, lease time.Duration, limit int) ([]audit.Batch, error) {
	s.stall(worker, "ClaimBatches")
	return s.Store.ClaimBatches(ctx, pool, worker, lease, limit)
}

func (s *faultyStore) UpdateBatch(ctx context.Context, id int64, worker, status string, counts audit.BatchCounts, lease time.Duration) error {
	s.stall(worker, "UpdateBatch")
	err := s.Store.UpdateBatch(ctx, id, worker, status, counts, lease)
	if errors.Is(err, audit.ErrBatchLeaseLost) {
		s.leaseLost.Add(1)
	}
	return err
}

func (s *faultyStore) FinishBatch(ctx context.Context, id int64, worker, status, state string, failure *audit.BatchFailure, counts audit.BatchCounts, lines []audit.BatchLine) error {
	s.finishCalls.Add(1)
	s.stall(worker, "FinishBatch")
	fault := s.failFinish.Add(-1) >= 0
	if fault && !s.afterCommit {
		return errors.New("audit: finish batch: connection reset by peer (injected)")
	}
	err := s.Store.FinishBatch(ctx, id, worker, status, state, failure, counts, lines)
	if errors.Is(err, audit.ErrBatchLeaseLost) {
		s.leaseLost.Add(1)
	}
	if fault && err == nil {
		return errors.New("audit: finish batch: connection lost at commit (injected)")
	}
	return err
}

// oneGathering are fast settings whose gathering of n requests is
// submitted when it is full: a slow machine does not split it.
func oneGathering(n int) batchpool.Settings {
	s := fast(n)
	s.MaxWait = 5 * time.Second
	return s
}

// TestStoreFailsAsTheBatchEnds: storing a batch's lines fails a few times,
// before the transaction or at its commit (the store cannot say whether it
// took them). The batch is finished at a later poll, or found closed; the
// jobs get their answers and the lines are stored once.
func TestStoreFailsAsTheBatchEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		fails       int64
		afterCommit bool
	}{
		{"before commit", 3, false},
		{"at commit", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			real, _ := audittest.Store(t)
			store := &faultyStore{Store: real, afterCommit: tc.afterCommit}
			store.failFinish.Store(tc.fails)
			prof := fleettest.CleanProfile()
			prof.Batch = sim.BatchProfile{Delay: 30 * time.Millisecond}
			sh := newShape(t, openAIFamily, prof, 24, nil)
			const n = 6
			x := sh.extractor(sh.runner(store, "w1", oneGathering(n)))
			ids := jobIDs("f", n)
			requireOK(t, ids, sh.extractAll(x, ids))

			if got := store.finishCalls.Load(); got < tc.fails+1 {
				t.Fatalf("FinishBatch called %d times; want the %d failures, then a call that stores or finds the batch closed", got, tc.fails)
			}
			if lines, distinct := storedLines(t, real); lines != n || distinct != n {
				t.Fatalf("%d lines stored (%d distinct); want the batch's %d, once", lines, distinct, n)
			}
			if st := sh.srv.Stats(); st.Batches != 1 || st.BatchRequests != n {
				t.Fatalf("provider saw %d batches and answered %d lines; want one batch, each request once", st.Batches, st.BatchRequests)
			}
			if b := batchDetails(t, real); len(b) != 1 || !b[0].closed || b[0].state != string(llm.BatchEnded) {
				t.Fatalf("batches %+v; want the one batch ended and closed", b)
			}
		})
	}
}

// TestLeaseLostToAnotherWorker: worker A's store stalls for longer than
// its lease while A renews the lease or stores the lines; worker B claims
// the batch and finishes it. The job waiting on A gets its answer from B's
// stored lines, and the provider answers each request once.
func TestLeaseLostToAnotherWorker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stallOn string
		delay   time.Duration // the batch's run on the provider
	}{
		// Running at A's first poll, ended when B polls it.
		{"UpdateBatch", 700 * time.Millisecond},
		// Ended at A's first poll.
		{"FinishBatch", 0},
	} {
		t.Run(tc.stallOn, func(t *testing.T) {
			t.Parallel()
			real, _ := audittest.Store(t)
			s := oneGathering(4)
			store := &faultyStore{Store: real, stallWorker: "A", stallOn: tc.stallOn, stallFor: 3 * s.Lease}
			prof := fleettest.CleanProfile()
			prof.Batch = sim.BatchProfile{Delay: tc.delay}
			sh := newShape(t, openAIFamily, prof, 25, nil)
			x := sh.extractor(sh.runner(store, "A", s))
			sh.runner(store, "B", s) // serves the pool, with no jobs of its own
			ids := jobIDs("l", 4)
			requireOK(t, ids, sh.extractAll(x, ids))
			if !store.stalled.Load() || store.leaseLost.Load() == 0 {
				t.Fatalf("A stalled in %s: %v; found its lease lost %d times: want both", tc.stallOn, store.stalled.Load(), store.leaseLost.Load())
			}
			if b := batchDetails(t, real); len(b) != 1 || b[0].worker != "B" || !b[0].closed {
				t.Fatalf("batches %+v; want the one batch, finished by B", b)
			}
			if lines, _ := storedLines(t, real); lines != len(ids) {
				t.Fatalf("%d lines stored; want %d", lines, len(ids))
			}
			if st := sh.srv.Stats(); st.Batches != 1 || st.BatchRequests != int64(len(ids)) {
				t.Fatalf("provider saw %d batches and answered %d lines; want one batch, each request once", st.Batches, st.BatchRequests)
			}
		})
	}
}

// TestSlowPollOutlivesItsLease: a worker alone, whose lease renewal is
// slower than the lease, claims its own batch back while that poll is
// still under way. The poll goes on with the batch's requests, and they
// are answered when the batch ends.
func TestSlowPollOutlivesItsLease(t *testing.T) {
	t.Parallel()
	real, _ := audittest.Store(t)
	s := oneGathering(4)
	store := &faultyStore{Store: real, stallWorker: "A", stallOn: "UpdateBatch", stallFor: 3 * s.Lease}
	prof := fleettest.CleanProfile()
	// The batch runs on after the stall ends.
	prof.Batch = sim.BatchProfile{Delay: 4 * s.Lease}
	sh := newShape(t, openAIFamily, prof, 26, nil)
	// The stall does not hold the claims back: A claims its batch while
	// its poll waits.
	x := sh.extractor(sh.runner(&claimsFreely{store}, "A", s))
	ids := jobIDs("o", 4)
	requireOK(t, ids, sh.extractAll(x, ids))
	if !store.stalled.Load() {
		t.Fatal("the lease renewal never stalled: the test proves nothing")
	}
	if b := batchDetails(t, real); len(b) != 1 || b[0].worker != "A" || !b[0].closed {
		t.Fatalf("batches %+v; want the one batch, finished by A", b)
	}
	if st := sh.srv.Stats(); st.Batches != 1 || st.BatchRequests != int64(len(ids)) {
		t.Fatalf("provider saw %d batches and answered %d lines; want one batch, each request once", st.Batches, st.BatchRequests)
	}
}

// claimsFreely is a faultyStore whose claims never wait for its stall.
type claimsFreely struct{ *faultyStore }

func (s *claimsFreely) ClaimBatches(ctx context.Context, pool, worker string, lease time.Duration, limit int) ([]audit.Batch, error) {
	return s.Store.ClaimBatches(ctx, pool, worker, lease, limit)
}
