package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// TestMigrateStreamReplicas shows the replica count reaches the server: a
// single embedded node refuses three replicas and accepts one.
func TestMigrateStreamReplicas(t *testing.T) {
	ctx := context.Background()
	st, _ := audittest.Store(t)
	_, js := jobstest.Connect(t, jobstest.Server(t))
	err := worker.Migrate(ctx, js, st, 3)
	if err == nil {
		t.Fatal("a single-node server accepted streams with 3 replicas: the setting did not reach it")
	}
	t.Logf("3 replicas on one node: %v", err)
	if err := worker.Migrate(ctx, js, st, 6); err == nil || !strings.Contains(err.Error(), "stream_replicas 6") {
		t.Fatalf("6 replicas: err = %v, want the setting named", err)
	}
	if err := worker.Migrate(ctx, js, st, 1); err != nil {
		t.Fatal(err)
	}
	var s jetstream.Stream
	s, err = js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.CachedInfo().Config.Replicas; r != 1 {
		t.Fatalf("jobs stream has %d replicas, want 1", r)
	}
}
