// Command fleet measures the fleet end to end with the LLM simulator at zero
// latency: documents per second from queue to audited result, and worker
// CPU per document (getrusage of the worker process), next to the raw
// JetStream publish and publish+consume+ack rates of messages of the same
// size measured on the same server in the same run. It also counts, per
// document, what the worker sent to and received from NATS, the Postgres
// transactions of the audit database and the worker's log records.
//
//	go run ./bench/fleet -docs 10000 -concurrency 64
//	go run ./bench/fleet -docs 10000 -profile-dir /tmp/prof   # pprof files of worker and submit
//	go run ./bench/fleet -compare 31b8511 -rounds 3           # REV against the working tree, interleaved
//
// It needs the local Postgres (a database is created and dropped) and
// starts an embedded NATS server unless -nats names one. doc/performance-cpu.md
// explains the figures.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/cpustat"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

func main() {
	if p, ok := os.LookupEnv(simChildEnv); ok {
		if err := serveSimChild(benchProfile(p)); err != nil {
			log.Fatal(err)
		}
		return
	}
	var o options
	flag.IntVar(&o.docs, "docs", 10000, "documents to extract")
	flag.IntVar(&o.conc, "concurrency", 64, "worker pool concurrency")
	flag.StringVar(&o.natsURL, "nats", "", "NATS server with JetStream (default: an embedded one; NATS counts need the embedded one)")
	flag.StringVar(&o.profile, "profile", "clean", "simulator profile: clean or faulty (both zero latency)")
	flag.StringVar(&o.logLevel, "log-level", "warn", "the worker's log level (warn as in earlier runs; info is its default)")
	flag.StringVar(&o.profileDir, "profile-dir", "", "write pprof profiles of the worker (DIR/worker), of submit (DIR/submit), of this process during end to end (DIR/server: the embedded NATS server) and, with -sim-process, of the simulator (DIR/sim)")
	flag.IntVar(&o.cluster, "cluster", 0, "start this many embedded NATS servers clustered, streams replicated on all (0: one server)")
	flag.IntVar(&o.workers, "workers", 1, "worker processes, each with the pool's concurrency")
	flag.BoolVar(&o.raw, "raw", true, "measure raw JetStream too (a scale run may skip it)")
	flag.BoolVar(&o.submitOnly, "submit-only", false, "measure submit and raw publish only: no worker, no end to end (for submit at a million documents)")
	flag.BoolVar(&o.simProcess, "sim-process", false, "run the simulator in a process of its own (this program), as a remote provider would be, and count its CPU apart")
	flag.BoolVar(&o.tls, "tls", false, "the simulator serves https (a self-signed certificate the workers trust through SSL_CERT_FILE), as a hosted API is called")
	flag.StringVar(&o.simCPUs, "sim-cpus", "", "with -sim-process: run the simulator's process under taskset -c LIST (e.g. 1)")
	flag.DurationVar(&o.rssEvery, "rss-every", 0, "sample the workers' RSS this often and print the series (0: only the peak)")
	compare := flag.String("compare", "", "git revision to compare the working tree with: builds both, interleaves their runs, prints ratios")
	rounds := flag.Int("rounds", 3, "with -compare: rounds of one run each")
	sameHarness := flag.Bool("same-harness", false, "with -compare: build REV with this tree's bench/fleet and internal/cpustat, so both print the same figures (REV's worker, simulator, submit and audit code)")
	flag.Parse()
	var err error
	if *compare != "" {
		err = runCompare(*compare, *rounds, *sameHarness, os.Args[1:])
	} else {
		var r result
		if r, err = run(o); err == nil {
			r.print(o)
		}
	}
	if err != nil {
		log.Fatal(err)
	}
}

type options struct {
	cluster, workers                       int
	raw, submitOnly, simProcess, tls       bool
	simCPUs                                string
	rssEvery                               time.Duration
	docs, conc                             int
	natsURL, profile, logLevel, profileDir string
}

