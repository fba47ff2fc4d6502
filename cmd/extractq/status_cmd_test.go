package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

// statusFleet is a fleet with jobs queued on a pool nobody serves and two
// dead letters on another, and an audit holding one run.
func statusFleet(t *testing.T) (natsURL, dbURL string) {
	t.Helper()
	ctx := t.Context()
	st, dbURL := audittest.Store(t)
	natsURL = jobstest.Server(t)
	_, js := jobstest.Connect(t, natsURL)
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := js.Publish(ctx, jobs.JobSubject("openai_gpt-4o-mini"), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if _, err := js.Publish(ctx, jobs.DLQSubject("sim_sloppy"), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO jobs (job_id, document_id, run, schema_name, schema_version, status, started_at, finished_at)
		VALUES ('j1', 'd1', 'nightly', 'invoice', 1, 'ok', now(), now())`); err != nil {
		t.Fatal(err)
	}
	return natsURL, dbURL
}

func runStatus(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"status"}, args...))
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("status %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

func TestStatusShowsEachPool(t *testing.T) {
	t.Parallel()
	natsURL, dbURL := statusFleet(t)
	conn := []string{"--nats-url", natsURL, "--database-url", dbURL}
	out := runStatus(t, t.Context(), conn...)
	var queued, sloppy string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "openai_gpt-4o-mini" {
			queued = line
		}
		if len(f) > 0 && f[0] == "sim_sloppy" {
			sloppy = line
		}
	}
	// POOL QUEUED IN PROGRESS REDELIVERED WORKERS PAUSED DLQ OLDEST 429s
	if f := strings.Fields(queued); len(f) < 8 || f[1] != "3" || f[2] != "0" || !strings.Contains(queued, "no consumer yet") {
		t.Errorf("pool openai_gpt-4o-mini: %q, want 3 queued with no consumer", queued)
	}
	if f := strings.Fields(sloppy); len(f) < 7 || f[6] != "2" {
		t.Errorf("pool sim_sloppy: %q, want 2 dead letters", sloppy)
	}
	if !strings.Contains(out, "nightly") {
		t.Errorf("runs missing:\n%s", out)
	}

	var snap struct {
		Pools []struct {
			Pool         string    `json:"pool"`
			Queued       int       `json:"queued"`
			DeadLetters  int       `json:"dead_letters"`
			OldestQueued time.Time `json:"oldest_queued"`
		} `json:"pools"`
		Runs []struct {
			Run string `json:"run"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(runStatus(t, t.Context(), append(conn, "--json")...)), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Pools) != 2 || snap.Pools[0].Queued != 3 || snap.Pools[0].OldestQueued.IsZero() || snap.Pools[1].DeadLetters != 2 {
		t.Errorf("status --json pools: %+v", snap.Pools)
	}
	if len(snap.Runs) != 1 || snap.Runs[0].Run != "nightly" {
		t.Errorf("status --json runs: %+v", snap.Runs)
	}
}

// TestStatusWatch redraws until its context ends; off a terminal each frame
// is printed in turn, with no escape sequences.
func TestStatusWatch(t *testing.T) {
	t.Parallel()
	natsURL, dbURL := statusFleet(t)
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	out := runStatus(t, ctx, "--nats-url", natsURL, "--database-url", dbURL, "--watch", "--interval", "200ms")
	if n := strings.Count(out, "extractq status  "); n < 3 {
		t.Errorf("%d frames in 1.5s at 200ms, want several:\n%s", n, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("escape sequences written to a non-terminal")
	}
	if n := strings.Count(out, "openai_gpt-4o-mini"); n < 3 {
		t.Errorf("pool shown in %d frames", n)
	}
}

func TestStatusWithoutNATS(t *testing.T) {
	t.Parallel()
	_, dbURL := statusFleet(t)
	out := runStatus(t, t.Context(), "--nats-url", "nats://127.0.0.1:1", "--database-url", dbURL)
	if !strings.Contains(out, "unavailable: cannot reach NATS") || !strings.Contains(out, "nightly") {
		t.Errorf("status without NATS should say so and still show the runs:\n%s", out)
	}
}
