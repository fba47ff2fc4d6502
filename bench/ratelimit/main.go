// Command ratelimit measures internal/ratelimit against the simulator
// enforcing limits, with the simulator's own counters (GET /stats) as
// referee.
//
// For each scenario and each limiter shape the simulator offers (token
// bucket, strict sliding one-minute window, fixed window reset on the
// minute) it starts a simulator on loopback and 1, 4 and 16 worker
// processes (this program re-executed), each with its own pool and fleet
// membership in a NATS JetStream server (embedded, or -nats URL), sharing
// one fleet limit:
//
//   - rpm: R requests per minute; achieved rate as % of R, % of 429s.
//   - tpm: T tokens per minute, answers of varied size (about 20 to 640
//     tokens, calls of 90 to 1,200 tokens) under a max_tokens of 1024;
//     achieved tokens as % of T, % of 429s.
//   - unlimited: call latency L, fleet concurrency C; throughput as % of C/L
//     (run once: no limiter shape applies).
//
// A fresh budget would hide an over-eager fleet, so every rate-limited run
// starts from the simulator's FillLimits: the budget as traffic at exactly
// the limit would have left it (an empty bucket; a trailing minute full of
// evenly spaced requests; a fixed window used in proportion to its elapsed
// part). The workers then start as a real fleet does: each begins work as
// soon as its own membership is up, without waiting to see its peers. The
// warm-up (the fleet's first seconds, start-up included, its 429s reported
// apart: 5 s for rpm, 15 s for tpm, or a whole minute under a sliding
// window, whose memory is a minute long) is followed by the measured
// window.
//
//	go run ./bench/ratelimit                 # the full table (about 15 minutes)
//	go run ./bench/ratelimit -workers 1,4 -measure 20s -only rpm -shapes sliding-window
//	go run ./bench/ratelimit -nats nats://127.0.0.1:4222   # an external server
//
// Worker processes are killed when a run ends, when the bench is
// interrupted (SIGINT/SIGTERM), and exit by themselves when the bench dies
// (their stdin closes).
package main

import (
	"bufio"
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
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/sim"
)

// scenario is one kind of run under one limiter shape.
type scenario struct {
	name    string
	shape   string // the simulator's limiter shape; "" when not limited
	profile sim.Profile
	pool    string // the --pool spec every worker uses
	target  float64
	unit    string
	measure time.Duration
	warmup  time.Duration
}

const poolName = "openai:bench-model"

