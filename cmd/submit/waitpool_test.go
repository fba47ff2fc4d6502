package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/ratelimit"
)

// waitJSON is the part of `submit --wait --json` these tests read.
type waitJSON struct {
	Wait *struct {
		Unfinished int    `json:"unfinished"`
		TimedOut   bool   `json:"timed_out"`
		NoWorker   bool   `json:"no_worker"`
		Paused     string `json:"paused"`
	} `json:"wait"`
}

// TestSubmitWaitOwnJobsAndDeadWorker: --wait counts this submission's jobs
// as running or queued, not the pool's, and a worker that died holding
// other jobs in progress (delivered, never acked, no heartbeat) does not
// pass for a live one: the warning comes, and says those jobs come back.
func TestSubmitWaitOwnJobsAndDeadWorker(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := migratedServer(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	_, js := jobstest.Connect(t, natsURL)
	ctx := t.Context()
	schemaFile := filepath.Join(t.TempDir(), "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	base := []string{"--schema", schemaFile, "--provider", "sim:clean"}

	// Another run queues 5 jobs; a worker takes 3 and dies without acking.
	var other strings.Builder
	for i := range 5 {
		line, _ := json.Marshal(map[string]string{"id": "other-" + string(rune('a'+i)), "text": fleettest.Document(100 + i)})
		other.Write(append(line, '\n'))
	}
	if code, out, errOut := runSubmitCmd(t, other.String(), append(base, "--run", "other", "-")...); code != 0 {
		t.Fatalf("first submit: exit %d %s%s", code, out, errOut)
	}
	c, err := jobs.EnsureConsumer(ctx, js, "sim_clean", jobs.DefaultConsumerSettings())
	must(t, err)
	batch, err := c.FetchNoWait(3)
	must(t, err)
	held := 0
	for range batch.Messages() {
		held++ // never acked: in progress until the ack wait ends
	}
	if held != 3 {
		t.Fatalf("the dead worker took %d jobs, want 3", held)
	}

	mine := `{"id":"mine-1","text":` + quote(fleettest.Document(200)) + "}\n" + `{"id":"mine-2","text":` + quote(fleettest.Document(201)) + "}\n"
	code, out, errOut := runSubmitCmd(t, mine, append(base, "--run", "mine", "--wait", "--timeout", "3s", "--json", "-")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (timed out)\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "0 running · 2 queued") || strings.Contains(errOut, "3 running") || strings.Contains(errOut, "4 queued") {
		t.Errorf("progress should count this submission's 2 queued jobs, not the pool's 3 running and 2 other queued:\n%s", errOut)
	}
	if !strings.Contains(errOut, "warning: no live worker serves pool sim_clean") || !strings.Contains(errOut, "3 jobs of the pool are still in progress on a worker that stopped") {
		t.Errorf("no warning about the dead worker's jobs:\n%s", errOut)
	}
	var sum waitJSON
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Wait == nil || !sum.Wait.NoWorker || sum.Wait.Unfinished != 2 {
		t.Errorf("summary %s (%v): want no_worker and 2 unfinished", out, err)
	}
}

// TestSubmitWaitShowsPause: a pool whose every live worker is paused by a
// refused key says so, with the reason and the provider's answer, in the
// progress, a warning and the JSON summary.
func TestSubmitWaitShowsPause(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := migratedServer(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	_, js := jobstest.Connect(t, natsURL)
	// A worker's pool, guarded by its circuit, which a 401 tripped.
	circuit := ratelimit.NewBreaker("sim_clean", "transport", ratelimit.BreakerSettings{}, ratelimit.WithPauseReason(ratelimit.PauseOutage))
	circuit.Trip(false, ratelimit.PauseKey, errors.New("sim: 401 invalid api key"))
	pool := ratelimit.NewPool("sim:clean", ratelimit.Limits{Concurrency: 1})
	pool.Guard(circuit)
	m, err := ratelimit.StartMembership(t.Context(), js, "w-paused", []*ratelimit.Pool{pool})
	must(t, err)
	defer m.Stop()

	schemaFile := filepath.Join(t.TempDir(), "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	code, out, errOut := runSubmitCmd(t, fleettest.Document(300), "--schema", schemaFile, "--provider", "sim:clean", "--wait", "--timeout", "3s", "--json", "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (timed out)\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning: pool sim_clean is paused: key (sim: 401 invalid api key)") || !strings.Contains(errOut, "pool sim_clean paused: key") {
		t.Errorf("no pause reason in the progress and warning:\n%s", errOut)
	}
	if strings.Contains(errOut, "no live worker") {
		t.Errorf("a paused worker is live:\n%s", errOut)
	}
	var sum waitJSON
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Wait == nil || sum.Wait.NoWorker || sum.Wait.Paused != "key (sim: 401 invalid api key)" {
		t.Errorf("summary %s (%v): want paused \"key (sim: 401 invalid api key)\"", out, err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
