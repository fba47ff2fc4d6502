package fleetview

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/ratelimit"
)

// TestPools builds each kind of pool on an embedded server and reads it
// back: one served by a worker (a job queued, one in progress, dead
// letters), one whose jobs wait with no consumer.
func TestPools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	publish := func(subject string, n int) time.Time {
		t.Helper()
		var first time.Time
		for i := range n {
			ack, err := js.Publish(ctx, subject, []byte(fmt.Sprintf(`{"n":%d}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				m, err := mustStream(t, js, ack.Stream).GetMsg(ctx, ack.Sequence)
				if err != nil {
					t.Fatal(err)
				}
				first = m.Time
			}
		}
		return first
	}
	// Served pool: 3 jobs, one taken and not acked.
	publish(jobs.JobSubject("openai_gpt-4o-mini"), 3)
	cons, err := jobs.EnsureConsumer(ctx, js, "openai_gpt-4o-mini", jobs.DefaultConsumerSettings())
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range batch.Messages() {
	}
	publish(jobs.DLQSubject("openai_gpt-4o-mini"), 2)
	// Unserved pool: jobs wait with no consumer.
	firstOrphan := publish(jobs.JobSubject("anthropic_claude-haiku-4-5"), 4)

	budget := ratelimit.NewPool("openai:gpt-4o-mini", ratelimit.Limits{Concurrency: 8, RPM: 600}, ratelimit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	m, err := ratelimit.StartMembership(ctx, js, "worker-a", []*ratelimit.Pool{budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)

	pools, err := Pools(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 2 {
		t.Fatalf("%d pools, want 2: %+v", len(pools), pools)
	}
	orphan, served := pools[0], pools[1]
	if orphan.Name != "anthropic_claude-haiku-4-5" || served.Name != "openai_gpt-4o-mini" {
		t.Fatalf("pools %q, %q: want them by name", orphan.Name, served.Name)
	}
	if served.Queued != 2 || served.InProgress != 1 || !served.Consumer || served.DeadLetters != 2 {
		t.Errorf("served pool: %+v, want 2 queued, 1 in progress, a consumer, 2 dead letters", served)
	}
	if len(served.Workers) != 1 || served.Workers[0].ID != "worker-a" || served.Workers[0].Share.RPM != 600 || served.Paused {
		t.Errorf("served pool's workers: %+v, want worker-a with the whole 600 rpm, not paused", served.Workers)
	}
	if served.OldestQueued.IsZero() {
		t.Error("served pool: no oldest queued job")
	}
	if orphan.Consumer || orphan.Queued != 4 || orphan.InProgress != 0 || len(orphan.Workers) != 0 {
		t.Errorf("unserved pool: %+v, want 4 queued, no consumer, no worker", orphan)
	}
	if !orphan.OldestQueued.Equal(firstOrphan) {
		t.Errorf("unserved pool's oldest job published at %s, want %s", orphan.OldestQueued, firstOrphan)
	}
	if age := orphan.OldestAge(time.Now()); age <= 0 || age > time.Minute {
		t.Errorf("oldest age %s", age)
	}
	if got := served.Workers[0].ShareText(); got != "concurrency 8, 600 rpm (1/1)" {
		t.Errorf("ShareText = %q", got)
	}
}

func mustStream(t *testing.T, js jetstream.JetStream, name string) jetstream.Stream {
	t.Helper()
	s, err := js.Stream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPoolsWithoutStreams(t *testing.T) {
	t.Parallel()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if _, err := Pools(t.Context(), js); err == nil || !strings.Contains(err.Error(), "worker migrate") {
		t.Errorf("Pools on an empty server: %v, want ErrNoStreams saying to migrate", err)
	}
}

// TestRunCounters checks the counters the trigger of migration 2 keeps
// against the jobs they count, through inserts, the writer's updates
// (retrying → final) and prune's deletes, and pages runs newest first.
func TestRunCounters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, _ := audittest.Store(t)
	db := st.Pool()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for r := range 5 {
		exec(`INSERT INTO jobs (job_id, document_id, run, schema_name, schema_version, provider, model, pool, status, attempts,
			prompt_tokens, completion_tokens, started_at, finished_at)
			SELECT 'j' || $1 || '-' || d, 'd' || d, 'run-' || $1, 'invoice', 1 + d % 2, 'openai:gpt-4o-mini', 'gpt-4o-mini', 'p',
			       CASE WHEN d % 5 = 0 THEN 'retrying' WHEN d % 7 = 0 THEN 'unextractable' WHEN d % 3 = 0 THEN 'exhausted' ELSE 'ok' END,
			       1 + d % 3, 100, 10, $2::timestamptz + make_interval(secs => d * 7), $2::timestamptz + make_interval(secs => d * 7 + 1)
			FROM generate_series(1, 40) d`, fmt.Sprint(r), base.Add(time.Duration(r)*time.Hour))
	}
	check := func(when string) {
		t.Helper()
		var all []Run
		var cur *RunCursor
		for range 10 {
			page, next, err := Runs(ctx, db, 2, cur)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if next == nil {
				break
			}
			cur = next
		}
		if len(all) != 5 {
			t.Fatalf("%s: paged through %d runs, want 5", when, len(all))
		}
		for i, r := range all {
			if want := fmt.Sprintf("run-%d", 4-i); r.Name != want {
				t.Errorf("%s: run %d is %s, want %s (newest first)", when, i, r.Name, want)
			}
			var jobs, ok, failed, unext, busy, attempts, pt int64
			if err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'ok'),
				count(*) FILTER (WHERE status NOT IN ('ok', 'unextractable', 'retrying')),
				count(*) FILTER (WHERE status = 'unextractable'), count(*) FILTER (WHERE status = 'retrying'),
				coalesce(sum(attempts), 0), coalesce(sum(prompt_tokens), 0) FROM jobs WHERE run = $1`, r.Name).
				Scan(&jobs, &ok, &failed, &unext, &busy, &attempts, &pt); err != nil {
				t.Fatal(err)
			}
			got := []int64{r.Jobs, r.OK, r.Failed, r.Unextractable, r.InProgress, r.Attempts, r.PromptTokens}
			want := []int64{jobs, ok, failed, unext, busy, attempts, pt}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: run %s counters %v, jobs table %v (jobs, ok, failed, unextractable, in progress, attempts, tokens)", when, r.Name, got, want)
			}
		}
		tp, err := Throughput(ctx, db, []string{"run-0"}, 3)
		if err != nil {
			t.Fatal(err)
		}
		var final int64
		for _, b := range tp["run-0"] {
			final += b.OK + b.Failed
		}
		if r0 := all[4]; final != r0.Final() || len(tp["run-0"]) > 3 {
			t.Errorf("%s: throughput counts %d final jobs in %d bars, run-0 has %d (want at most 3 bars)", when, final, len(tp["run-0"]), r0.Final())
		}
	}
	check("after insert")
	// The writer's merge: retrying jobs become final, with more attempts.
	exec(`UPDATE jobs SET status = 'ok', attempts = attempts + 1, prompt_tokens = prompt_tokens + 100,
		finished_at = finished_at + interval '2 minutes' WHERE status = 'retrying' AND run IN ('run-1', 'run-3')`)
	check("after updates")
	exec(`DELETE FROM jobs WHERE run = 'run-2' AND document_id < 'd2'`)
	check("after deletes")
	if _, ok, err := RunByName(ctx, db, "no-such-run"); ok || err != nil {
		t.Errorf("RunByName of an unknown run: ok %v, err %v", ok, err)
	}
}

