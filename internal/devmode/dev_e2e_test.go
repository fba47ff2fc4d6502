package devmode_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/extractq/extractq/eval"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/testenv"
)

// adminURL is the local Postgres the proof runs against; the test creates
// nothing there itself but lets dev mode create a fresh database, which it
// drops at the end.
const adminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// TestDevModeProof is issue 8's proof: `extractq dev --sim sloppy` started as
// a process, the bundled examples submitted with the submit program (which
// finds dev mode through .extractq/dev.json, no flags), and then: every
// document ends as a result or a dead letter, at least one is a dead letter,
// a second submission queues nothing, and the /metrics counters agree with
// the audit tables and the simulator's own count of calls.
func TestDevModeProof(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("this test needs PostgreSQL at 127.0.0.1:5432 (user postgres, trust auth): %v", err)
	}
	dbName := "extractq_devproof_" + randomHex(t, 6)
	dbURL := "postgres://postgres@127.0.0.1:5432/" + dbName + "?sslmode=disable"
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		defer admin.Close(cctx)
		if _, err := admin.Exec(cctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{dbName}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", dbName, err)
		}
	})

	root := moduleRoot(t)
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./cmd/extractq", "./cmd/submit")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// dev and submit run in work, so that submit finds dev through
	// work/.extractq/dev.json; no EXTRACTQ_* variable reaches submit.
	work := t.TempDir()
	data := filepath.Join(work, devmode.DefaultDir)
	env := testenv.CleanEnv()
	devOut := filepath.Join(work, "dev.log")
	logf, err := os.Create(devOut)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dev := exec.Command(filepath.Join(bin, "extractq"), "dev", "--sim", "sloppy",
		"--data", data, "--nats-addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-format", "json")
	dev.Dir = work
	dev.Env = append(env, "EXTRACTQ_DATABASE_URL="+dbURL)
	dev.Stdout, dev.Stderr = logf, logf
	if err := dev.Start(); err != nil {
		t.Fatalf("start extractq dev: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- dev.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = dev.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(devOut)
			t.Logf("extractq dev output:\n%s", tail(b, 4000))
		}
	}()

	ep := waitReady(t, data, exited)
	if ep.DatabaseURL != dbURL {
		t.Fatalf("dev.json database_url = %q, want %q", ep.DatabaseURL, dbURL)
	}

	examples := filepath.Join(root, "examples")
	submits := []struct {
		schema, name, dir string
	}{
		{filepath.Join(examples, "invoice.schema.json"), "invoice", filepath.Join(examples, "invoices")},
		{filepath.Join(examples, "abstract.schema.yaml"), "abstract", filepath.Join(examples, "abstracts")},
	}
	submitted := 0
	codes := make([]int, len(submits))
	for i, s := range submits {
		out, code := runIn(ctx, t, work, env, filepath.Join(bin, "submit"), "--schema", s.schema, "--schema-name", s.name,
			"--provider", "sim:sloppy", "--run", "proof", "--max-reasks", "1", "--wait", s.dir)
		if code != 0 && code != 1 { // 1: some documents were dead-lettered, as intended
			t.Fatalf("submit %s: exit %d\n%s", s.name, code, out)
		}
		codes[i] = code
		queued := intAfter(t, out, `queued (\d+)`)
		if want := countFiles(t, s.dir); queued != want {
			t.Fatalf("submit %s queued %d documents, want %d\n%s", s.name, queued, want, out)
		}
		submitted += queued
	}
	// Idempotent: the same submission again queues nothing (every job is
	// final in the audit), and --wait returns with the first one's exit code.
	out, code := runIn(ctx, t, work, env, filepath.Join(bin, "submit"), "--schema", submits[0].schema, "--schema-name", "invoice",
		"--provider", "sim:sloppy", "--run", "proof", "--max-reasks", "1", "--wait", submits[0].dir)
	if code != codes[0] || intAfter(t, out, `queued (\d+)`) != 0 || intAfter(t, out, `already done (\d+)`) != countFiles(t, submits[0].dir) {
		t.Fatalf("second submission: exit %d, want %d with every document already done\n%s", code, codes[0], out)
	}
	// A toolbox command finds dev mode too.
	if out, code := runIn(ctx, t, work, env, filepath.Join(bin, "extractq"), "status", "--run", "proof"); code != 0 || !strings.Contains(out, "proof") {
		t.Fatalf("extractq status --run proof: exit %d\n%s", code, out)
	}
	// Dev mode serves the web console, which shows the run.
	if resp, err := http.Get(ep.UIURL); err != nil {
		t.Errorf("web console at %q: %v", ep.UIURL, err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `data-run="proof"`) {
			t.Errorf("web console at %s: %d, want the run proof listed", ep.UIURL, resp.StatusCode)
		}
	}

	// The audit tables.
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to the dev database: %v", err)
	}
	defer db.Close(context.Background())
	count := func(q string) int {
		var n int
		if err := db.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	results := count(`SELECT count(*) FROM results`)
	dead := count(`SELECT count(*) FROM dead_letters`)
	attempts := count(`SELECT count(*) FROM attempts`)
	byStatus := map[string]int{}
	rows, err := db.Query(ctx, `SELECT status, count(*) FROM jobs GROUP BY status`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		byStatus[s] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("submitted %d: %d results, %d dead letters, %d attempts, jobs by status %v", submitted, results, dead, attempts, byStatus)
	if results+dead != submitted {
		t.Errorf("results %d + dead letters %d = %d, want the %d documents submitted", results, dead, results+dead, submitted)
	}
	if dead < 1 {
		t.Errorf("no dead letter: the demo must show one (sloppy simulator, seed 0, --max-reasks 1)")
	}
	if attempts <= submitted {
		t.Errorf("%d attempts for %d documents: the demo must show re-asks", attempts, submitted)
	}

	// The metrics endpoint against the audit.
	m := scrape(ctx, t, ep.MetricsURL)
	checks := []struct {
		name   string
		metric float64
		audit  int
	}{
		{`extractq_jobs_total{outcome="ok"}`, m.sum("extractq_jobs_total", `outcome="ok"`), byStatus["ok"]},
		{`extractq_jobs_total (not ok)`, m.sum("extractq_jobs_total", "") - m.sum("extractq_jobs_total", `outcome="ok"`), sumExcept(byStatus, "ok")},
		{`extractq_jobs_total{outcome="ok"} vs results`, m.sum("extractq_jobs_total", `outcome="ok"`), results},
		{`extractq_dead_letters_total`, m.sum("extractq_dead_letters_total", ""), dead},
		{`extractq_dlq_messages`, m.sum("extractq_dlq_messages", ""), dead},
		{`extractq_attempts_total`, m.sum("extractq_attempts_total", ""), attempts},
		{`extractq_attempts_total{class="ok"} vs results`, m.sum("extractq_attempts_total", `class="ok"`), results},
	}
	for _, c := range checks {
		if c.metric != float64(c.audit) {
			t.Errorf("%s = %v, audit says %d", c.name, c.metric, c.audit)
		}
	}
	if results == 0 {
		t.Errorf("no result at all")
	}
	if n := m.sum("extractq_audit_flush_rows_count", ""); n < 1 {
		t.Errorf("extractq_audit_flush_rows_count = %v: audit flushes were not observed", n)
	}
	// Every attempt is one simulator call (sloppy has no transport faults).
	simCalls := intAfter(t, get(ctx, t, ep.SimURL+"/stats"), `"requests":(\d+)`)
	if simCalls != attempts {
		t.Errorf("simulator served %d requests, audit holds %d attempts", simCalls, attempts)
	}

	// Graceful stop: exit 0, discovery file removed.
	if err := dev.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("extractq dev after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("extractq dev did not stop within 60s of SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(data, devmode.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dev.json still there after shutdown (stat: %v)", err)
	}
}

// waitReady waits for dev mode's discovery file and for /readyz.
func waitReady(t *testing.T, data string, exited <-chan error) devmode.Endpoints {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("extractq dev exited before it was ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		ep, ok := devmode.Discover(data)
		if !ok {
			continue
		}
		ready := strings.TrimSuffix(ep.MetricsURL, "/metrics") + "/readyz"
		resp, err := http.Get(ready)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return ep
		}
	}
	t.Fatal("extractq dev was not ready within 90s")
	return devmode.Endpoints{}
}

// runIn runs a program in dir and returns its combined output and exit code.
func runIn(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	return "", -1
}

// metricsText is a /metrics scrape: "name{labels}" → value.
type metricsText map[string]float64

// sum adds the samples of metric name whose labels contain label ("" for
// all).
func (m metricsText) sum(name, label string) float64 {
	var s float64
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n == name && strings.Contains(labels, label) {
			s += v
		}
	}
	return s
}

func scrape(ctx context.Context, t *testing.T, url string) metricsText {
	t.Helper()
	m := metricsText{}
	sc := bufio.NewScanner(strings.NewReader(get(ctx, t, url)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

func get(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", url, resp.StatusCode, err)
	}
	return string(b)
}

func intAfter(t *testing.T, text, pattern string) int {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %q in:\n%s", pattern, text)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sumExcept(m map[string]int, skip string) int {
	n := 0
	for k, v := range m {
		if k != skip {
			n += v
		}
	}
	return n
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() && !eval.IsLabelFile(e.Name()) { // labels beside documents are not documents
			n++
		}
	}
	return n
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("…%s", b[len(b)-n:])
	}
	return string(b)
}
