// Command simload measures how many requests per second the LLM simulator
// serves over real loopback HTTP: N concurrent keep-alive clients post
// extraction requests (a JSON Schema in the prompt, a fenced document) for a
// fixed time, then it prints the rate, latency percentiles, statuses and the
// simulator's own stats.
//
//	go run ./bench/simload -c 32 -d 5s                # in-process server on 127.0.0.1
//	go run ./bench/simload -addr 127.0.0.1:8089       # a running "extractq sim serve"
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/extractq/extractq/internal/sim"
)

// invoiceSchema is the schema the requests embed (the shape of
// examples/invoice.schema.json).
const invoiceSchema = `{"type":"object","additionalProperties":false,
"required":["invoice_number","issue_date","vendor","customer","currency","line_items","total"],
"properties":{"invoice_number":{"type":"string","minLength":1},"issue_date":{"type":"string","format":"date"},
"due_date":{"type":["string","null"],"format":"date"},
"vendor":{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string","minLength":1},"address":{"type":"string"},"tax_id":{"type":"string"}}},
"customer":{"type":"string","minLength":1},"currency":{"type":"string","enum":["EUR","USD","GBP","SEK","INR","CAD","JPY"]},
"line_items":{"type":"array","minItems":1,"items":{"type":"object","additionalProperties":false,"required":["description","quantity","unit_price","amount"],
"properties":{"description":{"type":"string","minLength":1},"quantity":{"type":"number","exclusiveMinimum":0},"unit_price":{"type":"number","minimum":0},"amount":{"type":"number","minimum":0}}}},
"tax":{"type":"number","minimum":0},"total":{"type":"number","minimum":0}}}`

func main() {
	var (
		addr       = flag.String("addr", "", "simulator address; empty starts one in this process on 127.0.0.1")
		profile    = flag.String("profile", "clean", "profile for the in-process simulator")
		conc       = flag.Int("c", 32, "concurrent keep-alive clients")
		dur        = flag.Duration("d", 5*time.Second, "how long to send requests")
		docs       = flag.Int("docs", 512, "distinct documents to cycle through")
		route      = flag.String("route", "openai", "API to call: openai, anthropic, ollama, gemini")
		minRate    = flag.Float64("min", 0, "exit 1 if the rate falls below this many requests/s")
		warmup     = flag.Duration("warmup", 500*time.Millisecond, "unmeasured warm-up before the run")
		showStat   = flag.Bool("stats", true, "print the simulator's /stats afterwards")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the measured run to this file")
	)
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "simload:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "simload:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*addr, *profile, *conc, *dur, *warmup, *docs, *route, *minRate, *showStat); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "simload:", err)
		os.Exit(1)
	}
}

func run(addr, profile string, conc int, dur, warmup time.Duration, ndocs int, route string, minRate float64, showStats bool) error {
	if conc < 1 || ndocs < 1 || dur <= 0 {
		return errors.New("-c, -docs and -d must be positive")
	}
	inProcess := addr == ""
	if inProcess {
		p, err := sim.LoadProfile(profile)
		if err != nil {
			return err
		}
		s := sim.New(p)
		defer s.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listen on loopback: %w", err)
		}
		srv := &http.Server{Handler: s.Handler()}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		defer func() {
			_ = srv.Close()
			<-served
		}()
		addr = ln.Addr().String()
	}
	path, bodies, err := requests(route, ndocs)
	if err != nil {
		return err
	}
	url := "http://" + addr + path
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conc, MaxIdleConnsPerHost: conc, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
	defer client.CloseIdleConnections()

	if warmup > 0 {
		if _, err := load(client, url, bodies, conc, warmup); err != nil {
			return err
		}
		if showStats {
			if resp, err := client.Post("http://"+addr+"/stats/reset", "application/json", nil); err == nil {
				resp.Body.Close()
			}
		}
	}
	cpu0 := cpuTime()
	res, err := load(client, url, bodies, conc, dur)
	if err != nil {
		return err
	}
	cpu := cpuTime() - cpu0
	rate := float64(res.n) / res.elapsed.Seconds()
	slices.Sort(res.lat)
	pct := func(p float64) time.Duration {
		if len(res.lat) == 0 {
			return 0
		}
		return res.lat[min(len(res.lat)-1, int(p*float64(len(res.lat))))]
	}
	fmt.Printf("simload: %s %s, %d clients, %v: %d requests, %.0f req/s, latency p50 %v p99 %v, statuses %v, transport errors %d\n",
		route, url, conc, res.elapsed.Round(time.Millisecond), res.n, rate, pct(0.50), pct(0.99), res.status, res.errors)
	if res.n > 0 && cpu > 0 {
		// On a shared machine the rate reflects the CPU this process got;
		// CPU per request (user+system) says what the simulator costs.
		per := cpu / time.Duration(res.n)
		fmt.Printf("simload: this process used %v CPU (%.2f cores): %v CPU per request", cpu.Round(time.Millisecond), cpu.Seconds()/res.elapsed.Seconds(), per.Round(time.Microsecond))
		if inProcess {
			fmt.Printf(" for client and server together, %.0f req/s per fully available core", float64(time.Second)/float64(per))
		}
		fmt.Println()
	}
	if showStats {
		resp, err := client.Get("http://" + addr + "/stats")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("simulator stats: %s", b)
		}
	}
	if rate < minRate {
		return fmt.Errorf("%.0f req/s is below the required %.0f", rate, minRate)
	}
	return nil
}

