package e2e

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
)

// batchProfile is the faulty model behind a batch API whose lines also
// expire and fail now and then.
func batchProfile(delay time.Duration) sim.Profile {
	p := fleettest.FaultyProfile()
	p.Batch = sim.BatchProfile{Delay: delay, Expire: 0.02, Fail: 0.01}
	return p
}

// batchFacts are what the audit says about a batch pool's run.
type batchFacts struct {
	attempts, retries, notBatch int64 // attempt rows, their transport retries, rows not marked batch
	rounds                      int   // highest round of a batch
	open                        int64 // batches not closed
}

func readBatchFacts(t *testing.T, st *audit.Store) batchFacts {
	t.Helper()
	var f batchFacts
	ctx := context.Background()
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), coalesce(sum(transport_retries), 0), count(*) FILTER (WHERE NOT batch) FROM attempts`).
		Scan(&f.attempts, &f.retries, &f.notBatch); err != nil {
		t.Fatal(err)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT coalesce(max(round), 0), count(*) FILTER (WHERE closed_at IS NULL) FROM batches`).
		Scan(&f.rounds, &f.open); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBatchPoolEndToEnd: documents go through a batch pool: every one ends
// as one result or one dead letter, re-asks go into later rounds, and no
// request is answered twice.
func TestBatchPoolEndToEnd(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 150
	}
	ctx := context.Background()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv := sim.New(batchProfile(50*time.Millisecond), sim.WithSeed(8))
	defer srv.Close()
	sc := submitDocs(t, submit.New(js, st), n, "openai:sim-fleet")
	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool := jobs.PoolFor("openai:sim-fleet")
	// Eight transport retries: a job that ran out of them would be handed
	// back, and its next delivery's replay would not count the lines its
	// retries spent, which the line count below relies on.
	tr := extractq.DefaultTransport()
	tr.Retries, tr.Base, tr.Cap = 8, time.Millisecond, 5*time.Millisecond
	w, err := worker.New(js, writer, worker.NewEngine(extractq.WithTransport(tr)),
		worker.WithID("batch-worker"),
		worker.WithPools(worker.Pool{Name: pool, Concurrency: 256, Batch: &batchpool.Settings{
			MaxRequests: 100, MaxWait: 100 * time.Millisecond, PollMin: 20 * time.Millisecond, PollMax: 100 * time.Millisecond, Lease: time.Second}}),
		worker.WithBatchStore(st),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 1000}),
		worker.WithProviders(fleettest.Provider(srv)), worker.WithLogger(quietLogger()), worker.WithPullWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitSettled(t, st, n, 5*time.Minute)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}

	results, dead := checkOutcomes(t, st, jobs.NewDLQ(js), sc, n)
	f := readBatchFacts(t, st)
	stats := srv.Stats()
	if f.notBatch != 0 {
		t.Errorf("%d attempts not marked as batch answers", f.notBatch)
	}
	if f.rounds < 2 || dead == 0 {
		t.Errorf("highest round %d, %d dead letters: the profile should need re-ask rounds and exhaust some documents", f.rounds, dead)
	}
	if f.open != 0 {
		t.Errorf("%d batches left open", f.open)
	}
	// Each line the provider answered is one recorded attempt or one
	// transport retry (expired and failed lines): none answered twice.
	if got := f.attempts + f.retries; got != stats.BatchRequests {
		t.Errorf("provider answered %d lines; the audit records %d attempts + %d transport retries", stats.BatchRequests, f.attempts, f.retries)
	}
	// A dead letter of an exhausted document carries every round's attempt.
	if err := jobs.NewDLQ(js).List(ctx, jobs.ListFilter{}, func(l *jobs.Letter) error {
		if l.Outcome == "exhausted" && len(l.Attempts) < 2 {
			t.Errorf("letter of %s: %d attempts; want one per round", l.Job.DocumentID, len(l.Attempts))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d documents: %d results, %d dead letters; %d rounds; %d batches; %d lines (%d expired, %d failed)",
		n, results, dead, f.rounds, stats.Batches, stats.BatchRequests, stats.BatchExpired, stats.BatchFailed)
}

// TestBatchPoolSurvivesSIGKILL: worker processes serving a batch pool are
// killed while their batches run; the last one takes the batches over and
// finishes them. No document is lost, and no request is answered twice.
func TestBatchPoolSurvivesSIGKILL(t *testing.T) {
	n := 300
	ctx := context.Background()
	st, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	_, js := jobstest.Connect(t, natsURL)
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	// Every line answers (no expired or failed ones), so each answered
	// line must be exactly one recorded attempt.
	prof := batchProfile(1500 * time.Millisecond)
	prof.Errors, prof.Batch.Expire, prof.Batch.Fail = sim.ErrorRates{}, 0, 0
	srv := sim.New(prof, sim.WithSeed(10))
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	sc := submitDocs(t, submit.New(js, st), n, "openai:sim-fleet")

	bin := buildWorker(t)
	env := append(os.Environ(),
		"EXTRACTQ_NATS_URL="+natsURL, "EXTRACTQ_DATABASE_URL="+dbURL,
		"OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=sk-kill-test-not-a-key",
		"EXTRACTQ_LOG_FORMAT=json", "EXTRACTQ_LOG_LEVEL=info",
		"EXTRACTQ_BATCH_POLL=200ms", "EXTRACTQ_BATCH_LEASE=1s")
	const batchPool = "openai:sim-fleet=batch,max_requests:60,max_wait:300ms"
	rng := rand.New(rand.NewPCG(3, 4))
	var workers []*workerProc
	killedRunning := 0 // kills that left batches running
	for i := range 4 {
		w := startWorkerPool(t, bin, env, i, "", batchPool)
		workers = append(workers, w)
		// Kill it once it has batches running (some rounds in).
		if !waitFor(30*time.Second, func() bool { return openBatches(t, st) > 0 || settledDocs(t, st) >= n }) {
			w.tail(t)
			t.Fatalf("worker %d submitted no batch within 30s", i)
		}
		if openBatches(t, st) > 0 {
			time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		}
		if openBatches(t, st) > 0 {
			killedRunning++
		}
		if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = w.cmd.Wait()
	}
	if killedRunning == 0 {
		t.Fatal("no worker was killed with batches running: the test proves nothing about taking over")
	}
	addr := freeAddr(t)
	final := startWorkerPool(t, bin, env, 99, addr, batchPool)
	defer func() {
		if t.Failed() {
			final.tail(t)
		}
	}()
	waitReady(t, "http://"+addr+"/readyz", time.Minute)
	waitSettled(t, st, n, 5*time.Minute)
	if err := final.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := final.cmd.Wait(); err != nil {
		t.Errorf("worker after SIGTERM: %v, want exit 0", err)
	}

	results, dead := checkOutcomes(t, st, jobs.NewDLQ(js), sc, n)
	f := readBatchFacts(t, st)
	stats := srv.Stats()
	if got := f.attempts + f.retries; got != stats.BatchRequests {
		t.Errorf("provider answered %d lines; the audit records %d attempts + %d transport retries: a request was answered twice or an answer was lost",
			stats.BatchRequests, f.attempts, f.retries)
	}
	takeovers := 0
	for _, w := range append(workers, final) {
		log, _ := os.ReadFile(w.log)
		takeovers += strings.Count(string(log), "took over a batch")
	}
	if takeovers == 0 {
		t.Errorf("no worker took a batch over from a killed one")
	}
	if f.open != 0 {
		t.Errorf("%d batches left open", f.open)
	}
	t.Logf("%d documents, 4 SIGKILLs (%d with batches running), %d takeovers: %d results, %d dead letters; %d batches, %d lines; %d rounds",
		n, killedRunning, takeovers, results, dead, stats.Batches, stats.BatchRequests, f.rounds)
}

// settledDocs counts the documents with a final job row.
func settledDocs(t *testing.T, st *audit.Store) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(),
		"SELECT count(DISTINCT document_id) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func openBatches(t *testing.T, st *audit.Store) int {
	t.Helper()
	open, err := st.OpenBatches(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(open)
}

// waitFor reports whether cond came true within limit.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