// result is one run's figures; print writes them in the lines -compare
// reads back (also from older revisions' output).
type result struct {
	submit, e2e              time.Duration
	cpu                      time.Duration
	maxRSS                   int64 // KiB
	calls                    int64
	rawPublish, rawAll       float64       // msgs/s
	rawNearSubmit            float64       // msgs/s, raw publish just before and after submit (mean)
	rawNearCPU               time.Duration // CPU of this process per raw publish next to submit (mean)
	submitCPU, submitPGCPU   time.Duration // CPU of this process (submit and the embedded NATS server) and of the audit database's backends during submit
	workerPGCPU              time.Duration // CPU of the audit database's backends from the workers' start to the last job settled
	msgSize                  int
	natsIn, natsOut, pgXacts int64 // -1: not counted
	logLines                 int
	dbBytes, dbBytesRun      int64 // audit database size after the drain, and its growth during it
	rss                      []rssSample
	split                    cpuSplit      // the end-to-end phase's CPU by process
	firstSettled             time.Duration // from the workers' start to the first job acked (polled every 2 ms until then)
	rawAllCPU                time.Duration // CPU of this process during raw publish+consume+ack
	natsURL, profileName     string
}

func (r result) print(o options) {
	n := float64(o.docs)
	perDoc := func(v int64) string {
		if v < 0 {
			return "not counted"
		}
		return fmt.Sprintf("%.2f", float64(v)/n)
	}
	fmt.Printf("fleet benchmark: %d documents, %d worker process(es) of pool concurrency %d, simulator %q at zero latency, NATS %s, worker log level %s\n", o.docs, o.workers, o.conc, r.profileName, r.natsURL, o.logLevel)
	fmt.Printf("  submit (store in Postgres + publish):  %8.0f docs/s  (%s)\n", n/r.submit.Seconds(), r.submit.Round(time.Millisecond))
	if o.raw {
		fmt.Printf("  raw JetStream publish next to submit:  %8.0f msgs/s (%d-byte messages, same server, mean of a run just before and one just after submit)\n", r.rawNearSubmit, r.msgSize)
		fmt.Printf("  submit ÷ raw publish next to it:       %8.1f %%\n", 100*n/r.submit.Seconds()/r.rawNearSubmit)
		fmt.Printf("  raw publish CPU per message:           %8.1f µs    (this process: client and the embedded NATS server)\n", float64(r.rawNearCPU.Nanoseconds())/1e3/n)
	}
	fmt.Printf("  submit CPU per document:               %8.1f µs    (this process: submit and the embedded NATS server) + %.1f µs in Postgres (the audit database's backends)\n",
		float64(r.submitCPU.Nanoseconds())/1e3/n, float64(r.submitPGCPU.Nanoseconds())/1e3/n)
	if o.submitOnly {
		return
	}
	fmt.Printf("  end to end (pull, extract, audit, ack): %8.0f docs/s  (%s, %d simulator calls)\n", n/r.e2e.Seconds(), r.e2e.Round(time.Millisecond), r.calls)
	fmt.Printf("  worker CPU per document:               %8.0f µs    (%s user+sys over %d documents)\n", float64(r.cpu.Microseconds())/n, r.cpu.Round(time.Millisecond), o.docs)
	fmt.Printf("  Postgres CPU per document, workers:    %8.1f µs    (the audit database's backends from the workers' start to the last job settled, the bench's polls left out)\n",
		float64(r.workerPGCPU.Nanoseconds())/1e3/n)
	if o.raw {
		fmt.Printf("  raw JetStream publish:                 %8.0f msgs/s (%d-byte messages, same server)\n", r.rawPublish, r.msgSize)
		fmt.Printf("  raw JetStream publish+consume+ack:     %8.0f msgs/s (%d-byte messages, same server)\n", r.rawAll, r.msgSize)
		fmt.Printf("  end to end ÷ raw publish+consume+ack:  %8.1f %%\n", 100*n/r.e2e.Seconds()/r.rawAll)
		fmt.Printf("  submit ÷ raw publish:                  %8.1f %%\n", 100*n/r.submit.Seconds()/r.rawPublish)
	}
	r.printSplit(n, o.simProcess)
	fmt.Printf("  per document: NATS messages worker→server %s, server→worker %s; Postgres transactions %s; worker log records %.2f\n",
		perDoc(r.natsIn), perDoc(r.natsOut), perDoc(r.pgXacts), float64(r.logLines)/n)
	fmt.Printf("  worker peak RSS:                       %8.1f MiB (VmHWM before shutdown, the largest of the workers)\n", float64(r.maxRSS)/1024)
	fmt.Printf("  Postgres: %.0f bytes per document (database %.1f MiB after the drain, %.1f MiB written during it)\n",
		float64(r.dbBytes)/n, float64(r.dbBytes)/(1<<20), float64(r.dbBytesRun)/(1<<20))
	for _, s := range r.rss {
		fmt.Printf("  rss at %6s: %5.1f%% settled, workers' RSS %s MiB\n", s.at.Round(time.Second), 100*float64(s.settled)/n, s.mib)
	}
}

