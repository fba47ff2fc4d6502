// Command batch runs the same documents through a batch pool and through
// an online pool of one worker process each, against the LLM simulator
// speaking the OpenAI API (chat and Batch API), and prints what became of
// every document, the re-ask rounds the batch pool needed, and the cost
// per valid document of each at gpt-4o-mini's list prices (the batch pool
// at the Batch API's half price).
//
//	go run ./bench/batch -docs 100000
//
// The simulator's batches end after -delay (a real one takes minutes to
// hours); the figures that matter are outcomes, rounds and cost, not wall
// time. It needs the local Postgres (temporary databases are created and
// dropped) and starts an embedded NATS server per pool.
package main

import (
	"context"
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
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// model is priced as the provider publishes it; the simulator answers.
const model = "openai:gpt-4o-mini"

func main() {
	docs := flag.Int("docs", 100_000, "documents to extract")
	profile := flag.String("profile", "sloppy", "simulator profile (built-in name or file)")
	delay := flag.Duration("delay", 5*time.Second, "how long a simulated batch runs")
	maxRequests := flag.Int("max-requests", 20_000, "the batch pool's max_requests")
	maxWait := flag.Duration("max-wait", 5*time.Second, "the batch pool's max_wait")
	expire := flag.Float64("expire", 0.01, "share of batch lines that expire unanswered")
	online := flag.Bool("online", true, "also run the online pool on the same documents")
	conc := flag.Int("concurrency", 64, "the online pool's concurrency")
	flag.Parse()
	prof, err := sim.LoadProfile(*profile)
	if err != nil {
		log.Fatal(err)
	}
	prof.Batch = sim.BatchProfile{Delay: *delay, Expire: *expire}
	tmp, err := os.MkdirTemp("", "extractq-bench-batch")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	bin, err := fleettest.BuildWorker(tmp)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("batch pool benchmark: %d documents, simulator profile %q (batches end after %s, %.1f%% of lines expire), priced as %s\n",
		*docs, prof.Name, *delay, 100**expire, model)
	batch, err := runPool(bin, tmp, *docs, prof, fmt.Sprintf("%s=batch,max_requests:%d,max_wait:%s", model, *maxRequests, *maxWait))
	if err != nil {
		log.Fatal(err)
	}
	batch.print("batch pool")
	if !*online {
		return
	}
	on, err := runPool(bin, tmp, *docs, prof, fmt.Sprintf("%s=concurrency:%d", model, *conc))
	if err != nil {
		log.Fatal(err)
	}
	on.print("online pool")
	fmt.Printf("cost per valid document, batch / online: %.3f\n", batch.perValid()/on.perValid())
}

// outcome is what one pool made of the documents.
type outcome struct {
	n, results, dead  int
	wall              time.Duration
	attempts, retries int64
	usage             llm.Usage
	validAfter        map[int]int // valid documents by attempts needed
	rounds            []round
	batchLines        int64
	expired           int64
	workerCPU         time.Duration
	usd               float64
	batches, rejected int64
}

type round struct{ n, batches, requests int }

func (o outcome) perValid() float64 { return o.usd / float64(max(o.results, 1)) }

func (o outcome) print(name string) {
	fmt.Printf("\n%s: %d documents in %s (worker CPU %s)\n", name, o.n, o.wall.Round(time.Second), o.workerCPU.Round(time.Millisecond))
	fmt.Printf("  valid results %d, dead letters %d, neither %d\n", o.results, o.dead, o.n-o.results-o.dead)
	valid := 0
	for k := 1; k <= 10; k++ {
		if v, ok := o.validAfter[k]; ok {
			valid += v
			fmt.Printf("  valid after %d attempt(s): %6d (%5.1f%% of documents)\n", k, valid, 100*float64(valid)/float64(o.n))
		}
	}
	for _, r := range o.rounds {
		fmt.Printf("  round %d: %d batch(es), %d requests\n", r.n, r.batches, r.requests)
	}
	if o.batches > 0 {
		fmt.Printf("  provider batches %d (%d refused for the queue quota), lines answered %d (%d expired, sent again)\n", o.batches, o.rejected, o.batchLines, o.expired)
	}
	fmt.Printf("  attempts %d (+%d transport retries); tokens in %d, out %d\n", o.attempts, o.retries, o.usage.PromptTokens, o.usage.CompletionTokens)
	fmt.Printf("  cost $%.4f, per 1,000 valid documents $%.4f\n", o.usd, 1000*o.perValid())
}

// runPool submits n documents, runs one worker process serving pool
// until every document is settled, and reads the outcome.
func runPool(bin, tmp string, n int, prof sim.Profile, pool string) (outcome, error) {
	ctx := context.Background()
	o := outcome{n: n, validAfter: map[int]int{}}
	dir, err := os.MkdirTemp(tmp, "nats")
	if err != nil {
		return o, err
	}
	natsURL, stopNATS, err := fleettest.StartNATS(dir)
	if err != nil {
		return o, err
	}
	defer stopNATS()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return o, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		return o, err
	}
	dbURL, drop, err := testenv.TempDatabase(ctx)
	if err != nil {
		return o, err
	}
	defer func() {
		if err := drop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()
	st, err := audit.Open(ctx, dbURL)
	if err != nil {
		return o, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return o, err
	}
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		return o, err
	}
	srv := sim.New(prof, sim.WithSeed(42))
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		return o, err
	}
	sub := submit.New(js, st)
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		return o, err
	}
	job := submit.Job{Schema: ref, Provider: model, Model: "gpt-4o-mini", Pool: jobs.PoolFor(model), Run: "bench"}
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for i := range n {
			if err := fn(submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: fleettest.Document(i)}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return o, err
	}
	if sum.Queued != n {
		return o, fmt.Errorf("submit queued %d of %d: %+v", sum.Queued, n, sum.Rejected)
	}

	logf, err := os.Create(filepath.Join(tmp, "worker-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".log"))
	if err != nil {
		return o, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--listen", "", "--pool", pool, "--log-level", "warn", "--max-deliver", "10")
	cmd.Env = append(os.Environ(), "EXTRACTQ_NATS_URL="+natsURL, "EXTRACTQ_DATABASE_URL="+dbURL,
		"OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=sk-bench-not-a-key",
		"EXTRACTQ_BATCH_POLL=1s", "EXTRACTQ_BATCH_LEASE=10s")
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return o, err
	}
	lastShown := time.Now()
	for {
		var settled int
		if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> $1", audit.StatusRetrying).Scan(&settled); err != nil {
			return o, err
		}
		if settled >= n {
			break
		}
		if time.Since(lastShown) > 15*time.Second {
			lastShown = time.Now()
			fmt.Fprintf(os.Stderr, "  %s: %d of %d settled after %s\n", pool, settled, n, time.Since(start).Round(time.Second))
		}
		if time.Since(start) > time.Hour {
			return o, fmt.Errorf("only %d of %d settled after an hour (worker log %s)", settled, n, logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	o.wall = time.Since(start)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		return o, fmt.Errorf("worker exit: %w (log %s)", err, logf.Name())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	o.workerCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return o, o.read(ctx, st, srv)
}

// read fills o from the audit and the simulator's counters.
func (o *outcome) read(ctx context.Context, st *audit.Store, srv *sim.Server) error {
	db := st.Pool()
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM results), (SELECT count(*) FROM dead_letters)`).Scan(&o.results, &o.dead); err != nil {
		return err
	}
	rows, err := db.Query(ctx, `SELECT attempts, count(*) FROM jobs WHERE status = 'ok' GROUP BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k, c int
		if err := rows.Scan(&k, &c); err != nil {
			return err
		}
		o.validAfter[k] = c
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var batchRows int64
	if err := db.QueryRow(ctx, `SELECT count(*), coalesce(sum(transport_retries), 0), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
		coalesce(sum(cached_prompt_tokens), 0), count(*) FILTER (WHERE batch) FROM attempts`).
		Scan(&o.attempts, &o.retries, &o.usage.PromptTokens, &o.usage.CompletionTokens, &o.usage.CachedPromptTokens, &batchRows); err != nil {
		return err
	}
	price := providers.EstimateCost
	switch {
	case batchRows == o.attempts && batchRows > 0:
		price = providers.EstimateBatchCost
	case batchRows > 0:
		return fmt.Errorf("%d of %d attempts came through batches: a pool is batch or online", batchRows, o.attempts)
	}
	usd, known := price(model, o.usage)
	if !known {
		return fmt.Errorf("no list price for %s", model)
	}
	o.usd = usd
	rows, err = db.Query(ctx, `SELECT round, count(*), sum(requests) FROM batches GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r round
		if err := rows.Scan(&r.n, &r.batches, &r.requests); err != nil {
			return err
		}
		o.rounds = append(o.rounds, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s := srv.Stats()
	o.batchLines, o.expired, o.batches, o.rejected = s.BatchRequests, s.BatchExpired, s.Batches, s.BatchesRejected
	return nil
}
