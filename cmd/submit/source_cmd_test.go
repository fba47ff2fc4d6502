package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

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

// TestSubmitRefusedByAServerThatChecks: against versitygw, which checks
// signatures, each account's buckets and bucket policies, a bucket the
// credentials may not list, a prefix a policy denies and a wrong secret stop
// submit with exit 2 and the fix, before
// anything is queued, counted or registered.
func TestSubmitRefusedByAServerThatChecks(t *testing.T) {
	ctx := t.Context()
	st, js := fleetEnv(t)
	t.Setenv("EXTRACTQ_WEBHOOK_SECRET", "hook-secret")
	v := s3test.StartVersity(t)
	must(t, v.CreateUser(ctx, "alice", "alice-secret"))
	must(t, v.CreateBucket(ctx, "finance", s3test.VersityRootKey, map[string]string{"2026/a.txt": fleettest.Document(1)}))
	must(t, v.CreateBucket(ctx, "alice-docs", "alice", map[string]string{"2026/b.txt": fleettest.Document(2), "hr/c.txt": fleettest.Document(3)}))
	must(t, v.DenyPrefix(ctx, "alice-docs", "alice", "hr/"))
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", v.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "alice")
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	for _, tc := range []struct {
		name, secret, uri string
		code              int
		says              string
	}{
		{"a bucket it may not list", "alice-secret", "s3://finance/2026/", 2, "access denied: the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE or the instance role) need s3:ListBucket"},
		{"wrong secret", "wrong-secret", "s3://alice-docs/2026/", 2, "the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"},
		{"a prefix its bucket policy denies", "alice-secret", "s3://alice-docs/hr/", 2, "access denied"},
		{"its own bucket", "alice-secret", "s3://alice-docs/2026/", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			run := "run-" + strings.ReplaceAll(tc.uri, "/", "_") + "-" + tc.secret[:2] // not the secret itself
			var out, errb bytes.Buffer
			cmd := newSubmitCmd()
			cmd.SetArgs([]string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--run", run, "--json",
				"--webhook", "https://hooks.example.com/x", tc.uri})
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			err := cmd.Execute()
			if got := cli.Code(err); got != tc.code || (tc.says != "" && !strings.Contains(fmt.Sprint(err), tc.says)) {
				t.Fatalf("exit %d (%v), want %d saying %q\nstderr: %s", got, err, tc.code, tc.says, errb.String())
			}
			if leak := fmt.Sprint(err) + out.String() + errb.String(); strings.Contains(leak, tc.secret) {
				t.Errorf("the secret leaked: %s", leak)
			}
			d, sealed, err := st.RunDoneState(ctx, run)
			must(t, err)
			hook, err := st.RunWebhookOf(ctx, run)
			must(t, err)
			if tc.code == 0 {
				if !sealed || d.Jobs != 1 || d.Sealed != 1 || hook == nil {
					t.Errorf("run %+v, webhook %v: want 1 job counted, sealed, its webhook registered", d, hook)
				}
				return
			}
			if sealed || hook != nil {
				t.Errorf("refused, yet the run is counted or sealed (%+v) or its webhook registered (%v)", d, hook)
			}
			if n, err := jobsOnStream(ctx, js); err != nil || n != 0 {
				t.Errorf("%d jobs queued (%v), want none", n, err)
			}
		})
	}
}

// TestSubmitJSONLObjects: against versitygw, JSON Lines objects (plain
// and gzip) in a bucket are queued one job per line, a bad line rejected
// alone (exit 1); the next --incremental run reads no unchanged object,
// and after one object is rewritten only it is read, its unchanged line
// not queued twice. The summary counts objects and records apart.
func TestSubmitJSONLObjects(t *testing.T) {
	ctx := t.Context()
	_, js := fleetEnv(t)
	v := s3test.StartVersity(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(record("n1", 1) + `{"id":"n2","text":` + "\n" + record("", 2)))
	must(t, err)
	must(t, zw.Close())
	must(t, v.CreateBucket(ctx, "etl", s3test.VersityRootKey, map[string]string{
		"dumps/batch-0001.jsonl.gz": gz.String(),
		"dumps/batch-0002.ndjson":   record("m1", 3) + record("m2", 4),
	}))
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", v.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.VersityRootKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.VersityRootSecret)
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	submit := func(args ...string) (code int, stdout, stderr string) {
		var out, errb bytes.Buffer
		cmd := newSubmitCmd()
		cmd.SetArgs(append([]string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--incremental", "dumps"}, append(args, "s3://etl/dumps/")...))
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		return cli.Code(cmd.Execute()), out.String(), errb.String()
	}

	code, out, errs := submit("--json")
	var sum struct {
		Queued   int
		Rejected []struct{ Source, Reason string }
		Source   struct {
			New, Unchanged int
			JSONL          int `json:"jsonl_objects"`
			Records        int
		}
	}
	must(t, json.Unmarshal([]byte(out), &sum))
	if code != 1 || sum.Queued != 4 || len(sum.Rejected) != 1 || sum.Rejected[0].Source != "s3://etl/dumps/batch-0001.jsonl.gz:2" ||
		sum.Source.New != 2 || sum.Source.JSONL != 2 || sum.Source.Records != 5 {
		t.Fatalf("first run: exit %d, %+v; want 4 lines queued, line 2 of batch-0001 rejected, 2 objects and 5 records\n%s", code, sum, errs)
	}

	code, out, errs = submit()
	if code != 0 || !strings.Contains(out, "new 0, changed 0, unchanged 2 (not read)") || strings.Contains(out, "JSON Lines") || !strings.Contains(out, "queued 0,") {
		t.Fatalf("unchanged run: exit %d\n%s%s", code, out, errs)
	}

	c, err := v.Client(s3test.VersityRootKey, s3test.VersityRootSecret)
	must(t, err)
	body := record("m1", 3) + record("m2", 5)
	_, err = c.PutObject(ctx, "etl", "dumps/batch-0002.ndjson", strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	must(t, err)
	code, out, errs = submit()
	if code != 0 || !strings.Contains(out, "changed 1, unchanged 1") || !strings.Contains(out, "read 1 JSON Lines objects: 2 records") ||
		!strings.Contains(out, "queued 1, already done 0, duplicates skipped 1") {
		t.Fatalf("after a change: exit %d\n%s%s", code, out, errs)
	}
	if n, err := jobsOnStream(ctx, js); err != nil || n != 5 {
		t.Errorf("%d jobs on the stream (%v), want 5: 4, then the changed line", n, err)
	}
}

// record is a JSON Lines record of fleettest's document n, with id if
// given.
func record(id string, n int) string {
	r := map[string]string{"text": fleettest.Document(n)}
	if id != "" {
		r["id"] = id
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}
