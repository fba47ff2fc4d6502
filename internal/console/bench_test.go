package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/testenv"
)

// BenchmarkConsolePages renders the overview and a run's first page on an
// audit holding a run of 1,000,000 attempts (BENCH_ATTEMPTS to change it)
// over 781,250 jobs (7,813 failed documents resubmitted and extracted),
// beside 30 small runs, seeded with COPY through the
// migrated schema (so the run counters are kept by their trigger, as in
// production). Each op is one whole request through the handler: queries,
// template, response. Target: < 200 ms for the overview and a run's first
// page (also filtered by outcome or by an id prefix); a search anywhere in
// the ids ("contains") reads the run's ids until a page is full.
//
//	go test -run '^$' -bench ConsolePages -benchtime 20x ./internal/console/
func BenchmarkConsolePages(b *testing.B) {
	attempts := 1_000_000
	if v := os.Getenv("BENCH_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("BENCH_ATTEMPTS=%q: want a number of at least 1000", v)
		}
		attempts = n
	}
	ctx := context.Background()
	dbURL, drop, err := testenv.TempDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drop() })
	store, err := audit.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	if err := store.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	nJobs := seedBigRun(b, store, "big", attempts)
	b.Logf("seeded %d attempts over %d jobs in %s", attempts, nJobs, time.Since(start).Round(time.Second))

	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: b.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		b.Fatal("embedded nats-server did not start")
	}
	b.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		b.Fatal(err)
	}
	// httptest's requests are for example.com.
	srv, err := New(Config{Store: store, JS: js, AllowedHosts: []string{"example.com"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	// The run page lists each document's latest job (its outcome filter
	// by that job); "every-job" pages are the same with jobs=all, the list
	// as it was before (every job of the run, superseded ones too): the
	// before and after of the latest-job filter in one run. "mid" pages
	// start half-way through the run, from a next-page cursor.
	mid := "&after=" + encodeCursor(fmt.Sprintf("doc-%08d", nJobs/2), "")
	for _, page := range []struct{ name, path string }{
		{"overview", "/"},
		{"run-first-page-every-job", "/run?name=big&jobs=all"},
		{"run-first-page", "/run?name=big"},
		{"run-failed-first-page-every-job", "/run?name=big&outcome=failed&jobs=all"},
		{"run-failed-first-page", "/run?name=big&outcome=failed"},
		{"run-failed-mid-page-every-job", "/run?name=big&outcome=failed&jobs=all" + mid},
		{"run-failed-mid-page", "/run?name=big&outcome=failed" + mid},
		{"run-ok-mid-page", "/run?name=big&outcome=ok" + mid},
		{"run-id-prefix", "/run?name=big&q=doc-0009"},
		{"run-id-prefix-failed", "/run?name=big&outcome=failed&q=doc-0009"},
		{"run-id-contains", "/run?name=big&q=0999&match=contains"},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, page.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d\n%s", page.path, rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
		})
	}
}

