package source_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/internal/source"
	"github.com/extractq/extractq/internal/source/s3test"
	"github.com/extractq/extractq/internal/testenv"
)

func TestSQLStreamsRowsWithPerRowErrors(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(t.Context(), testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	if _, err := conn.Exec(t.Context(), `
		CREATE TABLE docs (n int, id text, body text, raw bytea, metadata jsonb, updated_at timestamptz);
		INSERT INTO docs VALUES
			(1, 'a', 'alpha', NULL, '{"lang":"en"}', '2026-01-01T00:00:00Z'),
			(2, 'b', NULL, NULL, NULL, '2026-01-02T00:00:00Z'),
			(3, NULL, 'orphan', NULL, NULL, '2026-01-03T00:00:00Z'),
			(4, 'd', 'delta', '\xfffe'::bytea, NULL, '2026-01-04T00:00:00Z'),
			(5, 'a', 'again', NULL, NULL, NULL);`); err != nil {
		t.Fatal(err)
	}
	type row struct{ id, body, version, errHas, meta string }
	tests := []struct {
		name, query, mark string
		want              []row
	}{
		{"text bodies, NULLs as the row's error", "SELECT id, body, metadata FROM docs ORDER BY n", "", []row{
			{id: "a", body: "alpha", meta: `{"lang":"en"}`},
			{id: "b", errHas: "body is NULL"},
			{id: "sql row 3", errHas: "id is NULL"},
			{id: "d", body: "delta"},
			{id: "a", body: "again"},
		}},
		{"bytea bodies are handed on as bytes", "SELECT id, raw AS body FROM docs WHERE n = 4", "", []row{{id: "d", body: "\xff\xfe"}}},
		{"watermark column", "SELECT id, body, updated_at FROM docs WHERE n IN (1, 4, 5) ORDER BY n", "updated_at", []row{
			{id: "a", body: "alpha", version: "2026-01-01T00:00:00Z"},
			{id: "d", body: "delta", version: "2026-01-04T00:00:00Z"},
			{id: "a", errHas: "watermark column updated_at is NULL"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One connection: not parallel.
			src, err := source.NewSQL(conn, tc.query, tc.mark)
			if err != nil {
				t.Fatal(err)
			}
			src.FetchSize = 2 // several FETCHes
			if err := src.Check(t.Context()); err != nil {
				t.Fatal(err)
			}
			got, err := listAll(t, src, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("listed %v, want %d rows", ids(got), len(tc.want))
			}
			for i, w := range tc.want {
				it := got[i]
				b, ferr := it.Fetch(t.Context(), 1<<20)
				switch {
				case it.ID != w.id:
					t.Errorf("row %d: id %q, want %q", i, it.ID, w.id)
				case w.errHas != "":
					if !errors.Is(ferr, source.ErrItem) || !strings.Contains(ferr.Error(), w.errHas) {
						t.Errorf("row %d: %v, want an item error saying %q", i, ferr, w.errHas)
					}
				case ferr != nil || string(b) != w.body || it.Version != w.version || string(it.Metadata) != w.meta:
					t.Errorf("row %d: body %q version %q meta %s err %v; want %q %q %s", i, b, it.Version, it.Metadata, ferr, w.body, w.version, w.meta)
				}
			}
		})
	}
}

func TestSQLRefusesBadQueries(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(t.Context(), testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	if _, err := conn.Exec(t.Context(), `CREATE TABLE docs (id text, content text)`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query, mark string
		want        error
		says        string
	}{
		{"", "", source.ErrUsage, "empty"},
		{"SELECT id, content FROM docs", "", source.ErrUsage, "columns named id and body"},
		{"SELECT id, content AS body FROM docs", "updated_at", source.ErrUsage, "--watermark-column updated_at"},
		{"SELECT id, body FROM nosuchtable", "", source.ErrAccess, "nosuchtable"},
	}
	for _, tc := range tests {
		src, err := source.NewSQL(conn, tc.query, tc.mark)
		if err == nil {
			err = src.Check(t.Context())
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want %v saying %q", tc.query, err, tc.want, tc.says)
		}
	}
}

func TestURLsListFetchesHTTPAndS3(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok.txt" {
			_, _ = w.Write([]byte("from the web"))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(web.Close)
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "docs", map[string]string{"k.txt": "from a bucket"}); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "urls.txt")
	lines := []string{"# comment", web.URL + "/ok.txt", "", web.URL + "/missing", "s3://docs/k.txt", "s3://docs/gone.txt", "ftp://x/y", "s3://docs/"}
	if err := os.WriteFile(list, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	src := source.NewURLs(list, nil, srv.Options())
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := listAll(t, src, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ body, errHas string }{
		{body: "from the web"}, {errHas: "404"}, {body: "from a bucket"}, {errHas: "deleted after it was listed"},
		{errHas: "only http://, https:// and s3://"}, {errHas: "names no object"},
	}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %d", ids(got), len(want))
	}
	for i, w := range want {
		b, err := got[i].Fetch(t.Context(), 1<<20)
		if w.errHas != "" {
			if !errors.Is(err, source.ErrItem) || !strings.Contains(err.Error(), w.errHas) {
				t.Errorf("%s: %v, want an item error saying %q", got[i].ID, err, w.errHas)
			}
			continue
		}
		if err != nil || string(b) != w.body {
			t.Errorf("%s: %q, %v; want %q", got[i].ID, b, err, w.body)
		}
	}
	if err := source.NewURLs(filepath.Join(t.TempDir(), "none"), nil, srv.Options()).Check(t.Context()); !errors.Is(err, source.ErrUsage) {
		t.Errorf("a missing list is accepted: %v", err)
	}
}
