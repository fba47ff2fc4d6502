// Command ratelimit measures internal/ratelimit against the simulator
// enforcing limits, with the simulator's own counters (GET /stats) as
// referee.
//
// For each scenario it starts a simulator on loopback and 1, 4 and 16 worker
// processes (this program re-executed), each with its own pool and fleet
// membership in a NATS JetStream server (embedded, or -nats URL), sharing
// one fleet limit:
//
//   - rpm: R requests per minute; achieved rate as % of R, % of 429s.
//   - tpm: T tokens per minute, answers of varied size (about 20 to 640
//     tokens, calls of 90 to 1,200 tokens) under a max_tokens of 1024;
//     achieved tokens as % of T, % of 429s.
//   - unlimited: call latency L, fleet concurrency C; throughput as % of C/L.
//
// The simulator's buckets hold a minute's worth and start full, so a short
// run against a full bucket would hide an over-eager fleet. Rate-limited
// runs therefore start against a drained bucket (the harsh case: pacing at
// the limit with nothing in reserve), then run a warm-up (the fleet's first
// seconds, including any start-up 429s, reported apart) and a measured
// window. It prints a markdown table for the README.
//
//	go run ./bench/ratelimit                 # the full table (about 6 minutes)
//	go run ./bench/ratelimit -workers 1,4 -measure 10s -only rpm
//	go run ./bench/ratelimit -nats nats://127.0.0.1:4222   # an external server
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/sim"
)

// scenario is one kind of run.
type scenario struct {
	name    string
	profile sim.Profile
	pool    string // the --pool spec every worker uses
	target  float64
	unit    string
	measure time.Duration
	warmup  time.Duration
	drain   string // the budget to drain first: "requests", "tokens" or ""
}

const poolName = "openai:bench-model"

func scenarios(measure time.Duration) []scenario {
	const (
		rpm     = 1200    // 20 requests/s
		tpm     = 600_000 // 10,000 tokens/s
		latency = time.Second
		conc    = 64
	)
	return []scenario{
		{
			name:    "rpm",
			profile: sim.Profile{Name: "bench-rpm", RateLimits: sim.RateLimits{RequestsPerMinute: rpm}, Latency: sim.Latency{TTFT: 100 * time.Millisecond, Jitter: 0.3}, FixProbability: 1},
			pool:    fmt.Sprintf("%s=rpm:%d,concurrency:64", poolName, rpm),
			target:  rpm, unit: "requests/min", measure: measure, warmup: 5 * time.Second, drain: "requests",
		},
		{
			name:    "tpm",
			profile: sim.Profile{Name: "bench-tpm", RateLimits: sim.RateLimits{TokensPerMinute: tpm}, Latency: sim.Latency{TTFT: 50 * time.Millisecond, Jitter: 0.3}, FixProbability: 1},
			pool:    fmt.Sprintf("%s=tpm:%d,concurrency:64", poolName, tpm),
			target:  tpm, unit: "tokens/min", measure: measure, warmup: 5 * time.Second, drain: "tokens",
		},
		{
			name:    "unlimited",
			profile: sim.Profile{Name: "bench-unlimited", Latency: sim.Latency{TTFT: latency, Jitter: 0.3}, FixProbability: 1},
			pool:    fmt.Sprintf("%s=concurrency:%d", poolName, conc),
			target:  float64(conc) / latency.Seconds() * 60, unit: fmt.Sprintf("calls/min (C=%d / L=%v)", conc, latency), measure: measure / 2, warmup: 2 * time.Second,
		},
	}
}

func main() {
	if os.Getenv(childEnv) != "" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "bench worker:", err)
			os.Exit(1)
		}
		return
	}
	workers := flag.String("workers", "1,4,16", "comma-separated worker process counts")
	measure := flag.Duration("measure", 20*time.Second, "measured window of each rate-limited run (unlimited runs take half)")
	only := flag.String("only", "", "run only this scenario (rpm, tpm or unlimited)")
	natsURL := flag.String("nats", "", "use this NATS server (e.g. nats://127.0.0.1:4222) instead of an embedded one; the bench's buckets are deleted after each run")
	flag.Parse()
	log.SetFlags(0)

	var counts []int
	for _, w := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 || n > 64 {
			log.Fatalf("-workers: %q is not a count from 1 to 64", w)
		}
		counts = append(counts, n)
	}
	url := *natsURL
	if url == "" {
		ns, err := startNATS()
		if err != nil {
			log.Fatal(err)
		}
		defer ns.Shutdown()
		url = ns.ClientURL()
	}
	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatalf("connect to NATS at %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}

	var rows []string
	run := 0
	for _, sc := range scenarios(*measure) {
		if *only != "" && sc.name != *only {
			continue
		}
		for _, n := range counts {
			run++
			bucket := fmt.Sprintf("EXTRACTQ_MEMBERS_BENCH%d", run)
			r, err := runOnce(sc, n, url, bucket)
			if derr := js.DeleteKeyValue(context.Background(), bucket); derr != nil {
				log.Printf("delete bucket %s: %v", bucket, derr)
			}
			if err != nil {
				log.Fatalf("%s with %d workers: %v", sc.name, n, err)
			}
			row := r.row()
			log.Println(row)
			rows = append(rows, row)
		}
	}
	fmt.Println()
	where := "embedded NATS"
	if *natsURL != "" {
		where = "NATS at " + *natsURL
	}
	fmt.Println("Reproduce: `go run ./bench/ratelimit" + argsString() + "` (2-core box; simulator and " + where + " on loopback; every worker a separate process).")
	fmt.Println()
	fmt.Println(header)
	for _, r := range rows {
		fmt.Println(r)
	}
}

