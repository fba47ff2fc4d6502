package main

import (
	"io"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
)

// TestMigrateCreatesPoolConsumers: `worker migrate --pool` creates the
// pools' durable consumers with the consumer settings given, so that a
// worker started later (even while a cluster node is down) finds them.
func TestMigrateCreatesPoolConsumers(t *testing.T) {
	dbURL := testenv.Database(t)
	natsURL := jobstest.Server(t)
	t.Setenv("EXTRACTQ_POOLS", "")
	t.Setenv("EXTRACTQ_CONFIG", "")
	cmd := newMigrateCmd()
	cmd.SetArgs([]string{"--nats-url", natsURL, "--database-url", dbURL, "--log-level", "error",
		"--pool", "sim:clean=concurrency:2", "--pool", "sim:sloppy=concurrency:1", "--ack-wait", "45s", "--max-deliver", "3", "--backoff", "45s,2m"})
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, js := jobstest.Connect(t, natsURL)
	for _, pool := range []string{"sim_clean", "sim_sloppy"} {
		c, err := js.Consumer(t.Context(), jobs.JobsStream, jobs.ConsumerName(pool))
		if err != nil {
			t.Fatalf("pool %s: no consumer after migrate: %v", pool, err)
		}
		if cfg := c.CachedInfo().Config; cfg.AckWait != 45*time.Second || cfg.MaxDeliver != 3 {
			t.Errorf("pool %s: consumer ack wait %s, max deliver %d; want 45s and 3", pool, cfg.AckWait, cfg.MaxDeliver)
		}
	}
	if _, err := js.Consumer(t.Context(), jobs.AdvisoryStream, jobs.AdvisoryConsumer); err != nil {
		t.Errorf("no advisory consumer after migrate: %v", err)
	}
}
