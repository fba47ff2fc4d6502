package audit

import (
	"context"
	"testing"

	"github.com/extractq/extractq/llm"
)

// A run is announced once per generation: not before its counted jobs are
// final, not when a submission counted more jobs since it was read, and
// again after another submission sealed it.
func TestClaimRunDone(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	state := func() RunDone {
		t.Helper()
		d, ok, err := s.RunDoneState(ctx, "run1")
		if err != nil || !ok {
			t.Fatalf("run1: %v, %v", ok, err)
		}
		return d
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AddRunJobs(ctx, "run1", 2))
	must(w.Write(ctx, testRecord("a", "da", 1, 1, llm.OutcomeOK)))
	if d := state(); d.Done() {
		t.Fatalf("%+v: done before it was sealed", d)
	}
	gen, err := s.SealRun(ctx, "run1")
	must(err)
	if d := state(); gen != 1 || d.Done() || d.Final != 1 || d.OK != 1 {
		t.Fatalf("generation %d, %+v: want 1, one job of two final, not done", gen, d)
	}
	must(w.Write(ctx, testRecord("b", "db", 1, 1, llm.OutcomeExhausted)))
	d := state()
	if !d.Done() || d.Final != 2 || d.OK != 1 {
		t.Fatalf("%+v: want done, 2 final, 1 ok", d)
	}
	// A submission counts another job between the read and the claim.
	must(s.AddRunJobs(ctx, "run1", 1))
	if claimed, err := s.ClaimRunDone(ctx, d, []byte(`{}`), "w"); err != nil || claimed {
		t.Fatalf("claim after more jobs were counted: %v, %v; want refused", claimed, err)
	}
	must(w.Write(ctx, testRecord("c", "dc", 1, 1, llm.OutcomeOK)))
	d = state()
	for i, want := range []bool{true, false} {
		if claimed, err := s.ClaimRunDone(ctx, d, []byte(`{}`), "w"); err != nil || claimed != want {
			t.Fatalf("claim %d: %v, %v; want %v", i+1, claimed, err, want)
		}
	}
	if runs, err := s.OpenRuns(ctx); err != nil || len(runs) != 1 || runs[0].Announced != 1 || runs[0].Published != 0 {
		t.Fatalf("open runs %+v (%v): want run1 announced, not published", runs, err)
	}
	must(s.MarkRunPublished(ctx, "run1", 1))
	if runs, err := s.OpenRuns(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("open runs %+v (%v): want none", runs, err)
	}
	// Reopened by another submission: generation 2.
	must(s.AddRunJobs(ctx, "run1", 1))
	gen, err = s.SealRun(ctx, "run1")
	must(err)
	if d := state(); gen != 2 || d.Done() {
		t.Fatalf("generation %d, %+v: want 2, not done", gen, d)
	}
	must(w.Write(ctx, testRecord("d", "dd", 1, 1, llm.OutcomeOK)))
	if d := state(); !d.Done() || d.Sealed != 2 || d.Final != 4 {
		t.Fatalf("%+v: want generation 2 done with 4 final jobs", d)
	}
}

// BenchmarkAddRunJobs is what counting a batch's jobs adds to a submit:
// one statement per batch of 500 documents.
// A run no submission counted (queued before migration 014, or by a
// library caller) starts its count from the jobs the audit holds of it, so
// that a resubmission into it awaits those too; a counted run keeps its
// count.
func TestStartRunCount(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	for _, j := range []string{"a", "b"} {
		if err := w.Write(ctx, testRecord(j, "d"+j, 1, 1, llm.OutcomeOK)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name string
		do   func() error
		run  string
		jobs int64
	}{
		{"uncounted run", func() error { return s.StartRunCount(ctx, "run1") }, "run1", 2},
		{"a resubmitted job", func() error { return s.AddRunJobs(ctx, "run1", 1) }, "run1", 3},
		{"counted run kept", func() error { return s.StartRunCount(ctx, "run1") }, "run1", 3},
		{"run without jobs", func() error { return s.StartRunCount(ctx, "new") }, "new", 0},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		d, ok, err := s.RunDoneState(ctx, step.run)
		if err != nil || !ok || d.Jobs != step.jobs || d.Sealed != 0 {
			t.Fatalf("%s: %+v, %v, %v; want %d jobs counted, not sealed", step.name, d, ok, err, step.jobs)
		}
	}
}

func BenchmarkAddRunJobs(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	for b.Loop() {
		if err := s.AddRunJobs(ctx, "run1", 500); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenRuns is one sweep's read: a year of nightly runs already
// announced (and 10,000 runs in all) beside 10 open ones; the partial
// index keeps it to the open ones.
func BenchmarkOpenRuns(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	if _, err := s.pool.Exec(ctx, `INSERT INTO run_done (run, jobs, sealed, announced, published)
		SELECT 'run-' || i, 1000, 1, CASE WHEN i <= 10 THEN 0 ELSE 1 END, CASE WHEN i <= 10 THEN 0 ELSE 1 END
		FROM generate_series(1, 10000) i;
		INSERT INTO run_totals (run, status, schema_name, schema_version, provider, model, shard, jobs, attempts,
		                        prompt_tokens, completion_tokens, first_started, last_finished)
		SELECT 'run-' || i, st, 'invoice', 1, 'p', 'm', sh, 30, 30, 0, 0, now(), now()
		FROM generate_series(1, 10000) i, unnest(ARRAY['ok', 'retrying', 'exhausted']) st, generate_series(0, 15) sh;
		ANALYZE run_done; ANALYZE run_totals`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		runs, err := s.OpenRuns(ctx)
		if err != nil || len(runs) != 10 {
			b.Fatalf("%d open runs, %v", len(runs), err)
		}
	}
}
