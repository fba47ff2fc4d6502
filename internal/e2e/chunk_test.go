package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// longSchema is a document number and line items the simulator reads from
// `Item: sku=…; quantity=…` lines, so a part of a document yields the items
// inside it and the merged value shows whether every part was read.
const longSchema = `{"type":"object","required":["invoice_number","items"],"properties":{
"invoice_number":{"type":"string"},
"items":{"type":"array","minItems":1,"x-merge-key":"sku","items":{"type":"object","required":["sku","quantity"],"properties":{
"sku":{"type":"string"},"quantity":{"type":"integer"}}}}}}`

// longItems is the number of line items in longDocument.
const longItems = 12

// longDocument is an invoice of about 3,000 tokens: its number on the first
// line, then longItems item lines spread through filler paragraphs.
func longDocument() string {
	var b strings.Builder
	b.WriteString("Invoice number: INV-2026-0042\n\n")
	for i := range 48 {
		fmt.Fprintf(&b, "Section %d. ", i+1)
		b.WriteString(strings.Repeat("The supplier delivers the goods according to the agreed schedule and terms. ", 3))
		b.WriteString("\n\n")
		if i%4 == 3 {
			fmt.Fprintf(&b, "Item: sku=SKU-%03d; quantity=%d\n\n", i/4+1, i+2)
		}
	}
	return b.String()
}

// lockedBuffer is a log sink the worker's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runLongDocs submits longDocument under each of the given ids with the
// job options given, runs one worker serving the pool (a batch pool when
// batch is set) until every job is settled, and returns the audit store
// and the worker's debug log.
func runLongDocs(t *testing.T, srv *sim.Server, batch bool, docs map[string]jobs.Options) (*audit.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	sub := submit.New(js, st)
	sc, err := schema.Compile([]byte(longSchema))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sub.RegisterSchema(ctx, "long-invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	const provider = "openai:sim-fleet"
	model, pool, err := submit.ResolveProvider(provider)
	if err != nil {
		t.Fatal(err)
	}
	for id, opts := range docs {
		job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: "chunk", Options: opts}
		sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
			return fn(submit.Doc{ID: id, Source: "generated", Text: longDocument()})
		}, nil)
		if err != nil || sum.Queued != 1 {
			t.Fatalf("submit %s: %+v, %v", id, sum, err)
		}
	}

	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := worker.Pool{Name: pool, Concurrency: 8, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: 8}, ratelimit.WithLogger(quietLogger()))}
	if batch {
		p = worker.Pool{Name: pool, Concurrency: 8, Batch: &batchpool.Settings{
			MaxRequests: 100, MaxWait: 100 * time.Millisecond, PollMin: 20 * time.Millisecond, PollMax: 100 * time.Millisecond, Lease: time.Second}}
	}
	var logs lockedBuffer
	w, err := worker.New(js, writer, fastEngine(),
		worker.WithID("chunk-worker"), worker.WithPools(p), worker.WithBatchStore(st),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 100}),
		worker.WithProviders(fleettest.Provider(srv)),
		worker.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		worker.WithPullWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitSettled(t, st, len(docs), 2*time.Minute)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return st, logs.String()
}

// chunkFacts are what the audit says about one document's extraction.
type chunkFacts struct {
	status              string
	attempts, withChunk int64 // attempt rows, those with a chunk_index
	parts               int64 // distinct chunk_index values
	located             bool  // every chunk_index has its chunk_start < chunk_end
	items               int   // items of the stored result
}

