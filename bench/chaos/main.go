// Command chaos is a soak harness: random faults on a 3-node JetStream
// cluster while worker processes drain submitted documents, then a check of
// the fleet's promises in PostgreSQL and on the dead-letter stream.
//
//	nice -n 5 go run ./bench/chaos -docs 20000 -workers 3 -duration 4m -seed 1
//	nice -n 5 go run ./bench/chaos -profile sloppy -private-pg -seed 7
//
// It builds cmd/worker and cmd/submit, starts three NATS servers (each a
// child process of this program, storing in a directory of its own, so a
// SIGKILL is a crash and a restart finds its store), runs `worker migrate
// --stream-replicas 3`, starts the workers (the simulator "sim:PROFILE" in
// each of them) and submits the documents in several `submit` runs spread
// over the first part of the run. Meanwhile, from a seeded random source,
// it SIGKILLs a worker and starts it again, SIGKILLs a NATS node (often the
// leader of EXTRACTQ_JOBS or of the meta group) and restarts it a few
// seconds later, SIGSTOPs a worker for longer than the ack wait, and with
// -private-pg crashes (pg_ctl stop -m immediate) and restarts a PostgreSQL
// of its own (initdb under /tmp, port -pg-port; the machine's shared one
// is never touched). Then it waits for the drain and checks:
//
//   - every submitted document has exactly one final state: one result or
//     one dead letter, never both, never none, and one job;
//   - no job is left open (audit status retrying, a message on EXTRACTQ_JOBS,
//     an ack pending on a consumer);
//   - every letter on EXTRACTQ_DLQ has its audit row at its sequence, every
//     audit row its letter, no job has two letters;
//   - every run is announced and published once per submission, and its
//     done event counts what the audit holds.
//
// It prints a summary and exits 1 when a promise is broken (2 when the
// harness itself failed).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/testenv"
)

// nodeEnv holds a NATS node's configuration when this program runs as one.
const nodeEnv = "EXTRACTQ_CHAOS_NATS_NODE"

type options struct {
	docs, workers, submits, conc, maxDeliver int
	seed                                     uint64
	duration, ackWait, faultEvery, drain     time.Duration
	profile, dir, workerBin                  string
	privatePG                                bool
	pgPort                                   int
	keep                                     bool
	noNATS, noWorkerKill, noStop             bool
	killSubmits                              float64
}

func main() {
	if cfg, ok := os.LookupEnv(nodeEnv); ok {
		if err := runNode(cfg); err != nil {
			log.Fatal(err)
		}
		return
	}
	var o options
	flag.IntVar(&o.docs, "docs", 20000, "documents to submit, over all submits")
	flag.IntVar(&o.workers, "workers", 3, "worker processes")
	flag.IntVar(&o.submits, "submits", 4, "submit runs the documents are split into (each its own run), spread over the first 60% of -duration")
	flag.IntVar(&o.conc, "concurrency", 16, "each worker's pool concurrency")
	flag.IntVar(&o.maxDeliver, "max-deliver", 5, "deliveries of a job before it is dead-lettered (worker --max-deliver)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the fault schedule (same seed, same choices; timings still vary)")
	flag.DurationVar(&o.duration, "duration", 4*time.Minute, "how long faults are injected; then the harness waits for the drain")
	flag.DurationVar(&o.ackWait, "ack-wait", 5*time.Second, "ack wait of the job consumers, with no back-off (--backoff=: the default back-off, 30s first, would replace it); a SIGSTOP lasts 1.2 to 2.5 of it")
	flag.DurationVar(&o.faultEvery, "fault-every", 6*time.Second, "mean time between two faults")
	flag.DurationVar(&o.drain, "drain-timeout", 5*time.Minute, "after -duration, how long the fleet gets to settle every job before the run counts as stuck")
	flag.StringVar(&o.profile, "profile", "clean", "simulator profile of the pool sim:PROFILE (clean: no dead letter is legitimate; sloppy, flaky, realistic: some are), or a profile file (e.g. bench/chaos/twins.yaml), copied into the working directory")
	flag.StringVar(&o.dir, "dir", "", "working directory (default: a new one under $TMPDIR, removed unless -keep or a promise broke)")
	flag.StringVar(&o.workerBin, "worker-bin", "", "run this worker binary instead of building cmd/worker from this tree (e.g. an older revision's, to show a fault before its fix)")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory (logs, stores)")
	flag.BoolVar(&o.privatePG, "private-pg", false, "run a private PostgreSQL (initdb under the working directory, port -pg-port) and crash and restart it too; default: a temporary database on the shared server, never restarted")
	flag.IntVar(&o.pgPort, "pg-port", 5498, "port of the private PostgreSQL")
	flag.Float64Var(&o.killSubmits, "kill-submits", 0.5, "probability that a submit's first try is SIGKILLed 0.1 to 1.5 s after it started (it is then run again, as an operator would)")
	flag.BoolVar(&o.noNATS, "no-nats-faults", false, "do not crash NATS nodes")
	flag.BoolVar(&o.noWorkerKill, "no-worker-kills", false, "do not SIGKILL workers")
	flag.BoolVar(&o.noStop, "no-worker-stops", false, "do not SIGSTOP workers")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "chaos: random faults on a 3-node JetStream cluster under a worker fleet, then the fleet's invariants checked.\n\nUsage: chaos [flags]\n\n")
		flag.PrintDefaults()
		fmt.Fprintf(flag.CommandLine.Output(), "\nExit: 0 all promises kept, 1 a promise broken (the working directory is kept), 2 the harness failed.\n")
	}
	flag.Parse()
	broken, err := run(o)
	if err != nil {
		log.Printf("chaos: %v", err)
		os.Exit(2)
	}
	if broken {
		os.Exit(1)
	}
}

