package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/jsonx"
)

// lossyAnswers validate only after a repair that guesses: a closing quote
// placed mid-line, an ellipsis standing for items, an invented null.
var lossyAnswers = []string{
	`{"vendor": "ACME, "total": 12.5, "items": [{"name": "bolt", "price": 12.5}]}`,
	`{"vendor": "ACME", "total": 12.5, "items": [{"name": "bolt", "price": 12.5}, ...]}`,
	`{"vendor": "ACME", "total": 12.5, "paid": , "items": []}`,
}

// randomReply is one of the answers and failures real models and APIs
// give; example is the example the prompt shows, which models repeat.
func randomReply(rng *rand.Rand, example string) extractqtest.Reply {
	switch rng.IntN(16) {
	case 13:
		return extractqtest.Text(example)
	case 14:
		return extractqtest.Text("The format is:\n```json\n" + example + "\n```\nand the document gives:\n```json\n" + validAnswer + "\n```")
	case 15:
		return extractqtest.Text(lossyAnswers[rng.IntN(len(lossyAnswers))])
	case 0:
		return extractqtest.Text(validAnswer)
	case 1:
		return extractqtest.Text("```json\n" + validAnswer + "\n```")
	case 2:
		return extractqtest.Text(`Here you go: {vendor: 'ACME', "total": 12.5, "items": [{"name": "bolt", "price": 12.5,},]} hope it helps`)
	case 3:
		return extractqtest.Text(`{"vendor":"ACME","total":"12.5","paid":"True","items":[{"name":"bolt","price":"3"}]}`)
	case 4:
		return extractqtest.Text(invalidAnswer)
	case 5:
		return extractqtest.Text(`{"vendor":"ACME","total":12.5,"items":[],"currency":"EUR"}`) // extra field
	case 6:
		return extractqtest.Text("The total is 12.50.")
	case 7:
		return extractqtest.Truncated(validAnswer[:rng.IntN(len(validAnswer))])
	case 8:
		return extractqtest.Text(`{"_unextractable": "not an invoice"}`)
	case 9:
		return extractqtest.Refused("cannot help")
	case 10:
		return extractqtest.Fail(llm.ClassRateLimited, time.Duration(rng.IntN(3))*time.Second)
	case 11:
		return extractqtest.Fail([]llm.ErrorClass{llm.ClassServer, llm.ClassOverloaded, llm.ClassTimeout, llm.ClassNetwork}[rng.IntN(4)], 0)
	default:
		if rng.IntN(4) == 0 { // fatal errors are rarer, or few runs would go far
			return extractqtest.Fail([]llm.ErrorClass{llm.ClassAuth, llm.ClassInvalidRequest, llm.ClassQuota}[rng.IntN(3)], 0)
		}
		return extractqtest.Text(validAnswer[:len(validAnswer)-1]) // unclosed: repairable
	}
}

func randomConfig(rng *rand.Rand, sl *sleeps) Config {
	c := DefaultConfig()
	c.Sleep = sl.sleep
	c.MaxReasks = rng.IntN(5)
	c.Transport.Retries = rng.IntN(4)
	c.History = []History{HistoryLast, HistoryFull}[rng.IntN(2)]
	c.Repair = []jsonx.Policy{jsonx.PolicyOff, jsonx.PolicySyntax, jsonx.PolicyCoerce}[rng.IntN(3)]
	c.Feedback = []Feedback{FeedbackReflect, FeedbackDirect, FeedbackPolite}[rng.IntN(3)]
	c.BreakOnUnextractable = rng.IntN(2) == 0
	c.AcceptLossy = rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		c.TokenBudget = 300 + rng.IntN(2500)
	}
	if rng.IntN(2) == 0 {
		c.MaxTokens = 20 + rng.IntN(200)
	}
	return c
}

