package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/extractq/extractq/internal/testenv"
)

// TestUnreachable: what trying again may cure (nothing answers, the
// server starting, shutting down or full) against what it never cures.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	refused, err := Open(t.Context(), "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if err == nil {
		refused.Close()
		t.Fatal("Open on a closed port: want an error")
	}
	pg := func(code string) error { return fmt.Errorf("audit: %w", &pgconn.PgError{Code: code}) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", err, true},
		{"connect timeout", fmt.Errorf("ping: %w", context.DeadlineExceeded), true},
		{"starting up", pg("57P03"), true},
		{"too many connections", pg("53300"), true},
		{"admin shutdown", pg("57P01"), true},
		{"connection failure class", pg("08006"), true},
		{"database does not exist", pg("3D000"), false},
		{"password refused", pg("28P01"), false},
		{"role refused", pg("28000"), false},
		{"tables missing", pg("42P01"), false},
		{"schema outdated", &SchemaVersionError{Database: 1, Binary: 2}, false},
		{"bad URL", errors.New("audit: EXTRACTQ_DATABASE_URL is not a valid Postgres URL or DSN"), false},
		{"canceled", context.Canceled, false},
	}
	for _, tt := range tests {
		if got := Unreachable(tt.err); got != tt.want {
			t.Errorf("%s: Unreachable(%v) = %t, want %t", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestOpenWaiting: a database that answers late is opened once it does; one
// that never answers fails when the wait is over, naming the server but
// not the password; one that fails for good fails at once; wait 0 tries
// once.
func TestOpenWaiting(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Database(t)
	t.Run("answers late", func(t *testing.T) {
		t.Parallel()
		const down = 700 * time.Millisecond
		late := testenv.DatabaseLater(t, dbURL, down)
		var tries atomic.Int64
		log := slog.New(countingHandler{&tries})
		start := time.Now()
		st, err := OpenWaiting(t.Context(), late, 20*time.Second, log)
		if err != nil {
			t.Fatalf("OpenWaiting: %v", err)
		}
		st.Close()
		if took := time.Since(start); took < down {
			t.Errorf("opened after %s, before the server answered (%s)", took, down)
		}
		if tries.Load() == 0 {
			t.Error("no try was logged")
		}
	})
	t.Run("never answers", func(t *testing.T) {
		t.Parallel()
		never := strings.Replace(testenv.DatabaseLater(t, dbURL, time.Hour), "postgres://postgres@", "postgres://postgres:hunter2secret@", 1)
		start := time.Now()
		_, err := OpenWaiting(t.Context(), never, 800*time.Millisecond, nil)
		took := time.Since(start)
		if err == nil || !Unreachable(err) {
			t.Fatalf("OpenWaiting: %v, want an unreachable error", err)
		}
		if took < 800*time.Millisecond || took > 5*time.Second {
			t.Errorf("gave up after %s, want about 800ms", took)
		}
		for _, want := range []string{"did not answer for 800ms", "127.0.0.1", "EXTRACTQ_DATABASE_URL", "connection refused"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("error leaks the password: %v", err)
		}
	})
	t.Run("fails for good", func(t *testing.T) {
		t.Parallel()
		missing := strings.Replace(dbURL, "extractq_test_", "extractq_nosuch_", 1)
		start := time.Now()
		_, err := OpenWaiting(t.Context(), missing, time.Minute, nil)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "3D000" || Unreachable(err) {
			t.Fatalf("OpenWaiting on a missing database: %v, want Postgres error 3D000", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("failed after %s, want at once", took)
		}
	})
	t.Run("wait 0 tries once", func(t *testing.T) {
		t.Parallel()
		var tries atomic.Int64
		start := time.Now()
		_, err := OpenWaiting(t.Context(), testenv.DatabaseLater(t, dbURL, time.Hour), 0, slog.New(countingHandler{&tries}))
		if !Unreachable(err) || tries.Load() != 0 || time.Since(start) > 5*time.Second {
			t.Fatalf("OpenWaiting with no wait: %v after %s, %d retries logged; want one try", err, time.Since(start), tries.Load())
		}
	})
}

// countingHandler counts the records logged.
type countingHandler struct{ n *atomic.Int64 }

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(context.Context, slog.Record) error {
	h.n.Add(1)
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }
