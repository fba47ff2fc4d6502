// Command fleet measures the fleet end to end with the LLM simulator at zero
// latency: documents per second from queue to audited result, and worker
// CPU per document (getrusage of the worker process), next to the raw
// JetStream publish+consume rate of messages of the same size measured on
// the same server in the same run.
//
//	go run ./bench/fleet -docs 10000 -concurrency 64
//
// It needs the local Postgres (a database is created and dropped) and
// starts an embedded NATS server unless -nats names one.
package main

import (
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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

func main() {
	docs := flag.Int("docs", 10000, "documents to extract")
	conc := flag.Int("concurrency", 64, "worker pool concurrency")
	natsURL := flag.String("nats", "", "NATS server with JetStream (default: an embedded one)")
	profile := flag.String("profile", "clean", "simulator profile: clean or faulty (both zero latency)")
	flag.Parse()
	if err := run(*docs, *conc, *natsURL, *profile); err != nil {
		log.Fatal(err)
	}
}

func run(n, conc int, natsURL, profile string) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "extractq-bench-fleet")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if natsURL == "" {
		url, stop, err := fleettest.StartNATS(tmp)
		if err != nil {
			return err
		}
		defer stop()
		natsURL = url
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		return err
	}
	dbURL, drop, err := testenv.TempDatabase(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := drop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()
	st, err := audit.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		return err
	}
	prof := fleettest.CleanProfile()
	if profile == "faulty" {
		prof = fleettest.FaultyProfile()
	}
	srv := sim.New(prof)
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	// Submit.
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		return err
	}
	sub := submit.New(js, st)
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		return err
	}
	job := submit.Job{Schema: ref, Provider: "openai:sim-fleet", Model: "sim-fleet", Pool: jobs.PoolFor("openai:sim-fleet"), Run: "bench"}
	var msgSize int
	t0 := time.Now()
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for i := range n {
			d := fleettest.Document(i)
			msgSize += len(d)
			if err := fn(submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: d}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	submitTime := time.Since(t0)
	if sum.Queued != n {
		return fmt.Errorf("submit queued %d of %d: %+v", sum.Queued, n, sum.Rejected)
	}

	// Worker process.
	bin, err := fleettest.BuildWorker(tmp)
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(tmp, "worker.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "run", "--listen", "", "--pool", "openai:sim-fleet=concurrency:"+strconv.Itoa(conc), "--log-level", "warn")
	cmd.Env = append(os.Environ(), "EXTRACTQ_NATS_URL="+natsURL, "EXTRACTQ_DATABASE_URL="+dbURL,
		"OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=sk-bench-not-a-key")
	cmd.Stdout, cmd.Stderr = logf, logf
	t1 := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	for {
		var settled int
		if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&settled); err != nil {
			return err
		}
		if settled >= n {
			break
		}
		if time.Since(t1) > 30*time.Minute {
			return fmt.Errorf("only %d of %d settled after 30 minutes", settled, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e2e := time.Since(t1)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("worker exit: %w (log in %s)", err, logf.Name())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	calls := srv.Stats().Requests

	// Raw JetStream, same server, same message sizes.
	rawRate, err := rawJetStream(ctx, js, n, msgSize/n+400)
	if err != nil {
		return err
	}

	fmt.Printf("fleet benchmark: %d documents, pool concurrency %d, simulator %q at zero latency, NATS %s\n", n, conc, prof.Name, natsURL)
	fmt.Printf("  submit (store in Postgres + publish):  %8.0f docs/s  (%s)\n", float64(n)/submitTime.Seconds(), submitTime.Round(time.Millisecond))
	fmt.Printf("  end to end (pull, extract, audit, ack): %8.0f docs/s  (%s, %d simulator calls)\n", float64(n)/e2e.Seconds(), e2e.Round(time.Millisecond), calls)
	fmt.Printf("  worker CPU per document:               %8.0f µs    (%s user+sys over %d documents)\n", float64(cpu.Microseconds())/float64(n), cpu.Round(time.Millisecond), n)
	fmt.Printf("  raw JetStream publish+consume+ack:     %8.0f msgs/s (%d-byte messages, same server)\n", rawRate, msgSize/n+400)
	return nil
}

// rawJetStream publishes n messages of size bytes to a scratch work-queue
// stream and consumes and acks them with a pull consumer, returning
// messages per second over both phases.
func rawJetStream(ctx context.Context, js jetstream.JetStream, n, size int) (float64, error) {
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_RAW", Subjects: []string{"bench.raw"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		return 0, err
	}
	defer js.DeleteStream(ctx, "BENCH_RAW")
	payload := make([]byte, size)
	start := time.Now()
	for i := range n {
		if _, err := js.PublishAsync("bench.raw", payload, jetstream.WithMsgID(strconv.Itoa(i))); err != nil {
			return 0, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return 0, errors.New("raw publish: acks did not arrive within a minute")
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return 0, err
	}
	got := 0
	for got < n {
		b, err := c.Fetch(min(256, n-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return 0, err
		}
		k := 0
		for m := range b.Messages() {
			if err := m.Ack(); err != nil {
				return 0, err
			}
			k++
		}
		if k == 0 {
			return 0, fmt.Errorf("raw consume stalled at %d of %d", got, n)
		}
		got += k
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
