package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/ingest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/source"
	"github.com/extractq/extractq/internal/source/s3test"
	"github.com/extractq/extractq/schema"
)

// env is a real fleet's front half: NATS JetStream, the audit database
// and an S3 server.
type env struct {
	js    jetstream.JetStream
	store *audit.Store
	dbURL string
	sub   *fleet.Client
	job   fleet.Job
	s3    *s3test.Server
	marks *ingest.Watermarks
	gets  atomic.Int64 // object reads the S3 server answered
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	st, url := audittest.Store(t)
	_, js := jobstest.Connect(t, jobstest.Server(t), jetstream.WithPublishAsyncMaxPending(64))
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	e := &env{js: js, store: st, dbURL: url, sub: fleet.NewClient(js, st.Pool()), s3: s3test.Start(t), marks: ingest.NewWatermarks(st.Pool())}
	sc, err := schema.Compile([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e.job = fleet.Job{Schema: sc, SchemaName: "thing", Provider: "openai:gpt-4o-mini", Run: "nightly"}
	e.s3.Intercept(e.countGets(nil))
	return e
}

// countGets counts object reads, then hands the request to next (if set).
func (e *env) countGets(next s3test.Interceptor) s3test.Interceptor {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			e.gets.Add(1)
		}
		return next != nil && next(w, r)
	}
}

func (e *env) src(t *testing.T, uri string, tune func(*source.S3Options)) *source.S3 {
	t.Helper()
	opts := e.s3.Options()
	if tune != nil {
		tune(&opts)
	}
	s, err := source.NewS3(uri, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) msgs(t *testing.T) uint64 {
	t.Helper()
	s, err := e.js.Stream(t.Context(), jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func (e *env) remove(t *testing.T, bucket, key string) {
	t.Helper()
	c, err := e.s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveObject(t.Context(), bucket, key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

func objects(n int, prefix string) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("%s%03d.txt", prefix, i)] = fmt.Sprintf("document number %d", i)
	}
	return m
}

func TestIncrementalRunsQueueOnlyNewAndChanged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", objects(5, "in/")); err != nil {
		t.Fatal(err)
	}
	src := e.src(t, "s3://docs/in/", nil)
	opts := ingest.Options{Incremental: "nightly", Batch: 2}

	first := opts
	first.KeepJobIDs = true // as submit --wait does
	c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.New != 5 || c.Listed != 5 || sum.Queued != 5 || e.gets.Load() != 5 || len(sum.JobIDs) != 5 {
		t.Fatalf("first run: %+v, %+v, %d reads; want 5 new, queued and read, and their job ids", c, sum, e.gets.Load())
	}

	// Overnight: one changed, one new, one deleted.
	if err := e.s3.Fill(ctx, "docs", map[string]string{"in/001.txt": "document number 1, amended", "in/new.txt": "a new one"}); err != nil {
		t.Fatal(err)
	}
	e.remove(t, "docs", "in/004.txt")
	e.gets.Store(0)
	c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ingest.Counts{Source: "s3://docs/in/", Listed: 5, New: 1, Changed: 1, Unchanged: 3, Vanished: 1,
		BytesRead: int64(len("document number 1, amended") + len("a new one"))}
	if c != want || sum.Queued != 2 || len(sum.Rejected) != 0 || sum.JobIDs != nil {
		t.Fatalf("second run: %+v, %+v; want %+v and 2 queued", c, sum, want)
	}
	if n := e.gets.Load(); n != 2 {
		t.Errorf("second run read %d objects, want 2: unchanged ones must not be read", n)
	}
	if n := e.msgs(t); n != 7 {
		t.Errorf("%d jobs on the stream, want 7 (5, then the changed and the new)", n)
	}
	// The changed document has two versions: the old result stays in history.
	var earlier string
	if err := e.store.Pool().QueryRow(ctx, `SELECT body FROM document_versions WHERE document_id = $1`, "s3://docs/in/001.txt").Scan(&earlier); err != nil || earlier != "document number 1" {
		t.Errorf("earlier text of the changed document: %q, %v; want it kept", earlier, err)
	}

	// --full reads everything again; nothing is queued twice.
	e.gets.Store(0)
	c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, ingest.Options{Incremental: "nightly", Full: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Unchanged != 5 || e.gets.Load() != 5 || sum.Queued != 0 || sum.Duplicates != 5 {
		t.Errorf("--full: %+v, %+v, %d reads; want 5 unchanged read again and queued as duplicates only", c, sum, e.gets.Load())
	}
	if n := e.msgs(t); n != 7 {
		t.Errorf("--full queued again: %d jobs on the stream, want 7", n)
	}
}

// failingSubmitter fails its nth call, as a crash would stop a run.
type failingSubmitter struct {
	ingest.Submitter
	calls, failAt int
}

func (f *failingSubmitter) Submit(ctx context.Context, job fleet.Job, docs iter.Seq[fleet.Document], opts ...fleet.SubmitOption) (*fleet.Submission, error) {
	if f.calls++; f.calls == f.failAt {
		return &fleet.Submission{}, errors.New("crash")
	}
	return f.Submitter.Submit(ctx, job, docs, opts...)
}

func TestCrashMidListingResumesWithoutRequeueing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", objects(10, "")); err != nil {
		t.Fatal(err)
	}
	src := e.src(t, "s3://docs/", func(o *source.S3Options) { o.PageSize = 4 })
	opts := ingest.Options{Incremental: "n", Batch: 3}
	_, sum, err := ingest.Run(ctx, src, e.marks, &failingSubmitter{Submitter: e.sub, failAt: 3}, e.job, opts, nil)
	if err == nil || sum.Queued != 6 {
		t.Fatalf("crashed run: %v, %d queued; want an error after 6 queued", err, sum.Queued)
	}
	e.gets.Store(0)
	c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ResumedAfter != "005.txt" || c.Listed != 4 || sum.Queued != 4 || sum.Duplicates != 0 || e.gets.Load() != 4 {
		t.Fatalf("resumed run: %+v, %+v, %d reads; want 4 listed after 005.txt, read and queued", c, sum, e.gets.Load())
	}
	if n := e.msgs(t); n != 10 {
		t.Errorf("%d jobs on the stream, want 10", n)
	}
	// The listing is complete: the next run starts from the beginning and
	// finds nothing changed.
	c, _, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil || c.ResumedAfter != "" || c.Unchanged != 10 || c.Vanished != 0 {
		t.Fatalf("next run: %+v, %v; want 10 unchanged from the beginning", c, err)
	}
}

