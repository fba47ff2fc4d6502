package retry

import (
	"context"
	"fmt"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/schema"
)

// fleetDocs is how many fleet documents BenchmarkRunFleetClean cycles
// through: enough for every currency, status and item count.
const fleetDocs = 64

// recorded plays back recorded answers in turn, one per call, as an
// llm.Provider that reports another provider's name, model and
// capabilities: the engine's work on a fleet document without the
// network.
type recorded struct {
	llm.Provider // the provider that gave the answers: name, model, capabilities
	answers      []*llm.Response
	n            int
}

// Chat returns a copy of the next answer.
func (r *recorded) Chat(context.Context, llm.Request) (*llm.Response, error) {
	c := *r.answers[r.n%len(r.answers)]
	r.n++
	return &c, nil
}

// fleetAnswers asks the simulator with the fleet's clean profile, through
// the OpenAI adapter as the fleet's worker does (provider
// "openai:sim-fleet", strict mode), for each of docs, and returns a
// provider that plays the answers back in the same order.
func fleetAnswers(tb testing.TB, docs []string) *recorded {
	tb.Helper()
	srv := sim.New(fleettest.CleanProfile())
	tb.Cleanup(srv.Close)
	p, err := fleettest.Provider(srv)("")
	if err != nil {
		tb.Fatal(err)
	}
	s := mustSchema(tb, fleettest.Schema)
	rec := &recorded{Provider: p, answers: make([]*llm.Response, 0, len(docs))}
	for _, doc := range docs {
		var last *llm.Response
		spy := &spyProvider{Provider: p, last: &last}
		res, err := Run(context.Background(), spy, doc, s, DefaultConfig())
		if err != nil || res.Mode != llm.ModeStrict || res.Calls() != 1 {
			tb.Fatalf("the simulator's clean answer to %q: mode %s, %d calls, %v", doc, res.Mode, res.Calls(), err)
		}
		rec.answers = append(rec.answers, last)
	}
	return rec
}

// spyProvider keeps the last answer its provider gave.
type spyProvider struct {
	llm.Provider
	last **llm.Response
}

func (s *spyProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	resp, err := s.Provider.Chat(ctx, req)
	if err == nil {
		c := *resp
		*s.last = &c
	}
	return resp, err
}

// BenchmarkRunFleetClean is one fleet document through Run as the fleet's
// worker runs it (default config, one observer), against the answers the
// simulator's clean profile gives through the OpenAI adapter in strict
// mode, played back without the network: the engine's own cost per
// document (issue 29).
func BenchmarkRunFleetClean(b *testing.B) {
	docs := make([]string, fleetDocs)
	for i := range docs {
		docs[i] = fleettest.Document(i)
	}
	p := fleetAnswers(b, docs)
	s := mustSchema(b, fleettest.Schema)
	cfg := DefaultConfig()
	cfg.Observers = append(cfg.Observers, func(context.Context, llm.Attempt) {})
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := runFleetDoc(ctx, p, docs[i%fleetDocs], s, cfg); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// runFleetDoc is one document of BenchmarkRunFleetClean, a function of its
// own so that callgrind can count it alone (--toggle-collect), without the
// simulator's answers recorded before.
//
//go:noinline
func runFleetDoc(ctx context.Context, p llm.Provider, doc string, s *schema.Schema, cfg Config) error {
	res, err := Run(ctx, p, doc, s, cfg)
	if err != nil || res.Outcome != llm.OutcomeOK {
		return fmt.Errorf("outcome %v: %v", res.Outcome, err)
	}
	return nil
}
