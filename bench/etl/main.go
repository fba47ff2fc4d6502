// Command etl measures the nightly-ETL paths against real servers: an S3
// server (gofakes3 over bbolt, in a child process so its memory is not
// counted), an embedded NATS JetStream (also a child) and the local
// PostgreSQL (a temporary database):
//
//	go run ./bench/etl -list 1000000 -queue 100000 -changed 1000 -results 10000,100000,1000000
//
// It prints listing objects/s and the client's peak heap over -list
// objects; queueing documents/s, peak heap and bytes read for a first
// incremental run over -queue objects (listed, read, stored in the audit,
// published); the next run after -changed of them changed, against a
// --full run (time and bytes read); and Parquet export rows/s, file size
// against JSONL and peak heap for each of the -results sizes. With
// -jsonl N it also queues one gzip-compressed JSON Lines object of N
// records (documents/s, bytes read, peak heap: the object is streamed)
// and runs again over it unchanged.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/ingest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/sink"
	"github.com/extractq/extractq/internal/source"
	"github.com/extractq/extractq/internal/source/s3test"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

func main() {
	var (
		serve          = flag.String("serve", "", "internal: run a server child (s3 or nats) in -dir")
		dir            = flag.String("dir", "", "internal: the child's store")
		list           = flag.Int("list", 1_000_000, "objects to list")
		queue          = flag.Int("queue", 100_000, "objects to queue, then run incrementally")
		changed        = flag.Int("changed", 1000, "objects changed before the incremental run")
		jsonl          = flag.Int("jsonl", 0, "records of one gzip-compressed JSON Lines object to queue (0: none)")
		results        = flag.String("results", "10000,100000,1000000", "result counts to export as Parquet")
		skipS3, skipPq bool
		onlyQueue      bool
	)
	flag.BoolVar(&skipS3, "skip-s3", false, "skip listing, queueing and incremental runs")
	flag.BoolVar(&skipPq, "skip-parquet", false, "skip the Parquet export")
	flag.BoolVar(&onlyQueue, "only-queue", false, "measure the first run only (no incremental and --full runs)")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	switch *serve {
	case "s3":
		serveS3(*dir, *list, *queue, *jsonl)
		return
	case "nats":
		url, stop, err := fleettest.StartNATS(*dir)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(url)
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent ends
		stop()
		return
	}
	fmt.Printf("machine: %d CPUs (GOMAXPROCS %d), %s; shared with other work: read the figures as ratios\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	if !skipS3 {
		benchS3(ctx, *list, *queue, *changed, *jsonl, onlyQueue)
	}
	if !skipPq {
		var sizes []int
		for _, s := range strings.Split(*results, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				log.Fatalf("-results: %v", err)
			}
			sizes = append(sizes, n)
		}
		benchParquet(ctx, sizes)
	}
}

// document i of the benchmark: a few hundred bytes, like a short invoice.
func document(i int) []byte { return []byte(fleettest.Document(i)) }

// jsonlDump is a gzip-compressed JSON Lines object of n records, record
// i being document i.
func jsonlDump(n int) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	enc := json.NewEncoder(zw)
	for i := range n {
		must(enc.Encode(map[string]string{"id": fmt.Sprintf("rec-%07d", i), "text": fleettest.Document(i)}))
	}
	must(zw.Close())
	return b.Bytes()
}

func serveS3(dir string, list, queue, jsonl int) {
	srv, err := s3test.New(dir, true)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	if err := srv.Load("bench", list, func(i int) string { return fmt.Sprintf("list/%07d.txt", i) }, func(int) []byte { return []byte("x") }); err != nil {
		log.Fatal(err)
	}
	if err := srv.Load("bench", queue, func(i int) string { return fmt.Sprintf("queue/%07d.txt", i) }, document); err != nil {
		log.Fatal(err)
	}
	if jsonl > 0 {
		if err := srv.Load("bench", 1, func(int) string { return "jsonl/dump-0001.jsonl.gz" }, func(int) []byte { return jsonlDump(jsonl) }); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "s3 child: loaded %d + %d objects in %s\n", list, queue, time.Since(start).Round(time.Second))
	fmt.Println(srv.Endpoint)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// child starts this program as a server child and returns the URL it
// prints; the child ends when the parent does (its stdin closes).
func child(args ...string) (string, func()) {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		log.Fatalf("child %v: %v", args, err)
	}
	return strings.TrimSpace(line), func() { in.Close(); _ = cmd.Wait() }
}

