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
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

func main() {
	var o options
	flag.IntVar(&o.docs, "docs", 10000, "documents to extract")
	flag.IntVar(&o.conc, "concurrency", 64, "worker pool concurrency")
	flag.StringVar(&o.natsURL, "nats", "", "NATS server with JetStream (default: an embedded one; NATS counts need the embedded one)")
	flag.StringVar(&o.profile, "profile", "clean", "simulator profile: clean or faulty (both zero latency)")
	flag.StringVar(&o.logLevel, "log-level", "warn", "the worker's log level (warn as in earlier runs; info is its default)")
	flag.StringVar(&o.profileDir, "profile-dir", "", "write pprof profiles of the worker (DIR/worker) and of submit (DIR/submit)")
	compare := flag.String("compare", "", "git revision to compare the working tree with: builds both, interleaves their runs, prints ratios")
	rounds := flag.Int("rounds", 3, "with -compare: rounds of one run each")
	flag.Parse()
	var err error
	if *compare != "" {
		err = runCompare(*compare, *rounds, os.Args[1:])
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
	rawPublish, rawAll       float64 // msgs/s
	msgSize                  int
	natsIn, natsOut, pgXacts int64 // -1: not counted
	logLines                 int
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
	fmt.Printf("fleet benchmark: %d documents, pool concurrency %d, simulator %q at zero latency, NATS %s, worker log level %s\n", o.docs, o.conc, r.profileName, r.natsURL, o.logLevel)
	fmt.Printf("  submit (store in Postgres + publish):  %8.0f docs/s  (%s)\n", n/r.submit.Seconds(), r.submit.Round(time.Millisecond))
	fmt.Printf("  end to end (pull, extract, audit, ack): %8.0f docs/s  (%s, %d simulator calls)\n", n/r.e2e.Seconds(), r.e2e.Round(time.Millisecond), r.calls)
	fmt.Printf("  worker CPU per document:               %8.0f µs    (%s user+sys over %d documents)\n", float64(r.cpu.Microseconds())/n, r.cpu.Round(time.Millisecond), o.docs)
	fmt.Printf("  raw JetStream publish:                 %8.0f msgs/s (%d-byte messages, same server)\n", r.rawPublish, r.msgSize)
	fmt.Printf("  raw JetStream publish+consume+ack:     %8.0f msgs/s (%d-byte messages, same server)\n", r.rawAll, r.msgSize)
	fmt.Printf("  end to end ÷ raw publish+consume+ack:  %8.1f %%\n", 100*n/r.e2e.Seconds()/r.rawAll)
	fmt.Printf("  submit ÷ raw publish:                  %8.1f %%\n", 100*n/r.submit.Seconds()/r.rawPublish)
	fmt.Printf("  per document: NATS messages worker→server %s, server→worker %s; Postgres transactions %s; worker log records %.2f\n",
		perDoc(r.natsIn), perDoc(r.natsOut), perDoc(r.pgXacts), float64(r.logLines)/n)
	fmt.Printf("  worker max RSS:                        %8.1f MiB\n", float64(r.maxRSS)/1024)
}

func run(o options) (r result, err error) {
	n := o.docs
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "extractq-bench-fleet")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp)
	var ns *server.Server
	if o.natsURL == "" {
		if ns, err = startNATS(tmp); err != nil {
			return r, err
		}
		defer ns.Shutdown()
		o.natsURL = ns.ClientURL()
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
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		return r, err
	}
	prof := fleettest.CleanProfile()
	if o.profile == "faulty" {
		prof = fleettest.FaultyProfile()
	}
	r.profileName = prof.Name
	srv := sim.New(prof)
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

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
	job := submit.Job{Schema: ref, Provider: "openai:sim-fleet", Model: "sim-fleet", Pool: jobs.PoolFor("openai:sim-fleet"), Run: "bench"}
	docs := make([]submit.Doc, n)
	for i := range docs {
		d := fleettest.Document(i)
		r.msgSize += len(d)
		docs[i] = submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: d}
	}
	r.msgSize = r.msgSize/n + 400 // the envelope around the text
	stopProfile, err := startSubmitProfile(o.profileDir)
	if err != nil {
		return r, err
	}
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
	if perr := stopProfile(); perr != nil {
		return r, perr
	}
	if err != nil {
		return r, err
	}
	if sum.Queued != n {
		return r, fmt.Errorf("submit queued %d of %d: %+v", sum.Queued, n, sum.Rejected)
	}

	// Worker process.
	bin, err := fleettest.BuildWorker(tmp)
	if err != nil {
		return r, err
	}
	logPath := filepath.Join(tmp, "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return r, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--listen", "", "--pool", "openai:sim-fleet=concurrency:"+strconv.Itoa(o.conc), "--log-level", o.logLevel, "--log-format", "json")
	cmd.Env = append(os.Environ(), "EXTRACTQ_NATS_URL="+o.natsURL, "EXTRACTQ_DATABASE_URL="+dbURL,
		"OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=sk-bench-not-a-key")
	if o.profileDir != "" {
		cmd.Env = append(cmd.Env, cli.ProfileDirEnv+"="+filepath.Join(o.profileDir, "worker"))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	xacts0, err := pgXacts(ctx, st)
	if err != nil {
		return r, err
	}
	t1 := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	for {
		var settled int
		if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&settled); err != nil {
			return r, err
		}
		if settled >= n {
			break
		}
		if time.Since(t1) > 30*time.Minute {
			return r, fmt.Errorf("only %d of %d settled after 30 minutes", settled, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.e2e = time.Since(t1)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		return r, fmt.Errorf("worker exit: %w (log in %s)", err, logPath)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	r.maxRSS = ru.Maxrss
	r.calls = srv.Stats().Requests
	r.natsIn, r.natsOut = workerNATS(ns)
	// The statistics of a backend's transactions reach pg_stat_database
	// within a second of its last one.
	time.Sleep(1500 * time.Millisecond)
	xacts1, err := pgXacts(ctx, st)
	if err != nil {
		return r, err
	}
	// The bench's own settled-count polls are one transaction each.
	r.pgXacts = xacts1 - xacts0 - int64(r.e2e/(50*time.Millisecond)) - 2
	if r.logLines, err = countLines(logPath); err != nil {
		return r, err
	}

	// Raw JetStream, same server, same message sizes.
	r.rawPublish, r.rawAll, err = rawJetStream(ctx, js, n, r.msgSize)
	return r, err
}

// startNATS starts an embedded JetStream server storing in dir, on a free
// loopback port, keeping it at hand for its connection counts.
func startNATS(dir string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("embedded nats-server did not start within 10s")
	}
	return s, nil
}

// workerNATS is what the worker's connection sent (pull requests, acks,
// in-progress acks, publishes) and received (jobs, replies), as the server
// counted it; -1 without an embedded server.
func workerNATS(s *server.Server) (in, out int64) {
	if s == nil {
		return -1, -1
	}
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

// startSubmitProfile profiles this process (submit) into dir/submit.
func startSubmitProfile(dir string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	return cli.StartProfiles(filepath.Join(dir, "submit"))
}

// rawJetStream publishes n messages of size bytes to a scratch work-queue
// stream (publish), then consumes and acks them with a pull consumer,
// returning messages per second of the publish phase and of both phases.
func rawJetStream(ctx context.Context, js jetstream.JetStream, n, size int) (publish, all float64, err error) {
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_RAW", Subjects: []string{"bench.raw"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		return 0, 0, err
	}
	defer js.DeleteStream(ctx, "BENCH_RAW")
	payload := make([]byte, size)
	start := time.Now()
	for i := range n {
		if _, err := js.PublishAsync("bench.raw", payload, jetstream.WithMsgID(strconv.Itoa(i))); err != nil {
			return 0, 0, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return 0, 0, errors.New("raw publish: acks did not arrive within a minute")
	}
	publish = float64(n) / time.Since(start).Seconds()
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
