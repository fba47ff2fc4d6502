package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/extractq/extractq/schema"
)

var testStart = time.Now().UTC().Truncate(time.Millisecond)

// testRecord builds a plausible record: n attempts, the last one valid
// when outcome is ok.
func testRecord(job, doc string, delivery, n int, outcome llm.Outcome) *Record {
	rec := &Record{
		JobID: job, DocumentID: doc, DocumentHash: HashText(doc), Run: "run1",
		SchemaName: "invoice", SchemaVersion: 1, SchemaFingerprint: "fp1",
		Provider: "sim:clean", Model: "sim-1", Pool: "default", Delivery: delivery, WorkerID: "w1",
		StartedAt: testStart, FinishedAt: testStart.Add(time.Second), Outcome: outcome, Final: true,
	}
	for i := 1; i <= n; i++ {
		a := llm.Attempt{
			N: i, Provider: "sim:clean", Model: "sim-1", Mode: llm.ModeJSON,
			StartedAt: testStart.Add(time.Duration(i) * time.Millisecond), Latency: time.Duration(100+10*i) * time.Millisecond,
			PromptChars: 900, Usage: llm.Usage{PromptTokens: 300, CompletionTokens: 40}, FinishReason: llm.FinishStop,
			Raw: `{"total": "12.5", "items": [{"sku": "A-1", "qty": 2}]}`,
		}
		if i < n || outcome != llm.OutcomeOK {
			a.Class = llm.ClassSchema
			a.Repairs = []llm.Repair{{Kind: "trailing_comma", Where: "@41"}}
			a.Violations = []schema.Violation{{Pointer: "/total", Keyword: "type", Message: "want number", Value: `"12.5"`, Want: []string{"number"}}}
		} else {
			a.Value = json.RawMessage(`{"total":12.5}`)
		}
		rec.Attempts = append(rec.Attempts, a)
		rec.Usage = rec.Usage.Add(a.Usage)
	}
	if outcome == llm.OutcomeOK {
		rec.Value = json.RawMessage(`{"total":12.5,"items":[{"sku":"A-1","qty":2}]}`)
	} else {
		rec.Reason = "still invalid after 3 attempts"
	}
	return rec
}

func newTestWriter(t *testing.T, s *Store, opts ...WriterOption) *GroupWriter {
	t.Helper()
	w, err := s.NewWriter(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(context.Background()); err != nil {
			t.Errorf("close writer: %v", err)
		}
	})
	return w
}

type counts struct{ jobs, attempts, results, dead int }