// h is one run's state.
type h struct {
	o       options
	dir     string
	rng     *rand.Rand
	rngMu   sync.Mutex
	start   time.Time
	nodes   []*node
	workers []*workerProc
	pg      *privatePG
	dbURL   string
	natsURL string
	bin     struct{ worker, submit string }

	mu               sync.Mutex
	faults           map[string]int
	exits            []string // workers that exited by themselves
	runs             []runInfo
	natsBusy, pgBusy bool
}

type runInfo struct {
	name    string
	ids     []string
	tries   int
	summary string
}

// claim sets busy, under x.mu, unless it is set already: one fault of a
// kind at a time (a second NATS node lost while the first catches up is
// two of three). unclaim clears it.
func (x *h) claim(busy *bool) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if *busy {
		return false
	}
	*busy = true
	return true
}

func (x *h) unclaim(busy *bool) {
	x.mu.Lock()
	*busy = false
	x.mu.Unlock()
}

func (x *h) logf(format string, args ...any) {
	fmt.Printf("%7.1fs  %s\n", time.Since(x.start).Seconds(), fmt.Sprintf(format, args...))
}

func (x *h) count(kind string) {
	x.mu.Lock()
	x.faults[kind]++
	x.mu.Unlock()
}

func (x *h) float() float64 {
	x.rngMu.Lock()
	defer x.rngMu.Unlock()
	return x.rng.Float64()
}

func (x *h) intn(n int) int {
	x.rngMu.Lock()
	defer x.rngMu.Unlock()
	return x.rng.IntN(n)
}

// between is a random duration in [a, b).
func (x *h) between(a, b time.Duration) time.Duration {
	return a + time.Duration(x.float()*float64(b-a))
}

func run(o options) (broken bool, err error) {
	x := &h{o: o, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)), start: time.Now(), faults: map[string]int{}}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "extractq-chaos"); err != nil {
			return false, err
		}
	} else if err = os.MkdirAll(o.dir, 0o755); err != nil {
		return false, err
	}
	x.dir = o.dir
	if strings.HasSuffix(o.profile, ".yaml") || strings.HasSuffix(o.profile, ".json") {
		b, err := os.ReadFile(o.profile)
		if err != nil {
			return false, err
		}
		// The workers and submit run in the working directory, where
		// "sim:NAME.yaml" finds it.
		x.o.profile = filepath.Base(o.profile)
		if err := os.WriteFile(filepath.Join(x.dir, x.o.profile), b, 0o644); err != nil {
			return false, err
		}
		o = x.o
	}
	defer func() {
		if o.keep || broken || err != nil {
			fmt.Printf("working directory kept: %s\n", x.dir)
			return
		}
		_ = os.RemoveAll(x.dir)
	}()
	x.logf("chaos: seed %d, %d documents in %d submits, %d workers × %d, profile sim:%s, ack wait %s, faults for %s every ~%s, dir %s",
		o.seed, o.docs, o.submits, o.workers, o.conc, o.profile, o.ackWait, o.duration, o.faultEvery, x.dir)

	if x.bin.worker = o.workerBin; x.bin.worker == "" {
		if x.bin.worker, err = fleettest.BuildWorker(x.dir); err != nil {
			return false, err
		}
	} else if x.bin.worker, err = filepath.Abs(x.bin.worker); err != nil {
		return false, err
	}
	x.bin.submit = filepath.Join(x.dir, "submit")
	if out, err := exec.Command("go", "build", "-o", x.bin.submit, "github.com/extractq/extractq/cmd/submit").CombinedOutput(); err != nil {
		return false, fmt.Errorf("build cmd/submit: %v\n%s", err, out)
	}

	// PostgreSQL.
	if o.privatePG {
		if x.pg, err = startPrivatePG(ctx, filepath.Join(x.dir, "pg"), o.pgPort); err != nil {
			return false, err
		}
		defer x.pg.stop()
		x.dbURL = x.pg.url("extractq")
	} else {
		url, drop, err := testenv.TempDatabase(ctx)
		if err != nil {
			return false, err
		}
		defer func() {
			if !broken {
				_ = drop()
			}
		}()
		x.dbURL = url
	}

	// NATS.
	if err := x.startCluster(); err != nil {
		return false, err
	}
	defer func() {
		for _, n := range x.nodes {
			n.stop()
		}
	}()
	nc, err := nats.Connect(x.natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return false, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return false, err
	}

	pool := fmt.Sprintf("sim:%s=concurrency:%d", o.profile, o.conc)
	if err := x.migrate(ctx, pool); err != nil {
		return false, err
	}
	if s, err := js.Stream(ctx, jobs.JobsStream); err == nil {
		l := s.ListConsumers(ctx)
		for ci := range l.Info() {
			x.logf("consumer %s: ack wait %s, back-off %v, max deliver %d, replicas %d (0: the stream's)", ci.Name, ci.Config.AckWait, ci.Config.BackOff, ci.Config.MaxDeliver, ci.Config.Replicas)
		}
	}
	for k := range o.workers {
		w := &workerProc{id: fmt.Sprintf("chaos-%d", k), x: x, pool: pool}
		x.workers = append(x.workers, w)
		if err := w.start(); err != nil {
			return false, err
		}
	}
	defer func() {
		for _, w := range x.workers {
			w.shutdown()
		}
	}()

	schemaFile := filepath.Join(x.dir, "invoice.json")
	if err := os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644); err != nil {
		return false, err
	}
	var wg sync.WaitGroup
	submitErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		submitErr <- x.submitAll(ctx, schemaFile)
	}()

	x.inject(ctx, js)
	wg.Wait()
	if err := <-submitErr; err != nil {
		return false, err
	}
	x.restoreAll()
	x.logf("faults stopped; waiting up to %s for the drain", o.drain)
	stuck := x.waitDrain(ctx, js)
	// The workers stop gracefully before the checks: what they still hold
	// goes back, and what they flushed is there.
	for _, w := range x.workers {
		w.shutdown()
	}
	rep, err := x.check(ctx, js)
	if err != nil {
		return false, err
	}
	rep.stuck = stuck
	x.print(rep)
	return rep.broken(), nil
}

