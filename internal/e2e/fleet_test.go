// Package e2e proves the fleet end to end: submit → JetStream → workers →
// Postgres audit and dead-letter stream, against an embedded NATS server,
// the local Postgres (a database per test) and the in-process LLM
// simulator with a faulty profile.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// docCount is the number of documents: EXTRACTQ_E2E_DOCS, else 10,000, or
// 500 with -short.
func docCount(t *testing.T) int {
	if v := os.Getenv("EXTRACTQ_E2E_DOCS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("EXTRACTQ_E2E_DOCS=%q: want a positive number", v)
		}
		return n
	}
	if testing.Short() {
		return 500
	}
	return 10000
}

// submitDocs registers the invoice schema and queues n documents.
func submitDocs(t *testing.T, sub *submit.Submitter, n int, provider string) *schema.Schema {
	t.Helper()
	ctx := context.Background()
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	model, pool, err := submit.ResolveProvider(provider)
	if err != nil {
		t.Fatal(err)
	}
	job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: "e2e", Options: jobs.Options{MaxReasks: new(2)}}
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for i := range n {
			if err := fn(submit.Doc{ID: fmt.Sprintf("doc-%06d", i), Source: "generated", Text: fleettest.Document(i)}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queued != n || len(sum.Rejected) != 0 {
		t.Fatalf("submit: %+v, want %d queued", sum, n)
	}
	return sc
}

// waitSettled waits until every document has a final job row.
func waitSettled(t *testing.T, st *audit.Store, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var final int
	for time.Now().Before(deadline) {
		if final = settledDocs(t, st); final >= n {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("after %s only %d of %d documents were settled", limit, final, n)
}

// checkOutcomes asserts that every document ended as exactly one result or
// exactly one dead letter (in the audit and on the DLQ, with diagnostics
// that explain it), and that every result is valid. It returns the counts.
func checkOutcomes(t *testing.T, st *audit.Store, dlq *jobs.DLQ, sc *schema.Schema, n int) (results, dead int) {
	t.Helper()
	ctx := context.Background()
	outcome := map[string]string{}
	rows, err := st.Pool().Query(ctx, "SELECT document_id, value::text FROM results")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var doc, value string
		if err := rows.Scan(&doc, &value); err != nil {
			t.Fatal(err)
		}
		if outcome[doc] != "" {
			t.Errorf("%s: a second result", doc)
		}
		outcome[doc] = "result"
		if vs, err := sc.ValidateJSON([]byte(value)); err != nil || len(vs) > 0 {
			t.Errorf("%s: stored result is not valid: %v %v", doc, err, vs)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	results = len(outcome)
	auditDead := map[uint64]string{}
	rows, err = st.Pool().Query(ctx, "SELECT document_id, seq FROM dead_letters")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var doc string
		var seq uint64
		if err := rows.Scan(&doc, &seq); err != nil {
			t.Fatal(err)
		}
		if outcome[doc] != "" {
			t.Errorf("%s: dead-lettered but also has a %s", doc, outcome[doc])
		}
		outcome[doc] = "dead"
		auditDead[seq] = doc
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	dead = len(auditDead)
	letters := 0
	if err := dlq.List(ctx, jobs.ListFilter{}, func(l *jobs.Letter) error {
		letters++
		if auditDead[l.Seq] != l.Job.DocumentID {
			t.Errorf("dead letter %d (%s) is not the one the audit records (%q)", l.Seq, l.Job.DocumentID, auditDead[l.Seq])
		}
		if !explains(l) {
			t.Errorf("dead letter %d of %s does not explain itself: outcome %q reason %q, %d attempts", l.Seq, l.Job.DocumentID, l.Outcome, l.Reason, len(l.Attempts))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if letters != dead {
		t.Errorf("DLQ holds %d letters, the audit %d", letters, dead)
	}
	for i := range n {
		if id := fmt.Sprintf("doc-%06d", i); outcome[id] == "" {
			t.Errorf("%s: lost (no result, no dead letter)", id)
		}
	}
	if len(outcome) != n {
		t.Errorf("%d documents have an outcome, want %d", len(outcome), n)
	}
	return results, dead
}

// explains reports whether a dead letter carries a reason and the attempts
// behind it: each failed attempt names its class or error, and a letter
// made by a worker has the raw answers of the attempts that got one.
func explains(l *jobs.Letter) bool {
	if l.Reason == "" || l.Outcome == "" || l.Outcome == llm.OutcomeOK || l.WorkerID == "" || l.Job.DocumentID == "" {
		return false
	}
	if l.Source != "worker" {
		return true
	}
	if len(l.Attempts) == 0 {
		return false
	}
	for _, a := range l.Attempts {
		if a.Class == "" && a.Error == "" {
			return false
		}
		if a.Error == "" && a.Raw == "" && a.Class != "budget" {
			return false
		}
	}
	return true
}

// auditCalls is the number of HTTP calls the audit records: every attempt
// that was sent, with its transport retries.
func auditCalls(t *testing.T, st *audit.Store) int64 {
	var n int64
	if err := st.Pool().QueryRow(context.Background(),
		"SELECT coalesce(sum(1 + transport_retries), 0) FROM attempts WHERE error_class <> 'budget'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fastEngine is the real engine with transport backoff in milliseconds, so
// the zero-latency simulator's 5xx cost no wall time.
func fastEngine() worker.Engine {
	t := extractq.DefaultTransport()
	t.Base, t.Cap = time.Millisecond, 5*time.Millisecond
	return worker.NewEngine(extractq.WithTransport(t))
}

func TestFleetEndToEnd(t *testing.T) {
	n := docCount(t)
	ctx := context.Background()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv := sim.New(fleettest.FaultyProfile(), sim.WithSeed(5))
	defer srv.Close()

	sc := submitDocs(t, submit.New(js, st), n, "openai:sim-fleet")
	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool := jobs.PoolFor("openai:sim-fleet")
	const conc = 32
	w, err := worker.New(js, writer, fastEngine(),
		worker.WithID("e2e-worker"),
		worker.WithPools(worker.Pool{Name: pool, Concurrency: conc, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: conc}, ratelimit.WithLogger(quietLogger()))}),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 1000}),
		worker.WithProviders(fleettest.Provider(srv)), worker.WithLogger(quietLogger()), worker.WithPullWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(rctx) }()
	waitSettled(t, st, n, 10*time.Minute)
	elapsed := time.Since(start)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}

	results, dead := checkOutcomes(t, st, jobs.NewDLQ(js), sc, n)
	calls, err := fleettest.Requests(srv)
	if err != nil {
		t.Fatal(err)
	}
	if audited := auditCalls(t, st); audited != calls {
		t.Errorf("simulator /stats counts %d calls, the audit %d", calls, audited)
	}
	if dead == 0 || results == 0 {
		t.Errorf("the faulty profile should produce both results and dead letters: %d results, %d dead", results, dead)
	}
	jobsLeft := streamMsgs(t, js, jobs.JobsStream)
	if jobsLeft != 0 {
		t.Errorf("%d jobs left on %s", jobsLeft, jobs.JobsStream)
	}
	c := w.Counts()
	t.Logf("%d documents in %s (%.0f docs/s): %d results, %d dead letters, %d simulator calls, worker counts %+v",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), results, dead, calls, c)
	stats := map[string]int64{}
	rows, _ := st.Pool().Query(ctx, "SELECT status, count(*) FROM jobs GROUP BY status")
	for rows.Next() {
		var s string
		var k int64
		_ = rows.Scan(&s, &k)
		stats[s] = k
	}
	b, _ := json.Marshal(stats)
	t.Logf("jobs by status: %s", b)
}