// seedBigRun COPYs a run of n attempts (1.43 per job on average: most jobs
// valid at once, some after re-asks, 2% dead-lettered) into a migrated
// audit database, with half its failed documents resubmitted and 30 small
// runs beside it, and returns the big run's first jobs' count.
func seedBigRun(b *testing.B, store *audit.Store, run string, n int) int {
	ctx := context.Background()
	conn, err := store.Pool().Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	t0 := time.Now().Add(-3 * time.Hour).UTC()
	type job struct {
		id, doc, status string
		attempts        int
	}
	var all []job
	total := 0
	for i := 0; total < n; i++ {
		k := 1
		switch {
		case i%50 == 0:
			k = 3 // exhausted after two re-asks
		case i%4 == 0:
			k = 2
		}
		k = min(k, n-total)
		status := "ok"
		if i%50 == 0 {
			status = "exhausted"
		} else if i%97 == 0 {
			status = "unextractable"
		}
		all = append(all, job{id: fmt.Sprintf("job-%s-%08d", run, i), doc: fmt.Sprintf("doc-%08d", i), status: status, attempts: k})
		total += k
	}
	raw := `{"invoice_number":"INV-0001","vendor":"Vendor 12 GmbH","total":"1,234.50","currency":"EUR","paid":true,"items":[{"name":"widget","qty":2}]}`
	violations := `[{"pointer":"/total","keyword":"type","message":"must be number, not string","value":"\"1,234.50\""}]`
	jobCols := []string{"job_id", "document_id", "run", "schema_name", "schema_version", "schema_fingerprint", "provider", "model", "pool",
		"status", "reason", "deliveries", "attempts", "prompt_tokens", "completion_tokens", "worker_id", "started_at", "finished_at"}
	i := 0
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= len(all) {
			return nil, nil
		}
		j := all[i]
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		reason := ""
		if j.status != "ok" {
			reason = "no valid answer after 3 attempts; the last failed at /total: must be number, not string"
		}
		i++
		return []any{j.id, j.doc, run, "invoice", 1 + i%2, "fp", "openai:gpt-4o-mini", "gpt-4o-mini", "openai_gpt-4o-mini",
			j.status, reason, 1, j.attempts, 420 * j.attempts, 60 * j.attempts, "w1", at, at.Add(800 * time.Millisecond)}, nil
	})
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"jobs"}, jobCols, rows); err != nil {
		b.Fatal(err)
	}
	attCols := []string{"job_id", "delivery", "seq", "started_at", "n", "document_id", "run", "schema_name", "schema_version", "provider",
		"model", "mode", "prompt_chars", "prompt_tokens", "completion_tokens", "latency_ms", "finish_reason", "raw_response",
		"value", "repairs", "violations", "error_class", "error_message", "transport_retries", "worker_id"}
	ji, ai := 0, 0
	arows := pgx.CopyFromFunc(func() ([]any, error) {
		for ji < len(all) && ai >= all[ji].attempts {
			ji, ai = ji+1, 0
		}
		if ji >= len(all) {
			return nil, nil
		}
		j := all[ji]
		ai++
		at := t0.Add(time.Duration(ji)*10*time.Millisecond + time.Duration(ai)*200*time.Millisecond)
		last := ai == j.attempts
		var viol any
		class := ""
		if !last || j.status != "ok" {
			viol, class = violations, "schema"
		}
		return []any{j.id, 1, ai, at, ai, j.doc, run, "invoice", 1, "openai:gpt-4o-mini", "gpt-4o-mini", "strict", 1800, 420, 60,
			180.0, "stop", raw, raw, nil, viol, class, "", 0, "w1"}, nil
	})
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"attempts"}, attCols, arows); err != nil {
		b.Fatal(err)
	}
	// Half the failed documents resubmitted an hour later and extracted,
	// so the run's totals are corrected by document.
	if _, err := conn.Exec(ctx, `INSERT INTO jobs (job_id, document_id, run, schema_name, schema_version, schema_fingerprint,
		provider, model, pool, status, attempts, prompt_tokens, completion_tokens, started_at, finished_at)
		SELECT job_id || '-again', document_id, run, schema_name, schema_version, schema_fingerprint, provider, model, pool,
		       'ok', 1, 420, 60, finished_at + interval '1 hour', finished_at + interval '1 hour 1 second'
		FROM jobs WHERE run = $1 AND status = 'exhausted' AND right(document_id, 2) = '00'`, run); err != nil {
		b.Fatal(err)
	}
	// Dead-letter references of the failed jobs, and 30 small runs.
	if _, err := conn.Exec(ctx, `INSERT INTO dead_letters (stream, seq, job_id, document_id, run, schema_name, schema_version, reason)
		SELECT 'EXTRACTQ_DLQ', row_number() OVER (), job_id, document_id, run, schema_name, schema_version, reason
		FROM jobs WHERE run = $1 AND status = 'exhausted'`, run); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO jobs (job_id, document_id, run, schema_name, schema_version, provider, model, pool, status,
		attempts, prompt_tokens, completion_tokens, started_at, finished_at)
		SELECT 'small-' || r || '-' || d, 'sdoc-' || d, 'nightly-' || lpad(r::text, 2, '0'), 'invoice', 1, 'sim:sloppy', 'sim', 'sim_sloppy',
		       CASE WHEN d % 10 = 0 THEN 'exhausted' ELSE 'ok' END, 1, 400, 60,
		       now() - make_interval(days => r) + make_interval(secs => d), now() - make_interval(days => r) + make_interval(secs => d + 1)
		FROM generate_series(1, 30) r, generate_series(1, 500) d`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return len(all)
}