func scenarios(measure time.Duration, shapes []string, headers string) []scenario {
	const (
		rpm     = 1200    // 20 requests/s
		tpm     = 600_000 // 10,000 tokens/s
		latency = time.Second
		conc    = 64
	)
	// A sliding window remembers a minute: a burst is admitted, and its
	// echo a minute later, when it leaves the window all at once after a
	// gap, is where steady pacing overflows. So the measured window of a
	// sliding-window run starts a whole window after the fleet's start: it
	// then holds only the fleet's own traffic, start-up echoes included.
	//
	// Otherwise the warm-up covers the fleet's start: newcomers hold for a
	// heartbeat and a fifth, and a token pool's first calls are paced on
	// estimates of a whole max_tokens until answers report usage, so a tpm
	// fleet takes some 10 s to settle.
	warmup := func(shape string, settle time.Duration) time.Duration {
		if shape == sim.ShapeSlidingWindow {
			return time.Minute
		}
		return settle
	}
	var out []scenario
	for _, shape := range shapes {
		out = append(out, scenario{
			name: "rpm", shape: shape,
			profile: sim.Profile{Name: "bench-rpm", RateLimits: sim.RateLimits{RequestsPerMinute: rpm, Shape: shape, Headers: headers}, Latency: sim.Latency{TTFT: 100 * time.Millisecond, Jitter: 0.3}, FixProbability: 1},
			pool:    fmt.Sprintf("%s=rpm:%d,concurrency:64", poolName, rpm),
			target:  rpm, unit: "requests/min", measure: measure, warmup: warmup(shape, 5*time.Second),
		})
	}
	for _, shape := range shapes {
		out = append(out, scenario{
			name: "tpm", shape: shape,
			profile: sim.Profile{Name: "bench-tpm", RateLimits: sim.RateLimits{TokensPerMinute: tpm, Shape: shape, Headers: headers}, Latency: sim.Latency{TTFT: 50 * time.Millisecond, Jitter: 0.3}, FixProbability: 1},
			pool:    fmt.Sprintf("%s=tpm:%d,concurrency:64", poolName, tpm),
			target:  tpm, unit: "tokens/min", measure: measure, warmup: warmup(shape, 15*time.Second),
		})
	}
	return append(out, scenario{
		name:    "unlimited",
		profile: sim.Profile{Name: "bench-unlimited", Latency: sim.Latency{TTFT: latency, Jitter: 0.3}, FixProbability: 1},
		pool:    fmt.Sprintf("%s=concurrency:%d", poolName, conc),
		target:  float64(conc) / latency.Seconds() * 60, unit: fmt.Sprintf("calls/min (C=%d / L=%v)", conc, latency), measure: measure / 2, warmup: 3 * time.Second,
	})
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
	measure := flag.Duration("measure", 20*time.Second, "measured window of each rate-limited run (unlimited runs take half); at least 20s")
	only := flag.String("only", "", "run only this scenario (rpm, tpm or unlimited)")
	shapeList := flag.String("shapes", strings.Join(sim.LimiterShapes(), ","), "comma-separated limiter shapes of the simulator")
	headers := flag.String("headers", sim.HeadersAll, "what the simulator reports of its limits: all (OpenAI's and Anthropic's headers) or retry-after (only Retry-After on a 429)")
	natsURL := flag.String("nats", "", "use this NATS server (e.g. nats://127.0.0.1:4222) instead of an embedded one; the bench's buckets are deleted after each run")
	flag.Parse()
	log.SetFlags(0)
	if err := run(*workers, *measure, *only, *shapeList, *headers, *natsURL); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(workers string, measure time.Duration, only, shapeList, headers, natsURL string) error {
	var counts []int
	for _, w := range strings.Split(workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("-workers: %q is not a count from 1 to 64", w)
		}
		counts = append(counts, n)
	}
	if measure < 20*time.Second {
		return fmt.Errorf("-measure %v: measure at least 20s, or the window says more about noise than pacing", measure)
	}
	var shapes []string
	for _, sh := range strings.Split(shapeList, ",") {
		sh = strings.TrimSpace(sh)
		if !slices.Contains(sim.LimiterShapes(), sh) {
			return fmt.Errorf("-shapes: %q is not a limiter shape; use %s", sh, strings.Join(sim.LimiterShapes(), ", "))
		}
		shapes = append(shapes, sh)
	}
	if headers != sim.HeadersAll && headers != sim.HeadersRetryAfter {
		return fmt.Errorf("-headers: %q; use %s or %s", headers, sim.HeadersAll, sim.HeadersRetryAfter)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	url := natsURL
	if url == "" {
		ns, dir, err := startNATS()
		if err != nil {
			return err
		}
		defer func() { ns.Shutdown(); ns.WaitForShutdown(); _ = os.RemoveAll(dir) }()
		url = ns.ClientURL()
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}

	loadBefore := loadavg()
	began := time.Now()
	var rows []string
	n := 0
	for _, sc := range scenarios(measure, shapes, headers) {
		if only != "" && sc.name != only {
			continue
		}
		for _, w := range counts {
			n++
			bucket := fmt.Sprintf("EXTRACTQ_MEMBERS_BENCH%d", n)
			r, err := runOnce(ctx, sc, w, url, bucket)
			if derr := js.DeleteKeyValue(context.Background(), bucket); derr != nil && !errors.Is(derr, jetstream.ErrBucketNotFound) {
				log.Printf("delete bucket %s: %v", bucket, derr)
			}
			if err != nil {
				return fmt.Errorf("%s (%s) with %d workers: %w", sc.name, sc.shape, w, err)
			}
			row := r.row()
			log.Println(row)
			rows = append(rows, row)
		}
	}
	fmt.Println()
	where := "embedded NATS"
	if natsURL != "" {
		where = "NATS at " + natsURL
	}
	fmt.Printf("Reproduce: `go run ./bench/ratelimit%s` (%s; load average %s before, %s after; simulator and %s on loopback; every worker a separate process; %v in all).\n",
		argsString(), machine(), loadBefore, loadavg(), where, time.Since(began).Round(time.Second))
	fmt.Println()
	fmt.Println(header)
	for _, r := range rows {
		fmt.Println(r)
	}
	return nil
}

func argsString() string {
	if len(os.Args) == 1 {
		return ""
	}
	return " " + strings.Join(os.Args[1:], " ")
}

// loadavg is the 1-minute load average, or "?" where /proc has none.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// machine names the core count.
func machine() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "cores unknown"
	}
	return fmt.Sprintf("%d cores", strings.Count(string(b), "\nprocessor")+1)
}