// --- NATS nodes ---

type nodeConfig struct {
	Name        string   `json:"name"`
	Port        int      `json:"port"`
	ClusterPort int      `json:"cluster_port"`
	HTTPPort    int      `json:"http_port"`
	Routes      []string `json:"routes"`
	Dir         string   `json:"dir"`
}

// runNode is this program as one NATS node: until SIGTERM (a graceful
// stop) or SIGKILL (a crash).
func runNode(cfgJSON string) error {
	var c nodeConfig
	if err := json.Unmarshal([]byte(cfgJSON), &c); err != nil {
		return err
	}
	s, err := server.NewServer(&server.Options{
		ServerName: c.Name, Host: "127.0.0.1", Port: c.Port, HTTPHost: "127.0.0.1", HTTPPort: c.HTTPPort,
		JetStream: true, StoreDir: c.Dir, NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
		Cluster: server.ClusterOpts{Name: "extractq-chaos", Host: "127.0.0.1", Port: c.ClusterPort},
		Routes:  server.RoutesFromStr(strings.Join(c.Routes, ",")),
	})
	if err != nil {
		return err
	}
	go s.Start()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	s.Shutdown()
	return nil
}

type node struct {
	cfg  nodeConfig
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (n *node) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.cfg.Port) }

func (n *node) start() error {
	b, _ := json.Marshal(n.cfg)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), nodeEnv+"="+string(b))
	f, err := startLogged(cmd, n.log)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	return nil
}

// startLogged starts cmd with its output appended to the file at path,
// killed when this process dies; the caller closes the returned file
// when cmd has exited.
func startLogged(cmd *exec.Cmd, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ready waits until the node answers its monitoring port's /healthz.
func (n *node) ready(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", n.cfg.HTTPPort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("NATS node %s not up within %s (log %s)", n.cfg.Name, limit, n.log)
}

// kill is a crash: SIGKILL, then waits for the process to be gone.
func (n *node) kill() { n.end(syscall.SIGKILL) }

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// stop is a clean shutdown: SIGTERM, and SIGKILL after 10 s.
func (n *node) stop() { n.end(syscall.SIGTERM) }

// end signals the node's process and waits for it to be gone, killing it
// if it is still there 10 s after a gentler signal.
func (n *node) end(sig syscall.Signal) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (x *h) startCluster() error {
	ports, err := freePorts(9)
	if err != nil {
		return err
	}
	var urls []string
	for i := range 3 {
		c := nodeConfig{Name: fmt.Sprintf("n%d", i), Port: ports[i], ClusterPort: ports[3+i], HTTPPort: ports[6+i],
			Dir: filepath.Join(x.dir, fmt.Sprintf("nats-%d", i))}
		for j := range 3 {
			if j != i {
				c.Routes = append(c.Routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+j]))
			}
		}
		n := &node{cfg: c, log: filepath.Join(x.dir, fmt.Sprintf("nats-%d.log", i))}
		x.nodes = append(x.nodes, n)
		urls = append(urls, n.url())
		if err := n.start(); err != nil {
			return err
		}
	}
	x.natsURL = strings.Join(urls, ",")
	for _, n := range x.nodes {
		if err := n.ready(30 * time.Second); err != nil {
			return err
		}
	}
	// A meta leader that knows all three servers, for a second on end:
	// placing R3 streams needs them all.
	var since time.Time
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if x.metaLeader() != "" && x.metaPeers() >= 3 {
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) > 2*time.Second {
				break
			}
		} else {
			since = time.Time{}
		}
		if time.Now().After(deadline) {
			return errors.New("the NATS cluster had no meta leader knowing 3 servers within 60s")
		}
	}
	x.logf("NATS cluster up: %s (meta leader %s)", x.natsURL, x.metaLeader())
	return nil
}