// pollWait is how long the end-to-end phase sleeps before it looks at the
// jobs stream again. 50 ms between polls timed a run of 10,000 documents
// (about a second) up to 5% long, so the polls come every 2 ms while the
// workers start and once the messages left would drain before the next
// 50 ms poll: the first and the last ack are seen within a few ms, and a
// stream info request every 2 ms for a few tens of ms costs the server
// nothing that shows in the run's CPU.
func pollWait(left, drainedSinceLastPoll uint64, started bool) time.Duration {
	if !started || (drainedSinceLastPoll > 0 && left <= drainedSinceLastPoll) {
		return 2 * time.Millisecond
	}
	return 50 * time.Millisecond
}

// rssSample is the workers' resident set sizes at a moment of the run.
type rssSample struct {
	at      time.Duration
	settled int
	mib     string
}

// procStatus reads a size in KiB (VmRSS:, VmHWM:) from a process's
// /proc status.
func procStatus(pid int, field string) (kib int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func run(o options) (r result, err error) {
	n := o.docs
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "extractq-bench-fleet")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp)
	var servers []*server.Server
	if o.natsURL == "" {
		if servers, err = startNATS(tmp, o.cluster); err != nil {
			return r, err
		}
		defer func() {
			for _, s := range servers {
				s.Shutdown()
			}
		}()
		var urls []string
		for _, s := range servers {
			urls = append(urls, s.ClientURL())
		}
		o.natsURL = strings.Join(urls, ",")
	}
	r.natsURL = o.natsURL
	nc, err := nats.Connect(o.natsURL)
	if err != nil {
		return r, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		return r, err
	}
	dbURL, drop, err := testenv.TempDatabase(ctx)
	if err != nil {
		return r, err
	}
	defer func() {
		if err := drop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()
	st, err := audit.Open(ctx, dbURL)
	if err != nil {
		return r, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return r, err
	}
	if err := jobs.EnsureStreams(ctx, js, jobs.WithReplicas(max(1, o.cluster))); err != nil {
		return r, err
	}
	prof := benchProfile(o.profile)
	r.profileName = prof.Name
	var (
		simURL   string
		sp       *simProcess
		requests func(context.Context) (int64, error)
	)
	var simTLS *certFiles
	if o.tls {
		if simTLS, err = selfSignedCert(tmp); err != nil {
			return r, err
		}
	}
	if o.simProcess || o.simCPUs != "" {
		o.simProcess = true
		if sp, err = startSimProcess(o.profile, o.simCPUs, o.profileDir, simTLS); err != nil {
			return r, err
		}
		defer sp.stop()
		simURL, requests = sp.url, sp.requests
	} else {
		srv := sim.New(prof)
		url, stop, err := simOnLoopback(srv, simTLS)
		if err != nil {
			return r, err
		}
		defer func() { _ = stop() }()
		simURL = url
		requests = func(context.Context) (int64, error) { return srv.Stats().Requests, nil }
	}

	// Submit.
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		return r, err
	}
	sub := submit.New(js, st)
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		return r, err
	}
	// As cmd/submit does while it resolves the schema and opens the input
	// (fleet.Client.Warm): the first batches find their connections open.
	// Asked through an interface so that -same-harness still builds
	// revisions from before it.
	if w, ok := any(sub).(interface{ Warm(context.Context) error }); ok {
		if err := w.Warm(ctx); err != nil {
			return r, err
		}
	}
	job := submit.Job{Schema: ref, Provider: "openai:sim-fleet", Model: "sim-fleet", Pool: jobs.PoolFor("openai:sim-fleet"), Run: "bench"}
	docs := make([]submit.Doc, n)
	for i := range docs {
		d := fleettest.Document(i)
		r.msgSize += len(d)
		docs[i] = submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: d}
	}
	r.msgSize = r.msgSize/n + 400 // the envelope around the text
	var rawBefore float64
	if o.raw {
		c0 := cpustat.Self()
		if rawBefore, _, err = rawJetStream(ctx, js, n, r.msgSize, false); err != nil {
			return r, err
		}
		r.rawNearCPU = cpustat.Self() - c0
	}
	stopProfile, err := startProfile(o.profileDir, "submit")
	if err != nil {
		return r, err
	}
	pgCPU0, err := cpustat.Backends(ctx, st.Pool())
	if err != nil {
		return r, err
	}
	cpu0 := cpustat.Self()
	t0 := time.Now()
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	r.submit = time.Since(t0)
	r.submitCPU = cpustat.Self() - cpu0
	if r.submitPGCPU, err = cpustat.Since(ctx, st.Pool(), pgCPU0); err != nil {
		return r, err
	}
	if perr := stopProfile(); perr != nil {
		return r, perr
	}
	if err != nil {
		return r, err
	}
	if sum.Queued != n {
		return r, fmt.Errorf("submit queued %d of %d: %+v", sum.Queued, n, sum.Rejected)
	}
	if o.raw {
		c0 := cpustat.Self()
		rawAfter, _, err := rawJetStream(ctx, js, n, r.msgSize, false)
		if err != nil {
			return r, err
		}
		r.rawNearCPU = (r.rawNearCPU + cpustat.Self() - c0) / 2
		r.rawNearSubmit = (rawBefore + rawAfter) / 2
	}
	if o.submitOnly {
		return r, nil
	}

	// Worker process.
	bin, err := fleettest.BuildWorker(tmp)
	if err != nil {
		return r, err
	}
	var cmds []*exec.Cmd
	for k := range max(1, o.workers) {
		logf, err := os.Create(filepath.Join(tmp, fmt.Sprintf("worker-%d.log", k)))
		if err != nil {
			return r, err
		}
		defer logf.Close()
		cmd := exec.Command(bin, "run", "--listen", "", "--id", fmt.Sprintf("bench-%d", k), "--pool", "openai:sim-fleet=concurrency:"+strconv.Itoa(o.conc),
			"--log-level", o.logLevel, "--log-format", "json")
		cmd.Env = append(os.Environ(), "EXTRACTQ_NATS_URL="+o.natsURL, "EXTRACTQ_DATABASE_URL="+dbURL,
			"OPENAI_BASE_URL="+simURL+"/v1", "OPENAI_API_KEY=sk-bench-not-a-key")
		if simTLS != nil {
			cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+simTLS.cert)
		}
		if o.profileDir != "" {
			cmd.Env = append(cmd.Env, cli.ProfileDirEnv+"="+filepath.Join(o.profileDir, fmt.Sprintf("worker%s", suffix(k))))
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		cmds = append(cmds, cmd)
	}
	xacts0, err := pgXacts(ctx, st)
	if err != nil {
		return r, err
	}
	size0, err := dbSize(ctx, st)
	if err != nil {
		return r, err
	}
	// The polls below use a connection of their own, so that the CPU of
	// its backend is told apart from the workers'.
	poll, err := st.Pool().Acquire(ctx)
	if err != nil {
		return r, err
	}
	defer poll.Release()
	mark, err := markSplit(ctx, st, sp)
	if err != nil {
		return r, err
	}
	stopServerProfile, err := startProfile(o.profileDir, "server")
	if err != nil {
		return r, err
	}
	t1 := time.Now()
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			return r, err
		}
	}
	// The jobs stream is a work queue: a job leaves it when the worker
	// acks it, after storing its final state. Counting settled jobs in
	// Postgres scans the jobs table (8–14 µs of Postgres CPU per document
	// when it ran every 50ms), so the count runs when the stream is empty,
	// every 2 s, and for the RSS samples.
	jobsStream, err := js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return r, err
	}
	nextRSS, nextCount := time.Now(), time.Now().Add(2*time.Second)
	polls, settled := 0, 0
	var left uint64 = uint64(n) // messages in the stream at the last poll
	for {
		info, err := jobsStream.Info(ctx)
		if err != nil {
			return r, err
		}
		drained := left - min(left, info.State.Msgs)
		left = info.State.Msgs
		if info.State.Msgs < uint64(n) && r.firstSettled == 0 {
			r.firstSettled = time.Since(t1)
		}
		rssDue := o.rssEvery > 0 && time.Now().After(nextRSS)
		if info.State.Msgs == 0 || rssDue || time.Now().After(nextCount) {
			if err := poll.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&settled); err != nil {
				return r, err
			}
			polls++
			nextCount = time.Now().Add(2 * time.Second)
		}
		if o.rssEvery > 0 && (rssDue || settled >= n) {
			var mib []string
			for _, cmd := range cmds {
				kib, _ := procStatus(cmd.Process.Pid, "VmRSS:")
				mib = append(mib, fmt.Sprintf("%.0f", float64(kib)/1024))
			}
			r.rss = append(r.rss, rssSample{at: time.Since(t1), settled: settled, mib: strings.Join(mib, " ")})
			nextRSS = nextRSS.Add(o.rssEvery)
		}
		if settled >= n {
			break
		}
		if time.Since(t1) > 3*time.Hour {
			return r, fmt.Errorf("only %d of %d settled after 3 hours", settled, n)
		}
		time.Sleep(pollWait(left, drained, r.firstSettled > 0))
	}
	r.e2e = time.Since(t1)
	if err := stopServerProfile(); err != nil {
		return r, err
	}
	// Read before the workers exit and their backends with them.
	if r.split, err = mark.since(ctx, st, sp, int(poll.Conn().PgConn().PID())); err != nil {
		return r, err
	}
	r.workerPGCPU = r.split.pg - r.split.pgPolls
	for _, cmd := range cmds {
		// The peak of the worker itself: getrusage's maxrss of a child
		// counts the bench's own RSS at the fork.
		if kib, err := procStatus(cmd.Process.Pid, "VmHWM:"); err == nil {
			r.maxRSS = max(r.maxRSS, kib)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for k, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return r, fmt.Errorf("worker %d exit: %w (logs in %s)", k, err, tmp)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		r.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		lines, err := countLines(filepath.Join(tmp, fmt.Sprintf("worker-%d.log", k)))
		if err != nil {
			return r, err
		}
		r.logLines += lines
	}
	if r.calls, err = requests(ctx); err != nil {
		return r, err
	}
	r.natsIn, r.natsOut = workerNATS(servers)
	// The statistics of a backend's transactions reach pg_stat_database
	// within a second of its last one.
	time.Sleep(1500 * time.Millisecond)
	xacts1, err := pgXacts(ctx, st)
	if err != nil {
		return r, err
	}
	// The bench's own settled-count polls are one transaction each.
	r.pgXacts = xacts1 - xacts0 - int64(polls) - 2
	if r.dbBytes, err = dbSize(ctx, st); err != nil {
		return r, err
	}
	r.dbBytesRun = r.dbBytes - size0
	if !o.raw {
		return r, nil
	}

	// Raw JetStream, same server, same message sizes.
	c0 := cpustat.Self()
	r.rawPublish, r.rawAll, err = rawJetStream(ctx, js, n, r.msgSize, true)
	r.rawAllCPU = cpustat.Self() - c0
	return r, err
}

