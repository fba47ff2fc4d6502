package e2e

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
)

// buildWorker compiles cmd/worker into a temporary directory.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin, err := fleettest.BuildWorker(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// workerProc is one worker process and its log.
type workerProc struct {
	cmd *exec.Cmd
	log string
}

func startWorker(t *testing.T, bin string, env []string, n int, listen string) *workerProc {
	t.Helper()
	return startWorkerPool(t, bin, env, n, listen, "openai:sim-fleet=concurrency:16")
}

// startWorkerPool starts worker n serving pool.
func startWorkerPool(t *testing.T, bin string, env []string, n int, listen, pool string) *workerProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "worker-"+strconv.Itoa(n)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--id", "kill-"+strconv.Itoa(n), "--listen", listen,
		"--ack-wait", "2s", "--backoff", "2s", "--max-deliver", "20", "--grace", "10s",
		"--pool", pool)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return &workerProc{cmd: cmd, log: logPath}
}

func (w *workerProc) tail(t *testing.T) {
	b, _ := os.ReadFile(w.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	t.Logf("worker log (tail):\n%s", b)
}

func TestFleetSurvivesSIGKILL(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	if v := os.Getenv("EXTRACTQ_E2E_KILL_DOCS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	st, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	_, js := jobstest.Connect(t, natsURL)
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	// The worker processes call the simulator over HTTP as an OpenAI API.
	srv := sim.New(fleettest.FaultyProfile(), sim.WithSeed(9))
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	sc := submitDocs(t, submit.New(js, st), n, "openai:sim-fleet")

	bin := buildWorker(t)
	env := append(os.Environ(),
		"EXTRACTQ_NATS_URL="+natsURL, "EXTRACTQ_DATABASE_URL="+dbURL,
		"OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=sk-kill-test-not-a-key",
		"EXTRACTQ_LOG_FORMAT=json", "EXTRACTQ_LOG_LEVEL=info")
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for i := range 8 {
		w := startWorker(t, bin, env, i, "")
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = w.cmd.Wait()
		kills++
	}
	addr := freeAddr(t)
	final := startWorker(t, bin, env, 99, addr)
	defer func() {
		if t.Failed() {
			final.tail(t)
		}
	}()
	// Until it is ready its SIGTERM handler may not be installed yet; with
	// few documents the earlier workers may have finished them all.
	waitReady(t, "http://"+addr+"/readyz", time.Minute)
	waitSettled(t, st, n, 5*time.Minute)
	// A graceful stop of the survivor: exit 0.
	if err := final.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := final.cmd.Wait(); err != nil {
		t.Errorf("worker after SIGTERM: %v, want exit 0", err)
	}

	results, dead := checkOutcomes(t, st, jobs.NewDLQ(js), sc, n)
	if left := streamMsgs(t, js, jobs.JobsStream); left != 0 {
		t.Errorf("%d jobs left on %s", left, jobs.JobsStream)
	}
	var redelivered int
	if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE deliveries > 1").Scan(&redelivered); err != nil {
		t.Fatal(err)
	}
	if redelivered == 0 {
		t.Errorf("no job was redelivered: the kills did not interrupt any work, so the test proved nothing")
	}
	t.Logf("%d documents, %d SIGKILLs: %d results, %d dead letters, %d jobs redelivered", n, kills, results, dead, redelivered)
}

// freeAddr returns a loopback address with a port free at the time of asking.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady polls a readiness endpoint until it answers 200.
func waitReady(t *testing.T, url string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within %s", url, limit)
}
