package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// hostileGood is the number of good documents in each hostile scenario.
const hostileGood = 300

// goodDocs are hostileGood generated documents with others inserted in the
// middle of the batch.
func goodDocs(middle ...submit.Doc) []submit.Doc {
	var docs []submit.Doc
	for i := range hostileGood {
		docs = append(docs, submit.Doc{ID: fmt.Sprintf("doc-%06d", i), Source: "generated", Text: fleettest.Document(i)})
		if i == hostileGood/2 {
			docs = append(docs, middle...)
		}
	}
	return docs
}

// fleetOutcome is what a scenario ended with, as the README reports it.
type fleetOutcome struct {
	submits                                   []submit.Summary
	results, docsWithResult, dead, both, dels int
	st                                        *audit.Store
}

// runSubmits submits each round in turn to a running worker on the clean
// simulator, waits until every queued job is final, and counts.
func runSubmits(t *testing.T, rounds ...[]submit.Doc) *fleetOutcome {
	t.Helper()
	ctx := context.Background()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv := sim.New(fleettest.CleanProfile(), sim.WithSeed(17))
	defer srv.Close()
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	sub := submit.New(js, st)
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	model, pool, err := submit.ResolveProvider("openai:sim-fleet")
	if err != nil {
		t.Fatal(err)
	}
	job := submit.Job{Schema: ref, Provider: "openai:sim-fleet", Model: model, Pool: pool, Run: "hostile"}
	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const conc = 16
	w, err := worker.New(js, writer, fastEngine(),
		worker.WithID("hostile-worker"),
		worker.WithPools(worker.Pool{Name: pool, Concurrency: conc, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: conc}, ratelimit.WithLogger(quietLogger()))}),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 1000}),
		worker.WithProviders(fleettest.Provider(srv)), worker.WithLogger(quietLogger()), worker.WithPullWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	out := &fleetOutcome{st: st}
	queued := 0
	for _, docs := range rounds {
		sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
			for _, d := range docs {
				if err := fn(d); err != nil {
					return err
				}
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out.submits = append(out.submits, sum)
		queued += sum.Queued
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			var final int
			if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&final); err != nil {
				t.Fatal(err)
			}
			if final >= queued {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d jobs final after 2 minutes", final, queued)
			}
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM results), (SELECT count(DISTINCT document_id) FROM results),
		(SELECT count(*) FROM dead_letters),
		(SELECT count(DISTINCT r.document_id) FROM results r JOIN dead_letters d USING (document_id)),
		(SELECT coalesce(sum(deliveries), 0) FROM jobs)`).Scan(&out.results, &out.docsWithResult, &out.dead, &out.both, &out.dels); err != nil {
		t.Fatal(err)
	}
	submitted, rejected := 0, 0
	for i, s := range out.submits {
		submitted += len(rounds[i])
		rejected += len(s.Rejected)
	}
	t.Logf("submitted %d, rejected %d; results %d (documents with a result %d), dead letters %d, result and letter %d, deliveries %d",
		submitted, rejected, out.results, out.docsWithResult, out.dead, out.both, out.dels)
	return out
}

// TestHostileInputs is the chaos harness's "one bad input must never
// reject good ones" runs, end to end (submit → JetStream → worker on the
// simulator → audit). Each scenario puts its case in the middle of one
// batch of good documents. The figures it logs are the README's
// (reliability section): go test -run TestHostileInputs -v ./internal/e2e/
func TestHostileInputs(t *testing.T) {
	t.Run("bad ids and texts in a batch", func(t *testing.T) {
		// Rejected alone, with their reason: a 10 KB id, NUL and an escape
		// sequence in ids, a NUL byte in a text.
		hostile := []submit.Doc{
			{ID: strings.Repeat("x", 10<<10), Source: "hostile", Text: fleettest.Document(1)},
			{ID: "nul\x00id", Source: "hostile", Text: fleettest.Document(2)},
			{ID: "esc\x1b[2Jid", Source: "hostile", Text: fleettest.Document(3)},
			{ID: "nul-text", Source: "hostile", Text: "INVOICE\x00 INV-1"},
		}
		out := runSubmits(t, goodDocs(hostile...))
		sum := out.submits[0]
		if sum.Queued != hostileGood || len(sum.Rejected) != len(hostile) {
			t.Errorf("queued %d and rejected %d: want all %d good documents queued and only the %d hostile rejected",
				sum.Queued, len(sum.Rejected), hostileGood, len(hostile))
		}
		for _, r := range sum.Rejected {
			if r.Source != "hostile" {
				t.Errorf("%.40q (%s) rejected: %s", r.ID, r.Source, r.Reason)
			}
		}
		if out.docsWithResult != hostileGood || out.dead != 0 {
			t.Errorf("%d documents with a result, %d dead letters: want %d and 0", out.docsWithResult, out.dead, hostileGood)
		}
	})
	t.Run("same text under two ids", func(t *testing.T) {
		twin := fleettest.Document(hostileGood + 1)
		twins := []submit.Doc{{ID: "twin-a", Source: "twin", Text: twin}, {ID: "twin-b", Source: "twin", Text: twin}}
		out := runSubmits(t, goodDocs(twins...), twins)
		if first := out.submits[0]; first.Queued != hostileGood+2 || len(first.Rejected) != 0 {
			t.Errorf("first submit: queued %d, duplicates %d, rejected %d: want both twins queued with the good documents",
				first.Queued, first.Duplicates, len(first.Rejected))
		}
		if again := out.submits[1]; again.AlreadyDone != 2 || again.Queued != 0 {
			t.Errorf("second submit: queued %d, duplicates %d, already done %d: want both twins already done",
				again.Queued, again.Duplicates, again.AlreadyDone)
		}
		for _, id := range []string{"twin-a", "twin-b"} {
			if h, err := out.st.History(context.Background(), id); err != nil || len(h.Results) != 1 {
				t.Errorf("%s: %v: want one result (identical texts under two ids are extracted once per id)", id, err)
			}
		}
		if out.docsWithResult != hostileGood+2 {
			t.Errorf("%d documents with a result, want %d", out.docsWithResult, hostileGood+2)
		}
	})
	t.Run("text changed under the same id", func(t *testing.T) {
		v1, v2 := fleettest.Document(hostileGood+2), fleettest.Document(hostileGood+3)
		out := runSubmits(t, goodDocs(submit.Doc{ID: "changed", Source: "v1", Text: v1}),
			[]submit.Doc{{ID: "changed", Source: "v2", Text: v2}})
		if again := out.submits[1]; again.Queued != 1 {
			t.Errorf("second submit: queued %d, duplicates %d, already done %d: want the changed text queued",
				again.Queued, again.Duplicates, again.AlreadyDone)
		}
		if out.results != hostileGood+2 || out.docsWithResult != hostileGood+1 {
			t.Errorf("%d results for %d documents: want one per text of the changed document", out.results, out.docsWithResult)
		}
		var hash string
		err := out.st.Pool().QueryRow(context.Background(), "SELECT content_hash FROM latest_valid_results WHERE document_id = 'changed'").Scan(&hash)
		if err != nil || hash != jobs.HashText(v2) {
			t.Errorf("latest result of the changed document is of text %.12s, %v: want the current text's", hash, err)
		}
	})
}
