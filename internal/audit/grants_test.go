package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
	"github.com/jackc/pgx/v5/pgconn"
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
	// A writer running for months prepares up to six months ahead.
	future := &Store{pool: s.pool, now: func() time.Time { return time.Now().AddDate(0, 3, 0) }}
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
	if err := s.SetDeadLetterSeq(ctx, "g2", 9); err != nil {
		t.Errorf("worker role cannot set a recorded dead letter's sequence: %v", err)
	}
	refused(t, s, []string{
		"UPDATE dead_letters SET seq = 9",
		"UPDATE jobs SET status = 'ok'",
		"UPDATE jobs SET status = 'ok' WHERE job_id = 'g2'",
		"UPDATE results SET run = ''",
		"UPDATE dead_letters SET reason = ''",
		"DELETE FROM attempts", "DELETE FROM jobs", "DELETE FROM results", "TRUNCATE attempts",
		"SELECT * FROM documents", "SELECT * FROM document_versions",
		"SELECT extractq_put_documents(ARRAY['d1'], ARRAY[''], ARRAY['{}'::jsonb], ARRAY['rewritten'])",
		"INSERT INTO schemas (name, version, fingerprint, body) VALUES ('x', 9, 'x', '{}')",
		// The partition function, bounded for everyone but the owner.
		"SELECT extractq_ensure_attempt_partitions('2300-01-01', 1)",
		"SELECT extractq_ensure_attempt_partitions(current_date, 36)",
		"SELECT extractq_ensure_attempt_partitions((current_date - interval '2 years')::date, 1)",
		"SELECT extractq_ensure_attempt_partitions(current_date, 0)",
	})
	// The sweeper: a submitter counted and sealed run1 (testRecord's run);
	// the worker role reads its final jobs, claims and publishes it, and
	// logs its webhook's delivery; it cannot count or seal runs itself.
	if _, err := owner.CountRunJobs(ctx, "run1", []string{"j1", "j2", "j3"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.SealRun(ctx, "run1"); err != nil {
		t.Fatal(err)
	}
	runs, err := s.OpenRuns(ctx)
	if err != nil || len(runs) != 1 || !runs[0].Done() {
		t.Fatalf("worker role reads open runs %+v (%v), want run1 done", runs, err)
	}
	if claimed, err := s.ClaimRunDone(ctx, runs[0], []byte(`{}`), "w"); err != nil || !claimed {
		t.Fatalf("worker role claims run1: %v, %v", claimed, err)
	}
	if err := s.MarkRunPublished(ctx, "run1", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PendingDeadLetters(ctx, time.Second, 10); err != nil {
		t.Fatalf("worker role reads the dead letters to deliver: %v", err)
	}
	if err := s.MarkDeadLetterDelivered(ctx, "run1", RunDeadLetter{JobID: "g2", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WebhookTries(ctx, "h1"); err != nil || n != 0 {
		t.Fatalf("worker role reads the delivery log: %d, %v", n, err)
	}
	if err := s.RecordWebhookAttempt(ctx, WebhookAttempt{DeliveryID: "h1", Run: "run1", Event: "done", URL: "https://hooks.example.com/x", Attempt: 1, StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	refused(t, s, []string{"INSERT INTO run_done (run, sealed) VALUES ('x', 1)", "DELETE FROM run_done",
		"UPDATE run_done SET jobs = 0", "UPDATE run_done SET sealed = sealed + 1", "UPDATE run_webhooks SET url_sealed = ''",
		"INSERT INTO run_webhooks (run, url_redacted, url_sealed, key_id, events, timeout_ms) VALUES ('x', 'u', '', 'k', '{done}', 1)",
		"DELETE FROM webhook_deliveries"})
	// The job that ended dead-lettered is still so (the UPDATE was refused).
	var status string
	if err := owner.pool.QueryRow(ctx, "SELECT status FROM jobs WHERE job_id = 'g2'").Scan(&status); err != nil || status != string(llm.OutcomeExhausted) {
		t.Errorf("job g2 status %q, %v: want it unchanged", status, err)
	}
	var far int
	if err := owner.pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'attempts'::regclass AND c.relname >= 'attempts_y2100'`).Scan(&far); err != nil || far != 0 {
		t.Errorf("%d partitions far in the future, %v", far, err)
	}
	// The owner may prepare any month (back-filling, maintenance).
	if _, err := owner.pool.Exec(ctx, "SELECT extractq_ensure_attempt_partitions('2019-01-01', 2)"); err != nil {
		t.Errorf("owner cannot prepare old partitions: %v", err)
	}
}

// refused checks that every statement fails for s's role with a
// permission or parameter error (not, say, a syntax error that would make
// the check pass for the wrong reason).
func refused(t *testing.T, s *Store, stmts []string) {
	t.Helper()
	for _, q := range stmts {
		_, err := s.pool.Exec(context.Background(), q)
		var pe *pgconn.PgError
		switch {
		case err == nil:
			t.Errorf("role may run %q", q)
		case !errors.As(err, &pe) || (pe.Code != "42501" && pe.Code != "22023"):
			t.Errorf("%q failed for another reason than a refusal: %v", q, err)
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
	// The replaced text is kept, and the submitter can neither rewrite nor
	// delete a stored text, nor touch the log.
	if d, err := sub.DocumentVersion(ctx, "d1", HashText("text of d1")); err != nil || d.Text != "text of d1" {
		t.Errorf("replaced text of d1: %+v, %v", d, err)
	}
	refused(t, sub, []string{
		"UPDATE documents SET body = 'rewritten'",
		"UPDATE documents SET content_hash = 'x' WHERE id = 'd1'",
		"INSERT INTO documents (id, content_hash, body) VALUES ('sneaky', 'not-its-hash', 'x')",
		"DELETE FROM documents", "DELETE FROM document_versions", "UPDATE document_versions SET body = 'x'",
		"UPDATE dead_letters SET reason = 'x'", "DELETE FROM dead_letters",
		"UPDATE jobs SET status = 'ok'", "INSERT INTO results (document_id, schema_fingerprint, model, value) VALUES ('d', 'f', 'm', '{}')",
		"UPDATE schemas SET body = '{}'",
		"SELECT extractq_merge_jobs('[]')",
		"SELECT extractq_ensure_attempt_partitions(current_date, 1)",
	})
	var hash string
	if err := owner.pool.QueryRow(ctx, "SELECT content_hash FROM documents WHERE id = 'd1'").Scan(&hash); err != nil || hash != HashText("changed") {
		t.Errorf("d1 hash %s, %v: want the hash of its text", hash, err)
	}
	cands, err := sub.DocumentsForResubmit(ctx, "invoice", 2, true)
	if err != nil || len(cands) == 0 {
		t.Fatalf("select: %d, %v", len(cands), err)
	}
	if err := sub.MarkResubmitted(ctx, "invoice", 2, []string{cands[0].ID, "d3"}); err != nil {
		t.Fatal(err)
	}
	// It logs its webhook deliveries, and cannot rewrite or erase the log.
	if err := sub.RecordWebhookAttempt(ctx, WebhookAttempt{DeliveryID: "h1", Run: "r", Event: "done", URL: "https://hooks.example.com/x", Attempt: 1, StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	refused(t, sub, []string{"UPDATE webhook_deliveries SET status_code = 500", "DELETE FROM webhook_deliveries"})
	// It counts and seals its runs and registers their webhooks.
	if _, err := sub.CountRunJobs(ctx, "r", []string{"j1", "j2"}, nil); err != nil {
		t.Fatal(err)
	}
	if gen, err := sub.SealRun(ctx, "r"); err != nil || gen != 1 {
		t.Fatalf("submitter role seals run r: %d, %v", gen, err)
	}
	if err := sub.RegisterRunWebhook(ctx, RunWebhook{Run: "r", URLRedacted: "https://hooks.example.com/x", URLSealed: []byte{1}, KeyID: "k", Events: []string{"done"}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	refused(t, sub, []string{"DELETE FROM run_done", "DELETE FROM run_webhooks"})
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