// peak samples the live heap every 5ms until stopped, after a GC, and
// returns the highest value above the starting one.
func peak() func() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var mu sync.Mutex
	var top uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			metrics.Read(s)
			mu.Lock()
			top = max(top, s[0].Value.Uint64())
			mu.Unlock()
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		if top < base {
			return 0
		}
		return top - base
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func benchS3(ctx context.Context, list, queue, changed, jsonl int, onlyQueue bool) {
	dir, err := os.MkdirTemp("", "extractq-bench-etl-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	must(os.MkdirAll(dir+"/s3", 0o700))
	must(os.MkdirAll(dir+"/nats", 0o700))
	endpoint, stopS3 := child("-serve", "s3", "-dir", dir+"/s3", "-list", strconv.Itoa(list), "-queue", strconv.Itoa(queue), "-jsonl", strconv.Itoa(jsonl))
	defer stopS3()
	natsURL, stopNATS := child("-serve", "nats", "-dir", dir+"/nats")
	defer stopNATS()
	opts := (&s3test.Server{Endpoint: endpoint}).Options()

	if list > 0 {
		benchList(ctx, opts)
	}

	// Queueing: the fleet's front half.
	store, done := tempStore(ctx)
	defer done()
	nc, err := nats.Connect(natsURL)
	must(err)
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	must(err)
	must(jobs.EnsureStreams(ctx, js))
	sub := fleet.NewClient(js, store.Pool())
	sc, err := schema.Compile([]byte(fleettest.Schema))
	must(err)
	job := fleet.Job{Schema: sc, SchemaName: "invoice", Provider: "openai:gpt-4o-mini", Run: "bench"}
	qsrc, err := source.NewS3("s3://bench/queue/", opts)
	must(err)
	marks := ingest.NewWatermarks(store.Pool())
	run := func(name string, o ingest.Options) {
		runOver(ctx, qsrc, marks, sub, job, name, o)
	}
	if jsonl > 0 {
		jsrc, err := source.NewS3("s3://bench/jsonl/", opts)
		must(err)
		runOver(ctx, jsrc, marks, sub, job, fmt.Sprintf("a JSON Lines object of %d records (first incremental run)", jsonl), ingest.Options{Incremental: "bench-jsonl"})
		runOver(ctx, jsrc, marks, sub, job, "the same object unchanged", ingest.Options{Incremental: "bench-jsonl"})
	}
	if queue == 0 {
		return
	}
	run("queue (first incremental run)", ingest.Options{Incremental: "bench"})
	if onlyQueue {
		return
	}

	// Change some objects over HTTP, as a nightly update would.
	c, err := source.NewS3Client(opts)
	must(err)
	step := max(1, queue/max(1, changed))
	for i := 0; i < queue && i/step < changed; i += step {
		b := append(document(i), " (amended)"...)
		_, err := c.PutObject(ctx, "bench", fmt.Sprintf("queue/%07d.txt", i), strings.NewReader(string(b)), int64(len(b)), minio.PutObjectOptions{})
		must(err)
	}
	run(fmt.Sprintf("incremental after %d changed", changed), ingest.Options{Incremental: "bench"})
	run("full (--full) over the same", ingest.Options{Incremental: "bench", Full: true})
}

// runOver runs ingest over src and prints its figures.
func runOver(ctx context.Context, src source.Source, marks *ingest.Watermarks, sub *fleet.Client, job fleet.Job, name string, o ingest.Options) {
	stop := peak()
	start := time.Now()
	c, sum, err := ingest.Run(ctx, src, marks, sub, job, o, nil)
	must(err)
	el := time.Since(start)
	docs := c.Listed - c.JSONL + c.Records
	fmt.Printf("%s: listed %d (new %d, changed %d, unchanged %d; %d JSON Lines objects, %d records) in %s = %.0f docs/s; read %d bytes; queued %d, duplicates %d, rejected %d; peak heap %s\n",
		name, c.Listed, c.New, c.Changed, c.Unchanged, c.JSONL, c.Records, el.Round(time.Millisecond), float64(docs)/el.Seconds(), c.BytesRead,
		sum.Queued, sum.Duplicates, len(sum.Rejected), mib(stop()))
	if len(sum.Rejected) > 0 {
		fmt.Printf("  first rejected: %s: %s\n", sum.Rejected[0].Source, sum.Rejected[0].Reason)
	}
}

// benchList lists the -list objects only.
func benchList(ctx context.Context, opts source.S3Options) {
	src, err := source.NewS3("s3://bench/list/", opts)
	must(err)
	stop := peak()
	start := time.Now()
	n := 0
	must(src.List(ctx, "", func(source.Item) error { n++; return nil }))
	el := time.Since(start)
	fmt.Printf("listing: %d objects in %s = %.0f objects/s, peak heap %s\n", n, el.Round(time.Millisecond), float64(n)/el.Seconds(), mib(stop()))
}

func benchParquet(ctx context.Context, sizes []int) {
	store, done := tempStore(ctx)
	defer done()
	body := []byte(fleettest.Schema)
	for _, n := range sizes {
		name := fmt.Sprintf("invoice%d", n)
		_, _, err := store.RegisterSchema(ctx, name, body, "fp-"+name)
		must(err)
		must(fill(ctx, store.Pool(), name, n))
		var jsonl counter
		start := time.Now()
		_, err = store.Export(ctx, audit.ExportFilter{Schema: name}, audit.FormatJSONL, &jsonl)
		must(err)
		jel := time.Since(start)
		var pq counter
		stop := peak()
		start = time.Now()
		e, err := sink.ExportParquet(ctx, store.Pool(), sink.Filter{Schema: name}, body, &pq)
		must(err)
		el := time.Since(start)
		heap := stop()
		e.Rollback(ctx)
		fmt.Printf("parquet: %d results in %s = %.0f rows/s, %d bytes (JSONL %d bytes in %s: %.2fx), peak heap %s\n",
			e.Rows, el.Round(time.Millisecond), float64(e.Rows)/el.Seconds(), pq.n, jsonl.n, jel.Round(time.Millisecond), float64(pq.n)/float64(jsonl.n), mib(heap))
	}
}

// tempStore opens a migrated audit store on a temporary database; done
// closes and drops it.
func tempStore(ctx context.Context) (*audit.Store, func()) {
	dbURL, drop, err := testenv.TempDatabase(ctx)
	must(err)
	store, err := audit.Open(ctx, dbURL)
	must(err)
	must(store.Migrate(ctx))
	return store, func() {
		store.Close()
		_ = drop()
	}
}

// fill stores n results of schema name, values like the fleet's invoices.
func fill(ctx context.Context, pool *pgxpool.Pool, name string, n int) error {
	_, err := pool.Exec(ctx, `INSERT INTO results (document_id, schema_fingerprint, model, schema_name, schema_version, value, run, content_hash)
		SELECT format('doc-%s', lpad(i::text, 8, '0')), 'fp-' || $1, 'gpt-4o-mini', $1, 1,
		       jsonb_build_object('invoice_number', 'INV-' || i, 'total', (i % 10000) / 100.0,
		                          'currency', (ARRAY['EUR','USD','GBP'])[1 + i % 3], 'vendor', 'Vendor ' || (i % 500),
		                          'paid', i % 2 = 0,
		                          'items', jsonb_build_array(jsonb_build_object('name', 'widget', 'qty', 1 + i % 5),
		                                                     jsonb_build_object('name', 'gadget', 'qty', i % 3))),
		       'bench', md5(i::text)
		FROM generate_series(1, $2) AS i`, name, n)
	return err
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
