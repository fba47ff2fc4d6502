package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// BatchFilter selects batches for Batches.
type BatchFilter struct {
	// Pool keeps the batches of one pool: its name as recorded
	// ("openai:gpt-4o-mini") or as the fleet's subjects, status and dlq
	// name it ("openai_gpt-4o-mini", see jobs.PoolFor). Empty: every pool.
	Pool string
	// All adds the closed batches (history) to the open ones.
	All bool
	// Limit is the most batches returned; 0 means no limit.
	Limit int
}

// poolSubjectSQL is jobs.PoolFor in SQL: every character but ASCII letters,
// digits, '-' and '_' becomes '_', cut at 64. The class is spelt out
// because regex ranges may follow the collation.
const poolSubjectSQL = `left(regexp_replace(pool, '[^abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-]', '_', 'g'), 64)`

// Batches lists batches for operators: the open ones oldest first (the
// order the fleet claims them in), or with f.All every batch newest first.
func (s *Store) Batches(ctx context.Context, f BatchFilter) ([]Batch, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("audit: list batches: limit %d: use 0 for no limit or a positive number", f.Limit)
	}
	var q strings.Builder
	q.WriteString(`SELECT ` + batchColumns + ` FROM batches WHERE ($1 = '' OR pool = $1 OR ` + poolSubjectSQL + ` = $1)`)
	if f.All {
		q.WriteString(` ORDER BY submitted_at DESC, id DESC`)
	} else {
		q.WriteString(` AND closed_at IS NULL ORDER BY submitted_at, id`)
	}
	args := []any{f.Pool}
	if f.Limit > 0 {
		q.WriteString(` LIMIT $2`)
		args = append(args, f.Limit)
	}
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("audit: list batches: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Batch, error) { return scanBatch(r) })
	if err != nil {
		return nil, fmt.Errorf("audit: list batches: %w", err)
	}
	return out, nil
}

// ErrBatchNotFound is matched (errors.Is) by the error of BatchByRef when
// no batch has the id it was given.
var ErrBatchNotFound = errors.New("batch not found")

// BatchNotFoundError is BatchByRef's error for a reference no batch has.
type BatchNotFoundError struct {
	Ref string // the row id or provider batch id asked for
}

func (e *BatchNotFoundError) Error() string {
	return fmt.Sprintf("no batch %q in the audit database: give a row id or a provider batch id as `extractq batch list --all` shows them", e.Ref)
}

// Is makes every BatchNotFoundError match ErrBatchNotFound.
func (e *BatchNotFoundError) Is(target error) bool { return target == ErrBatchNotFound }

// AmbiguousBatchError is BatchByRef's error for a provider batch id that
// several batches carry (two providers, or simulators, gave out the same
// id): the row id tells them apart.
type AmbiguousBatchError struct {
	Ref string
	IDs []int64 // the rows carrying Ref, oldest first
}

func (e *AmbiguousBatchError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return fmt.Sprintf("provider batch id %q names %d batches (rows %s, of different providers): give the row id", e.Ref, len(e.IDs), strings.Join(ids, ", "))
}

// BatchByRef returns the batch whose row id is ref or, failing that, whose
// provider batch id is ref. The error is a *BatchNotFoundError (matching
// ErrBatchNotFound) when there is none, an *AmbiguousBatchError when the
// provider id belongs to batches of several providers.
func (s *Store) BatchByRef(ctx context.Context, ref string) (Batch, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Batch{}, &BatchNotFoundError{Ref: ref}
	}
	// Provider ids ("batch_…", "msgbatch_…") are never bare numbers, so a
	// number is a row id first.
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		b, err := scanBatch(s.pool.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = $1`, id))
		switch {
		case err == nil:
			return b, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return Batch{}, fmt.Errorf("audit: batch %d: %w", id, err)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+batchColumns+` FROM batches WHERE provider_batch_id = $1 ORDER BY id LIMIT 10`, ref)
	if err != nil {
		return Batch{}, fmt.Errorf("audit: batch %s: %w", ref, err)
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Batch, error) { return scanBatch(r) })
	if err != nil {
		return Batch{}, fmt.Errorf("audit: batch %s: %w", ref, err)
	}
	switch len(found) {
	case 0:
		return Batch{}, &BatchNotFoundError{Ref: ref}
	case 1:
		return found[0], nil
	}
	ids := make([]int64, len(found))
	for i, b := range found {
		ids[i] = b.ID
	}
	return Batch{}, &AmbiguousBatchError{Ref: ref, IDs: ids}
}