func argsString() string {
	if len(os.Args) == 1 {
		return ""
	}
	return " " + strings.Join(os.Args[1:], " ")
}

const header = "| scenario | worker processes | fleet limit | achieved (measured window) | % of limit | 429s in window | 429s in warm-up |\n|---|---|---|---|---|---|---|"

// result is one run as the simulator counted it.
type result struct {
	sc        scenario
	workers   int
	achieved  float64 // per minute, in the scenario's unit
	served    int64
	limited   int64 // 429s in the measured window
	total     int64 // requests in the measured window
	warm429   int64
	warmTotal int64
}

func (r result) row() string {
	pct429 := 0.0
	if r.total > 0 {
		pct429 = 100 * float64(r.limited) / float64(r.total)
	}
	return fmt.Sprintf("| %s | %d | %.0f %s | %.0f/min (%d calls in %v) | %.1f%% | %.2f%% (%d of %d) | %d of %d |",
		r.sc.name, r.workers, r.sc.target, r.sc.unit, r.achieved, r.served, r.sc.measure, 100*r.achieved/r.sc.target, pct429, r.limited, r.total, r.warm429, r.warmTotal)
}

func startNATS() (*server.Server, error) {
	dir, err := os.MkdirTemp("", "extractq-bench-nats-")
	if err != nil {
		return nil, err
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		return nil, errors.New("embedded nats-server not ready after 10s")
	}
	return s, nil
}

// runOnce runs one scenario with n worker processes.
func runOnce(sc scenario, n int, natsURL, bucket string) (result, error) {
	simSrv := sim.New(sc.profile)
	defer simSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	hs := &http.Server{Handler: simSrv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	simURL := "http://" + ln.Addr().String()

	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sc.warmup+sc.measure+2*time.Minute)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var kids []child
	defer func() {
		for _, k := range kids {
			_ = k.cmd.Process.Kill()
			_ = k.cmd.Wait()
		}
	}()
	for i := range n {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), childEnv+"=1",
			"BENCH_NATS="+natsURL, "BENCH_SIM="+simURL, "BENCH_BUCKET="+bucket, "BENCH_POOL="+sc.pool,
			"BENCH_WORKER="+fmt.Sprintf("w%02d", i), "BENCH_FLEET="+strconv.Itoa(n),
			"BENCH_RUN="+(sc.warmup+sc.measure+time.Second).String(), "BENCH_SCENARIO="+sc.name)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return result{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return result{}, err
		}
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		kids = append(kids, child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)})
	}
	for i, k := range kids {
		if !k.out.Scan() || k.out.Text() != "READY" {
			return result{}, fmt.Errorf("worker %d did not get ready (saw %q)", i, k.out.Text())
		}
	}
	if sc.drain != "" {
		if err := drain(ctx, simURL, sc.drain); err != nil {
			return result{}, err
		}
	}
	stats := func() (sim.Stats, error) { return fetchStats(ctx, simURL) }
	start, err := stats()
	if err != nil {
		return result{}, err
	}
	for _, k := range kids {
		if _, err := io.WriteString(k.stdin, "GO\n"); err != nil {
			return result{}, err
		}
	}
	// The referee's counters are read at fixed times, so calls still
	// arriving after the window (workers run on a little) do not count.
	time.Sleep(sc.warmup)
	mid, err := stats()
	midAt := time.Now()
	if err != nil {
		return result{}, err
	}
	time.Sleep(sc.measure)
	end, err := stats()
	window := time.Since(midAt)
	if err != nil {
		return result{}, err
	}
	for i, k := range kids {
		if !k.out.Scan() || k.out.Text() != "DONE" {
			return result{}, fmt.Errorf("worker %d did not finish (saw %q)", i, k.out.Text())
		}
	}

	r := result{sc: sc, workers: n}
	// Served = admitted by the simulator's limiter in the window: counted
	// at arrival, like the limit itself (no profile here fails otherwise).
	r.limited = end.RateLimited - mid.RateLimited
	r.total = end.Requests - mid.Requests
	r.served = r.total - r.limited
	r.warm429 = mid.RateLimited - start.RateLimited
	r.warmTotal = mid.Requests - start.Requests
	mins := window.Minutes()
	switch sc.name {
	case "tpm":
		r.achieved = float64(end.PromptTokens+end.CompletionTokens-mid.PromptTokens-mid.CompletionTokens) / mins
	default:
		r.achieved = float64(r.served) / mins
	}
	return r, nil
}

// fetchStats reads the referee's counters from GET /stats.
func fetchStats(ctx context.Context, simURL string) (sim.Stats, error) {
	var st sim.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, simURL+"/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("simulator /stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("simulator /stats: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("simulator /stats: %w", err)
	}
	return st, nil
}

// drain empties the simulator's bucket of that kind, so the run starts at
// the limit with nothing in reserve: it sends requests (huge prompts for
// tokens) until the simulator refuses one for that budget.
func drain(ctx context.Context, simURL, kind string) error {
	content, refusal := "drain", []byte("on requests per min")
	if kind == "tokens" {
		refusal = []byte("on tokens per min")
		content = strings.Repeat("drain the token budget ", 8000) // ~46,000 tokens
	}
	body, _ := json.Marshal(map[string]any{"model": "bench-model", "max_tokens": 16, "messages": []map[string]string{{"role": "user", "content": content}}})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	done := make(chan struct{})
	var once sync.Once
	for range 64 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				default:
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, simURL+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests && bytes.Contains(b, refusal) {
					once.Do(func() { close(done) })
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("could not drain the simulator's %s budget in a minute", kind)
	}
	return nil
}
