package fleet

import (
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// summary is a submitter's summary after it queued the jobs named by ids
// (RunJobs) and found seen in the run.
func summary(queued, seen []string) submit.Summary {
	return submit.Summary{Queued: len(queued), RunJobs: queued, RunSeen: seen}
}

func ids(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// A submission that stops half-way has counted what it queued, and does not
// seal; the same submission run again counts what it queues anew and what
// it finds of the run (counted already: not again) and seals: the run
// awaits the jobs of both, each once.
func TestRunCountCountsAnInterruptedSubmission(t *testing.T) {
	t.Parallel()
	st, _ := audittest.Store(t)
	ctx := t.Context()
	first := startRunCount(ctx, st, "nightly")
	all := ids("j", 0, 1200)
	for _, q := range []int{500, 1000, 1200} { // the summaries after each batch
		first.progress(summary(all[:q], nil))
	}
	if err := first.stop(ctx); err != nil {
		t.Fatal(err)
	}
	d, ok, err := st.RunDoneState(ctx, "nightly")
	if err != nil || !ok || d.Jobs != 1200 || d.Sealed != 0 {
		t.Fatalf("after the interrupted submission: %+v, %v, %v; want 1200 jobs counted, not sealed", d, ok, err)
	}
	again := startRunCount(ctx, st, "nightly")
	more := ids("k", 0, 800)
	again.progress(summary(more[:300], all[:500]))
	again.progress(summary(more, all))
	if err := again.stop(ctx); err != nil {
		t.Fatal(err)
	}
	c := &Client{store: st}
	gen, err := c.SealRun(ctx, "nightly")
	if err != nil || gen != 1 {
		t.Fatalf("seal: %d, %v", gen, err)
	}
	if d, _, err := st.RunDoneState(ctx, "nightly"); err != nil || d.Jobs != 2000 || d.Sealed != 1 || d.Done() {
		t.Fatalf("after the rerun: %+v, %v; want 2000 jobs counted, sealed, not done", d, err)
	}
}

// A submit killed after the server acked a batch and before that batch was
// counted (here: queued by the submitter, which does not count) leaves its
// jobs uncounted; some are final by the time it is rerun, the others still
// queued. The rerun counts them (the jobs of its run it finds), so the run
// is sealed with every job it holds, and is not done until all are final.
// Another rerun once all are final counts nothing twice.
func TestRunCountAfterAKilledSubmit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := jobstest.Server(t)
	_, js := jobstest.Connect(t, url)
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	st, dbURL := audittest.Store(t)
	c, err := Dial(ctx, url, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Schema: sc, SchemaName: "totals", Provider: "sim:clean", Run: "nightly"}
	docs := func(from, to int) iter.Seq[Document] {
		return func(yield func(Document) bool) {
			for i := from; i < to; i++ {
				if !yield(Document{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("total: %d", i)}) {
					return
				}
			}
		}
	}

	// The killed submit: it started the run's count, as Submit does, then
	// queued documents 0–5 (acked) and counted none.
	if err := st.StartRunCount(ctx, job.Run); err != nil {
		t.Fatal(err)
	}
	model, pool, err := job.Target()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := c.register(ctx, job.SchemaName, job.Schema)
	if err != nil {
		t.Fatal(err)
	}
	killed, err := c.sub.Submit(ctx, submit.Job{Schema: ref, Provider: job.Provider, Model: model, Pool: pool, Run: job.Run},
		func(fn func(submit.Doc) error) error {
			for d := range docs(0, 6) {
				if err := fn(submit.Doc(d)); err != nil {
					return err
				}
			}
			return nil
		}, nil)
	if err != nil || killed.Queued != 6 {
		t.Fatalf("the killed submit: %+v, %v; want 6 queued", killed, err)
	}
	w, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	finish := func(jobIDs ...string) {
		t.Helper()
		for _, id := range jobIDs {
			now := time.Now()
			if err := w.Write(ctx, &audit.Record{JobID: id, DocumentID: "doc-of-" + id, Run: job.Run, SchemaName: "totals", SchemaVersion: ref.Version,
				SchemaFingerprint: ref.Fingerprint, Provider: job.Provider, Model: model, Pool: pool, Delivery: 1, WorkerID: "w1",
				StartedAt: now, FinishedAt: now, Outcome: llm.OutcomeExhausted, Final: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	state := func() audit.RunDone {
		t.Helper()
		d, ok, err := st.RunDoneState(ctx, job.Run)
		if err != nil || !ok {
			t.Fatalf("run %s: %+v, %v, %v", job.Run, d, ok, err)
		}
		return d
	}
	finish(killed.JobIDs[:2]...) // a worker finished two before the rerun

	// The rerun: all ten documents.
	sub, err := c.Submit(ctx, job, docs(0, 10))
	if err != nil || sub.Queued != 4 || sub.Duplicates != 4 || sub.AlreadyDone != 2 || sub.Generation != 1 {
		t.Fatalf("the rerun: %+v, %v; want 4 queued, 4 duplicates, 2 already done, generation 1", sub, err)
	}
	if d := state(); d.Jobs != 10 {
		t.Fatalf("after the rerun: %+v; want the run's 10 jobs counted", d)
	}
	var all []string
	all = append(all, killed.JobIDs...)
	for _, id := range sub.JobIDs {
		if !contains(all, id) {
			all = append(all, id)
		}
	}
	if len(all) != 10 {
		t.Fatalf("%d jobs, want 10: %v", len(all), all)
	}
	finish(all[2:9]...)
	if d := state(); d.Done() || d.Final != 9 {
		t.Fatalf("9 of 10 final: %+v; want not done", d)
	}
	finish(all[9])
	if d := state(); !d.Done() || d.Final != 10 {
		t.Fatalf("all final: %+v; want done", d)
	}
	// Rerun once more, everything final: nothing counted twice.
	sub, err = c.Submit(ctx, job, docs(0, 10))
	if err != nil || sub.AlreadyDone != 10 || sub.Generation != 2 {
		t.Fatalf("rerun after done: %+v, %v; want 10 already done, generation 2", sub, err)
	}
	if d := state(); d.Jobs != 10 || !d.Done() {
		t.Fatalf("after the rerun once done: %+v; want 10 jobs, done", d)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