const header = "| scenario | limiter | worker processes | fleet limit | achieved (measured window) | % of limit | 429s in window | 429s in warm-up |\n|---|---|---|---|---|---|---|---|"

// result is one run as the simulator counted it.
type result struct {
	sc        scenario
	workers   int
	achieved  float64 // per minute, in the scenario's unit
	window    time.Duration
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
	shape := r.sc.shape
	if shape == "" {
		shape = "—"
	}
	return fmt.Sprintf("| %s | %s | %d | %.0f %s | %.0f/min (%d calls in %.1fs) | %.1f%% | %.2f%% (%d of %d) | %d of %d |",
		r.sc.name, shape, r.workers, r.sc.target, r.sc.unit, r.achieved, r.served, r.window.Seconds(), 100*r.achieved/r.sc.target, pct429, r.limited, r.total, r.warm429, r.warmTotal)
}

func startNATS() (*server.Server, string, error) {
	dir, err := os.MkdirTemp("", "extractq-bench-nats-")
	if err != nil {
		return nil, "", err
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("embedded nats-server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		_ = os.RemoveAll(dir)
		return nil, "", errors.New("embedded nats-server not ready after 10s")
	}
	return s, dir, nil
}

// runOnce runs one scenario with n worker processes. Every process it
// starts is killed and reaped before it returns.
func runOnce(ctx context.Context, sc scenario, n int, natsURL, bucket string) (result, error) {
	simSrv := sim.New(sc.profile)
	defer simSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	hs := &http.Server{Handler: simSrv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	simURL := "http://" + ln.Addr().String()

	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, sc.warmup+sc.measure+2*time.Minute)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var kids []child
	defer func() {
		for _, k := range kids {
			_ = k.stdin.Close()
			_ = k.cmd.Process.Kill()
			_ = k.cmd.Wait()
		}
	}()
	stats := func() (sim.Stats, error) { return fetchStats(ctx, simURL) }
	// The run begins in the harsh steady state: the budget as traffic at
	// exactly the limit would have left it.
	simSrv.FillLimits()
	start, err := stats()
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	for i := range n {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), childEnv+"=1",
			"BENCH_NATS="+natsURL, "BENCH_SIM="+simURL, "BENCH_BUCKET="+bucket, "BENCH_POOL="+sc.pool,
			"BENCH_WORKER="+fmt.Sprintf("w%02d", i), "BENCH_SCENARIO="+sc.name)
		cmd.Stderr = os.Stderr
		cmd.WaitDelay = 5 * time.Second
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
	// Each worker starts work as soon as its membership is up and says
	// STARTED; the warm-up runs from the last one's start.
	for i, k := range kids {
		if !k.out.Scan() || k.out.Text() != "STARTED" {
			return result{}, fmt.Errorf("worker %d did not start (saw %q)", i, k.out.Text())
		}
	}
	startup := time.Since(began)
	if err := sleep(ctx, sc.warmup); err != nil {
		return result{}, err
	}
	// The referee's counters are read at fixed times, so calls still
	// arriving after the window do not count.
	mid, err := stats()
	midAt := time.Now()
	if err != nil {
		return result{}, err
	}
	if err := sleep(ctx, sc.measure); err != nil {
		return result{}, err
	}
	end, err := stats()
	window := time.Since(midAt)
	if err != nil {
		return result{}, err
	}
	for _, k := range kids {
		_, _ = io.WriteString(k.stdin, "STOP\n")
	}
	for i, k := range kids {
		if !k.out.Scan() || k.out.Text() != "DONE" {
			return result{}, fmt.Errorf("worker %d did not finish (saw %q)", i, k.out.Text())
		}
	}
	if os.Getenv("BENCH_DEBUG") != "" {
		log.Printf("start-up of %d workers took %v", n, startup.Round(time.Millisecond))
	}

	r := result{sc: sc, workers: n, window: window}
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

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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
