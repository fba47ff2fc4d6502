package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Batch is one provider batch of a batch pool (table batches): the jobs it
// carries, the re-ask round it is, what the provider last said about it, and
// which worker polls it until when.
type Batch struct {
	ID              int64  // the row's id
	Provider        string // "openai:gpt-4o-mini"
	ProviderBatchID string // the provider's id ("batch_…", "msgbatch_…")
	Pool            string
	Round           int      // 1 for first asks, 2 for the first re-asks, …
	JobIDs          []string // the jobs whose requests the batch carries
	Requests        int      // request lines in the batch
	Status          string   // the provider's status as last polled
	// State is llm.BatchState's word: "running" until the batch is final.
	State string
	// Failure is why a failed batch was refused (nil otherwise).
	Failure     *BatchFailure
	Counts      BatchCounts
	WorkerID    string    // the worker holding the lease
	LeaseUntil  time.Time // the holder polls it until then
	SubmittedAt time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time // zero while the batch is open
}

// BatchCounts are a batch's request counts as the provider reports them.
type BatchCounts struct {
	Succeeded int
	Errored   int
	Expired   int
	Canceled  int
}

// BatchFailure is why a provider refused a whole batch (llm.Error's class,
// type and message).
type BatchFailure struct {
	Class   string `json:"class"`
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
}

// BatchLine is one stored result line of a batch: the provider's bytes.
type BatchLine struct {
	CustomID string
	JobID    string
	Round    int
	Line     []byte
}

// ErrBatchLeaseLost is returned when a worker updates a batch it no longer
// holds (its lease ran out and another worker claimed it, or the batch is
// closed). The worker must stop handling that batch: the holder does.
var ErrBatchLeaseLost = errors.New("audit: batch lease lost (another worker holds the batch, or it is closed); stop handling it")

