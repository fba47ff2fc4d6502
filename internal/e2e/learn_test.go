package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/capstore"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// TestFleetLearnsRefusedPart runs a worker against a server that refuses
// the system role as OpenAI does for o1-mini: the first job's attempt
// learns it (one extra call, no re-ask) and the audit records it on that
// attempt; every job ends ok in one attempt; the fact is in the fleet's
// bucket, where a provider of a second worker finds it.
func TestFleetLearnsRefusedPart(t *testing.T) {
	ctx := context.Background()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv := sim.New(sim.Profile{Name: "refuses-system", FixProbability: 1, Refuses: []string{sim.RefuseSystemRole}}, sim.WithSeed(3))
	defer srv.Close()
	hc := &http.Client{Transport: srv.Transport()}
	const provider = "openai:sim-fleet"
	build := func(spec string) (llm.Provider, error) {
		return providers.New(provider, providers.WithBaseURL("http://sim.invalid/v1"), providers.WithHTTPClient(hc),
			providers.WithAPIKey("sk-fleet-test-not-a-key"), providers.WithCapabilityStore(capstore.New(js)))
	}

	sub := submit.New(js, st)
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	model, pool, err := submit.ResolveProvider(provider)
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: "learn"}
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for i := range n {
			if err := fn(submit.Doc{ID: fmt.Sprintf("doc-%d", i), Source: "generated", Text: fleettest.Document(i)}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil || sum.Queued != n {
		t.Fatalf("submit: %+v, %v", sum, err)
	}

	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// One slot: the jobs run one after another, so only the first meets
	// the refusal.
	p := worker.Pool{Name: pool, Concurrency: 1, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: 1}, ratelimit.WithLogger(quietLogger()))}
	w, err := worker.New(js, writer, fastEngine(), worker.WithID("learn-worker"), worker.WithPools(p),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 100}),
		worker.WithProviders(build), worker.WithLogger(quietLogger()), worker.WithPullWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitSettled(t, st, n, 2*time.Minute)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var ok, attempts, adjusted int
	var adj string
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'ok') FROM jobs WHERE run = 'learn'`).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), count(adjustments), coalesce(max(adjustments::text), '')
		FROM attempts WHERE run = 'learn'`).Scan(&attempts, &adjusted, &adj); err != nil {
		t.Fatal(err)
	}
	if ok != n || attempts != n || adjusted != 1 || adj != `["no_system_role"]` {
		t.Fatalf("%d ok jobs, %d attempts, %d with adjustments (%s); want %d, %d, 1 ([\"no_system_role\"])", ok, attempts, adjusted, adj, n, n)
	}
	requests, err := fleettest.Requests(srv)
	if err != nil || requests != n+1 {
		t.Fatalf("%d requests (%v), want %d: one extra for the refusal", requests, err, n+1)
	}
	// A second worker's provider knows from its first call.
	other, err := build(provider)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := other.Chat(ctx, llm.Request{Mode: llm.ModeJSON, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract."}, {Role: llm.RoleUser, Content: fleettest.Document(1)}}})
	if err != nil || len(resp.Adjustments) != 0 {
		t.Fatalf("a second worker's provider: %v, learned %v; want no refusal", err, resp)
	}
}