// benchProfile is the simulator profile -profile names.
func benchProfile(name string) sim.Profile {
	if name == "faulty" {
		return fleettest.FaultyProfile()
	}
	return fleettest.CleanProfile()
}

// startNATS starts an embedded JetStream server storing in dir, on a free
// loopback port, or a cluster of n of them, keeping them at hand for their
// connection counts.
func startNATS(dir string, n int) ([]*server.Server, error) {
	ports := make([]int, max(n, 1))
	if n > 1 { // every server routes to every other: ports first
		for i := range ports {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			ports[i] = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
	}
	var out []*server.Server
	for i := range ports {
		opts := &server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1, JetStream: true,
			StoreDir: filepath.Join(dir, fmt.Sprintf("nats-%d", i)), NoLog: true, NoSigs: true}
		if n > 1 {
			var routes []string
			for j, p := range ports {
				if j != i {
					routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
				}
			}
			opts.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: ports[i]}
			opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		}
		s, err := server.NewServer(opts)
		if err != nil {
			return out, err
		}
		go s.Start()
		out = append(out, s)
	}
	for _, s := range out {
		if !s.ReadyForConnections(30 * time.Second) {
			return out, errors.New("embedded nats-server did not start within 30s")
		}
	}
	for deadline := time.Now().Add(30 * time.Second); n > 1; time.Sleep(50 * time.Millisecond) {
		if slices.ContainsFunc(out, func(s *server.Server) bool { return s.JetStreamIsLeader() }) {
			break
		}
		if time.Now().After(deadline) {
			return out, errors.New("the embedded JetStream cluster elected no meta leader within 30s")
		}
	}
	return out, nil
}

