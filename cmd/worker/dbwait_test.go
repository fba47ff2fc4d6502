package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
)

// TestRunWaitsForTheAuditDatabase: a worker started while its audit
// database does not answer yet (Postgres restarting) waits for it and
// starts when it comes back. Before, it exited 3 at once (the chaos soak
// saw it 2–5 times a run), into its supervisor's growing restart back-off.
func TestRunWaitsForTheAuditDatabase(t *testing.T) {
	natsURL := jobstest.Server(t)
	dbURL := testenv.Database(t)
	migrate := newMigrateCmd()
	migrate.SetArgs([]string{"--nats-url", natsURL, "--database-url", dbURL, "--log-level", "error", "--pool", clusterPool})
	migrate.SetErr(io.Discard)
	if err := migrate.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("worker migrate: %v", err)
	}

	// The worker is pointed at an address where nothing listens yet; a
	// proxy to the real server opens there 1.5 s later.
	const down = 1500 * time.Millisecond
	base, ran := startRun(t, natsURL, testenv.DatabaseLater(t, dbURL, down), "waits-for-pg")
	took := waitReady(t, "waits-for-pg", base, ran, 30*time.Second)
	if took < down {
		t.Errorf("ready after %s, before the database answered (%s)", took, down)
	}
	t.Logf("worker ready %s after its start, the database down for the first %s", took.Round(10*time.Millisecond), down)
}

// TestRunGivesUpOnTheAuditDatabase: `worker run` connects once (in
// fleet.Serve) and keeps the exit codes and advice of its former check:
// a database that does not answer within EXTRACTQ_START_WAIT is exit 3
// naming the server, after the wait; one that does not exist is exit 2
// with what to run, at once.
func TestRunGivesUpOnTheAuditDatabase(t *testing.T) {
	t.Setenv("EXTRACTQ_POOLS", "")
	t.Setenv("EXTRACTQ_CONFIG", "")
	t.Setenv("EXTRACTQ_START_WAIT", "1s")
	natsURL := jobstest.Server(t)
	missing := strings.Replace(testenv.Database(t), "extractq_test_", "extractq_nosuch_", 1)
	down := testenv.DatabaseLater(t, missing, time.Hour)
	tests := []struct {
		name     string
		url      string
		code     int
		want     []string
		min, max time.Duration
	}{
		{name: "unreachable", url: down, code: 3, want: []string{"cannot reach Postgres", "did not answer for 1s", "127.0.0.1"}, min: time.Second, max: 10 * time.Second},
		{name: "missing", url: missing, code: 2, want: []string{"does not exist", "createdb"}, max: 900 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			root := newRootCmd()
			root.SetErr(&errb)
			start := time.Now()
			code := runRoot(root, []string{"run", "--pool", "sim:clean", "--nats-url", natsURL, "--database-url", tt.url, "--listen", "", "--log-level", "error"}, &errb)
			took := time.Since(start)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			if took < tt.min || took > tt.max {
				t.Errorf("exited after %s, want %s to %s", took, tt.min, tt.max)
			}
		})
	}
}
