package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

// TestRunServesMetrics runs `worker run` against an embedded NATS server,
// the local Postgres and the in-process simulator, queues one document and
// checks that the worker's own listener serves /readyz and, on /metrics,
// the job counted as ok and the scrape-time gauges, and that the job's
// result and its run's end are announced.
func TestRunServesMetrics(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.Database(t)
	natsURL := jobstest.Server(t)
	addr := freeAddr(t)
	t.Setenv("EXTRACTQ_EVENTS", "true") // and the job's result is announced
	_, js := jobstest.Connect(t, natsURL)

	base := runWorker(t, natsURL, dbURL, addr, "--log-level", "warn", "--pool", "sim:clean=concurrency:2", "--grace", "5s")
	st, sum := queueOne(t, natsURL, dbURL, "sim:clean", "clean", "metrics")
	if _, err := submit.Follow(ctx, st, sum.JobIDs, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}

	eventually(t, "the result is announced on "+events.Stream, func() bool {
		s, err := js.Stream(ctx, events.Stream)
		if err != nil {
			return false
		}
		m, err := s.GetLastMsgForSubject(ctx, events.Subject("metrics", events.KindResult))
		return err == nil && strings.Contains(string(m.Data), `"document_id":"doc-1"`)
	})

	// The run, counted and sealed as a submit without --wait leaves it, is
	// announced by the worker's sweeper.
	if _, err := st.CountRunJobs(ctx, "metrics", []string{"metrics-1"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SealRun(ctx, "metrics"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the run is announced done on "+events.Stream, func() bool {
		s, err := js.Stream(ctx, events.Stream)
		if err != nil {
			return false
		}
		m, err := s.GetLastMsgForSubject(ctx, events.Subject("metrics", events.KindDone))
		return err == nil && strings.Contains(string(m.Data), `"total":1,"ok":1`)
	})

	var body string
	eventually(t, "/metrics counts the job", func() bool {
		_, body = get(base + "/metrics")
		return strings.Contains(body, `extractq_jobs_total{outcome="ok",pool="sim_clean"} 1`)
	})
	for _, want := range []string{
		`extractq_attempts_total{class="ok",pool="sim_clean"}`,
		`extractq_pool_slots_limit{pool="sim_clean"}`,
		`extractq_consumer_lag{pool="sim_clean"} 0`,
		`extractq_jobs_in_flight{pool="sim_clean"} 0`,
		`extractq_dlq_messages 0`,
		`extractq_audit_flush_rows_count`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRunAuditLinger: the worker's audit transactions wait
// EXTRACTQ_AUDIT_LINGER after their first job for others, so jobs that
// finish within it are made durable together. Eight documents answered at
// once by the simulator are one transaction under a linger of a second;
// without it the first job's transaction starts alone.
func TestRunAuditLinger(t *testing.T) {
	dbURL := testenv.Database(t)
	natsURL := jobstest.Server(t)
	addr := freeAddr(t)
	t.Setenv("EXTRACTQ_AUDIT_LINGER", "1s")
	base := runWorker(t, natsURL, dbURL, addr, "--log-level", "warn", "--pool", "sim:clean=concurrency:8", "--grace", "5s")
	st, sum := queueDocs(t, natsURL, dbURL, "sim:clean", "clean", "linger", 8)
	if _, err := submit.Follow(t.Context(), st, sum.JobIDs, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	var body string
	eventually(t, "/metrics counts the eight jobs", func() bool {
		_, body = get(base + "/metrics")
		return strings.Contains(body, `extractq_jobs_total{outcome="ok",pool="sim_clean"} 8`)
	})
	// One flush of 24 rows: each job's row, its attempt and its result.
	for _, want := range []string{"extractq_audit_flush_rows_count 1\n", "extractq_audit_flush_rows_sum 24\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q: the jobs were not made durable in one transaction", strings.TrimSpace(want))
		}
	}
}

// runWorker runs `worker run` with args on an embedded NATS server and a
// database, listening on addr, until the test ends (a SIGTERM-like cancel
// must return nil); it returns the endpoints' base URL once /readyz
// answers 200.
func runWorker(t *testing.T, natsURL, dbURL, addr string, args ...string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	cmd := newRunCmd()
	cmd.SetArgs(append([]string{"--nats-url", natsURL, "--database-url", dbURL, "--listen", addr, "--migrate", "--log-format", "json"}, args...))
	cmd.SetErr(io.Discard)
	go func() { ran <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("worker run after SIGTERM-like cancel: %v, want nil", err)
		}
	})
	base := "http://" + addr
	eventually(t, "/readyz answers 200", func() bool {
		code, _ := get(base + "/readyz")
		return code == http.StatusOK
	})
	return base
}

// queueOne registers the test schema and queues one document for provider
// (whose model identity is model) in run.
func queueOne(t *testing.T, natsURL, dbURL, provider, model, run string) (*audit.Store, submit.Summary) {
	t.Helper()
	return queueDocs(t, natsURL, dbURL, provider, model, run, 1)
}

// queueDocs is queueOne for n documents, doc-1 to doc-n.
func queueDocs(t *testing.T, natsURL, dbURL, provider, model, run string, n int) (*audit.Store, submit.Summary) {
	t.Helper()
	ctx := t.Context()
	st, err := audit.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	_, js := jobstest.Connect(t, natsURL, jetstream.WithPublishAsyncMaxPending(8))
	sub := submit.New(js, st)
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: jobs.PoolFor(provider), Run: run}
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for i := 1; i <= n; i++ {
			if err := fn(submit.Doc{ID: fmt.Sprintf("doc-%d", i), Source: "test", Text: fleettest.Document(i)}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil || sum.Queued != n {
		t.Fatalf("submit: %+v, %v", sum, err)
	}
	return st, sum
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls cond for up to 30s: the worker runs asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
