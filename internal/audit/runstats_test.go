package audit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// TestWriterKeepsRunCounters writes, through the group-commit writer, the
// records of several runs: ok and failed jobs over several minutes, open
// deliveries made final later (the merge path's updates), the same record
// written twice, and documents given a second job in their run (a
// resubmission). run_totals and run_minutes (summed over their shards)
// must then equal the aggregates of the jobs table, and run_resubmitted
// must hold exactly the documents with more than one job in a run: the
// insert trigger (migration 18) counts each flush once, whatever path its
// rows took.
func TestWriterKeepsRunCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s, WithMaxBatchRows(40))
	rec := func(job, doc, run string, delivery, minute int, outcome llm.Outcome, final bool) *Record {
		r := testRecord(job, doc, delivery, 1+minute%3, outcome)
		r.Run, r.Final = run, final
		r.StartedAt = testStart.Add(time.Duration(minute) * time.Minute)
		r.FinishedAt = r.StartedAt.Add(time.Duration(10+delivery) * time.Second)
		if minute%2 == 1 {
			r.SchemaVersion, r.Model = 2, "sim-2"
		}
		return r
	}
	var first, second []*Record
	for i := range 240 {
		run := fmt.Sprintf("run-%d", i%3)
		doc := fmt.Sprintf("doc-%d", i)
		outcome := llm.OutcomeOK
		if i%5 == 4 {
			outcome = llm.OutcomeExhausted
		}
		final := i%7 != 6
		first = append(first, rec("job-"+doc, doc, run, 1, i%4, outcome, final))
		if !final { // its next delivery ends it, in a later flush
			second = append(second, rec("job-"+doc, doc, run, 2, i%4+1, llm.OutcomeOK, true))
		}
		if i%11 == 0 { // written again: inserts nothing twice
			second = append(second, first[len(first)-1])
		}
		if i%13 == 0 { // a second job of the document in its run
			second = append(second, rec("job2-"+doc, doc, run, 1, i%4+2, llm.OutcomeOK, true))
		}
	}
	for _, step := range [][]*Record{first, second} {
		var wg sync.WaitGroup
		for _, r := range step {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Write(ctx, r); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	for _, q := range []struct{ name, counters, jobs string }{
		{"run_totals",
			`SELECT run, status, schema_name, schema_version, provider, model, sum(jobs)::bigint, sum(attempts)::bigint,
			        sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint, min(first_started), max(last_finished)
			 FROM run_totals GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(jobs) <> 0 ORDER BY 1, 2, 3, 4, 5, 6`,
			`SELECT run, status, schema_name, schema_version, provider, model, count(*), sum(attempts)::bigint,
			        sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint, min(started_at), max(finished_at)
			 FROM jobs GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6`},
		{"run_minutes",
			`SELECT run, minute, sum(ok)::bigint, sum(failed)::bigint FROM run_minutes GROUP BY 1, 2 HAVING sum(ok) + sum(failed) <> 0 ORDER BY 1, 2`,
			`SELECT run, date_trunc('minute', finished_at), count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status <> 'ok')
			 FROM jobs WHERE status <> 'retrying' GROUP BY 1, 2 ORDER BY 1, 2`},
		{"run_resubmitted",
			`SELECT run, document_id FROM run_resubmitted ORDER BY 1, 2`,
			`SELECT run, document_id FROM jobs GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1, 2`},
	} {
		got, want := queryText(t, s, q.counters), queryText(t, s, q.jobs)
		if got != want {
			t.Errorf("%s:\n%s\nwant (from jobs):\n%s", q.name, got, want)
		}
		if want == "" {
			t.Errorf("%s: the jobs table has nothing to compare with", q.name)
		}
	}
}

// queryText is the rows of sql, one line each.
func queryText(t *testing.T, s *Store, sql string) string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintln(vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