type result struct {
	n       int64
	errors  int64
	elapsed time.Duration
	status  map[int]int64
	lat     []time.Duration
}

// load runs conc clients for d, each owning its goroutine until the
// deadline, and merges what they saw.
func load(client *http.Client, url string, bodies [][]byte, conc int, d time.Duration) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var (
		mu    sync.Mutex
		res   = &result{status: map[int]int64{}}
		wg    sync.WaitGroup
		next  atomic.Int64
		fatal atomic.Value
		start = time.Now()
	)
	for range conc {
		wg.Go(func() {
			status := map[int]int64{}
			var lat []time.Duration
			var n, errs int64
			for ctx.Err() == nil {
				body := bodies[int(next.Add(1))%len(bodies)]
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					fatal.Store(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errs++
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				status[resp.StatusCode]++
				n++
			}
			mu.Lock()
			defer mu.Unlock()
			res.n += n
			res.errors += errs
			res.lat = append(res.lat, lat...)
			for k, v := range status {
				res.status[k] += v
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if err, ok := fatal.Load().(error); ok {
		return nil, err
	}
	return res, nil
}

// cpuTime is the user plus system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// requests builds one request body per document for the chosen API.
func requests(route string, ndocs int) (string, [][]byte, error) {
	bodies := make([][]byte, ndocs)
	for i := range bodies {
		doc := fmt.Sprintf("Dear Customer %d,\nplease find our invoice INV-%05d dated 2026-%02d-%02d from Acme Supply %d Inc.\n"+
			"- %d pcs x Office chair at $%d.00\nTotal $%d.00. Questions: billing%d@acme.example\n", i, i, 1+i%12, 1+i%28, i, 1+i%40, 50+i%200, 1000+i, i)
		prompt := "Extract the fields below from the document. Answer with JSON only.\n<json-schema>\n" + invoiceSchema +
			"\n</json-schema>\n\n<document-0123456789abcdef>\n" + doc + "\n</document-0123456789abcdef>"
		var v any
		switch route {
		case "openai":
			v = map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": prompt}}}
		case "anthropic":
			v = map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "messages": []any{map[string]any{"role": "user", "content": prompt}}}
		case "ollama":
			v = map[string]any{"model": "llama3.1:8b", "stream": false, "format": "json", "messages": []any{map[string]any{"role": "user", "content": prompt}}}
		case "gemini":
			v = map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}}
		default:
			return "", nil, fmt.Errorf("-route %q: use openai, anthropic, ollama or gemini", route)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return "", nil, err
		}
		bodies[i] = b
	}
	path := map[string]string{"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat",
		"gemini": "/v1beta/models/gemini-2.5-flash:generateContent"}[route]
	return path, bodies, nil
}