// TestPropertyNeverInvalid drives random sequences of good, broken and
// failing answers under random configs and checks the engine's promises:
// never an invalid value, never the prompt's example for another document,
// never a lossy repair accepted while re-asks remain.
func TestPropertyNeverInvalid(t *testing.T) {
	s := mustSchema(t, invoiceSchema)
	ex, err := s.Example()
	if err != nil {
		t.Fatal(err)
	}
	exValue, err := decode(ex)
	if err != nil {
		t.Fatal(err)
	}
	exCanon := canonical(exValue)
	const runs = 3000
	outcomes := map[llm.Outcome]int{}
	for i := range runs {
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		sl := &sleeps{}
		cfg := randomConfig(rng, sl)
		p := extractqtest.New(nil, extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply { return randomReply(rng, string(ex)) }))
		res, err := Run(context.Background(), p, document, s, cfg)
		fail := func(format string, a ...any) {
			t.Helper()
			t.Fatalf("run %d (config %+v): %s\nresult %+v", i, cfg, fmt.Sprintf(format, a...), res)
		}
		if res == nil {
			fail("nil result: %v", err)
		}
		outcomes[res.Outcome]++
		// Only a valid value or an error, never an invalid value.
		if res.Outcome.Accepted() {
			if err != nil {
				fail("ok with error %v", err)
			}
			if vs, jerr := s.ValidateJSON(res.Value); jerr != nil || len(vs) > 0 {
				fail("ok result with invalid value %s: %v %v", res.Value, jerr, vs)
			}
			// Never the prompt's example: the document is not the example.
			if v, derr := decode(res.Value); derr != nil || bytes.Equal(canonical(v), exCanon) {
				fail("accepted the prompt's example %s", res.Value)
			}
			// Never a lossy repair while re-asks remain: an ok value has
			// none; a lossy one only when allowed and nothing was left.
			last := res.Attempts[len(res.Attempts)-1]
			lossy := jsonx.AnyLossy(last.Repairs)
			switch {
			case res.Outcome == llm.OutcomeOK && lossy:
				fail("ok value with lossy repairs %v", last.Repairs)
			case res.Outcome == llm.OutcomeLossy && !cfg.AcceptLossy:
				fail("lossy value without AcceptLossy")
			case res.Outcome == llm.OutcomeLossy && res.Calls() != cfg.MaxReasks+1 && last.Class != llm.ClassBudget:
				fail("lossy value accepted after %d of %d calls", res.Calls(), cfg.MaxReasks+1)
			}
		} else {
			if res.Value != nil {
				fail("failed result carries a value")
			}
			var e *llm.ExtractionError
			if !errors.As(err, &e) || !errors.Is(err, res.Outcome.Err()) || e.Error() == "" {
				fail("outcome %s with error %v", res.Outcome, err)
			}
		}
		// Never more validation calls than the re-ask budget allows.
		if res.Calls() > cfg.MaxReasks+1 {
			fail("%d calls with %d re-asks", res.Calls(), cfg.MaxReasks)
		}
		if (res.Outcome == llm.OutcomeExhausted || res.Outcome == llm.OutcomeLossy && res.Attempts[len(res.Attempts)-1].Class != llm.ClassBudget) && res.Calls() != cfg.MaxReasks+1 {
			fail("exhausted after %d calls", res.Calls())
		}
		// Never more transport retries than configured; every retry paused
		// once; every HTTP call is accounted for.
		retries := 0
		for _, a := range res.Attempts {
			if a.TransportRetries > cfg.Transport.Retries {
				fail("attempt %d made %d transport retries, max %d", a.N, a.TransportRetries, cfg.Transport.Retries)
			}
			retries += a.TransportRetries
		}
		if len(sl.d) != retries {
			fail("%d pauses for %d retries", len(sl.d), retries)
		}
		if p.Calls() != res.Calls()+retries {
			fail("provider saw %d calls, result accounts for %d", p.Calls(), res.Calls()+retries)
		}
		// Never more tokens than the budget.
		if cfg.TokenBudget > 0 && res.Usage.Total() > cfg.TokenBudget {
			fail("spent %d tokens of a %d budget", res.Usage.Total(), cfg.TokenBudget)
		}
	}
	// The random mix must reach every outcome the fake can produce, or the
	// property was checked on too narrow a sample.
	for _, o := range []llm.Outcome{llm.OutcomeOK, llm.OutcomeLossy, llm.OutcomeExhausted, llm.OutcomeUnextractable, llm.OutcomeBudgetExceeded, llm.OutcomeFatal, llm.OutcomeTransport} {
		if outcomes[o] == 0 {
			t.Errorf("no run ended %s: %v", o, outcomes)
		}
	}
	t.Logf("outcomes over %d runs: %v", runs, outcomes)
}
