package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A new connection's first statements cost far more than the same
// statements later: Postgres starts a backend for it, and that backend
// loads the catalog entries of every table, index, trigger and function
// it touches, compiles the plpgsql functions and plans their statements,
// once. Here (PostgreSQL 15, two cores) a submission's first batch on a
// new connection took 20–30 ms more than the next, most of the time a
// 10,000-document submission spent before its first publish, and a
// worker's first flush about 40 ms more. The Warm methods pay that before
// the first real work, beside the caller's other start-up (connecting to
// NATS, checking streams), by running the statements with nothing to read
// or store. They store nothing and change no counter.

// WarmForSubmit readies up to n of the pool's connections (no more than
// its size) for Submit's batches: they are opened side by side, and each
// prepares and runs LookUpSubmitted's and PutDocuments' statements once,
// with no documents. While it runs it holds the connections it readies, so
// other queries may wait for it (tens of ms). A failure says which step
// failed; nothing depends on the warm-up, so a caller may log it and go on.
func (s *Store) WarmForSubmit(ctx context.Context, n int) error {
	return s.warm(ctx, n, func(ctx context.Context, c *pgxpool.Conn) error {
		if preparedLookUps(ctx, c) {
			// Empty arrays, not NULLs: the statements run as a batch's do.
			if err := lookUpSubmittedWire(ctx, c.Conn().PgConn(), "", "", []string{}, []TextKey{}, map[string]JobState{}, map[TextKey]bool{}); err != nil {
				return fmt.Errorf("look up submitted jobs: %w", err)
			}
		}
		if err := putDocumentsOn(ctx, c, nil, []int{}); err != nil {
			return fmt.Errorf("put documents: %w", err)
		}
		return nil
	})
}

// WarmWriter readies one connection for the group writer's flushes: it
// runs a flush's COPY of attempts, jobs and results with no rows (one
// empty transaction), which loads what the first real flush would and
// fires the tables' statement triggers with nothing to count. Run it after
// EnsurePartitions and before the first Write: the pool hands out the
// connection released last first, so the writer's first flush finds it.
func (s *Store) WarmWriter(ctx context.Context) error {
	return s.warm(ctx, 1, func(ctx context.Context, c *pgxpool.Conn) error {
		var buf []byte
		parts := []copyPart{{table: attemptsTable}, {table: jobsTable}, {table: resultsTable}}
		if err := copyRoundTrip(ctx, c.Conn().PgConn(), parts, false, &buf); err != nil {
			return fmt.Errorf("empty flush: %w", err)
		}
		return nil
	})
}

// warm acquires min(n, the pool's size) connections, all before priming
// any so that they are distinct (the missing ones are opened side by
// side), runs prime on each and releases them. A connection prime fails on
// is closed, not reused: its state is unknown.
func (s *Store) warm(ctx context.Context, n int, prime func(context.Context, *pgxpool.Conn) error) error {
	n = min(n, int(s.pool.Config().MaxConns))
	if n <= 0 {
		return nil
	}
	errs := make([]error, n)
	var wg, acquired sync.WaitGroup
	acquired.Add(n)
	for i := range n {
		wg.Go(func() {
			c, err := s.pool.Acquire(ctx)
			acquired.Done()
			acquired.Wait()
			if err != nil {
				errs[i] = fmt.Errorf("audit: warm connection %d of %d: %w", i+1, n, err)
				return
			}
			defer c.Release()
			if err := prime(ctx, c); err != nil {
				errs[i] = fmt.Errorf("audit: warm connection %d of %d: %w", i+1, n, err)
				_ = c.Conn().Close(context.WithoutCancel(ctx))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