type jsz struct {
	Meta struct {
		Leader   string `json:"leader"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
		} `json:"replicas"`
	} `json:"meta_cluster"`
}

func (x *h) jsz(n *node) (jsz, bool) {
	var j jsz
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", n.cfg.HTTPPort))
	if err != nil {
		return j, false
	}
	defer resp.Body.Close()
	return j, json.NewDecoder(resp.Body).Decode(&j) == nil
}

// metaLeader is the meta group's leader as a running node reports it.
func (x *h) metaLeader() string {
	for _, n := range x.nodes {
		if !n.running() {
			continue
		}
		if j, ok := x.jsz(n); ok && j.Meta.Leader != "" {
			return j.Meta.Leader
		}
	}
	return ""
}

func (x *h) metaPeers() int {
	for _, n := range x.nodes {
		if j, ok := x.jsz(n); ok && j.Meta.Leader == n.cfg.Name {
			return 1 + len(j.Meta.Replicas)
		}
	}
	return 0
}

// --- PostgreSQL ---

// createDB creates database name on the server at adminURL.
func createDB(ctx context.Context, adminURL, name string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", adminURL, err)
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "CREATE DATABASE "+name)
	return err
}

type privatePG struct {
	dir  string
	port int
}

func (p *privatePG) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// asPostgres runs a PostgreSQL tool as the postgres user when this program
// runs as root (the server refuses root).
func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func startPrivatePG(ctx context.Context, dir string, port int) (*privatePG, error) {
	p := &privatePG{dir: dir, port: port}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "-R", "postgres", filepath.Dir(dir)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v %s", dir, err, out)
		}
	}
	if out, err := asPostgres("initdb", "-D", dir, "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	if err := createDB(ctx, p.url("postgres"), "extractq"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *privatePG) start() error {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c max_connections=300 -c shared_buffers=128MB", p.port, p.dir)
	out, err := asPostgres("pg_ctl", "-D", p.dir, "-l", filepath.Join(p.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	return nil
}

// crash stops the server as a crash would: no checkpoint, WAL replay at
// the next start.
func (p *privatePG) crash() error {
	out, err := asPostgres("pg_ctl", "-D", p.dir, "-m", "immediate", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
	return nil
}

func (p *privatePG) stop() {
	_ = asPostgres("pg_ctl", "-D", p.dir, "-m", "fast", "-w", "stop").Run()
}

// --- workers ---

type workerProc struct {
	id, pool string
	x        *h
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	killed   bool // by the harness: its exit is expected
	starts   int
	closing  bool
}

func (w *workerProc) start() error {
	x := w.x
	args := []string{"run", "--listen", "", "--id", w.id, "--pool", w.pool, "--ack-wait", x.o.ackWait.String(), "--backoff=",
		"--max-deliver", strconv.Itoa(x.o.maxDeliver), "--grace", "5s", "--log-level", "warn", "--log-format", "json"}
	cmd := exec.Command(x.bin.worker, args...)
	cmd.Env = append(testenv.CleanEnv(), "EXTRACTQ_NATS_URL="+x.natsURL, "EXTRACTQ_DATABASE_URL="+x.dbURL)
	cmd.Dir = x.dir
	f, err := startLogged(cmd, filepath.Join(x.dir, w.id+".log"))
	if err != nil {
		return err
	}
	done := make(chan struct{})
	w.mu.Lock()
	w.cmd, w.done, w.killed = cmd, done, false
	w.starts++
	w.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		w.mu.Lock()
		expected := w.killed || w.closing
		if w.cmd == cmd {
			w.cmd = nil
		}
		w.mu.Unlock()
		close(done)
		if !expected {
			x.mu.Lock()
			x.exits = append(x.exits, fmt.Sprintf("%s at %.0fs: %v", w.id, time.Since(x.start).Seconds(), err))
			x.mu.Unlock()
			x.logf("worker %s exited by itself: %v (restarting it in 1s, as an orchestrator would)", w.id, err)
			time.Sleep(time.Second)
			w.mu.Lock()
			closing := w.closing
			w.mu.Unlock()
			if !closing {
				if err := w.start(); err != nil {
					x.logf("restart %s: %v", w.id, err)
				}
			}
		}
	}()
	return nil
}

func (w *workerProc) signal(sig syscall.Signal) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return false
	}
	if sig == syscall.SIGKILL {
		w.killed = true
	}
	return w.cmd.Process.Signal(sig) == nil
}

func (w *workerProc) wait() {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done != nil {
		<-done
	}
}

// shutdown stops the worker gracefully (SIGTERM, SIGCONT in case it is
// stopped) and waits.
func (w *workerProc) shutdown() {
	w.mu.Lock()
	w.closing = true
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (x *h) migrate(ctx context.Context, pool string) error {
	for try := 1; ; try++ {
		cmd := exec.CommandContext(ctx, x.bin.worker, "migrate", "--stream-replicas", "3", "--pool", pool,
			"--ack-wait", x.o.ackWait.String(), "--backoff=", "--max-deliver", strconv.Itoa(x.o.maxDeliver), "--log-level", "warn")
		cmd.Env = append(testenv.CleanEnv(), "EXTRACTQ_NATS_URL="+x.natsURL, "EXTRACTQ_DATABASE_URL="+x.dbURL)
		cmd.Dir = x.dir
		out, err := cmd.CombinedOutput()
		if err == nil {
			x.logf("worker migrate --stream-replicas 3 --pool %s: done", pool)
			return nil
		}
		if try == 5 {
			return fmt.Errorf("worker migrate: %v\n%s", err, out)
		}
		time.Sleep(2 * time.Second)
	}
}

// --- submits ---

func (x *h) submitAll(ctx context.Context, schemaFile string) error {
	per := (x.o.docs + x.o.submits - 1) / x.o.submits
	gap := time.Duration(float64(x.o.duration) * 0.6 / float64(x.o.submits))
	for k := range x.o.submits {
		if k > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(gap):
			}
		}
		lo, hi := k*per, min((k+1)*per, x.o.docs)
		if lo >= hi {
			break
		}
		r := runInfo{name: fmt.Sprintf("chaos-%d-%d", x.o.seed, k)}
		file := filepath.Join(x.dir, r.name+".jsonl")
		f, err := os.Create(file)
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		enc := json.NewEncoder(bw)
		for i := lo; i < hi; i++ {
			id := fmt.Sprintf("doc-%d-%07d", x.o.seed, i)
			r.ids = append(r.ids, id)
			if err := enc.Encode(map[string]string{"id": id, "text": fleettest.Document(i)}); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		f.Close()
		for r.tries = 1; ; r.tries++ {
			cmd := exec.CommandContext(ctx, x.bin.submit, "--schema", schemaFile, "--schema-name", "invoice",
				"--provider", "sim:"+x.o.profile, "--run", r.name, "--json", file)
			cmd.Env = append(testenv.CleanEnv(), "EXTRACTQ_NATS_URL="+x.natsURL, "EXTRACTQ_DATABASE_URL="+x.dbURL)
			cmd.Dir = x.dir
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			var err error
			if err = cmd.Start(); err == nil {
				if r.tries == 1 && x.float() < x.o.killSubmits {
					after := x.between(100*time.Millisecond, 1500*time.Millisecond)
					t := time.AfterFunc(after, func() {
						if cmd.Process.Signal(syscall.SIGKILL) == nil {
							x.count("kill-submit")
							x.logf("SIGKILL submit %s after %s", r.name, after.Round(10*time.Millisecond))
						}
					})
					defer t.Stop()
				}
				err = cmd.Wait()
			}
			if err == nil {
				r.summary = strings.TrimSpace(stdout.String())
				x.logf("submit %s: %d documents, try %d: %s", r.name, len(r.ids), r.tries, short(r.summary, 200))
				break
			}
			x.logf("submit %s try %d failed (%v): %s", r.name, r.tries, err, short(strings.TrimSpace(stderr.String()), 300))
			if ctx.Err() != nil || r.tries >= 30 {
				return fmt.Errorf("submit %s failed %d times: %v", r.name, r.tries, err)
			}
			time.Sleep(2 * time.Second)
		}
		x.mu.Lock()
		x.runs = append(x.runs, r)
		x.mu.Unlock()
	}
	return nil
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " | ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// --- faults ---

// inject runs faults until -duration passes; each restores itself.
func (x *h) inject(ctx context.Context, js jetstream.JetStream) {
	end := time.Now().Add(x.o.duration)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		wait := time.Duration(float64(x.o.faultEvery) * (0.3 + 1.4*x.float()))
		if time.Now().Add(wait).After(end) {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(end)):
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		var kinds []string
		if !x.o.noWorkerKill {
			kinds = append(kinds, "kill-worker", "kill-worker", "kill-worker")
		}
		if !x.o.noNATS {
			kinds = append(kinds, "crash-nats", "crash-nats", "crash-nats")
		}
		if !x.o.noStop {
			kinds = append(kinds, "stop-worker", "stop-worker")
		}
		if x.pg != nil {
			kinds = append(kinds, "crash-pg")
		}
		if len(kinds) == 0 {
			continue
		}
		kind := kinds[x.intn(len(kinds))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.fault(ctx, js, kind)
		}()
	}
}

func (x *h) fault(ctx context.Context, js jetstream.JetStream, kind string) {
	switch kind {
	case "kill-worker":
		w := x.workers[x.intn(len(x.workers))]
		down := x.between(200*time.Millisecond, 3*time.Second)
		if !w.signal(syscall.SIGKILL) {
			return
		}
		x.count(kind)
		w.wait()
		x.logf("SIGKILL worker %s, back in %s", w.id, down.Round(100*time.Millisecond))
		time.Sleep(down)
		if err := w.start(); err != nil {
			x.logf("restart worker %s: %v", w.id, err)
		}
	case "stop-worker":
		w := x.workers[x.intn(len(x.workers))]
		d := time.Duration(float64(x.o.ackWait) * (1.2 + 1.3*x.float()))
		if !w.signal(syscall.SIGSTOP) {
			return
		}
		x.count(kind)
		x.logf("SIGSTOP worker %s for %s", w.id, d.Round(100*time.Millisecond))
		time.Sleep(d)
		w.signal(syscall.SIGCONT)
		x.logf("SIGCONT worker %s", w.id)
	case "crash-nats":
		if !x.claim(&x.natsBusy) {
			return
		}
		defer x.unclaim(&x.natsBusy)
		// Wait until all three are current again before taking one down:
		// a second node lost while the first catches up is two of three.
		var target, why string
		switch p := x.float(); {
		case p < 0.4:
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if s, err := js.Stream(ictx, jobs.JobsStream); err == nil {
				if info, err := s.Info(ictx); err == nil && info.Cluster != nil {
					target, why = info.Cluster.Leader, "leader of "+jobs.JobsStream
				}
			}
			cancel()
		case p < 0.7:
			target, why = x.metaLeader(), "meta leader"
		}
		var n *node
		for _, c := range x.nodes {
			if c.cfg.Name == target {
				n = c
			}
		}
		if n == nil {
			n, why = x.nodes[x.intn(len(x.nodes))], "random"
		}
		down := x.between(2*time.Second, 10*time.Second)
		x.count(kind)
		n.kill()
		x.logf("SIGKILL NATS node %s (%s), back in %s", n.cfg.Name, why, down.Round(100*time.Millisecond))
		time.Sleep(down)
		if err := n.start(); err != nil {
			x.logf("restart NATS node %s: %v", n.cfg.Name, err)
			return
		}
		if err := n.ready(30 * time.Second); err != nil {
			x.logf("%v", err)
		}
		x.logf("NATS node %s restarted", n.cfg.Name)
		// Let it catch up before the next node crash.
		time.Sleep(5 * time.Second)
	case "crash-pg":
		if !x.claim(&x.pgBusy) {
			return
		}
		defer x.unclaim(&x.pgBusy)
		down := x.between(time.Second, 6*time.Second)
		x.count(kind)
		if err := x.pg.crash(); err != nil {
			x.logf("%v", err)
			return
		}
		x.logf("PostgreSQL crashed (stop -m immediate), back in %s", down.Round(100*time.Millisecond))
		time.Sleep(down)
		if err := x.pg.start(); err != nil {
			x.logf("%v", err)
			return
		}
		x.logf("PostgreSQL restarted")
	}
}

// restoreAll makes sure every node, worker and the database run.
func (x *h) restoreAll() {
	for _, n := range x.nodes {
		if !n.running() {
			_ = n.start()
			_ = n.ready(30 * time.Second)
		}
	}
	for _, w := range x.workers {
		w.signal(syscall.SIGCONT)
		w.mu.Lock()
		dead := w.cmd == nil
		w.mu.Unlock()
		if dead {
			_ = w.start()
		}
	}
}

// --- drain and checks ---

// waitDrain waits until every submitted document's job is final, the jobs
// stream is empty and every run announced; it returns what is still open
// when -drain-timeout passes.
func (x *h) waitDrain(ctx context.Context, js jetstream.JetStream) string {
	deadline := time.Now().Add(x.o.drain)
	last := ""
	for {
		state, done := x.drainState(ctx, js)
		if done {
			x.logf("drained: %s", state)
			return ""
		}
		if state != last {
			x.logf("draining: %s", state)
			last = state
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return state
		}
		time.Sleep(3 * time.Second)
	}
}

func (x *h) drainState(ctx context.Context, js jetstream.JetStream) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, x.dbURL)
	if err != nil {
		return "audit unreachable: " + err.Error(), false
	}
	defer c.Close(ctx)
	var open, final, runsOpen int
	err = c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'retrying'), count(*) FILTER (WHERE status <> 'retrying'),
		(SELECT count(*) FROM run_done WHERE open) FROM jobs`).Scan(&open, &final, &runsOpen)
	if err != nil {
		return "audit: " + err.Error(), false
	}
	msgs, pending := int64(-1), int64(-1)
	if s, err := js.Stream(ctx, jobs.JobsStream); err == nil {
		if info, err := s.Info(ctx); err == nil {
			msgs = int64(info.State.Msgs)
		}
	}
	pending = x.consumersPending(ctx, js)
	state := fmt.Sprintf("%d jobs final, %d open in the audit; %d messages on %s, %d pending or unacked; %d runs not yet announced",
		final, open, msgs, jobs.JobsStream, pending, runsOpen)
	return state, final >= x.o.docs && open == 0 && msgs == 0 && pending == 0 && runsOpen == 0
}

