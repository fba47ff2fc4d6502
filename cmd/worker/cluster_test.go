package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/testenv"
)

// clusterPool is the pool the cluster tests serve: the in-process
// simulator, which always answers valid JSON.
const clusterPool = "sim:clean=concurrency:4"

// migrateCluster runs `worker migrate --stream-replicas 3 --pool
// clusterPool` on a three-node cluster: every stream and bucket R3, the
// pool's consumer made before any worker starts.
func migrateCluster(t *testing.T, natsURL, dbURL string) {
	t.Helper()
	cmd := newMigrateCmd()
	cmd.SetArgs([]string{"--nats-url", natsURL, "--database-url", dbURL, "--log-level", "error",
		"--stream-replicas", "3", "--pool", clusterPool})
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("worker migrate --stream-replicas 3: %v", err)
	}
}

// startRun starts `worker run` (no --migrate: the workers of a roll-out
// find what migrate made) with its endpoints on a free address. It returns
// the endpoints' base URL and the command's result, sent when it ends; the
// worker is stopped when the test ends.
func startRun(t *testing.T, natsURL, dbURL, id string) (string, <-chan error) {
	t.Helper()
	addr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	cmd := newRunCmd()
	cmd.SetArgs([]string{"--nats-url", natsURL, "--database-url", dbURL, "--listen", addr, "--id", id,
		"--log-format", "json", "--log-level", "error", "--pool", clusterPool, "--grace", "5s"})
	cmd.SetErr(io.Discard)
	result := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(ctx)
		ran <- err
		result <- err
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("worker %s after a SIGTERM-like cancel: %v, want nil", id, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("worker %s did not stop within 30s", id)
		}
	})
	return "http://" + addr, result
}

// waitReady waits until the worker at base answers /readyz 200, failing
// the test if the worker exits first or limit passes.
func waitReady(t *testing.T, id, base string, ran <-chan error, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		select {
		case err := <-ran:
			t.Fatalf("worker %s exited before it was ready: %v", id, err)
		default:
		}
		if code, _ := get(base + "/readyz"); code == http.StatusOK {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("worker %s not ready within %s", id, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWorkersStartTogetherOnACluster (defect 8): five workers started at
// once against a healthy three-node cluster, as a Kubernetes roll-out
// starts them, all start. Before, the start-up check made one JetStream
// account request (only the meta leader answers it) with a 5 s deadline
// and no retry, and one of five exited 3.
func TestWorkersStartTogetherOnACluster(t *testing.T) {
	t.Setenv("EXTRACTQ_POOLS", "")
	t.Setenv("EXTRACTQ_CONFIG", "")
	dbURL := testenv.Database(t)
	cluster := jobstest.StartCluster(t, 3)
	url := cluster.URL()
	migrateCluster(t, url, dbURL)

	type started struct {
		id, base string
		ran      <-chan error
	}
	var workers []started
	start := time.Now()
	for i := range 5 {
		id := fmt.Sprintf("rollout-%d", i)
		base, ran := startRun(t, url, dbURL, id)
		workers = append(workers, started{id, base, ran})
	}
	for _, w := range workers {
		waitReady(t, w.id, w.base, w.ran, 45*time.Second)
	}
	t.Logf("5 workers started together on a 3-node cluster: all ready within %s", time.Since(start).Round(10*time.Millisecond))
}

// TestWorkerStartsWhileANodeIsDown (defect 9): on a three-node cluster
// after `worker migrate --stream-replicas 3` and one submit, the node
// leading the schema bucket is killed and a fresh worker started. Before,
// it exited with "create consumer … context deadline exceeded" and the
// jobs stayed queued; now it waits out the elections (the consumer exists
// already: migrate made it) and every job drains.
func TestWorkerStartsWhileANodeIsDown(t *testing.T) {
	t.Setenv("EXTRACTQ_POOLS", "")
	t.Setenv("EXTRACTQ_CONFIG", "")
	ctx := t.Context()
	dbURL := testenv.Database(t)
	cluster := jobstest.StartCluster(t, 3)
	url := cluster.URL() // every node: the worker is configured with all three
	migrateCluster(t, url, dbURL)

	const docs = 40
	st, sum := queueDocs(t, url, dbURL, "sim:clean", "clean", "node-down", docs)
	nc, js := jobstest.Connect(t, url)

	// The hardest node to lose: the one leading the schema bucket and the
	// cluster's meta group (consumer and account requests wait for a new
	// meta leader, the schema reads for a new bucket leader).
	killed := leadFromMetaLeader(t, cluster, nc, js, jobs.SchemaStream)
	cluster.Crash(cluster.Server(t, killed))
	id := "fresh"
	start := time.Now()
	base, ran := startRun(t, url, dbURL, id)
	ready := waitReady(t, id, base, ran, 45*time.Second)
	fctx, cancel := context.WithDeadline(ctx, start.Add(55*time.Second))
	defer cancel()
	res, err := submit.Follow(fctx, st, sum.JobIDs, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("the jobs did not drain after node %s was killed (worker ready after %s): %v", killed, ready.Round(10*time.Millisecond), err)
	}
	if res.Done != docs {
		t.Errorf("%+v, want %d done", res, docs)
	}
	t.Logf("node %s (meta leader and schema bucket leader) killed, fresh worker ready after %s, %d of %d jobs done after %s",
		killed, ready.Round(10*time.Millisecond), res.Done, docs, time.Since(start).Round(10*time.Millisecond))
}

// leadFromMetaLeader moves the leadership of stream to the node leading
// the meta group (a stream leader step-down with that node preferred) and
// returns its name.
func leadFromMetaLeader(t *testing.T, c *jobstest.Cluster, nc *nats.Conn, js jetstream.JetStream, stream string) string {
	t.Helper()
	for try := range 40 {
		meta := ""
		for _, s := range c.Servers {
			if s.Running() && s.JetStreamIsLeader() {
				meta = s.Name()
			}
		}
		if meta != "" && jobstest.LeaderOf(t, js, stream) == meta {
			return meta
		}
		if meta != "" && try%8 == 0 {
			_, _ = nc.Request(fmt.Sprintf("$JS.API.STREAM.LEADER.STEPDOWN.%s", stream), []byte(`{"placement":{"preferred":"`+meta+`"}}`), 5*time.Second)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s's leadership did not move to the meta leader", stream)
	return ""
}