// RecordBatch stores a batch just submitted, held by b.WorkerID for lease,
// and returns its id. A batch already recorded (same provider and provider
// batch id) is an error: a provider batch is recorded once.
func (s *Store) RecordBatch(ctx context.Context, b Batch, lease time.Duration) (int64, error) {
	switch {
	case b.Provider == "" || b.ProviderBatchID == "" || b.Pool == "":
		return 0, errors.New("audit: record batch: provider, provider batch id and pool are required")
	case b.Round < 1:
		return 0, fmt.Errorf("audit: record batch %s: round is %d; rounds start at 1", b.ProviderBatchID, b.Round)
	case b.WorkerID == "" || lease <= 0:
		return 0, fmt.Errorf("audit: record batch %s: a worker id and a positive lease are required", b.ProviderBatchID)
	}
	now := s.now()
	if b.SubmittedAt.IsZero() {
		b.SubmittedAt = now
	}
	if b.JobIDs == nil {
		b.JobIDs = []string{}
	}
	var id int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO batches (provider, provider_batch_id, pool, round, job_ids, requests, status,
		                     succeeded, errored, expired, canceled, worker_id, lease_until, submitted_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		RETURNING id`,
		b.Provider, b.ProviderBatchID, b.Pool, b.Round, b.JobIDs, b.Requests, b.Status,
		b.Counts.Succeeded, b.Counts.Errored, b.Counts.Expired, b.Counts.Canceled,
		b.WorkerID, now.Add(lease), b.SubmittedAt, now).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("audit: record batch %s of pool %s: %w", b.ProviderBatchID, b.Pool, err)
	}
	return id, nil
}

const batchColumns = `id, provider, provider_batch_id, pool, round, job_ids, requests, status,
	succeeded, errored, expired, canceled, worker_id, lease_until, submitted_at, updated_at, closed_at, state, failure`

func scanBatch(row pgx.Row) (Batch, error) {
	var b Batch
	var closed *time.Time
	err := row.Scan(&b.ID, &b.Provider, &b.ProviderBatchID, &b.Pool, &b.Round, &b.JobIDs, &b.Requests, &b.Status,
		&b.Counts.Succeeded, &b.Counts.Errored, &b.Counts.Expired, &b.Counts.Canceled,
		&b.WorkerID, &b.LeaseUntil, &b.SubmittedAt, &b.UpdatedAt, &closed, &b.State, &b.Failure)
	if closed != nil {
		b.ClosedAt = *closed
	}
	return b, err
}

// ClaimBatches takes up to limit open batches of pool whose lease has run
// out (their worker died, was redeployed, or never renewed) and holds them
// for worker for lease. Concurrent claimers never get the same batch: rows
// another transaction is claiming are skipped. The oldest batches come
// first.
func (s *Store) ClaimBatches(ctx context.Context, pool, worker string, lease time.Duration, limit int) ([]Batch, error) {
	if worker == "" || lease <= 0 || limit < 1 {
		return nil, fmt.Errorf("audit: claim batches of pool %s: a worker id, a positive lease and a limit of at least 1 are required", pool)
	}
	now := s.now()
	rows, err := s.pool.Query(ctx, `
		UPDATE batches SET worker_id = $2, lease_until = $3, updated_at = $4
		WHERE id IN (
			SELECT id FROM batches
			WHERE pool = $1 AND closed_at IS NULL AND lease_until < $4
			ORDER BY submitted_at, id
			LIMIT $5
			FOR UPDATE SKIP LOCKED)
		RETURNING `+batchColumns,
		pool, worker, now.Add(lease), now, limit)
	if err != nil {
		return nil, fmt.Errorf("audit: claim batches of pool %s: %w", pool, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Batch, error) { return scanBatch(r) })
	if err != nil {
		return nil, fmt.Errorf("audit: claim batches of pool %s: %w", pool, err)
	}
	return out, nil
}

// UpdateBatch records what the provider said about batch id at the last
// poll and extends worker's lease by lease. It returns ErrBatchLeaseLost
// when worker no longer holds the batch.
func (s *Store) UpdateBatch(ctx context.Context, id int64, worker, status string, counts BatchCounts, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("audit: update batch %d: the lease must be positive", id)
	}
	now := s.now()
	tag, err := s.pool.Exec(ctx, `
		UPDATE batches SET status = $3, succeeded = $4, errored = $5, expired = $6, canceled = $7,
		                   lease_until = $8, updated_at = $9
		WHERE id = $1 AND worker_id = $2 AND closed_at IS NULL AND lease_until >= $9`,
		id, worker, status, counts.Succeeded, counts.Errored, counts.Expired, counts.Canceled, now.Add(lease), now)
	if err != nil {
		return fmt.Errorf("audit: update batch %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("batch %d, worker %s: %w", id, worker, ErrBatchLeaseLost)
	}
	return nil
}

// FinishBatch stores the result lines of a final batch and closes it, in
// one transaction: from then on every job of the batch finds its answer
// with BatchAnswer, whichever worker holds it. Only the holder finishes a
// batch (ErrBatchLeaseLost otherwise); a closed batch is never claimed
// again. state is the final llm.BatchState, status the provider's word.
func (s *Store) FinishBatch(ctx context.Context, id int64, worker, status, state string, failure *BatchFailure, counts BatchCounts, lines []BatchLine) error {
	now := s.now()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE batches SET status = $3, state = $4, failure = $5, succeeded = $6, errored = $7, expired = $8, canceled = $9,
			                   closed_at = $10, updated_at = $10, lease_until = $10
			WHERE id = $1 AND worker_id = $2 AND closed_at IS NULL AND lease_until >= $10`,
			id, worker, status, state, failure, counts.Succeeded, counts.Errored, counts.Expired, counts.Canceled, now)
		if err != nil {
			return fmt.Errorf("audit: finish batch %d: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("batch %d, worker %s: %w", id, worker, ErrBatchLeaseLost)
		}
		rows := make([][]any, len(lines))
		for i, l := range lines {
			rows[i] = []any{id, l.CustomID, l.JobID, l.Round, l.Line}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_lines"}, []string{"batch_id", "custom_id", "job_id", "round", "line"},
			pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("audit: store the %d result lines of batch %d: %w", len(lines), id, err)
		}
		return nil
	})
}

