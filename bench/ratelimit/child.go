package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"

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
// simulator. Like a worker of a real fleet it starts work as soon as its
// own membership is up, whatever it has seen of its peers, and says
// STARTED. It stops on STOP, or when stdin closes (the bench is gone), and
// says DONE once its calls have ended.
func runChild() error {
	env := func(k string) string { return os.Getenv(k) }
	spec, err := ratelimit.ParsePoolSpec(env("BENCH_POOL"))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if env("BENCH_DEBUG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("worker", env("BENCH_WORKER"))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Any line (STOP) or the end of stdin ends the run.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		cancel()
	}()

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
	fmt.Println("STARTED")

	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	var wg sync.WaitGroup
	for {
		release, err := pool.AcquireSlot(ctx)
		if err != nil {
			break
		}
		req := request(env("BENCH_SCENARIO"), rng.IntN(4))
		wg.Go(func() {
			defer release()
			_, _ = paced.Chat(ctx, req)
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
