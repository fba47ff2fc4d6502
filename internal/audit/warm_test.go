package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/llm"
)

// TestWarmForSubmit checks that WarmForSubmit leaves the connections it
// was asked for open, each with submission's statements prepared, and
// stores nothing.
func TestWarmForSubmit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	s.pool.Reset()                                   // Migrate's connection gone: every connection counted below is the warm-up's
	if err := s.WarmForSubmit(ctx, -1); err != nil { // nothing to ready
		t.Fatal(err)
	}
	if err := s.WarmForSubmit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	conns := s.pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	if len(conns) != 3 {
		t.Fatalf("%d idle connections after WarmForSubmit(3), want 3", len(conns))
	}
	for i, c := range conns {
		var n int
		err := c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE name = ANY($1)",
			[]string{putDocumentsStmt, lookUpJobsStmt, lookUpResultsStmt}).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Errorf("connection %d: %d of submission's 3 statements prepared", i, n)
		}
	}
	var docs int
	if err := conns[0].QueryRow(ctx, "SELECT count(*) FROM documents").Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if docs != 0 {
		t.Errorf("the warm-up stored %d documents", docs)
	}
}

// TestWarmWriter checks that the writer's warm-up stores nothing, counts
// nothing, leaves its connection open for the first flush, and that a
// database without the audit's tables fails it with an error saying so.
func TestWarmWriter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	s.pool.Reset()
	if err := s.WarmWriter(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.pool.Stat().IdleConns(); got != 1 {
		t.Errorf("%d idle connections after WarmWriter, want its one", got)
	}
	for _, table := range []string{"attempts", "jobs", "results", "run_totals", "run_minutes"} {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: %d rows after the warm-up", table, n)
		}
	}
	// The first flush after it stores as any other.
	w := newTestWriter(t, s)
	if err := w.Write(ctx, testRecord("job-warm", "doc-warm", 1, 1, llm.OutcomeOK)); err != nil {
		t.Fatal(err)
	}

	empty, err := Open(ctx, testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	err = empty.WarmWriter(context.Background())
	if err == nil || !strings.Contains(err.Error(), "warm connection 1 of 1: empty flush") || !strings.Contains(err.Error(), "attempts") {
		t.Errorf("WarmWriter on a database without the audit's tables: %v", err)
	}
}
