package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/ingest"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/source"
)

func gzipOf(t *testing.T, s string) string {
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

// lines joins JSON Lines.
func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

// stored is a document as the audit holds it.
type storedDoc struct{ source, body, metadata string }

// documents reads every document the audit holds, by id.
func (e *env) documents(t *testing.T) map[string]storedDoc {
	t.Helper()
	rows, err := e.store.Pool().Query(t.Context(), `SELECT id, source, body, metadata::text FROM documents`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]storedDoc{}
	for rows.Next() {
		var id string
		var d storedDoc
		if err := rows.Scan(&id, &d.source, &d.body, &d.metadata); err != nil {
			t.Fatal(err)
		}
		out[id] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rejections are a summary's rejected documents: source → reason.
func rejections(sum fleet.Submission) map[string]string {
	m := map[string]string{}
	for _, r := range sum.Rejected {
		m[r.Source] = r.Reason
	}
	return m
}

// TestJSONLObjectsAreReadAsRecords puts JSON Lines objects in a bucket and
// queues them: each line is a document with the id and metadata a local
// file's line gets (its "id", else URI:LINE), a bad line is rejected alone,
// a compressed object inflates as it is read (a bomb refused), and the
// object's size is no limit while each line's text is.
func TestJSONLObjectsAreReadAsRecords(t *testing.T) {
	t.Parallel()
	good := lines(`{"id":"a","text":"alpha","metadata":{"k":1}}`, ``, `{"text":"no id"}`, `{"id":7,"text":"seven"}`)
	withBad := lines(`{"id":"a","text":"alpha","metadata":{"k":1}}`, `{"id":"b","text":`, `{"text":"after the bad line"}`)
	// 8 MiB of spaces on one line gzip to about 8 KiB: past MaxRatio.
	bomb := gzipOf(t, lines(`{"id":"first","text":"before the bomb"}`)+strings.Repeat(" ", 8<<20))
	tests := []struct {
		name, key, body string
		maxDocument     int64
		docs            map[string]storedDoc // by id
		rejected        map[string]string    // source → words of the reason
		records         int
		cutShort        bool // read part way: not remembered, read again on the next run
	}{
		{name: "plain", key: "in/batch-0001.jsonl", body: good, records: 3, docs: map[string]storedDoc{
			"a":                               {source: "s3://docs/in/batch-0001.jsonl:1", body: "alpha", metadata: `{"k": 1}`},
			"s3://docs/in/batch-0001.jsonl:3": {source: "s3://docs/in/batch-0001.jsonl:3", body: "no id", metadata: `{}`},
			"7":                               {source: "s3://docs/in/batch-0001.jsonl:4", body: "seven", metadata: `{}`},
		}},
		{name: "gzip", key: "in/batch-0001.ndjson.gz", body: gzipOf(t, good), records: 3, docs: map[string]storedDoc{
			"a":                                   {source: "s3://docs/in/batch-0001.ndjson.gz:1", body: "alpha", metadata: `{"k": 1}`},
			"s3://docs/in/batch-0001.ndjson.gz:3": {source: "s3://docs/in/batch-0001.ndjson.gz:3", body: "no id", metadata: `{}`},
			"7":                                   {source: "s3://docs/in/batch-0001.ndjson.gz:4", body: "seven", metadata: `{}`},
		}},
		{name: "a bad line in the middle", key: "in/b.jsonl", body: withBad, records: 3,
			rejected: map[string]string{"s3://docs/in/b.jsonl:2": "not valid JSON"},
			docs: map[string]storedDoc{
				"a":                      {source: "s3://docs/in/b.jsonl:1", body: "alpha", metadata: `{"k": 1}`},
				"s3://docs/in/b.jsonl:3": {source: "s3://docs/in/b.jsonl:3", body: "after the bad line", metadata: `{}`},
			}},
		{name: "a gzip bomb", key: "in/bomb.jsonl.gz", body: bomb, records: 2, cutShort: true,
			rejected: map[string]string{"s3://docs/in/bomb.jsonl.gz:2": "inflates to more than 200 times"},
			docs:     map[string]storedDoc{"first": {source: "s3://docs/in/bomb.jsonl.gz:1", body: "before the bomb", metadata: `{}`}}},
		{name: "an object above --max-document, a line above it", key: "in/big.jsonl", maxDocument: 40, records: 4,
			body:     lines(`{"id":"1","text":"short one"}`, `{"id":"2","text":"`+strings.Repeat("x", 41)+`"}`, `{"id":"3","text":"short three"}`, `{"id":"4","text":"short four"}`),
			rejected: map[string]string{"s3://docs/in/big.jsonl:2": "document too large: 41 bytes, the limit is 40"},
			docs: map[string]storedDoc{
				"1": {source: "s3://docs/in/big.jsonl:1", body: "short one", metadata: `{}`},
				"3": {source: "s3://docs/in/big.jsonl:3", body: "short three", metadata: `{}`},
				"4": {source: "s3://docs/in/big.jsonl:4", body: "short four", metadata: `{}`},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := t.Context()
			if err := e.s3.Fill(ctx, "docs", map[string]string{tc.key: tc.body}); err != nil {
				t.Fatal(err)
			}
			src := e.src(t, "s3://docs/in/", nil)
			var progress []int
			c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, ingest.Options{Incremental: "n", Batch: 2, MaxDocument: tc.maxDocument}, func(_ ingest.Counts, s fleet.Submission) {
				progress = append(progress, s.Queued)
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.Listed != 1 || c.New != 1 || c.JSONL != 1 || c.Records != tc.records || c.BytesRead != int64(len(tc.body)) {
				t.Errorf("counts %+v; want 1 object listed, new and read as JSON Lines (%d bytes), %d records", c, len(tc.body), tc.records)
			}
			if sum.Queued != len(tc.docs) || len(sum.Rejected) != len(tc.rejected) {
				t.Errorf("%d queued, rejected %+v; want %d queued, %d rejected", sum.Queued, sum.Rejected, len(tc.docs), len(tc.rejected))
			}
			for _, r := range sum.Rejected {
				if want, ok := tc.rejected[r.Source]; !ok || !strings.Contains(r.Reason, want) {
					t.Errorf("rejected %s: %q; want %q", r.Source, r.Reason, want)
				}
			}
			got := e.documents(t)
			for id, want := range tc.docs {
				if got[id] != want {
					t.Errorf("document %q: %+v, want %+v", id, got[id], want)
				}
			}
			if len(got) != len(tc.docs) {
				t.Errorf("%d documents stored, want %d: %v", len(got), len(tc.docs), got)
			}
			if n := e.msgs(t); n != uint64(len(tc.docs)) {
				t.Errorf("%d jobs on the stream, want %d", n, len(tc.docs))
			}
			if len(progress) < 2 && tc.records > 2 {
				t.Errorf("progress reported %v times; want it after every batch of lines", progress)
			}
			// The next run reads only an object that was cut short again.
			c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, ingest.Options{Incremental: "n", Batch: 2, MaxDocument: tc.maxDocument}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.cutShort && (c.New != 1 || c.Records != tc.records || sum.Queued != 0 || len(sum.Rejected) != len(tc.rejected)) {
				t.Errorf("next run: %+v, %+v; want the object cut short read again, its lines found queued, the bad ones reported again", c, sum)
			}
			if !tc.cutShort && (c.Unchanged != 1 || c.Records != 0 || c.BytesRead != 0) {
				t.Errorf("next run: %+v; want the object read to its end remembered, not read again", c)
			}
		})
	}
}

// TestJSONLObjectsIncremental: an unchanged JSON Lines object is not read
// again; a changed one is read again whole, and its unchanged lines are
// not queued twice (the submitter finds their jobs queued already).
func TestJSONLObjectsIncremental(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", map[string]string{
		"in/a.jsonl":    lines(`{"id":"a1","text":"one"}`, `{"id":"a2","text":"two"}`),
		"in/b.jsonl.gz": gzipOf(t, lines(`{"text":"b one"}`, `{"text":"b two"}`)),
		"in/note.txt":   "a plain document",
	}); err != nil {
		t.Fatal(err)
	}
	src := e.src(t, "s3://docs/in/", nil)
	opts := ingest.Options{Incremental: "nightly"}
	c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.New != 3 || c.JSONL != 2 || c.Records != 4 || sum.Queued != 5 || e.gets.Load() != 3 {
		t.Fatalf("first run: %+v, %+v, %d reads; want 3 new objects, 2 of them JSON Lines with 4 records, 5 queued", c, sum, e.gets.Load())
	}

	e.gets.Store(0)
	c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Unchanged != 3 || c.JSONL != 0 || c.Records != 0 || c.BytesRead != 0 || sum.Queued+sum.Duplicates != 0 || e.gets.Load() != 0 {
		t.Fatalf("unchanged run: %+v, %+v, %d reads; want 3 unchanged and nothing read", c, sum, e.gets.Load())
	}

	// a.jsonl is rewritten: a2 unchanged, a1 amended, a3 new.
	if err := e.s3.Fill(ctx, "docs", map[string]string{"in/a.jsonl": lines(`{"id":"a1","text":"one, amended"}`, `{"id":"a2","text":"two"}`, `{"id":"a3","text":"three"}`)}); err != nil {
		t.Fatal(err)
	}
	e.gets.Store(0)
	c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Changed != 1 || c.Unchanged != 2 || c.JSONL != 1 || c.Records != 3 || e.gets.Load() != 1 {
		t.Fatalf("after a change: %+v, %d reads; want the changed object alone read, 3 records", c, e.gets.Load())
	}
	if sum.Queued != 2 || sum.Duplicates != 1 || len(sum.Rejected) != 0 {
		t.Errorf("after a change: %+v; want a1 and a3 queued, a2 a duplicate", sum)
	}
	if n := e.msgs(t); n != 7 {
		t.Errorf("%d jobs on the stream, want 7 (5, then the amended line and the new one)", n)
	}
	if got := e.documents(t)["a1"].body; got != "one, amended" {
		t.Errorf("a1 now reads %q", got)
	}
}

// webDumps serves JSON Lines files as a web server does; with etags it
// sends an ETag of each body.
type webDumps struct {
	mu    sync.Mutex
	files map[string]string
	etags bool
}

func (w *webDumps) set(name, body string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files[name] = body
}

func (w *webDumps) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	body, ok := w.files[strings.TrimPrefix(r.URL.Path, "/")]
	w.mu.Unlock()
	if !ok {
		http.NotFound(rw, r)
		return
	}
	if w.etags {
		rw.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(body))))
	}
	_, _ = rw.Write([]byte(body))
}

