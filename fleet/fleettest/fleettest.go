// Package fleettest starts what a fleet needs in a test: an embedded NATS
// server with JetStream and a throwaway PostgreSQL database, migrated, so
// that fleet.Serve and fleet.Dial work against them. It is for tests of
// your own worker binary and submitters, beside extractqtest's scripted
// providers.
package fleettest

import (
	"context"
	"testing"
	"time"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/internal/worker"
)

// Fleet is the servers of a test fleet.
type Fleet struct {
	// NATSURL is the embedded server's client URL.
	NATSURL string
	// DatabaseURL is the throwaway database, dropped when the test ends.
	DatabaseURL string
}

// Start starts an embedded JetStream server (in a temporary directory) and
// creates a database on the PostgreSQL server of EXTRACTQ_TEST_PG_ADMIN_URL
// (default postgres://postgres@127.0.0.1:5432/postgres), both removed when
// the test ends, and migrates them as `worker migrate` does. The test fails
// when PostgreSQL cannot be reached: it never skips silently.
func Start(tb testing.TB) Fleet {
	tb.Helper()
	f := Fleet{NATSURL: jobstest.Server(tb), DatabaseURL: testenv.Database(tb)}
	ctx := context.Background()
	nc, js := jobstest.Connect(tb, f.NATSURL)
	defer nc.Close()
	st, err := audit.Open(ctx, f.DatabaseURL)
	if err != nil {
		tb.Fatalf("fleettest: %v", err)
	}
	defer st.Close()
	if err := worker.Migrate(ctx, js, st, 1); err != nil {
		tb.Fatalf("fleettest: migrate: %v", err)
	}
	return f
}

// Config is fleet.DefaultConfig on this fleet's servers, for a test: no
// listener, errors-only logs, a one-second shutdown grace, and pools
// (e.g. "myco:small-1=concurrency:2").
func (f Fleet) Config(pools ...string) fleet.Config {
	cfg := fleet.DefaultConfig()
	cfg.NATSURL, cfg.DatabaseURL, cfg.Listen, cfg.LogLevel = f.NATSURL, f.DatabaseURL, "", "error"
	cfg.Pools = pools
	cfg.Grace = time.Second
	return cfg
}

// ServeFunc runs a worker until ctx ends: fleet.Serve, or your main's own
// function that calls it with your providers and options.
type ServeFunc func(ctx context.Context, cfg fleet.Config, opts ...fleet.Option) error

// Serve runs serve with cfg and opts until the test ends, and returns once
// the worker pulls jobs. The test fails when the worker stops before it is
// ready or is not ready within 30 s, and (at its end) when the worker
// returns an error once stopped.
func Serve(tb testing.TB, serve ServeFunc, cfg fleet.Config, opts ...fleet.Option) {
	tb.Helper()
	ctx, stop := context.WithCancel(context.Background())
	ready, served := make(chan struct{}), make(chan error, 1)
	go func() {
		served <- serve(ctx, cfg, append(opts[:len(opts):len(opts)], fleet.WithReady(func() { close(ready) }))...)
	}()
	select {
	case <-ready:
	case err := <-served:
		stop()
		tb.Fatalf("fleettest: the worker stopped before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		stop()
		<-served
		tb.Fatal("fleettest: the worker was not ready within 30s")
	}
	tb.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			tb.Errorf("fleettest: the worker, stopped at the test's end: %v", err)
		}
	})
}
