// Package workertest runs an in-process fleet in a test: an embedded
// JetStream server with extractq's streams, a throwaway migrated audit
// database, and workers on them with the engine and providers the test
// gives. It is the set-up the command and end-to-end tests share; a test
// of a user's own worker binary uses the public fleet/fleettest instead.
package workertest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
)

// Fleet is a test's servers: both are removed when the test ends.
type Fleet struct {
	NATSURL, DatabaseURL string
	JS                   jetstream.JetStream
	Store                *audit.Store
}

// New starts an embedded JetStream server with the job streams and
// creates a migrated audit database (failing the test, never skipping,
// when PostgreSQL is unreachable).
func New(t testing.TB) *Fleet {
	t.Helper()
	st, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	_, js := jobstest.Connect(t, natsURL)
	if err := jobs.EnsureStreams(context.Background(), js); err != nil {
		t.Fatal(err)
	}
	return &Fleet{NATSURL: natsURL, DatabaseURL: dbURL, JS: js, Store: st}
}

// Worker runs a worker with engine serving pool (concurrency jobs at
// once), its providers built by providers, pulling every 200ms and
// logging nothing, until the test ends; opts come after those and may
// override them. stop ends it earlier (and may be called again).
func (f *Fleet) Worker(t testing.TB, engine worker.Engine, pool string, concurrency int, providers func(string) (llm.Provider, error), opts ...worker.Option) (stop func()) {
	t.Helper()
	writer, err := f.Store.NewWriter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := append([]worker.Option{
		worker.WithPools(worker.Pool{Name: pool, Concurrency: concurrency}),
		worker.WithPullWait(200 * time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		worker.WithProviders(providers),
	}, opts...)
	w, err := worker.New(f.JS, writer, engine, all...)
	if err != nil {
		_ = writer.Close(context.Background())
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-ran
		_ = writer.Close(context.Background())
	}
	t.Cleanup(stop)
	return stop
}