// TestJSONLURLs reads JSON Lines listed by URL (--from-urls): plain and
// gzip, a bad line in the middle; on the next incremental run an unchanged
// file is not read again when its server sends ETags, and is read but
// queues nothing when it does not; a changed one queues its changed lines.
func TestJSONLURLs(t *testing.T) {
	t.Parallel()
	for _, etags := range []bool{true, false} {
		t.Run(fmt.Sprintf("etags=%v", etags), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := t.Context()
			filler := strings.Repeat("z", 100<<10) // read in many pieces
			web := &webDumps{etags: etags, files: map[string]string{
				"d/one.jsonl":     lines(`{"id":"u1","text":"first"}`, `{"text":"`+filler+`"}`, `nonsense`, `{"id":"u3","text":"third"}`),
				"d/two.ndjson.gz": gzipOf(t, lines(`{"id":"g1","text":"gz one"}`, `{"text":"gz two"}`)),
			}}
			srv := httptest.NewServer(web)
			t.Cleanup(srv.Close)
			list := filepath.Join(t.TempDir(), "urls.txt")
			if err := os.WriteFile(list, []byte(srv.URL+"/d/one.jsonl\n"+srv.URL+"/d/two.ndjson.gz?sig=abc\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			src := source.NewURLs(list, nil, source.S3Options{})
			opts := ingest.Options{Incremental: "web", Batch: 2}
			c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			one, two := srv.URL+"/d/one.jsonl", srv.URL+"/d/two.ndjson.gz?sig=abc"
			if c.New != 2 || c.JSONL != 2 || c.Records != 6 || sum.Queued != 5 {
				t.Fatalf("first run: %+v, %+v; want 2 new JSON Lines files, 6 records, 5 queued", c, sum)
			}
			rej := rejections(sum)
			if len(rej) != 1 || !strings.Contains(rej[one+":3"], "not JSON") {
				t.Errorf("rejected %v; want line 3 of one.jsonl alone", rej)
			}
			docs := e.documents(t)
			for id, want := range map[string]string{"u1": "first", one + ":2": filler, "u3": "third", "g1": "gz one", two + ":2": "gz two"} {
				if docs[id].body != want {
					t.Errorf("document %q reads %.40q, want %.40q", id, docs[id].body, want)
				}
			}

			c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Unchanged != 2 || sum.Queued != 0 || len(sum.Rejected) != 0 && etags {
				t.Errorf("unchanged run: %+v, %+v; want 2 unchanged, nothing queued", c, sum)
			}
			if etags && (c.Records != 0 || c.BytesRead != 0) {
				t.Errorf("unchanged run with ETags: %+v; want the bodies not read", c)
			}
			if !etags && (c.Records != 6 || sum.Duplicates != 5) {
				t.Errorf("unchanged run without ETags: %+v, %+v; want the files read again by hash and their 5 good lines found queued", c, sum)
			}

			web.set("d/two.ndjson.gz", gzipOf(t, lines(`{"id":"g1","text":"gz one"}`, `{"text":"gz two, amended"}`)))
			c, sum, err = ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Changed != 1 || c.Unchanged != 1 || sum.Queued != 1 || sum.Duplicates != 1+map[bool]int{true: 0, false: 3}[etags] {
				t.Errorf("after a change: %+v, %+v; want the changed line alone queued", c, sum)
			}
			if got := e.documents(t)[two+":2"].body; got != "gz two, amended" {
				t.Errorf("line 2 of two.ndjson.gz now reads %q", got)
			}
			if n := e.msgs(t); n != 6 {
				t.Errorf("%d jobs on the stream, want 6", n)
			}
		})
	}
}

// refusingSubmitter refuses the document from one source, as the
// submitter does when the audit database fails a batch's lookup.
type refusingSubmitter struct {
	ingest.Submitter
	refuse string
}

func (f *refusingSubmitter) Submit(ctx context.Context, job fleet.Job, docs iter.Seq[fleet.Document], opts ...fleet.SubmitOption) (*fleet.Submission, error) {
	var refused []fleet.Rejection
	s, err := f.Submitter.Submit(ctx, job, func(yield func(fleet.Document) bool) {
		for d := range docs {
			if d.Source == f.refuse {
				refused = append(refused, fleet.Rejection{ID: d.ID, Source: d.Source, Reason: "look up earlier results in the audit database: connection refused"})
				continue
			}
			if !yield(d) {
				return
			}
		}
	}, opts...)
	if s != nil {
		s.Rejected = append(s.Rejected, refused...)
	}
	return s, err
}

// TestJSONLLineRefusedIsNotLost: a line the reader took but the submitter
// refused (a transient failure) keeps its object out of the watermark, so
// the next run reads the object again and queues that line.
func TestJSONLLineRefusedIsNotLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if err := e.s3.Fill(ctx, "docs", map[string]string{"in/a.jsonl": lines(`{"id":"a1","text":"one"}`, `{"id":"a2","text":"two"}`)}); err != nil {
		t.Fatal(err)
	}
	src := e.src(t, "s3://docs/in/", nil)
	opts := ingest.Options{Incremental: "n"}
	_, sum, err := ingest.Run(ctx, src, e.marks, &refusingSubmitter{Submitter: e.sub, refuse: "s3://docs/in/a.jsonl:2"}, e.job, opts, nil)
	if err != nil || sum.Queued != 1 || len(sum.Rejected) != 1 {
		t.Fatalf("first run: %+v, %v; want a1 queued, a2 refused", sum, err)
	}
	c, sum, err := ingest.Run(ctx, src, e.marks, e.sub, e.job, opts, nil)
	if err != nil || c.Records != 2 || sum.Queued != 1 || sum.Duplicates != 1 {
		t.Fatalf("next run: %+v, %+v, %v; want the object read again, a2 queued, a1 a duplicate", c, sum, err)
	}
	if _, ok := e.documents(t)["a2"]; !ok {
		t.Error("a2 was lost")
	}
}

