package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/source/s3test"
	"github.com/extractq/extractq/internal/testenv"
)

// TestExtractRemoteSources runs extract over a real S3 server (a text
// object, a PDF read with its pages, an e-mail whose attachment follows
// --attachments, an object deleted between listing and fetching) and over a real PostgreSQL query with a NULL body and a
// repeated id: each document that cannot be had is its own bad_input line,
// the rest are extracted, --resume skips by id without fetching, and the
// source's errors have submit's exit codes. The AWS settings are process
// environment (the client's credential chain), so this test is not
// parallel.
func TestExtractRemoteSources(t *testing.T) {
	srv := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	pdf, err := os.ReadFile(filepath.Join("..", "..", "examples", "documents", "invoice-07.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	mail, err := os.ReadFile(filepath.Join("..", "..", "examples", "documents", "invoice-mail.eml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Fill(t.Context(), "docs", map[string]string{
		"in/a.txt": "ACME invoice, total 12.5", "in/b.pdf": string(pdf), "in/mail.eml": string(mail), "in/gone.txt": "GONE invoice", "other/c.txt": "OTHER invoice",
		"jl/batch-0001.jsonl.gz": gzipText(t, `{"id":"r1","text":"ROW invoice, total 12.5"}`+"\n"+`{"id":"r2","text":`+"\n"+`{"text":"ROW3 invoice"}`+"\n"),
	}); err != nil {
		t.Fatal(err)
	}
	client, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	// gone.txt is deleted when it is first fetched: after the listing.
	var deleted atomic.Bool
	srv.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && r.URL.Path == "/docs/in/gone.txt" && deleted.CompareAndSwap(false, true) {
			if err := client.RemoveObject(r.Context(), "docs", "in/gone.txt", minio.RemoveObjectOptions{}); err != nil {
				t.Errorf("deleting gone.txt: %v", err)
			}
		}
		return false
	})

	dbURL := testenv.Database(t)
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	if _, err := conn.Exec(t.Context(), `CREATE TABLE tickets (id int, body text);
		INSERT INTO tickets VALUES (1, 'ZETA invoice, total 12.5'), (2, NULL), (1, 'ZETA again')`); err != nil {
		t.Fatal(err)
	}

	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/inv.txt":
			w.Write([]byte("WEB invoice, total 12.5")) //nolint:errcheck // the client sees a short body
		case "/dump.ndjson":
			w.Write([]byte(`{"text":"LINE invoice"}` + "\n" + `{"id":"l2","text":"LINE2 invoice"}` + "\n")) //nolint:errcheck // as above
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(web.Close)
	dir := writeFiles(t, map[string]string{"schema.json": extractSchema,
		"urls.txt":  "# invoices\n" + web.URL + "/inv.txt\n" + web.URL + "/missing.txt\n\ns3://docs/other/c.txt\n",
		"dumps.txt": web.URL + "/dump.ndjson\n" + "s3://docs/jl/batch-0001.jsonl.gz\n"})
	out := filepath.Join(dir, "out.jsonl")
	base := []string{"--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m"}
	tests := []struct {
		name    string
		args    []string
		code    int
		calls   int
		outcome map[string]string // by id: the outcome, or words of the error
		says    string
	}{
		{name: "bucket", args: []string{"--out", out, "s3://docs/in/"}, code: 1, calls: 4, outcome: map[string]string{
			"s3://docs/in/a.txt": "ok", "s3://docs/in/b.pdf": "ok", "s3://docs/in/gone.txt": "deleted after it was listed",
			"s3://docs/in/mail.eml": "ok", "s3://docs/in/mail.eml#INV76642.pdf": "ok",
		}},
		// gone.txt is no longer listed; the others are not fetched again.
		{name: "again with --resume: nothing fetched or asked", args: []string{"--out", out, "--resume", "s3://docs/in/"}, code: 0, says: "3 documents skipped"},
		{name: "attachments skipped", args: []string{"--attachments", "skip", "--glob", "*.eml", "s3://docs/in/"}, calls: 1, outcome: map[string]string{"s3://docs/in/mail.eml": "ok"}},
		{name: "glob", args: []string{"--glob", "*.txt", "s3://docs/other/"}, calls: 1, outcome: map[string]string{"s3://docs/other/c.txt": "ok"}},
		{name: "sql with a NULL body and a repeated id", args: []string{"--sql-url", dbURL, "--from-sql", "SELECT id, body FROM tickets ORDER BY body NULLS LAST"}, code: 1, calls: 1,
			outcome: map[string]string{"1": "ok|appears twice in the source", "2": "body is NULL"}},
		{name: "url list with a 404", args: []string{"--from-urls", filepath.Join(dir, "urls.txt")}, code: 1, calls: 2, outcome: map[string]string{
			web.URL + "/inv.txt": "ok", web.URL + "/missing.txt": "404", "s3://docs/other/c.txt": "ok",
		}},
		// JSON Lines objects: a document per line, a bad line alone rejected.
		{name: "JSON Lines in a bucket", args: []string{"s3://docs/jl/"}, code: 1, calls: 2, outcome: map[string]string{
			"r1": "ok", "s3://docs/jl/batch-0001.jsonl.gz:2": "not valid JSON", "s3://docs/jl/batch-0001.jsonl.gz:3": "ok",
		}},
		{name: "JSON Lines listed by URL", args: []string{"--from-urls", filepath.Join(dir, "dumps.txt")}, code: 1, calls: 4, outcome: map[string]string{
			web.URL + "/dump.ndjson:1": "ok", "l2": "ok",
			"r1": "ok", "s3://docs/jl/batch-0001.jsonl.gz:2": "not valid JSON", "s3://docs/jl/batch-0001.jsonl.gz:3": "ok",
		}},
		{name: "no such bucket", args: []string{"s3://nosuch/x/"}, code: 2, says: "no such bucket"},
		{name: "server down", args: []string{"--s3-endpoint", "http://127.0.0.1:1", "s3://docs/in/"}, code: 3, says: "unavailable"},
		{name: "bad query", args: []string{"--sql-url", dbURL, "--from-sql", "SELECT nothing FROM nowhere"}, code: 2, says: "nowhere"},
		{name: "local and remote mixed", args: []string{dir, "s3://docs/in/"}, code: 2, says: "cannot be mixed"},
		{name: "two remote sources", args: []string{"--from-urls", out, "s3://docs/in/"}, code: 2, says: "one remote source per extract"},
		{name: "no --incremental", args: []string{"--incremental", "x", "s3://docs/in/"}, code: 2, says: "unknown flag: --incremental"},
	}
	cmd := newExtractCmd()
	if !strings.Contains(cmd.Long, "use\nsubmit --incremental") || !strings.Contains(cmd.Long, "--from-sql QUERY") || cmd.Flags().Lookup("s3-endpoint") == nil {
		t.Errorf("--help does not describe the remote sources and point to submit --incremental:\n%s", cmd.Long)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := extractqtest.New(nil, extractqtest.WithResponder(model))
			r := runExtractCmd(t, p, nil, "", append(append([]string{}, base...), tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.says) {
				t.Errorf("stderr does not say %q:\n%s", tc.says, r.stderr)
			}
			if p.Calls() != tc.calls {
				t.Errorf("%d calls to the model, want %d", p.Calls(), tc.calls)
			}
			lines := r.lines
			if len(tc.args) > 1 && tc.args[0] == "--out" {
				lines = linesIn(t, out)
			}
			if tc.outcome == nil {
				return
			}
			var got []string
			for _, l := range lines {
				id, outcome := l["id"].(string), l["outcome"].(string)
				if outcome != "ok" {
					outcome, _ = l["error"].(string)
				}
				got = append(got, id+": "+outcome)
				if id == "s3://docs/in/b.pdf" && l["sources"] == nil {
					t.Errorf("the PDF's line has no sources: it was not read as a PDF: %v", l)
				}
			}
			total := 0
			for id, want := range tc.outcome {
				n := 0
				for _, g := range got {
					gid, outcome, _ := strings.Cut(g, ": ")
					if gid != id {
						continue
					}
					w := strings.Split(want, "|")
					if !strings.Contains(outcome, w[min(n, len(w)-1)]) {
						t.Errorf("%s: %q, want %q", id, outcome, w[min(n, len(w)-1)])
					}
					n++
				}
				if n != len(strings.Split(want, "|")) {
					t.Errorf("%s has %d lines, want %d: %v", id, n, len(strings.Split(want, "|")), got)
				}
				total += n
			}
			if len(got) != total {
				t.Errorf("lines %v, want one per document: %v", got, tc.outcome)
			}
		})
	}
}

func gzipText(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// linesIn reads an output file's lines.
func linesIn(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}
