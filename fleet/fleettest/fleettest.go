// Package fleettest starts what a fleet needs in a test: an embedded NATS
// server with JetStream and a throwaway PostgreSQL database, migrated, so
// that fleet.Serve and fleet.Dial work against them. It is for tests of
// your own worker binary and submitters, beside extractqtest's scripted
// providers.
package fleettest

import (
	"context"
	"testing"

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