// TestJSONLDuplicateIDsAcrossBatches: a line whose id an earlier line of
// the object had is rejected with the submitter's reason however many
// batches apart the two are (lines 1 and 700, batches of 500), as the
// same lines in a local file submitted at once are; the first keeps its
// place.
func TestJSONLDuplicateIDsAcrossBatches(t *testing.T) {
	t.Parallel()
	var l []string
	for i := 1; i <= 800; i++ {
		switch i {
		case 1:
			l = append(l, `{"id":"dup","text":"the first"}`)
		case 700:
			l = append(l, `{"id":"dup","text":"the second"}`)
		default:
			l = append(l, fmt.Sprintf(`{"id":"r%d","text":"record %d"}`, i, i))
		}
	}
	body := lines(l...)
	const reason = `bad input: id "dup" appears twice in this submission`
	tests := []struct {
		name string
		key  string
		body string
		run  func(e *env, uri string) (fleet.Submission, error)
	}{
		{name: "object", key: "in/dump.jsonl", body: body},
		{name: "gzip object", key: "in/dump.jsonl.gz", body: gzipOf(t, body)},
		{name: "local file", key: "dump.jsonl", body: body, run: func(e *env, path string) (fleet.Submission, error) {
			var docs []fleet.Document
			if err := (&intake.Reader{}).Read(t.Context(), []string{path}, func(d intake.Doc) error {
				docs = append(docs, fleet.Document(d))
				return nil
			}); err != nil {
				return fleet.Submission{}, err
			}
			s, err := e.sub.Submit(t.Context(), e.job, slices.Values(docs))
			if s == nil {
				return fleet.Submission{}, err
			}
			return *s, err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			var sum fleet.Submission
			var err error
			uri := "s3://docs/" + tc.key
			if tc.run != nil {
				uri = filepath.Join(t.TempDir(), tc.key)
				if err := os.WriteFile(uri, []byte(tc.body), 0o600); err != nil {
					t.Fatal(err)
				}
				sum, err = tc.run(e, uri)
			} else {
				if err := e.s3.Fill(t.Context(), "docs", map[string]string{tc.key: tc.body}); err != nil {
					t.Fatal(err)
				}
				_, sum, err = ingest.Run(t.Context(), e.src(t, "s3://docs/in/", nil), nil, e.sub, e.job, ingest.Options{}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if sum.Queued != 799 || len(sum.Rejected) != 1 || sum.Rejected[0].Source != uri+":700" || sum.Rejected[0].Reason != reason {
				t.Fatalf("%d queued, rejected %+v; want 799 queued and %s:700 rejected: %s", sum.Queued, sum.Rejected, uri, reason)
			}
			if got := e.documents(t)["dup"].body; got != "the first" {
				t.Errorf("dup reads %q; want the first line's text", got)
			}
		})
	}
}
