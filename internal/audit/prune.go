package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PruneResult says what Prune removed.
type PruneResult struct {
	PartitionsDropped []string `json:"partitions_dropped"`
	AttemptsDeleted   int64    `json:"attempts_deleted"` // rows deleted one by one (outside dropped partitions)
	JobsDeleted       int64    `json:"jobs_deleted"`
	DeadLetters       int64    `json:"dead_letters_deleted"`
	BatchesDeleted    int64    `json:"batches_deleted"`   // closed provider batches, with their stored lines
	RunCountsPruned   int64    `json:"run_counts_pruned"` // runs whose counted job ids were deleted (their counts stay)
}

// Prune enforces retention: attempts started before cutoff (whole monthly
// partitions are dropped, the rest deleted), finished jobs last updated
// before cutoff, references to dead letters created before it that were
// resubmitted since, provider batches closed before it (their result
// lines with them), and the job ids counted into runs not open and not
// counted into or sealed since (run_job_batches, run_jobs: about 50 bytes
// a job, the largest part of a run's count; the count stays, and a later
// submission into such a run counts only the jobs the server acks as new,
// as runs counted before migration 19 do). Results, documents and schemas are kept: they are the
// product, not the log. A dead letter not yet resubmitted keeps its
// reference whatever its age: it is still on the DLQ, where `dlq list`
// shows it, so `status` must go on counting it.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (*PruneResult, error) {
	res := &PruneResult{}
	cutoff = cutoff.UTC()
	// Monthly partitions whose upper bound is at or before cutoff go whole.
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'attempts'::regclass AND c.relname ~ '^attempts_y[0-9]{4}m[0-9]{2}$' ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("audit: prune: list partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("audit: prune: list partitions: %w", err)
	}
	for _, name := range names {
		month, err := time.Parse("2006m01", name[len("attempts_y"):])
		if err != nil || month.AddDate(0, 1, 0).After(cutoff) {
			continue
		}
		if _, err := s.pool.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return res, fmt.Errorf("audit: prune: drop partition %s: %w", name, err)
		}
		res.PartitionsDropped = append(res.PartitionsDropped, name)
	}
	for _, step := range []struct {
		sql string
		n   *int64
	}{
		{"DELETE FROM attempts WHERE started_at < $1", &res.AttemptsDeleted},
		{"DELETE FROM jobs WHERE updated_at < $1 AND status <> 'retrying'", &res.JobsDeleted},
		{"DELETE FROM dead_letters WHERE created_at < $1 AND resubmitted_at IS NOT NULL", &res.DeadLetters},
		{"DELETE FROM batches WHERE closed_at < $1", &res.BatchesDeleted},
	} {
		tag, err := s.pool.Exec(ctx, step.sql, cutoff)
		if err != nil {
			return res, fmt.Errorf("audit: prune: %w", err)
		}
		*step.n = tag.RowsAffected()
	}
	// The update locks the runs' run_done rows, as a count does
	// (extractq_count_run_jobs): a count waits for the prune, then reads
	// by_job false and counts no found jobs against deleted ids.
	err = s.pool.QueryRow(ctx, `WITH r AS (
			UPDATE run_done SET by_job = false, job_rows = false
			WHERE updated_at < $1 AND NOT open AND (by_job OR job_rows)
			RETURNING run
		), b AS (DELETE FROM run_job_batches WHERE run IN (SELECT run FROM r)),
		j AS (DELETE FROM run_jobs WHERE run IN (SELECT run FROM r))
		SELECT count(*) FROM r`, cutoff).Scan(&res.RunCountsPruned)
	if err != nil {
		return res, fmt.Errorf("audit: prune: the job ids counted into runs: %w", err)
	}
	return res, nil
}