// TestDocumentsQueryUsesTheIndex: every page of a run, forward, backward
// and by id prefix, is one range of jobs_run_doc_idx with no sort and no
// OFFSET.
func TestDocumentsQueryUsesTheIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, _ := audittest.Store(t)
	db := st.Pool()
	if _, err := db.Exec(ctx, `INSERT INTO jobs (job_id, document_id, run, status, started_at, finished_at)
		SELECT 'j' || d, 'doc-' || lpad(d::text, 6, '0'), 'r' || d % 3, 'ok', now(), now() FROM generate_series(1, 30000) d`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "ANALYZE jobs"); err != nil {
		t.Fatal(err)
	}
	cur := &DocCursor{DocumentID: "doc-015000", JobID: "j15000"}
	tests := []struct {
		name          string
		f             DocFilter
		after, before *DocCursor
	}{
		{"first page", DocFilter{Run: "r1"}, nil, nil},
		{"next page", DocFilter{Run: "r1"}, cur, nil},
		{"previous page", DocFilter{Run: "r1"}, nil, cur},
		{"id prefix", DocFilter{Run: "r1", IDPrefix: "doc-02"}, nil, nil},
		{"outcome", DocFilter{Run: "r1", Outcome: OutcomeOK}, cur, nil},
		{"outcome, previous page", DocFilter{Run: "r1", Outcome: OutcomeOK, IDPrefix: "doc-01"}, nil, cur},
		{"every job", DocFilter{Run: "r1", Outcome: OutcomeOK, EveryJob: true}, cur, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sql, args := documentsQuery(tc.f, tc.after, tc.before, 50)
			rows, err := db.Query(ctx, "EXPLAIN "+sql, args...)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				_ = rows.Scan(&line)
				plan = append(plan, line)
			}
			p := strings.Join(plan, "\n")
			if !strings.Contains(p, "jobs_run_doc_idx") || strings.Contains(p, "Sort") || strings.Contains(strings.ToUpper(sql), "OFFSET") {
				t.Errorf("plan does not walk jobs_run_doc_idx in order:\n%s", p)
			}
		})
	}
	page, err := Documents(ctx, db, DocFilter{Run: "r1", IDPrefix: "doc-0299"}, nil, nil, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Rows {
		if !strings.HasPrefix(r.DocumentID, "doc-0299") {
			t.Errorf("prefix doc-0299 listed %s", r.DocumentID)
		}
	}
	if len(page.Rows) != 33 { // doc-029900 … doc-029999 in run r1 (d % 3 = 1)
		t.Errorf("prefix doc-0299 listed %d documents, want 33", len(page.Rows))
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"doc-", "doc.", true},
		{"a", "b", true},
		{"é", "ê", true},
		{"x\U0010FFFF", "y", true},
		{"\U0010FFFF", "", false},
		{"a\uD7FF", "a\uE000", true},
	}
	for _, tc := range tests {
		got, ok := prefixEnd(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRunCountsDocumentsByLatestOutcome: a run's failed document that was
// resubmitted hours later and extracted counts once, as ok; one resubmitted
// and failing again counts once, as failed; an unextractable one
// resubmitted and still running counts as in progress; a document run on a
// second model at the same time is a document of its own, not a
// resubmission; the rate spans the run's own jobs, not the resubmissions'
// hours (finished or still running).
func TestRunCountsDocumentsByLatestOutcome(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, _ := audittest.Store(t)
	db := st.Pool()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	insert := func(job, doc, model, status string, start time.Time) {
		t.Helper()
		if _, err := db.Exec(ctx, `INSERT INTO jobs (job_id, document_id, run, schema_name, schema_version, provider, model, pool,
			status, attempts, prompt_tokens, completion_tokens, started_at, finished_at)
			VALUES ($1, $2, 'nightly', 'invoice', 1, 'openai:' || $3, $3, 'p', $4, 1, 100, 10, $5, $5::timestamptz + interval '1 second')`,
			job, doc, model, status, start); err != nil {
			t.Fatal(err)
		}
	}
	for d := range 10 {
		status := "ok"
		switch d {
		case 0, 1:
			status = "exhausted"
		case 2:
			status = "unextractable"
		}
		insert(fmt.Sprintf("j%d", d), fmt.Sprintf("d%d", d), "gpt-4o-mini", status, base.Add(time.Duration(d)*time.Second))
	}
	insert("j5-other", "d5", "gpt-4o", "ok", base.Add(5*time.Second)) // same document, second model, same time
	later := base.Add(3 * time.Hour)
	insert("j0-again", "d0", "gpt-4o-mini", "ok", later)
	insert("j1-again", "d1", "gpt-4o-mini", "exhausted", later.Add(time.Second))
	insert("j2-again", "d2", "gpt-4o-mini", "retrying", later.Add(2*time.Second)) // still in progress, the run's last activity

	for _, read := range []struct {
		name string
		run  func() (Run, error)
	}{
		{"Runs", func() (Run, error) {
			runs, _, err := Runs(ctx, db, 5, nil)
			if err != nil || len(runs) != 1 {
				return Run{}, fmt.Errorf("%d runs, err %v; want one", len(runs), err)
			}
			return runs[0], nil
		}},
		{"RunByName", func() (Run, error) {
			r, ok, err := RunByName(ctx, db, "nightly")
			if err == nil && !ok {
				err = fmt.Errorf("run nightly not found")
			}
			return r, err
		}},
	} {
		r, err := read.run()
		if err != nil {
			t.Fatalf("%s: %v", read.name, err)
		}
		got := []int64{r.Jobs, r.Documents, r.OK, r.Failed, r.Unextractable, r.InProgress, r.Resubmitted, r.ResubmittedOK, r.ResubmittedJobs, r.ByStatus["exhausted"]}
		want := []int64{14, 11, 9, 1, 0, 1, 3, 1, 3, 1}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v (jobs, documents, ok, failed, unextractable, in progress, resubmitted, now ok, resubmitted jobs, exhausted)", read.name, got, want)
		}
		// 11 own jobs ended within the run's first 10 s; the minute
		// counters bound their end to that minute.
		if rate := r.Rate(); rate < 11.0/60 || rate > 11.0/10 {
			t.Errorf("%s: rate %.4f/s, want 11 jobs over 10 to 60 s (not over the resubmission's 3 h: %.4f/s)", read.name, rate, 11.0/r.LastFinished.Sub(r.FirstStarted).Seconds())
		}
	}

	// The run page's list agrees with the counts: each document's latest
	// job, its outcome filter by that job; every job on request. Pages of
	// two rows, forward to the end and back to the start.
	list := func(f DocFilter) (ids []string) {
		t.Helper()
		var after *DocCursor
		for {
			page, err := Documents(ctx, db, f, after, nil, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Rows {
				ids = append(ids, r.JobID+map[bool]string{true: "+"}[r.Resubmitted])
			}
			if page.Next == nil {
				break
			}
			after = page.Next
		}
		var back []string
		before := &DocCursor{DocumentID: "\U0010FFFF"}
		for before != nil {
			page, err := Documents(ctx, db, f, nil, before, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(page.Rows) - 1; i >= 0; i-- {
				back = append([]string{page.Rows[i].JobID + map[bool]string{true: "+"}[page.Rows[i].Resubmitted]}, back...)
			}
			before = page.Prev
		}
		if fmt.Sprint(back) != fmt.Sprint(ids) {
			t.Errorf("%+v: paged back %v, forward %v", f, back, ids)
		}
		return ids
	}
	for _, tc := range []struct {
		f    DocFilter
		want string
	}{
		{DocFilter{Run: "nightly"}, "[j0-again+ j1-again+ j2-again+ j3 j4 j5 j5-other j6 j7 j8 j9]"},
		{DocFilter{Run: "nightly", Outcome: OutcomeFailed}, "[j1-again+]"},
		{DocFilter{Run: "nightly", Outcome: OutcomeInProgress}, "[j2-again+]"},
		{DocFilter{Run: "nightly", Outcome: OutcomeUnextractable}, "[]"},
		{DocFilter{Run: "nightly", Outcome: OutcomeOK, IDPrefix: "d0"}, "[j0-again+]"},
		{DocFilter{Run: "nightly", Outcome: OutcomeFailed, EveryJob: true}, "[j0 j1 j1-again+]"},
		{DocFilter{Run: "nightly", IDPrefix: "d5", EveryJob: true}, "[j5 j5-other]"},
	} {
		if got := fmt.Sprint(list(tc.f)); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, got, tc.want)
		}
	}
}
