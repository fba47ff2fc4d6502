package fleetview

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/extractq/extractq/internal/audit"
)

// resubmittedJobs lists, in the order they started, the jobs of the
// documents that have more than one job in a run: those migration 10's
// trigger marks in run_resubmitted (few), each read by jobs_document_idx.
// OFFSET 0 keeps the lateral read per document: joined flat, the planner
// hashes the whole jobs table once 1% of a run is resubmitted.
const resubmittedJobs = `
SELECT r.run, r.document_id, j.schema_name, j.status, j.started_at, j.finished_at
FROM run_resubmitted r CROSS JOIN LATERAL (
    SELECT * FROM jobs j WHERE j.document_id = r.document_id AND j.run = r.run OFFSET 0
) j
WHERE r.run = ANY($1)
ORDER BY r.run, r.document_id, j.schema_name, j.started_at, j.job_id`

// byDocument turns the runs' job counts into document counts: a job that
// started after the previous job of its document and schema in the run
// ended is a resubmission; it supersedes that job's outcome, its job is
// counted in Resubmitted*, not in Documents, and its time is left out of
// the run's rate.
func byDocument(ctx context.Context, db *pgxpool.Pool, runs []Run) error {
	if len(runs) == 0 {
		return nil
	}
	idx := make(map[string]int, len(runs))
	names := make([]string, len(runs))
	for i, r := range runs {
		idx[r.Name], names[i] = i, r.Name
	}
	rows, err := db.Query(ctx, resubmittedJobs, names)
	if err != nil {
		return fmt.Errorf("fleetview: read resubmitted documents: %w", err)
	}
	type job struct {
		run, doc, schema, status string
		started, finished        time.Time
	}
	var (
		j, prev job
		resubOK = map[docKey]bool{} // whether each resubmitted document's latest job is ok
		resubAt = map[string][]resubmission{}
	)
	_, err = pgx.ForEachRow(rows, []any{&j.run, &j.doc, &j.schema, &j.status, &j.started, &j.finished}, func() error {
		same := j.run == prev.run && j.doc == prev.doc && j.schema == prev.schema
		if same && prev.status != audit.StatusRetrying && !j.started.Before(prev.finished) {
			r := &runs[idx[j.run]]
			r.count(prev.status, -1)
			r.Documents--
			r.ResubmittedJobs++
			resubOK[docKey{j.run, j.doc, j.schema}] = j.status == StatusOK
			final := j.status != audit.StatusRetrying
			if final {
				r.ownFinal--
			}
			resubAt[j.run] = append(resubAt[j.run], resubmission{j.finished, final})
		}
		prev = j
		return nil
	})
	if err != nil {
		return fmt.Errorf("fleetview: read resubmitted documents: %w", err)
	}
	for key, ok := range resubOK {
		r := &runs[idx[key.run]]
		r.Resubmitted++
		if ok {
			r.ResubmittedOK++
		}
	}
	for run, at := range resubAt {
		if err := ownFinished(ctx, db, &runs[idx[run]], at); err != nil {
			return err
		}
	}
	return nil
}

// docKey is a document under one schema in one run.
type docKey struct{ run, doc, schema string }

// count moves n jobs of status into or out of r's outcome counts.
func (r *Run) count(status string, n int64) {
	r.ByStatus[status] += n
	switch status {
	case StatusOK:
		r.OK += n
	case StatusUnextractable:
		r.Unextractable += n
	case audit.StatusRetrying:
		r.InProgress += n
	default:
		r.Failed += n
	}
}

// resubmission is when a resubmitted job last finished a delivery, and
// whether it is final (run_minutes counts only those).
type resubmission struct {
	finished time.Time
	final    bool
}

// ownFinished sets when r's own jobs (not its resubmissions) last
// finished: r.LastFinished when a job of its own ended last, else the end
// of the last minute in which more jobs ended than resubmissions
// (run_minutes counts final jobs per minute; the jobs table has no index by
// finish time).
func ownFinished(ctx context.Context, db *pgxpool.Pool, r *Run, resubmitted []resubmission) error {
	perMinute := map[time.Time]int64{}
	last := time.Time{}
	for _, x := range resubmitted {
		if x.final {
			perMinute[x.finished.Truncate(time.Minute)]++
		}
		if x.finished.After(last) {
			last = x.finished
		}
	}
	if last.Before(r.LastFinished) {
		return nil
	}
	rows, err := db.Query(ctx, `SELECT minute, sum(ok) + sum(failed) FROM run_minutes WHERE run = $1
		GROUP BY minute ORDER BY minute DESC`, r.Name)
	if err != nil {
		return fmt.Errorf("fleetview: read run %q's minutes: %w", r.Name, err)
	}
	var (
		minute time.Time
		n      int64
		found  bool
	)
	_, err = pgx.ForEachRow(rows, []any{&minute, &n}, func() error {
		if !found && n > perMinute[minute.Truncate(time.Minute)] {
			found = true
			r.ownFinished = minute.Add(time.Minute)
			if r.ownFinished.After(r.LastFinished) {
				r.ownFinished = r.LastFinished
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fleetview: read run %q's minutes: %w", r.Name, err)
	}
	if !found {
		r.ownFinished = r.FirstStarted
	}
	return nil
}
