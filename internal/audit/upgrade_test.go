package audit

import (
	"context"
	"testing"

	"github.com/jackc/tern/v2/migrate"

	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/migrations"
)

// TestUpgradeFromVersion1 migrates a database written by version 1 of the
// schema: rows of a document that never changed get its text's hash, rows
// of a document that changed keep "" (unknown), and the new key, view and
// functions work on the upgraded data.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err == nil {
		err = m.LoadMigrations(migrations.FS)
	}
	if err == nil {
		err = m.MigrateTo(ctx, 1)
	}
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 data: "same" was stored once, "changed" twice (its result
	// is of its first text).
	for _, q := range []string{
		`INSERT INTO documents (id, content_hash, body) VALUES ('same', encode(sha256('same text'), 'hex'), 'same text')`,
		`INSERT INTO documents (id, content_hash, body) VALUES ('changed', encode(sha256('first'), 'hex'), 'first')`,
		`UPDATE documents SET content_hash = encode(sha256('second'), 'hex'), body = 'second', updated_at = now() + interval '1 second' WHERE id = 'changed'`,
		`INSERT INTO jobs (job_id, document_id, schema_fingerprint, model, status, started_at, finished_at)
		 VALUES ('j-same', 'same', 'fp', 'm', 'ok', now(), now()), ('j-changed', 'changed', 'fp', 'm', 'ok', now(), now())`,
		`INSERT INTO results (document_id, schema_fingerprint, model, schema_name, value, job_id)
		 VALUES ('same', 'fp', 'm', 'invoice', '{"v":1}', 'j-same'), ('changed', 'fp', 'm', 'invoice', '{"v":2}', 'j-changed')`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ table, doc, want string }{
		{"results", "same", HashText("same text")}, {"jobs", "same", HashText("same text")},
		{"results", "changed", ""}, {"jobs", "changed", ""},
	} {
		var got string
		if err := s.pool.QueryRow(ctx, "SELECT content_hash FROM "+tt.table+" WHERE document_id = $1", tt.doc).Scan(&got); err != nil || got != tt.want {
			t.Errorf("%s of %s: content_hash %q, %v; want %q", tt.table, tt.doc, got, err, tt.want)
		}
	}
	// Upgraded rows count where they should.
	done, err := s.HaveResults(ctx, "fp", "m", []TextKey{{"same", HashText("same text")}, {"changed", HashText("second")}})
	if err != nil || !done[TextKey{"same", HashText("same text")}] || done[TextKey{"changed", HashText("second")}] {
		t.Errorf("HaveResults = %v, %v: want same done, changed (unknown text) not", done, err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM latest_valid_results").Scan(&n); err != nil || n != 2 {
		t.Errorf("latest_valid_results: %d rows, %v; want both (unknown text counts while nothing newer exists)", n, err)
	}
}
