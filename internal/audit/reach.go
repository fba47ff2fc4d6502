package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Postgres error codes of a server that is there but cannot take a
// connection now.
const (
	pgCannotConnectNow       = "57P03" // starting up or shutting down
	pgTooManyConnections     = "53300"
	pgAdminShutdown          = "57P01"
	pgConnectionFailureClass = "08"
)

// Unreachable reports whether err, from Open or a query, says that the
// database cannot be reached now but may be soon: nothing answers at its
// address (refused, timed out, a host name that does not resolve yet), or
// the server is starting, shutting down or out of connection slots.
// Trying again later may cure it. Any other error — a bad URL, a login
// refused, a database that does not exist, tables missing or not migrated
// — fails the same way every time: report it at once.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == pgCannotConnectNow || pe.Code == pgTooManyConnections || pe.Code == pgAdminShutdown ||
			strings.HasPrefix(pe.Code, pgConnectionFailureClass)
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.Is(err, context.DeadlineExceeded)
}

// OpenWaiting is Open for a program that may start before its database
// answers (beside it in compose or Kubernetes, or while Postgres restarts
// or fails over): while the database is Unreachable it tries again, with
// backoff (200 ms doubling to 5 s), for up to wait unless ctx ends
// first, logging each failed try on log (nil: no log) with the server
// and how long it waits. Any other error is returned at once. wait 0
// tries once. When the wait is over, the error names the server (never
// the password) and what to do, and wraps the last failure, so that
// Unreachable still reports it.
func OpenWaiting(ctx context.Context, databaseURL string, wait time.Duration, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	where := describeServer(databaseURL)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	var prev error // the failure before the last try: that one may only say the wait ran out
	gaveUp := func(tries int, err error) error {
		if prev != nil && errors.Is(err, context.DeadlineExceeded) {
			err = prev
		}
		if ctx.Err() != nil {
			return fmt.Errorf("audit: stopped waiting for %s after %d tries: %w", where, tries, err)
		}
		return fmt.Errorf("audit: %s did not answer for %s (%d tries): start it, or point EXTRACTQ_DATABASE_URL (--database-url) at a running server; last: %w",
			where, wait, tries, err)
	}
	for n := 0; ; n++ {
		tctx := wctx
		if wait <= 0 {
			tctx = ctx // a single try, bounded by ctx and the connect timeout
		}
		st, err := Open(tctx, databaseURL)
		if err == nil || !Unreachable(err) || wait <= 0 {
			return st, err
		}
		if wctx.Err() != nil {
			return nil, gaveUp(n+1, err)
		}
		prev = err
		retry := min(openBackoff(n), wait-time.Since(start))
		log.Warn("audit database not reachable yet; trying again", "database", where, "try", n+1,
			"waited", time.Since(start).Round(100*time.Millisecond), "gives_up_after", wait, "retry_in", retry.Round(time.Millisecond), "err", err)
		t := time.NewTimer(retry)
		select {
		case <-wctx.Done():
			t.Stop()
			return nil, gaveUp(n+1, err)
		case <-t.C:
		}
	}
}

// openBackoff is the wait before try n+1 (n from 0) of OpenWaiting: 200ms
// doubling to 5s, the backoff of the other start-up steps (jobs.Backoff).
func openBackoff(n int) time.Duration { return min(200*time.Millisecond<<min(n, 5), 5*time.Second) }

// describeServer names databaseURL's server and database for messages,
// without its user or password.
func describeServer(databaseURL string) string {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return "the audit database"
	}
	return fmt.Sprintf("Postgres at %s:%d (database %q)", cfg.Host, cfg.Port, cfg.Database)
}
