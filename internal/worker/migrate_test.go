package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/events"
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
	if _, err := js.Stream(ctx, events.Stream); err != nil {
		t.Fatalf("migrate made no events stream: %v", err)
	}
}

// replicasOf is the replica count and storage of every stream extractq
// uses, the membership bucket's included.
func replicasOf(t *testing.T, js jetstream.JetStream) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range append(jobs.StreamNames(), worker.MembersStream) {
		s, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		cfg := s.CachedInfo().Config
		out[name] = fmt.Sprintf("R%d %s", cfg.Replicas, cfg.Storage)
	}
	return out
}

// TestHighAvailabilitySurvivesSubmit runs on a three-node JetStream
// cluster. `worker migrate --stream-replicas 3` made everything R3, but
// the next submit's stream setup (defaults: one replica) remapped the
// object store and the schema bucket to R1; killing their node stopped the
// fleet. Now only migrate changes streams, the membership bucket is
// replicated too, a submit or worker check warns about R1 streams, and a
// check during a leader election waits for it.
func TestHighAvailabilitySurvivesSubmit(t *testing.T) {
	ctx := t.Context()
	cluster := jobstest.StartCluster(t, 3)
	_, js := jobstest.Connect(t, cluster.URL())
	st, _ := audittest.Store(t)

	if err := worker.Migrate(ctx, js, st, 3); err != nil {
		t.Fatal(err)
	}
	// What submit and worker run do before their work, and what submit
	// used to do (EnsureStreams with its defaults).
	warnings, err := jobs.CheckStreams(ctx, js, jobs.WithOptionalStream(worker.MembersStream))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("check after migrate: %v %v", warnings, err)
	}
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	for name, got := range replicasOf(t, js) {
		if got != "R3 File" {
			t.Errorf("%s is %s after a submit, want R3 File", name, got)
		}
	}

	// Lose the node leading the membership bucket: heartbeats go on.
	kv, err := js.KeyValue(ctx, "EXTRACTQ_MEMBERS")
	if err != nil {
		t.Fatal(err)
	}
	killLeader(t, cluster, js, worker.MembersStream)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err = kv.Put(ctx, "pool.w1", []byte("beat")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("membership bucket after losing a node: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A check started while the jobs stream elects a new leader waits for it.
	killLeader(t, cluster, js, jobs.JobsStream)
	if _, err := jobs.CheckStreams(ctx, js); err != nil {
		t.Fatalf("check during a leader election: %v", err)
	}
}

// killLeader shuts down the server leading stream.
func killLeader(t *testing.T, c *jobstest.Cluster, js jetstream.JetStream, stream string) {
	t.Helper()
	c.Server(t, jobstest.LeaderOf(t, js, stream)).Shutdown()
}

// TestCheckStreams: the check creates nothing, names `worker migrate` when
// a stream is missing, and warns about streams one node loss would take
// offline.
func TestCheckStreams(t *testing.T) {
	ctx := t.Context()
	t.Run("missing", func(t *testing.T) {
		_, js := jobstest.Connect(t, jobstest.Server(t))
		_, err := jobs.CheckStreams(ctx, js, jobs.WithCheckWait(time.Second))
		if !errors.Is(err, jobs.ErrNotMigrated) || !strings.Contains(err.Error(), "worker migrate") {
			t.Fatalf("err = %v, want ErrNotMigrated naming worker migrate", err)
		}
		if names := js.StreamNames(ctx); names.Err() != nil || len(drain(names.Name())) != 0 {
			t.Error("the check created streams")
		}
	})
	t.Run("single node, R1: no warning", func(t *testing.T) {
		_, js := jobstest.Connect(t, jobstest.Server(t))
		if err := jobs.EnsureStreams(ctx, js); err != nil {
			t.Fatal(err)
		}
		if w, err := jobs.CheckStreams(ctx, js); err != nil || len(w) != 0 {
			t.Fatalf("warnings %v, err %v", w, err)
		}
	})
	t.Run("cluster, R1: a warning per stream", func(t *testing.T) {
		_, js := jobstest.Connect(t, jobstest.StartCluster(t, 3).URL())
		if err := jobs.EnsureStreams(ctx, js); err != nil {
			t.Fatal(err)
		}
		w, err := jobs.CheckStreams(ctx, js, jobs.WithOptionalStream(worker.MembersStream))
		if err != nil {
			t.Fatal(err)
		}
		if len(w) != len(jobs.StreamNames())+1 || !strings.Contains(w[0], "has 1 replica") || !strings.Contains(w[0], "--stream-replicas 3") ||
			!strings.Contains(w[len(w)-1], worker.MembersStream+" does not exist") {
			t.Fatalf("warnings:\n%s", strings.Join(w, "\n"))
		}
	})
}

func drain(c <-chan string) []string {
	var out []string
	for n := range c {
		out = append(out, n)
	}
	return out
}