func (x *h) consumersPending(ctx context.Context, js jetstream.JetStream) int64 {
	s, err := js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return -1
	}
	var n int64
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		n += int64(ci.NumPending) + int64(ci.NumAckPending)
	}
	if l.Err() != nil {
		return -1
	}
	return n
}

type report struct {
	docs, results, letters, both, none, multiJobs, open int
	deliveries, attempts                                int64
	dlqMsgs, dlqOrphans, dlqDupJobs, rowsNoLetter       int
	rowsSeqMismatch                                     int
	reasons                                             map[string]int
	runProblems                                         []string
	examples                                            []string
	stuck                                               string
	streamMsgs                                          uint64
	profileClean                                        bool
}

func (r report) broken() bool {
	return r.both > 0 || r.none > 0 || r.multiJobs > 0 || r.open > 0 || r.dlqOrphans > 0 || r.dlqDupJobs > 0 ||
		r.rowsNoLetter > 0 || r.rowsSeqMismatch > 0 || len(r.runProblems) > 0 || r.stuck != "" || r.streamMsgs > 0 ||
		(r.profileClean && r.letters > 0)
}

func (x *h) check(ctx context.Context, js jetstream.JetStream) (report, error) {
	r := report{reasons: map[string]int{}, profileClean: x.o.profile == "clean"}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, x.dbURL)
	if err != nil {
		return r, err
	}
	defer c.Close(ctx)

	x.mu.Lock()
	runs := slices.Clone(x.runs)
	x.mu.Unlock()
	var ids []string
	for _, ru := range runs {
		ids = append(ids, ru.ids...)
	}
	r.docs = len(ids)
	rows, err := c.Query(ctx, `WITH d(id) AS (SELECT unnest($1::text[]))
		SELECT d.id,
		  (SELECT count(*) FROM results WHERE document_id = d.id),
		  (SELECT count(*) FROM dead_letters WHERE document_id = d.id),
		  (SELECT count(*) FROM jobs WHERE document_id = d.id),
		  (SELECT count(*) FROM jobs WHERE document_id = d.id AND status = 'retrying')
		FROM d`, ids)
	if err != nil {
		return r, err
	}
	for rows.Next() {
		var id string
		var res, dl, nj, open int
		if err := rows.Scan(&id, &res, &dl, &nj, &open); err != nil {
			return r, err
		}
		r.results += min(res, 1)
		r.letters += min(dl, 1)
		bad := ""
		switch {
		case res > 0 && dl > 0:
			r.both++
			bad = "result and dead letter"
		case res == 0 && dl == 0:
			r.none++
			bad = "neither result nor dead letter"
		case res > 1 || dl > 1:
			r.both++
			bad = "more than one final state"
		}
		if nj != 1 {
			r.multiJobs++
			bad += fmt.Sprintf(" %d jobs", nj)
		}
		if open > 0 {
			r.open++
			bad += " job still retrying"
		}
		if bad != "" && len(r.examples) < 10 {
			r.examples = append(r.examples, id+": "+strings.TrimSpace(bad))
		}
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	if err := c.QueryRow(ctx, `SELECT coalesce(sum(deliveries), 0), coalesce(sum(attempts), 0) FROM jobs`).Scan(&r.deliveries, &r.attempts); err != nil {
		return r, err
	}

	// Audit rows of dead letters, against the DLQ stream.
	type row struct {
		seq       int64
		job, doc  string
		reason    string
		hasLetter bool
	}
	dlRows := map[string]*row{}
	rs, err := c.Query(ctx, `SELECT job_id, document_id, seq, reason FROM dead_letters`)
	if err != nil {
		return r, err
	}
	for rs.Next() {
		var w row
		if err := rs.Scan(&w.job, &w.doc, &w.seq, &w.reason); err != nil {
			return r, err
		}
		dlRows[w.job] = &w
		r.reasons[w.reason]++
	}
	if err := rs.Err(); err != nil {
		return r, err
	}
	s, err := js.Stream(ctx, jobs.DLQStream)
	if err != nil {
		return r, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return r, err
	}
	seen := map[string]bool{}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return r, fmt.Errorf("DLQ message %d: %w", seq, err)
		}
		r.dlqMsgs++
		var l struct {
			Job struct {
				JobID      string `json:"job_id"`
				DocumentID string `json:"document_id"`
			} `json:"job"`
		}
		if err := json.Unmarshal(m.Data, &l); err != nil {
			return r, fmt.Errorf("DLQ message %d: %w", seq, err)
		}
		job := l.Job.JobID
		if seen[job] {
			r.dlqDupJobs++
			r.examples = append(r.examples, fmt.Sprintf("DLQ: job %s (document %s) has a second letter at %d", job, l.Job.DocumentID, seq))
		}
		seen[job] = true
		w := dlRows[job]
		switch {
		case w == nil:
			r.dlqOrphans++
			r.examples = append(r.examples, fmt.Sprintf("DLQ: letter %d of job %s (document %s) has no audit row", seq, job, l.Job.DocumentID))
		case w.seq != int64(seq):
			if !w.hasLetter {
				r.rowsSeqMismatch++
				r.examples = append(r.examples, fmt.Sprintf("DLQ: letter %d of job %s, the audit row says %d", seq, job, w.seq))
			}
		default:
			w.hasLetter = true
		}
	}
	for _, w := range dlRows {
		if !w.hasLetter && w.seq == 0 || !w.hasLetter && !seen[w.job] {
			r.rowsNoLetter++
			r.examples = append(r.examples, fmt.Sprintf("audit: dead letter of job %s (document %s, seq %d) has no letter on %s", w.job, w.doc, w.seq, jobs.DLQStream))
		}
	}
	if js, err := js.Stream(ctx, jobs.JobsStream); err == nil {
		if info, err := js.Info(ctx); err == nil {
			r.streamMsgs = info.State.Msgs
		}
	}

	// Runs: each announced and published for every submission, its done
	// event counting what the audit holds.
	for _, ru := range runs {
		var jobsN int64
		var sealed, announced, published int
		var ev []byte
		err := c.QueryRow(ctx, `SELECT jobs, sealed, announced, published, done_event FROM run_done WHERE run = $1`, ru.name).
			Scan(&jobsN, &sealed, &announced, &published, &ev)
		if err != nil {
			r.runProblems = append(r.runProblems, fmt.Sprintf("run %s: no run_done row: %v", ru.name, err))
			continue
		}
		var ok, failed int
		if err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM results WHERE run = $1), (SELECT count(*) FROM dead_letters WHERE run = $1)`, ru.name).Scan(&ok, &failed); err != nil {
			return r, err
		}
		var e struct{ Total, OK, Failed, Generation int }
		_ = json.Unmarshal(ev, &e)
		var p []string
		if announced != sealed || published != announced {
			p = append(p, fmt.Sprintf("sealed %d, announced %d, published %d", sealed, announced, published))
		}
		if jobsN != int64(len(ru.ids)) {
			p = append(p, fmt.Sprintf("the audit counts %d jobs queued into it, %d were submitted", jobsN, len(ru.ids)))
		}
		if e.Total != len(ru.ids) || e.OK != ok || e.Failed != failed {
			p = append(p, fmt.Sprintf("done event total %d ok %d failed %d; submitted %d, results %d, dead letters %d", e.Total, e.OK, e.Failed, len(ru.ids), ok, failed))
		}
		if len(p) > 0 {
			r.runProblems = append(r.runProblems, fmt.Sprintf("run %s (%d submit tries): %s", ru.name, ru.tries, strings.Join(p, "; ")))
		}
	}
	return r, nil
}

func (x *h) print(r report) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var fs []string
	total := 0
	for k, v := range x.faults {
		fs = append(fs, fmt.Sprintf("%s %d", k, v))
		total += v
	}
	sort.Strings(fs)
	tries := 0
	for _, ru := range x.runs {
		tries += ru.tries
	}
	fmt.Printf("\nchaos summary (seed %d, profile sim:%s, %d workers, %s of faults, %s in all)\n", x.o.seed, x.o.profile, x.o.workers, x.o.duration, time.Since(x.start).Round(time.Second))
	fmt.Printf("  faults injected: %d (%s)\n", total, strings.Join(fs, ", "))
	fmt.Printf("  workers exited by themselves: %d\n", len(x.exits))
	for _, e := range x.exits {
		fmt.Printf("    %s\n", e)
	}
	fmt.Printf("  submitted: %d documents in %d runs (%d submit invocations)\n", r.docs, len(x.runs), tries)
	fmt.Printf("  results: %d   dead letters: %d   both: %d   none: %d   documents without exactly one job: %d   jobs still open: %d\n",
		r.results, r.letters, r.both, r.none, r.multiJobs, r.open)
	fmt.Printf("  deliveries: %d   model calls (attempts): %d\n", r.deliveries, r.attempts)
	fmt.Printf("  DLQ: %d letters; without audit row %d, second letters of a job %d; audit rows without letter %d, at another sequence %d\n",
		r.dlqMsgs, r.dlqOrphans, r.dlqDupJobs, r.rowsNoLetter, r.rowsSeqMismatch)
	if len(r.reasons) > 0 {
		var rs []string
		for k, v := range r.reasons {
			rs = append(rs, fmt.Sprintf("%q %d", k, v))
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
		if len(rs) > 6 {
			rs = append(rs[:6], fmt.Sprintf("and %d more", len(rs)-6))
		}
		fmt.Printf("  dead-letter reasons: %s\n", short(strings.Join(rs, ", "), 600))
	}
	fmt.Printf("  messages left on %s: %d\n", jobs.JobsStream, r.streamMsgs)
	for _, p := range r.runProblems {
		fmt.Printf("  BROKEN run: %s\n", p)
	}
	if r.stuck != "" {
		fmt.Printf("  BROKEN stuck: not drained within %s: %s\n", x.o.drain, r.stuck)
	}
	if r.profileClean && r.letters > 0 {
		fmt.Printf("  BROKEN: %d dead letters with sim:clean (every answer valid)\n", r.letters)
	}
	for _, e := range r.examples {
		fmt.Printf("  e.g. %s\n", e)
	}
	if r.broken() {
		fmt.Println("RESULT: a promise is BROKEN")
	} else {
		fmt.Println("RESULT: every promise kept")
	}
}