func TestEndpointStallingMidListingResumes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", objects(7, "")); err != nil {
		t.Fatal(err)
	}
	var stalls atomic.Int64
	e.s3.Intercept(e.countGets(func(w http.ResponseWriter, r *http.Request) bool {
		// Every continued page stalls until the client has given up
		// on it (its own retries included) twice.
		if r.URL.Query().Get("continuation-token") == "" || stalls.Add(1) > 8 {
			return false
		}
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
		return true
	}))
	src := e.src(t, "s3://docs/", func(o *source.S3Options) { o.PageSize, o.Timeout = 2, 100*time.Millisecond })
	c, sum, err := ingest.Run(ctx, src, nil, e.sub, e.job, ingest.Options{Batch: 3, ListBackoff: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ListRetries == 0 || c.Listed != 7 || sum.Queued != 7 {
		t.Fatalf("%+v, %+v; want the listing resumed and all 7 queued once", c, sum)
	}
}

func TestCorruptWatermarkIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", objects(3, "in/")); err != nil {
		t.Fatal(err)
	}
	src := e.src(t, "s3://docs/in/", nil)
	opts := ingest.Options{Incremental: "w"}
	if _, _, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, corrupt, says string }{
		{"position outside the prefix", `UPDATE source_watermarks SET position = 'elsewhere/x' WHERE name = 'w'`, "listing position"},
		{"empty versions", `UPDATE source_items SET version = '' WHERE name = 'w'`, "empty version"},
		{"unknown format", `UPDATE source_watermarks SET format = 99 WHERE name = 'w'`, "format 99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One watermark, corrupted in turn: not parallel.
			if _, err := e.store.Pool().Exec(ctx, tc.corrupt); err != nil {
				t.Fatal(err)
			}
			before := e.msgs(t)
			_, _, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
			if !errors.Is(err, ingest.ErrCorruptWatermark) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "--full") {
				t.Fatalf("run on a corrupt watermark: %v; want ErrCorruptWatermark saying %q and how to reset", err, tc.says)
			}
			if e.msgs(t) != before {
				t.Error("a refused run queued jobs")
			}
			c, _, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, ingest.Options{Incremental: "w", Full: true}, nil)
			if err != nil || c.New != 3 {
				t.Fatalf("--full on a corrupt watermark: %+v, %v; want it rebuilt with 3 new", c, err)
			}
			if c, _, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil); err != nil || c.Unchanged != 3 {
				t.Fatalf("after the rebuild: %+v, %v; want 3 unchanged", c, err)
			}
		})
	}
	other := e.src(t, "s3://docs/elsewhere/", nil)
	if _, _, err := ingest.Run(ctx, other, e.marks, e.sub, e.job, opts, nil); err == nil || !strings.Contains(err.Error(), "tracks s3://docs/in/") {
		t.Errorf("a watermark reused for another source: %v; want a refusal", err)
	}
}

