package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// roleStore creates a login role with only grants, and opens a store as it.
func roleStore(t *testing.T, owner *Store, grants func(string) []string) *Store {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	role := "extractq_test_role_" + hex.EncodeToString(b)
	stmts := append([]string{"CREATE ROLE " + role + " LOGIN"}, grants(role)...)
	for _, q := range stmts {
		if _, err := owner.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, q := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := owner.pool.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	cfg := owner.pool.Config().ConnConfig
	u := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", role, cfg.Host, cfg.Port, url.PathEscape(cfg.Database))
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestWorkerGrantsSuffice(t *testing.T) {
	ctx := context.Background()
	owner := newTestStore(t)
	s := roleStore(t, owner, WorkerGrants)
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	future := &Store{pool: s.pool, now: func() time.Time { return time.Now().AddDate(1, 0, 0) }}
	if err := future.EnsurePartitions(ctx); err != nil {
		t.Fatalf("worker role cannot prepare partitions: %v", err)
	}
	w := newTestWriter(t, s)
	ok := testRecord("g1", "d1", 1, 2, llm.OutcomeOK)
	dead := testRecord("g2", "d2", 1, 1, llm.OutcomeExhausted)
	dead.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: 1, Reason: "x"}
	open := testRecord("g3", "d3", 1, 1, llm.OutcomeTransport)
	open.Final = false
	later := testRecord("g3", "d3", 2, 1, llm.OutcomeOK)
	// ok and dead twice: the second writes take the duplicate (staging) path
	// for every table.
	for _, r := range []*Record{ok, dead, open, later, ok, dead} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatalf("worker role cannot write job %s: %v", r.JobID, err)
		}
	}
	if st := w.Stats(); st.DupFallbacks == 0 {
		t.Error("the duplicate path was not exercised")
	}
	if got := countRows(t, owner); got != (counts{jobs: 3, attempts: 5, results: 2, dead: 1}) {
		t.Errorf("rows %+v", got)
	}
	// And nothing more: no deletes, no documents, no other updates.
	for _, q := range []string{"DELETE FROM attempts", "DELETE FROM jobs", "SELECT * FROM documents", "UPDATE results SET run = ''", "TRUNCATE attempts"} {
		if _, err := s.pool.Exec(ctx, q); err == nil {
			t.Errorf("worker role may run %q", q)
		}
	}
}

func TestSubmitterAndReaderGrantsSuffice(t *testing.T) {
	ctx := context.Background()
	owner := resubmitFixture(t)
	sub := roleStore(t, owner, SubmitterGrants)
	if _, _, err := sub.RegisterSchema(ctx, "invoice", []byte(`{}`), "fp9"); err != nil {
		t.Fatal(err)
	}
	if err := sub.PutDocuments(ctx, []Document{{ID: "d1", Text: "changed"}, {ID: "new", Text: "t"}}); err != nil {
		t.Fatal(err)
	}
	cands, err := sub.DocumentsForResubmit(ctx, "invoice", 2, true)
	if err != nil || len(cands) == 0 {
		t.Fatalf("select: %d, %v", len(cands), err)
	}
	if err := sub.MarkResubmitted(ctx, "invoice", 2, []string{cands[0].ID, "d3"}); err != nil {
		t.Fatal(err)
	}
	reader := roleStore(t, owner, ReaderGrants)
	if _, err := reader.Status(ctx, StatusFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.History(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.ExportResults(ctx, ExportFilter{Schema: "invoice"}, func(*ResultInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.pool.Exec(ctx, "DELETE FROM results"); err == nil {
		t.Error("reader role may delete results")
	}
}
