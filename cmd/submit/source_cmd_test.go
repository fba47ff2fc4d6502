package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/source/s3test"
)

func TestSubmitRemoteSources(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	_, js := jobstest.Connect(t, natsURL)
	must(t, jobs.EnsureStreams(t.Context(), js))
	srv := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	must(t, srv.Fill(t.Context(), "invoices", map[string]string{
		"2026/a.txt": fleettest.Document(1), "2026/b.txt": fleettest.Document(2), "2026/c.md": fleettest.Document(3),
	}))
	conn, err := pgx.Connect(t.Context(), dbURL)
	must(t, err)
	t.Cleanup(func() { conn.Close(t.Context()) })
	_, err = conn.Exec(t.Context(), `CREATE TABLE tickets (id int, body text, metadata jsonb, updated_at timestamptz)`)
	must(t, err)
	_, err = conn.Exec(t.Context(), `INSERT INTO tickets VALUES (1, $1, '{"queue":"it"}', now()), (2, NULL, NULL, now())`, fleettest.Document(4))
	must(t, err)

	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	base := []string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--json"}

	tests := []struct {
		name          string
		args          []string
		code          int
		queued        int
		new, unchaged int
		says          string
		setup         func()
	}{
		{name: "s3 prefix with glob", args: []string{"--incremental", "inv", "--glob", "*.txt", "s3://invoices/2026/"}, queued: 2, new: 2},
		{name: "again: nothing new", args: []string{"--incremental", "inv", "--glob", "*.txt", "s3://invoices/2026/"}, unchaged: 2},
		{name: "sql with a NULL body", args: []string{"--incremental", "tickets", "--watermark-column", "updated_at", "--from-sql", "SELECT id, body, metadata, updated_at FROM tickets"}, code: 1, queued: 1, new: 1},
		{name: "no such bucket", args: []string{"s3://nosuch/x/"}, code: 2, says: "no such bucket"},
		{name: "server down", args: []string{"--s3-endpoint", "http://127.0.0.1:1", "s3://invoices/2026/"}, code: 3, says: "unavailable"},
		{name: "local and remote mixed", args: []string{dir, "s3://invoices/2026/"}, code: 2, says: "cannot be mixed"},
		{name: "--full without --incremental", args: []string{"--full", "s3://invoices/2026/"}, code: 2, says: "--incremental"},
		{name: "corrupt watermark", args: []string{"--incremental", "inv", "--glob", "*.txt", "s3://invoices/2026/"}, code: 2, says: "--full",
			setup: func() {
				_, err := conn.Exec(t.Context(), `UPDATE source_watermarks SET format = 7 WHERE name = 'inv'`)
				must(t, err)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			var out, errb bytes.Buffer
			cmd := newSubmitCmd()
			cmd.SetArgs(append(append([]string{}, base...), tc.args...))
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			err := cmd.Execute()
			if got := cli.Code(err); got != tc.code {
				t.Fatalf("exit %d (%v), want %d\nstdout: %s\nstderr: %s", got, err, tc.code, out.String(), errb.String())
			}
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("error %v, want one saying %q", err, tc.says)
				}
				return
			}
			var sum struct {
				Queued int
				Source struct{ New, Unchanged int }
			}
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
				t.Fatalf("summary is not JSON: %v\n%s", err, out.String())
			}
			if sum.Queued != tc.queued || sum.Source.New != tc.new || sum.Source.Unchanged != tc.unchaged {
				t.Errorf("summary %+v, want %d queued, %d new, %d unchanged\n%s", sum, tc.queued, tc.new, tc.unchaged, out.String())
			}
		})
	}
}