// deletingSource deletes an object after listing it, before it is read.
type deletingSource struct {
	*source.S3
	e   *env
	t   *testing.T
	key string
}

func (d *deletingSource) List(ctx context.Context, after string, fn func(source.Item) error) error {
	return d.S3.List(ctx, after, func(it source.Item) error {
		if it.Position == d.key {
			d.e.remove(d.t, "docs", d.key)
		}
		return fn(it)
	})
}

func TestBadInputIsThatDocumentsAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	objs := objects(4, "")
	objs["binary.bin"] = "a\x00b"
	objs["latin1.txt"] = "caf\xe9"
	if err := e.s3.Fill(ctx, "docs", objs); err != nil {
		t.Fatal(err)
	}
	src := &deletingSource{S3: e.src(t, "s3://docs/", nil), e: e, t: t, key: "001.txt"}
	c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, ingest.Options{Incremental: "bad"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, r := range sum.Rejected {
		reasons[r.Source] = r.Reason
	}
	for uri, want := range map[string]string{"s3://docs/001.txt": "deleted after it was listed", "s3://docs/binary.bin": "NUL", "s3://docs/latin1.txt": "not UTF-8"} {
		if !strings.Contains(reasons[uri], want) {
			t.Errorf("%s rejected with %q, want %q", uri, reasons[uri], want)
		}
	}
	if sum.Queued != 3 || len(sum.Rejected) != 3 || c.New != 3 {
		t.Fatalf("%+v, %+v; want 3 queued and 3 rejected", c, sum)
	}
	// Rejected documents are not remembered: the next run tries them again.
	c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, ingest.Options{Incremental: "bad", Transcode: true}, nil)
	if err != nil || c.Unchanged != 3 || sum.Queued != 1 || len(sum.Rejected) != 1 {
		t.Fatalf("rerun with --transcode: %+v, %+v, %v; want the Latin-1 one queued, the binary one rejected again", c, sum, err)
	}
}

func TestDeniedPrefixQueuesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", objects(3, "secret/")); err != nil {
		t.Fatal(err)
	}
	e.s3.Intercept(s3test.Deny("docs", "secret/"))
	_, _, err := ingest.Run(ctx, e.src(t, "s3://docs/secret/", nil), e.marks, e.sub, e.job, ingest.Options{Incremental: "x"}, nil)
	if !errors.Is(err, source.ErrAccess) || !strings.Contains(err.Error(), "access denied") {
		t.Fatalf("run on a denied prefix: %v, want ErrAccess", err)
	}
	if n := e.msgs(t); n != 0 {
		t.Errorf("%d jobs queued from a denied prefix", n)
	}
}

func TestSQLSourceRowsDuplicatesAndWatermarkColumn(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `
		CREATE TABLE tickets (id int, body text, raw bytea, updated_at timestamptz);
		INSERT INTO tickets VALUES
			(1, 'printer on fire', NULL, '2026-01-01'), (2, NULL, NULL, '2026-01-01'),
			(3, 'login fails', NULL, '2026-01-01'), (1, 'the same id again', NULL, '2026-01-02');`); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewSQL(conn, "SELECT id, body, updated_at FROM tickets ORDER BY updated_at, body", "updated_at")
	if err != nil {
		t.Fatal(err)
	}
	opts := ingest.Options{Incremental: "tickets"}
	c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	reasons := strings.Join(func() []string {
		var r []string
		for _, x := range sum.Rejected {
			r = append(r, x.Reason)
		}
		return r
	}(), "; ")
	if sum.Queued != 2 || len(sum.Rejected) != 2 || !strings.Contains(reasons, "body is NULL") || !strings.Contains(reasons, `id "1" appears twice`) {
		t.Fatalf("%+v, %+v; want 2 queued, the NULL body and the duplicate id rejected", c, sum)
	}
	if _, err := conn.Exec(ctx, `UPDATE tickets SET body = 'login fails on Mondays', updated_at = '2026-01-03' WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil || c.Changed != 1 || c.Unchanged != 1 || sum.Queued != 1 {
		t.Fatalf("after an update: %+v, %+v, %v; want 1 changed (queued), 1 unchanged", c, sum, err)
	}
}
