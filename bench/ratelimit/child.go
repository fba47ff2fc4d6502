package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
)

// childEnv marks a process started by the bench as one of its workers.
const childEnv = "EXTRACTQ_BENCH_WORKER"

// runChild is one worker process: a pool from the --pool spec, fleet
// membership, and the worker's loop (slot, then call) against the
// simulator. It says READY once it sees the whole fleet, starts on GO,
// and says DONE when its run is over.
func runChild() error {
	env := func(k string) string { return os.Getenv(k) }
	spec, err := ratelimit.ParsePoolSpec(env("BENCH_POOL"))
	if err != nil {
		return err
	}
	fleet, _ := strconv.Atoi(env("BENCH_FLEET"))
	run, err := time.ParseDuration(env("BENCH_RUN"))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	nc, err := nats.Connect(env("BENCH_NATS"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	pool := ratelimit.NewPool(spec.Name, spec.Limits, ratelimit.WithLogger(log))
	ctx := context.Background()
	m, err := ratelimit.StartMembership(ctx, js, env("BENCH_WORKER"), []*ratelimit.Pool{pool},
		ratelimit.WithBucket(env("BENCH_BUCKET")), ratelimit.WithMembershipLogger(log))
	if err != nil {
		return err
	}
	defer m.Stop()
	prov, err := providers.New(spec.Name, providers.WithBaseURL(env("BENCH_SIM")+"/v1"))
	if err != nil {
		return err
	}
	paced := pool.Wrap(prov)

	for deadline := time.Now().Add(30 * time.Second); pool.Snapshot().Members != fleet; {
		if time.Now().After(deadline) {
			return fmt.Errorf("saw %d members, want %d", pool.Snapshot().Members, fleet)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("READY")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "GO" {
		return fmt.Errorf("want GO on stdin, got %q", in.Text())
	}

	rctx, cancel := context.WithTimeout(ctx, run)
	defer cancel()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	var wg sync.WaitGroup
	for {
		release, err := pool.AcquireSlot(rctx)
		if err != nil {
			break
		}
		req := request(env("BENCH_SCENARIO"), rng.IntN(4))
		wg.Go(func() {
			defer release()
			_, _ = paced.Chat(rctx, req)
		})
	}
	wg.Wait()
	if env("BENCH_DEBUG") != "" {
		snap, _ := json.Marshal(pool.Snapshot())
		fmt.Fprintf(os.Stderr, "%s\n", snap)
	}
	fmt.Println("DONE")
	return nil
}

// answerSizes are the example array lengths of the tpm scenario: answers
// of about 20, 90, 250 and 640 tokens (the simulator mirrors the example),
// all under a max_tokens of 1024.
var answerSizes = [4]int{1, 8, 24, 64}

// request is one call of the scenario; size picks the answer size.
func request(scenario string, size int) llm.Request {
	doc := "<document-0123456789abcdef>Invoice 4711 from Acme Corp, due 2026-12-01, total 1234.50 EUR, contact billing@acme.example.</document-0123456789abcdef>"
	prompt := "Extract the fields.\n" + doc
	maxTokens := 64
	if scenario == "tpm" {
		items := make([]string, answerSizes[size])
		for i := range items {
			items[i] = `"a line item of the invoice"`
		}
		prompt += "\n<example>{\"vendor\": \"Acme\", \"items\": [" + strings.Join(items, ", ") + "]}</example>"
		maxTokens = 1024
	}
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}, Mode: llm.ModeText, MaxTokens: maxTokens}
}