func readChunkFacts(t *testing.T, st *audit.Store, doc string) chunkFacts {
	t.Helper()
	ctx := context.Background()
	var f chunkFacts
	if err := st.Pool().QueryRow(ctx, `SELECT status FROM jobs WHERE document_id = $1`, doc).Scan(&f.status); err != nil {
		t.Fatalf("job of %s: %v", doc, err)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), count(chunk_index), count(DISTINCT chunk_index),
		coalesce(bool_and(chunk_start < chunk_end) FILTER (WHERE chunk_index IS NOT NULL), true)
		FROM attempts WHERE document_id = $1`, doc).Scan(&f.attempts, &f.withChunk, &f.parts, &f.located); err != nil {
		t.Fatal(err)
	}
	var value []byte
	if err := st.Pool().QueryRow(ctx, `SELECT value FROM results WHERE document_id = $1`, doc).Scan(&value); err == nil {
		var v struct{ Items []json.RawMessage }
		if err := json.Unmarshal(value, &v); err != nil {
			t.Fatalf("result of %s: %v", doc, err)
		}
		f.items = len(v.Items)
	}
	return f
}

// TestFleetChunkOption: a job submitted with a chunk size (submit --chunk
// 300) is split by an online pool's worker, every attempt audited with its
// part, and the parts' items merge into one valid result; the same
// document without the option goes whole (the model's context window is
// unknown, so auto sends it whole).
func TestFleetChunkOption(t *testing.T) {
	srv := sim.New(fleettest.CleanProfile(), sim.WithSeed(11))
	defer srv.Close()
	st, _ := runLongDocs(t, srv, false, map[string]jobs.Options{
		"chunked": {Chunking: "300"},
		"whole":   {},
	})

	c := readChunkFacts(t, st, "chunked")
	t.Logf("chunked: %+v", c)
	if c.status != "ok" || c.items != longItems {
		t.Errorf("chunked document: status %q with %d items, want ok with %d", c.status, c.items, longItems)
	}
	if c.parts < 5 || c.withChunk != c.attempts || !c.located {
		t.Errorf("chunked document: %d attempts, %d with a chunk_index over %d parts (offsets in order: %v); want every attempt in one of at least 5 parts",
			c.attempts, c.withChunk, c.parts, c.located)
	}
	w := readChunkFacts(t, st, "whole")
	if w.status != "ok" || w.items != longItems || w.attempts != 1 || w.withChunk != 0 {
		t.Errorf("document without --chunk: %+v, want one attempt without a part and %d items", w, longItems)
	}
}

// TestBatchPoolSendsChunkedJobWhole: a batch pool's job submitted with a
// chunk size is extracted whole: a batch job's calls are told apart only by
// their order, so the worker overrides the job's chunking to off (and says
// so once, at debug level). One request in one round, no part in the audit.
func TestBatchPoolSendsChunkedJobWhole(t *testing.T) {
	prof := fleettest.CleanProfile()
	prof.Batch = sim.BatchProfile{Delay: 50 * time.Millisecond}
	srv := sim.New(prof, sim.WithSeed(12))
	defer srv.Close()
	st, logs := runLongDocs(t, srv, true, map[string]jobs.Options{"chunked": {Chunking: "300"}})

	c := readChunkFacts(t, st, "chunked")
	f := readBatchFacts(t, st)
	stats := srv.Stats()
	t.Logf("chunked in a batch pool: %+v; %d batches, %d lines, highest round %d", c, stats.Batches, stats.BatchRequests, f.rounds)
	if c.status != "ok" || c.items != longItems {
		t.Errorf("status %q with %d items, want ok with %d", c.status, c.items, longItems)
	}
	if stats.BatchRequests != 1 || f.rounds != 1 || c.attempts != 1 || c.withChunk != 0 {
		t.Errorf("%d batch lines over %d rounds, %d attempts (%d with a part): want the document whole, one request in one round",
			stats.BatchRequests, f.rounds, c.attempts, c.withChunk)
	}
	const why = "chunking off for this job: a batch pool sends documents whole"
	if n := strings.Count(logs, why); n != 1 || !strings.Contains(logs, "chunking=300") {
		t.Errorf("the worker logged %q %d times (want once, with chunking=300):\n%s", why, n, logs)
	}
}
