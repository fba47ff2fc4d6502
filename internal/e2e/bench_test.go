package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// BenchmarkWorkerDocument is the worker's per-document path with the full
// audit: b.N documents queued beforehand, then pulled, extracted by the
// in-process simulator (clean, zero latency), audited in Postgres and
// acked. allocs/op and B/op are per document and count the whole process:
// the embedded NATS server and the simulator's server side too, so they
// are an upper bound of the worker's own (doc/performance-cpu.md).
//
//	go test -run '^$' -bench WorkerDocument -benchmem -benchtime 5000x ./internal/e2e/
func BenchmarkWorkerDocument(b *testing.B) {
	ctx := context.Background()
	st, _ := audittest.Store(b)
	_, js := jobstest.Connect(b, jobstest.Server(b))
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		b.Fatal(err)
	}
	srv := sim.New(fleettest.CleanProfile())
	defer srv.Close()
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		b.Fatal(err)
	}
	sub := submit.New(js, st)
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		b.Fatal(err)
	}
	const provider = "openai:sim-fleet"
	pool := jobs.PoolFor(provider)
	sum, err := sub.Submit(ctx, submit.Job{Schema: ref, Provider: provider, Model: "sim-fleet", Pool: pool, Run: "bench"},
		func(fn func(submit.Doc) error) error {
			for i := range b.N {
				if err := fn(submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: fleettest.Document(i)}); err != nil {
					return err
				}
			}
			return nil
		}, nil)
	if err != nil || sum.Queued != b.N {
		b.Fatalf("submit: %+v, %v; want %d queued", sum, err, b.N)
	}
	writer, err := st.NewWriter(ctx)
	if err != nil {
		b.Fatal(err)
	}
	const conc = 64
	w, err := worker.New(js, writer, fastEngine(),
		worker.WithPools(worker.Pool{Name: pool, Concurrency: conc, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: conc}, ratelimit.WithLogger(quietLogger()))}),
		worker.WithProviders(fleettest.Provider(srv)), worker.WithLogger(quietLogger()), worker.WithAuditReader(st))
	if err != nil {
		b.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() { done <- w.Run(rctx) }()
	for deadline := time.Now().Add(30 * time.Minute); ; {
		var settled int
		if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&settled); err != nil {
			b.Fatal(err)
		}
		if settled >= b.N {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d settled", settled, b.N)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if c := w.Counts(); c.Done != int64(b.N) {
		b.Fatalf("worker counts %+v, want %d done", c, b.N)
	}
}