func countRows(t *testing.T, s *Store) counts {
	t.Helper()
	var c counts
	err := s.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM attempts),
		(SELECT count(*) FROM results), (SELECT count(*) FROM dead_letters)`).Scan(&c.jobs, &c.attempts, &c.results, &c.dead)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWriterConcurrent(t *testing.T) {
	const goroutines, perG, attempts = 32, 200, 3
	s := newTestStore(t)
	w := newTestWriter(t, s, WithQueueSize(256), WithMaxBatchRows(1000))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				outcome := llm.OutcomeOK
				if i%4 == 3 {
					outcome = llm.OutcomeExhausted
				}
				rec := testRecord(fmt.Sprintf("job-%d-%d", g, i), fmt.Sprintf("doc-%d-%d", g, i), 1, attempts, outcome)
				if outcome != llm.OutcomeOK {
					rec.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: uint64(g*perG + i + 1), Reason: rec.Reason}
				}
				if err := w.Write(context.Background(), rec); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := goroutines * perG
	want := counts{jobs: total, attempts: total * attempts, results: total * 3 / 4, dead: total / 4}
	if got := countRows(t, s); got != want {
		t.Fatalf("rows = %+v, want %+v", got, want)
	}
	st := w.Stats()
	if st.Records != uint64(total) || st.AttemptRows != uint64(total*attempts) || st.FlushErrors != 0 {
		t.Errorf("stats = %+v, want %d records, %d attempt rows, no errors", st, total, total*attempts)
	}
	if st.Batches == 0 || st.Batches >= uint64(total) {
		t.Errorf("batches = %d: want group commit (more than 0, fewer than %d records)", st.Batches, total)
	}
}

func TestWriterRedelivery(t *testing.T) {
	ok := func(job string, delivery int) *Record {
		return testRecord(job, "doc-"+job, delivery, 2, llm.OutcomeOK)
	}
	open := func(job string, delivery int) *Record {
		r := testRecord(job, "doc-"+job, delivery, 1, llm.OutcomeTransport)
		r.Final = false
		return r
	}
	tests := []struct {
		name       string
		steps      [][]*Record // each step's records are written concurrently
		want       counts
		wantStatus string
	}{
		{"same record twice", [][]*Record{{ok("a", 1)}, {ok("a", 1)}}, counts{1, 2, 1, 0}, "ok"},
		{"same record twice in one batch", [][]*Record{{ok("a", 1), ok("a", 1)}}, counts{1, 2, 1, 0}, "ok"},
		{"open then final delivery", [][]*Record{{open("a", 1)}, {ok("a", 2)}}, counts{1, 3, 1, 0}, "ok"},
		{"late write of an older delivery", [][]*Record{{ok("a", 2)}, {open("a", 1)}}, counts{1, 3, 1, 0}, "ok"},
		{"older and newer delivery together", [][]*Record{{ok("a", 2), open("a", 1)}}, counts{1, 3, 1, 0}, "ok"},
		{"redelivered final job, new delivery", [][]*Record{{ok("a", 1)}, {ok("a", 2)}}, counts{1, 4, 1, 0}, "ok"},
		{"open delivery only", [][]*Record{{open("a", 1)}, {open("a", 1)}}, counts{1, 1, 0, 0}, StatusRetrying},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			w := newTestWriter(t, s, WithMaxDelay(50*time.Millisecond))
			for _, step := range tt.steps {
				var wg sync.WaitGroup
				for _, rec := range step {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := w.Write(context.Background(), rec); err != nil {
							t.Error(err)
						}
					}()
				}
				wg.Wait()
			}
			if got := countRows(t, s); got != tt.want {
				t.Errorf("rows = %+v, want %+v", got, tt.want)
			}
			var status string
			if err := s.pool.QueryRow(context.Background(), "SELECT status FROM jobs WHERE job_id = 'a'").Scan(&status); err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus {
				t.Errorf("job status = %q, want %q", status, tt.wantStatus)
			}
		})
	}
}

func TestWriterBackPressureAndRecovery(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s, WithQueueSize(2), WithFlushers(1), WithMaxDelay(time.Millisecond))
	// Hold a lock that every flush needs: Postgres is "slow".
	lock, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, "LOCK TABLE jobs IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	// Writers beyond the flusher's batch and the queue cannot even queue.
	var wg sync.WaitGroup
	results := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			results <- w.Write(wctx, testRecord(fmt.Sprint("bp-", i), fmt.Sprint("doc-", i), 1, 1, llm.OutcomeOK))
		}()
	}
	wg.Wait()
	close(results)
	for err := range results {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Write while Postgres is blocked: got %v, want context.DeadlineExceeded", err)
		}
	}
	if st := w.Stats(); st.Queued > st.QueueCapacity || st.QueueCapacity != 2 {
		t.Errorf("queue %d of %d: unbounded", st.Queued, st.QueueCapacity)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Once Postgres moves again, new writes succeed.
	if err := w.Write(ctx, testRecord("after", "doc-after", 1, 1, llm.OutcomeOK)); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE job_id = 'after'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("job after recovery: n=%d err=%v", n, err)
	}
}

func TestWriterFailsFastWhenPostgresIsDown(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &Store{pool: pool, now: time.Now}
	w := mustStart(t, s)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = w.Write(wctx, testRecord("down", "doc-down", 1, 1, llm.OutcomeOK))
	if err == nil || wctx.Err() != nil {
		t.Fatalf("Write with Postgres down: got %v (ctx %v), want the writer's own error before the caller's deadline", err, wctx.Err())
	}
	if st := w.Stats(); st.FlushErrors == 0 || st.Records != 0 {
		t.Errorf("stats %+v: want a flush error and no durable record", st)
	}
}

// mustStart starts a writer without NewWriter's partition check, for a
// store whose database is unreachable.
func mustStart(t *testing.T, s *Store) *GroupWriter {
	t.Helper()
	cfg := defaultWriterConfig()
	cfg.flushTimeout = 5 * time.Second
	w := startWriter(context.Background(), s, cfg)
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}

func TestWriterCloseFlushesAndRefuses(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	// Nothing flushes before Close: the batch is neither full nor old.
	w, err := s.NewWriter(ctx, WithMaxDelay(time.Hour), WithMaxBatchRows(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	durable := 0
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.Write(ctx, testRecord(fmt.Sprint("c", i), fmt.Sprint("d", i), 1, 1, llm.OutcomeOK))
			switch {
			case err == nil:
				mu.Lock()
				durable++
				mu.Unlock()
			case !errors.Is(err, ErrWriterClosed): // a Write racing Close may be refused, never lost
				t.Error(err)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if got := countRows(t, s).jobs; got != 0 {
		t.Fatalf("%d jobs flushed before Close with an hour's delay", got)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := countRows(t, s).jobs; got != durable || durable == 0 {
		t.Errorf("jobs after Close = %d, Writes that returned nil = %d: want equal and > 0", got, durable)
	}
	if err := w.Write(ctx, testRecord("late", "d", 1, 1, llm.OutcomeOK)); !errors.Is(err, ErrWriterClosed) {
		t.Errorf("Write after Close: got %v, want ErrWriterClosed", err)
	}
}

func TestWriterRejectsInvalidRecords(t *testing.T) {
	s := newTestStore(t)
	w := newTestWriter(t, s)
	noOutcome := testRecord("j", "d", 1, 1, llm.OutcomeOK)
	noOutcome.Outcome = ""
	badValue := testRecord("j", "d", 1, 1, llm.OutcomeOK)
	badValue.Value = json.RawMessage(`{"total":`)
	tests := []struct {
		name string
		rec  *Record
	}{
		{"nil", nil},
		{"no job id", &Record{DocumentID: "d", Final: true, Outcome: llm.OutcomeOK}},
		{"no document id", &Record{JobID: "j", Final: true, Outcome: llm.OutcomeOK}},
		{"final without outcome", noOutcome},
		{"ok with a value that is not JSON", badValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := w.Write(context.Background(), tt.rec); !errors.Is(err, ErrInvalidRecord) {
				t.Errorf("got %v, want ErrInvalidRecord", err)
			}
		})
	}
	if got := countRows(t, s); got != (counts{}) {
		t.Errorf("invalid records wrote rows: %+v", got)
	}
}

// TestWriterStoresEveryColumn reads back every column the writer encodes
// itself (binary COPY): a field in the wrong order or of the wrong width
// shows up here.
func TestWriterStoresEveryColumn(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	rec := testRecord("cols", "doc-cols", 2, 2, llm.OutcomeOK)
	rec.Attempts[0].TransportRetries = 3
	rec.Attempts[0].Error = "boom: Authorization: Bearer sk-abcdefghijklmnop"
	rec.DeadLetter = &DeadLetter{Stream: "DLQ", Seq: 1 << 40, Reason: "why"}
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	var got []string
	rows, err := s.pool.Query(ctx, `SELECT concat_ws('|', job_id, delivery, seq, started_at = $1, n, document_id, run, schema_name, schema_version,
		provider, model, mode, prompt_chars, prompt_tokens, completion_tokens, latency_ms, finish_reason, raw_response,
		value, repairs->0->>'kind', violations->0->>'pointer', error_class, error_message, transport_retries, worker_id)
		FROM attempts ORDER BY seq`, testStart.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT concat_ws('|', job_id, document_id, run, schema_name, schema_version, schema_fingerprint, provider, model, pool, status,
			reason, deliveries, attempts, prompt_tokens, completion_tokens, worker_id, started_at = $1, finished_at - started_at) FROM jobs`,
		`SELECT concat_ws('|', document_id, schema_fingerprint, model, schema_name, schema_version, provider, value, attempts,
			prompt_tokens, completion_tokens, run, job_id, $1::timestamptz IS NOT NULL) FROM results`,
		`SELECT concat_ws('|', stream, seq, job_id, document_id, run, schema_name, schema_version, reason, $1::timestamptz IS NOT NULL) FROM dead_letters`,
	} {
		var r string
		if err := s.pool.QueryRow(ctx, q, testStart).Scan(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	// concat_ws skips NULLs (attempt 1's value, attempt 2's repairs and violations).
	want := []string{
		`cols|2|1|t|1|doc-cols|run1|invoice|1|sim:clean|sim-1|json|900|300|40|110|stop|{"total": "12.5", "items": [{"sku": "A-1", "qty": 2}]}|trailing_comma|/total|schema|boom: Authorization: [REDACTED] [REDACTED]|3|w1`,
		`cols|2|2|f|2|doc-cols|run1|invoice|1|sim:clean|sim-1|json|900|300|40|120|stop|{"total": "12.5", "items": [{"sku": "A-1", "qty": 2}]}|{"total": 12.5}|||0|w1`,
		`cols|doc-cols|run1|invoice|1|fp1|sim:clean|sim-1|default|ok||2|2|600|80|w1|t|00:00:01`,
		`doc-cols|fp1|sim-1|invoice|1|sim:clean|{"items": [{"qty": 2, "sku": "A-1"}], "total": 12.5}|2|600|80|run1|cols|t`,
		`DLQ|1099511627776|cols|doc-cols|run1|invoice|1|why|t`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// TestWriterDropsKilledConnections kills the writer's server connections
// between flushes and mid-run: the failed flushes' Writes get an error,
// rewriting the same records succeeds on fresh connections, and nothing is
// stored twice.
func TestWriterDropsKilledConnections(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s, WithFlushTimeout(5*time.Second))
	kill := func() {
		// The pool may hand this query a connection an earlier kill
		// terminated: it fails once, and a fresh connection runs it. (It
		// runs in a worker goroutine: t.Error, never t.Fatal.)
		var err error
		for range 3 {
			if _, err = s.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`); err == nil {
				return
			}
		}
		t.Error(err)
	}
	const workers, perWorker = 8, 40
	var wg sync.WaitGroup
	var failures sync.Map
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				rec := testRecord(fmt.Sprintf("k-%d-%d", g, i), fmt.Sprintf("doc-%d-%d", g, i), 1, 2, llm.OutcomeOK)
				for try := 0; ; try++ {
					err := w.Write(ctx, rec)
					if err == nil {
						break
					}
					failures.Store(rec.JobID, err)
					if try == 20 {
						t.Errorf("record %s never written: %v", rec.JobID, err)
						return
					}
				}
				if i%10 == 5 && g == 0 {
					kill()
				}
			}
		}()
	}
	wg.Wait()
	want := counts{jobs: workers * perWorker, attempts: workers * perWorker * 2, results: workers * perWorker}
	if got := countRows(t, s); got != want {
		t.Errorf("rows = %+v, want exactly %+v", got, want)
	}
	n := 0
	failures.Range(func(_, _ any) bool { n++; return true })
	t.Logf("%d records needed a rewrite; stats %+v", n, w.Stats())
	if w.Stats().FlushErrors == 0 {
		t.Error("no flush failed: the killed connections were never used, the test proves nothing")
	}
}

// TestWriterStoresSources: a result's sources are stored with it, in the
// same flush, on the direct and the duplicate (staged) path, read back
// whole by History; a result without sources stores NULL; snippets that
// PostgreSQL cannot hold (NUL) are made storable instead of failing the
// record.
func TestWriterStoresSources(t *testing.T) {
	t.Parallel()
	page := map[string]llm.Source{
		"/total": {Start: 812, End: 820, Match: "exact", Page: 2, PageLabel: "ii", PageStart: 95, PageEnd: 103,
			Box: &llm.Box{X0: 72, Y0: 640, X1: 540, Y1: 652}, Snippet: "Total due: 1,234.50 EUR"},
		"/items/0/sku": {Start: 300, End: 303, Chunk: 1, Match: "normalized", Page: 1, PageStart: 300, PageEnd: 303, Snippet: "…item A-1 two"},
	}
	nul := map[string]llm.Source{"/total": {Start: 1, End: 2, Match: "exact", Snippet: "a\x00b"}}
	tests := []struct {
		name    string
		sources map[string]llm.Source
		writes  int // the same record written this many times (the second takes the staged path)
		want    map[string]llm.Source
		null    bool
	}{
		{"pages, boxes and snippets", page, 1, page, false},
		{"written again: the duplicate path keeps them", page, 2, page, false},
		{"no sources: NULL", nil, 1, nil, true},
		{"a NUL in a snippet is replaced", nul, 1, map[string]llm.Source{"/total": {Start: 1, End: 2, Match: "exact", Snippet: "a\uFFFDb"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newTestStore(t)
			w := newTestWriter(t, s)
			rec := testRecord("src", "doc-src", 1, 1, llm.OutcomeOK)
			rec.Sources = tt.sources
			for range tt.writes {
				if err := w.Write(ctx, rec); err != nil {
					t.Fatal(err)
				}
			}
			var null bool
			if err := s.pool.QueryRow(ctx, "SELECT sources IS NULL FROM results").Scan(&null); err != nil {
				t.Fatal(err)
			}
			if null != tt.null {
				t.Errorf("sources IS NULL = %v, want %v", null, tt.null)
			}
			h, err := s.History(ctx, "doc-src")
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Results) != 1 {
				t.Fatalf("%d results, want 1", len(h.Results))
			}
			if got := h.Results[0].Sources; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sources read back:\n got %+v\nwant %+v", got, tt.want)
			}
			if w.Stats().DupFallbacks != uint64(tt.writes-1) {
				t.Errorf("duplicate fallbacks = %d, want %d", w.Stats().DupFallbacks, tt.writes-1)
			}
		})
	}
}