func suffix(k int) string {
	if k == 0 {
		return ""
	}
	return "-" + strconv.Itoa(k)
}

// dbSize is the audit database's size on disk.
func dbSize(ctx context.Context, st *audit.Store) (int64, error) {
	var n int64
	err := st.Pool().QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

// workerNATS is what the worker's connection sent (pull requests, acks,
// in-progress acks, publishes) and received (jobs, replies), as the server
// counted it; -1 without an embedded server.
func workerNATS(servers []*server.Server) (in, out int64) {
	if len(servers) == 0 {
		return -1, -1
	}
	for _, s := range servers {
		cz, err := s.Connz(&server.ConnzOptions{State: server.ConnAll, Limit: 1 << 16})
		if err != nil {
			return -1, -1
		}
		for _, c := range cz.Conns {
			if c.Name == "extractq-worker" {
				in += c.InMsgs
				out += c.OutMsgs
			}
		}
	}
	return in, out
}

// pgXacts is the audit database's committed and rolled back transactions.
func pgXacts(ctx context.Context, st *audit.Store) (int64, error) {
	var n int64
	err := st.Pool().QueryRow(ctx, "SELECT pg_stat_force_next_flush(), xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(nil, &n)
	return n, err
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}

// startProfile profiles this process into dir/name: during submit
// ("submit"), and during end to end ("server": the embedded NATS server,
// the bench's polls and, without -sim-process, the simulator).
func startProfile(dir, name string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	return cli.StartProfiles(filepath.Join(dir, name))
}

// rawJetStream publishes n messages of size bytes to a scratch work-queue
// stream (publish), then, if consume, consumes and acks them with a pull
// consumer, returning messages per second of the publish phase and of both
// phases.
func rawJetStream(ctx context.Context, js jetstream.JetStream, n, size int, consume bool) (publish, all float64, err error) {
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_RAW", Subjects: []string{"bench.raw"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		return 0, 0, err
	}
	defer js.DeleteStream(ctx, "BENCH_RAW")
	payload := make([]byte, size)
	start := time.Now()
	for i := range n {
		// A loaded machine acks slowly: wait for room rather than fail.
		if _, err := js.PublishAsync("bench.raw", payload, jetstream.WithMsgID(strconv.Itoa(i)), jetstream.WithStallWait(time.Minute)); err != nil {
			return 0, 0, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return 0, 0, errors.New("raw publish: acks did not arrive within a minute")
	}
	publish = float64(n) / time.Since(start).Seconds()
	if !consume {
		return publish, 0, nil
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return 0, 0, err
	}
	got := 0
	for got < n {
		b, err := c.Fetch(min(256, n-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return 0, 0, err
		}
		k := 0
		for m := range b.Messages() {
			if err := m.Ack(); err != nil {
				return 0, 0, err
			}
			k++
		}
		if k == 0 {
			return 0, 0, fmt.Errorf("raw consume stalled at %d of %d", got, n)
		}
		got += k
	}
	return publish, float64(n) / time.Since(start).Seconds(), nil
}
