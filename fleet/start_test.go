package fleet_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/fleet/fleettest"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

// TestServeWaitsForTheAuditDatabase: a worker started before its audit
// database answers (a fleet started beside Postgres in compose or
// Kubernetes, Postgres restarting) waits for it, then serves. Before,
// Serve failed at once; only the worker command waited (and connected
// twice to do so).
func TestServeWaitsForTheAuditDatabase(t *testing.T) {
	f := fleettest.Start(t)
	cfg := f.Config("fleettest-reader:v1=concurrency:2")
	const down = 1500 * time.Millisecond
	cfg.DatabaseURL = testenv.DatabaseLater(t, f.DatabaseURL, down)
	start := time.Now()
	fleettest.Serve(t, fleet.Serve, cfg)
	if took := time.Since(start); took < down {
		t.Errorf("ready after %s, before the database answered (%s)", took, down)
	}

	c, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Submit(t.Context(), fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1", Run: "late-db"},
		slices.Values([]fleet.Document{{ID: "a", Text: "total: 7"}}))
	if err != nil || sub.Queued != 1 {
		t.Fatalf("submit: %+v, %v", sub, err)
	}
	p, err := c.Follow(t.Context(), sub.JobIDs, 50*time.Millisecond, nil)
	if err != nil || p.Done != 1 {
		t.Fatalf("follow: %+v, %v; want the job done", p, err)
	}
}

// TestServeStartErrors: an audit database that fails for good (it does not
// exist, refuses the login, is not migrated) fails Serve at once, not
// after Config.StartWait; one that does not answer fails once the wait is
// over, matching ErrUnreachable. Each error names the server and never the
// password.
func TestServeStartErrors(t *testing.T) {
	f := fleettest.Start(t)
	empty := testenv.Database(t) // exists, never migrated
	missing := strings.Replace(empty, "extractq_test_", "extractq_nosuch_", 1)
	badRole := strings.Replace(f.DatabaseURL, "postgres://postgres@", "postgres://nosuchrole:hunter2secret@", 1)
	if badRole == f.DatabaseURL {
		t.Fatalf("cannot make a URL with another role from %s", f.DatabaseURL)
	}
	down := testenv.DatabaseLater(t, f.DatabaseURL, time.Hour)
	tests := []struct {
		name      string
		url       string
		wait      time.Duration
		pgCode    string // the cause, when the server answered
		kind      error  // what the error matches besides
		want      string
		least     time.Duration
		unreached bool
	}{
		{name: "missing database", url: missing, wait: time.Minute, pgCode: "3D000", want: "does not exist"},
		{name: "unknown role", url: badRole, wait: time.Minute, pgCode: "28000", want: "nosuchrole"},
		{name: "not migrated", url: empty, wait: time.Minute, pgCode: "42P01", kind: fleet.ErrNotMigrated, want: "extractq audit migrate"},
		{name: "unreachable", url: down, wait: time.Second, kind: fleet.ErrUnreachable, want: "did not answer for 1s", least: time.Second, unreached: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := f.Config("fleettest-reader:v1=concurrency:2")
			cfg.DatabaseURL, cfg.StartWait = tt.url, tt.wait
			start := time.Now()
			err := fleet.Serve(t.Context(), cfg)
			took := time.Since(start)
			if err == nil {
				t.Fatal("Serve returned nil, want an error")
			}
			var pe *pgconn.PgError
			if tt.pgCode != "" && (!errors.As(err, &pe) || pe.Code != tt.pgCode) {
				t.Errorf("error %v, want Postgres error %s", err, tt.pgCode)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error %v does not match %v", err, tt.kind)
			}
			if audit.Unreachable(err) != tt.unreached || errors.Is(err, fleet.ErrUnreachable) != tt.unreached {
				t.Errorf("error %v: unreachable %t, want %t", err, audit.Unreachable(err), tt.unreached)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2secret") {
				t.Errorf("error %q: want it to say %q, and no password", err, tt.want)
			}
			// A usage error is reported at once: well within the wait.
			if took < tt.least || took > tt.least+10*time.Second {
				t.Errorf("Serve failed after %s, want %s to %s", took, tt.least, tt.least+10*time.Second)
			}
		})
	}
}
