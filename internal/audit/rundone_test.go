package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/cpustat"
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
	must(countJobs(s, "run1", "a", "b"))
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
	must(countJobs(s, "run1", "c"))
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
	must(countJobs(s, "run1", "d"))
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

// CountRunJobs counts each job of a run once, whoever counts it: the
// submission the server acked it to, a rerun that finds it queued or final
// (its first submission killed before counting it, or not), or two
// submissions at once.
func TestCountRunJobsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	for _, step := range []struct {
		name         string
		run          string
		queued, seen []string
		added, jobs  int
	}{
		{"a batch acked", "r", []string{"a", "b"}, nil, 2, 2},
		{"a rerun finds them and one uncounted", "r", nil, []string{"a", "b", "c"}, 1, 3},
		{"the killed submission's count, late", "r", []string{"c"}, nil, 0, 3},
		{"queued and found in one batch", "r", []string{"d", "e"}, []string{"d", "a"}, 2, 5},
		{"the same jobs in another run", "other", []string{"a"}, []string{"b"}, 2, 2},
		{"nothing", "r", nil, nil, 0, 5},
		// A job the server acked as new twice (queued again past the
		// duplicate window) counts twice until the run's ids are kept one
		// by one, at its first found jobs: then once.
		{"acked as new", "twice", []string{"x"}, nil, 1, 1},
		{"acked as new again", "twice", []string{"x"}, nil, 1, 2},
		{"found", "twice", nil, []string{"x"}, 0, 1},
	} {
		added, err := s.CountRunJobs(ctx, step.run, step.queued, step.seen)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		d, _, err := s.RunDoneState(ctx, step.run)
		if err != nil || added != step.added || d.Jobs != int64(step.jobs) {
			t.Fatalf("%s: added %d, %+v, %v; want %d added, %d jobs", step.name, added, d, err, step.added, step.jobs)
		}
	}

	// Submissions counting overlapping jobs at once, in different orders.
	const n, counters = 200, 8
	var wg sync.WaitGroup
	errs := make(chan error, counters)
	for c := range counters {
		wg.Go(func() {
			var q, seen []string
			for i := range n {
				id := fmt.Sprintf("job-%03d", (i*(c+1))%n)
				if i%2 == 0 {
					q = append(q, id)
				} else {
					seen = append(seen, id)
				}
				if len(q)+len(seen) == 50 {
					if _, err := s.CountRunJobs(ctx, "concurrent", q, seen); err != nil {
						errs <- err
						return
					}
					q, seen = nil, nil
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if d, _, err := s.RunDoneState(ctx, "concurrent"); err != nil || d.Jobs != n {
		t.Fatalf("counted at once: %+v, %v; want %d jobs", d, err, n)
	}
}

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
		{"a resubmitted job", func() error { return countJobs(s, "run1", "c") }, "run1", 3},
		// Jobs found in the run count only in a run counted by job from its
		// start: run1's first two were counted without their ids.
		{"jobs found in an older run", func() error { _, err := s.CountRunJobs(ctx, "run1", nil, []string{"a", "b"}); return err }, "run1", 3},
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

// BenchmarkCountRunJobs is what counting a batch's jobs adds to a submit:
// one statement per batch of 500 documents, inserting their ids.
func BenchmarkCountRunJobs(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	pg0, err := cpustat.Backends(ctx, s.pool)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 500)
	n := 0
	for b.Loop() {
		for i := range ids {
			n++
			sum := sha256.Sum256(fmt.Appendf(nil, "%d", n)) // job ids are hashes: random keys
			ids[i] = hex.EncodeToString(sum[:16])
		}
		if _, err := s.CountRunJobs(ctx, "run1", ids, nil); err != nil {
			b.Fatal(err)
		}
	}
	pg, err := cpustat.Since(ctx, s.pool, pg0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(pg.Microseconds())/float64(b.N), "pg-µs/op")
}

// countJobs counts jobs ids, queued, into run.
func countJobs(s *Store, run string, ids ...string) error {
	_, err := s.CountRunJobs(context.Background(), run, ids, nil)
	return err
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

// Prune deletes the job ids counted into runs that are settled and
// untouched since the cutoff, keeps their counts, and leaves open and
// recent runs' ids; a later submission into a pruned run counts only the
// jobs acked as new.
func TestPruneRunCounts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	for _, c := range []struct {
		run          string
		queued, seen []string
	}{
		{"old", []string{"a", "b"}, nil},           // ids in one batch row
		{"old-rows", []string{"a"}, []string{"b"}}, // ids one row each
		{"open", []string{"a"}, nil},
		{"recent", []string{"a"}, nil},
	} {
		if _, err := s.CountRunJobs(ctx, c.run, c.queued, c.seen); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SealRun(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE run_done SET updated_at = '2020-06-01' WHERE run <> 'recent'"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prune(ctx, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || res.RunCountsPruned != 2 {
		t.Fatalf("prune: %+v, %v; want the ids of 2 runs pruned", res, err)
	}
	ids := func(run string) (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM run_jobs WHERE run = $1) +
			(SELECT coalesce(sum(cardinality(job_ids)), 0) FROM run_job_batches WHERE run = $1)`, run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for run, want := range map[string]int{"old": 0, "old-rows": 0, "open": 1, "recent": 1} {
		if got := ids(run); got != want {
			t.Errorf("run %s: %d job ids kept after prune, want %d", run, got, want)
		}
	}
	if d, _, err := s.RunDoneState(ctx, "old"); err != nil || d.Jobs != 2 {
		t.Errorf("run old after prune: %+v, %v; want its count of 2 kept", d, err)
	}
	// Found jobs no longer count into the pruned run: its ids are gone.
	if added, err := s.CountRunJobs(ctx, "old", []string{"z"}, []string{"a", "q"}); err != nil || added != 1 {
		t.Errorf("count into a pruned run: %d added, %v; want 1 (the job acked as new)", added, err)
	}
}