// ReleaseBatches gives up worker's leases on the open batches ids, so that
// the next worker of their pool that asks takes them over at once (a
// worker shutting down gracefully). Batches another worker holds by now
// are left alone.
func (s *Store) ReleaseBatches(ctx context.Context, worker string, ids []int64) error {
	now := s.now()
	if _, err := s.pool.Exec(ctx, `UPDATE batches SET lease_until = $3, updated_at = $3
		WHERE id = ANY($1) AND worker_id = $2 AND closed_at IS NULL`, ids, worker, now.Add(-time.Millisecond)); err != nil {
		return fmt.Errorf("audit: release batches of worker %s: %w", worker, err)
	}
	return nil
}

// BatchAnswer is where a job's request of one round stands: the latest
// batch that carries it and, once that batch is closed, its result line.
type BatchAnswer struct {
	Batch Batch
	// Line is the provider's result line; nil while the batch runs, and
	// for a closed batch that reported nothing for the request.
	Line []byte
}

// ErrNoBatch is returned by BatchAnswer for a request no batch carries.
var ErrNoBatch = errors.New("audit: no batch carries the request")

// BatchAnswer finds the latest batch of pool that carries job's request
// of round, with the stored line answering it once the batch is closed.
func (s *Store) BatchAnswer(ctx context.Context, pool, job string, round int) (BatchAnswer, error) {
	b, err := scanBatch(s.pool.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches
		WHERE pool = $1 AND job_ids @> ARRAY[$2::text] AND round = $3
		ORDER BY submitted_at DESC, id DESC LIMIT 1`, pool, job, round))
	if errors.Is(err, pgx.ErrNoRows) {
		return BatchAnswer{}, fmt.Errorf("job %s, round %d: %w", job, round, ErrNoBatch)
	}
	if err != nil {
		return BatchAnswer{}, fmt.Errorf("audit: batch of job %s, round %d: %w", job, round, err)
	}
	a := BatchAnswer{Batch: b}
	if b.ClosedAt.IsZero() {
		return a, nil
	}
	err = s.pool.QueryRow(ctx, `SELECT line FROM batch_lines WHERE batch_id = $1 AND job_id = $2 AND round = $3`,
		b.ID, job, round).Scan(&a.Line)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return BatchAnswer{}, fmt.Errorf("audit: result line of job %s, round %d in batch %d: %w", job, round, b.ID, err)
	}
	return a, nil
}

// ClosedBatch reads a closed batch with every result line stored for it,
// for the workers whose jobs waited on a batch another worker polled.
func (s *Store) ClosedBatch(ctx context.Context, id int64) (Batch, []BatchLine, error) {
	b, err := scanBatch(s.pool.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = $1 AND closed_at IS NOT NULL`, id))
	if err != nil {
		return Batch{}, nil, fmt.Errorf("audit: closed batch %d: %w", id, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT custom_id, job_id, round, line FROM batch_lines WHERE batch_id = $1`, id)
	if err != nil {
		return Batch{}, nil, fmt.Errorf("audit: result lines of batch %d: %w", id, err)
	}
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (BatchLine, error) {
		var l BatchLine
		return l, r.Scan(&l.CustomID, &l.JobID, &l.Round, &l.Line)
	})
	if err != nil {
		return Batch{}, nil, fmt.Errorf("audit: result lines of batch %d: %w", id, err)
	}
	return b, lines, nil
}

// BatchClosed reports which of the batches ids are closed (their lines
// stored), for workers waiting on batches another worker polls.
func (s *Store) BatchClosed(ctx context.Context, ids []int64) (map[int64]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM batches WHERE id = ANY($1) AND closed_at IS NOT NULL`, ids)
	if err != nil {
		return nil, fmt.Errorf("audit: closed batches: %w", err)
	}
	closed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("audit: closed batches: %w", err)
	}
	out := make(map[int64]bool, len(closed))
	for _, id := range closed {
		out[id] = true
	}
	return out, nil
}

// OpenBatches lists the batches of pool not yet closed, oldest first (every
// pool when pool is empty), for status and operators.
func (s *Store) OpenBatches(ctx context.Context, pool string) ([]Batch, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+batchColumns+` FROM batches
		WHERE closed_at IS NULL AND ($1 = '' OR pool = $1) ORDER BY submitted_at, id`, pool)
	if err != nil {
		return nil, fmt.Errorf("audit: list open batches: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Batch, error) { return scanBatch(r) })
	if err != nil {
		return nil, fmt.Errorf("audit: list open batches: %w", err)
	}
	return out, nil
}
