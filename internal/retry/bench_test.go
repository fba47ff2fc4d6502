package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	_ "github.com/extractq/extractq/internal/sim/simprovider" // registers the "sim" family

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/providers"
)

// answer2KB is a model answer of about 2 KB: prose, a fenced JSON object
// with syntax damage (single quotes, unquoted keys, trailing commas, a
// Python literal) and one bad value that no repair may fix when bad is set.
func answer2KB(bad bool) string {
	var b strings.Builder
	b.WriteString("Sure! I read the invoice carefully. Here is the extracted data as requested:\n\n```json\n{\n  vendor: 'ACME Industrial Supplies Ltd.',\n  \"total\": 1234.5,\n  \"paid\": True,\n  \"items\": [\n")
	for i := range 24 {
		price := fmt.Sprintf("%d.%02d", 10+i, i)
		if bad && i == 17 {
			price = `"1,250"`
		}
		fmt.Fprintf(&b, "    {\"name\": 'hex bolt M%d, zinc plated', \"price\": %s,},\n", i+4, price)
	}
	b.WriteString("  ],\n}\n```\n\nLet me know if you need anything else, for example the tax breakdown or the delivery address.")
	return b.String()
}

// BenchmarkAttempt measures the engine's own work on one answer: find,
// repair, validate, coerce and (for an invalid answer) render the
// feedback. The provider is excluded.
func BenchmarkAttempt(b *testing.B) {
	s := mustSchema(b, invoiceSchema)
	cfg, err := DefaultConfig().normalized()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		bad  bool
		want llm.AttemptClass
	}{{"repaired-valid", false, llm.ClassNone}, {"invalid-with-feedback", true, llm.ClassSchema}} {
		b.Run(tc.name, func(b *testing.B) {
			resp := &llm.Response{Text: answer2KB(tc.bad), FinishReason: llm.FinishStop}
			data := promptData(document, s, factsCache.get(s), SchemaInExample, llm.ModeText)
			data.MaxAttempts = cfg.MaxReasks + 1
			j := newJudge(s, factsCache.get(s), &cfg, document, data)
			fb := feedbackTemplates[cfg.Feedback]
			if ev := evaluate(resp, j); ev.class != tc.want {
				b.Fatalf("class %q, want %q: %s", ev.class, tc.want, ev.problem)
			}
			b.SetBytes(int64(len(resp.Text)))
			b.ReportAllocs()
			for b.Loop() {
				ev := evaluate(resp, j)
				if ev.class != llm.ClassNone {
					data.Attempt, data.Next = 1, 2
					data.Errors, data.Violations, data.Previous = ev.problem, ev.violations, resp.Text
					if _, err := render(fb, data); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/attempt")
		})
	}
}

// faultyModel answers like a sloppy model: each answer is wrong with
// probability 0.6 (schema error, prose without JSON, cut off, or beyond
// repair), else valid. The answers depend only on seed and call number, so
// both history policies see the same model.
func faultyModel(seed uint64) extractqtest.Responder {
	rng := rand.New(rand.NewPCG(seed, 7))
	return func(int, llm.Request) extractqtest.Reply {
		if rng.Float64() >= 0.6 {
			return extractqtest.Text(answer2KB(false))
		}
		switch rng.IntN(4) {
		case 0:
			return extractqtest.Text(answer2KB(true))
		case 1:
			return extractqtest.Text("The invoice lists 24 hex bolts from ACME Industrial Supplies Ltd., total 1234.50, paid in full.")
		case 2:
			return extractqtest.Truncated(answer2KB(false)[:900])
		default:
			return extractqtest.Text(`{"vendor": "ACME", "total": 1234.5, "items": [{"name": "hex bolt"}]}`)
		}
	}
}

// BenchmarkHistoryTokens reports tokens spent per valid document under a
// fault mix with history last and full, and their ratio.
func BenchmarkHistoryTokens(b *testing.B) {
	s := mustSchema(b, invoiceSchema)
	doc := strings.Repeat("Invoice 2024-117 from ACME Industrial Supplies Ltd., 24 items of zinc plated hex bolts. ", 24) // ~2 KB
	tokens := map[History]int{}
	valid := map[History]int{}
	var seed uint64
	for b.Loop() {
		seed++
		for _, h := range []History{HistoryLast, HistoryFull} {
			cfg := DefaultConfig()
			cfg.History = h
			res, _ := Run(context.Background(), extractqtest.New(nil, extractqtest.WithResponder(faultyModel(seed))), doc, s, cfg)
			tokens[h] += res.Usage.Total()
			if res.Outcome == llm.OutcomeOK {
				valid[h]++
			}
		}
	}
	if valid[HistoryLast] != valid[HistoryFull] {
		b.Fatalf("the policies validated different documents: %v", valid)
	}
	last := float64(tokens[HistoryLast]) / float64(valid[HistoryLast])
	full := float64(tokens[HistoryFull]) / float64(valid[HistoryFull])
	b.ReportMetric(last, "tokens/valid-doc(last)")
	b.ReportMetric(full, "tokens/valid-doc(full)")
	b.ReportMetric(last/full, "last/full")
	b.ReportMetric(float64(valid[HistoryLast])/float64(b.N), "valid-fraction")
}

// BenchmarkHistoryTokensSim is BenchmarkHistoryTokens against the
// in-process simulator's sloppy model (providers "sim:sloppy"): its answers
// depend on the document and the attempt number only, so both policies
// face the same model.
func BenchmarkHistoryTokensSim(b *testing.B) {
	s := mustSchema(b, invoiceSchema)
	p, err := providers.New("sim:sloppy")
	if err != nil {
		b.Fatalf("the simulator is needed: %v", err)
	}
	tokens := map[History]int{}
	valid := map[History]int{}
	calls := map[History]int{}
	var n int
	for b.Loop() {
		n++
		doc := fmt.Sprintf("Invoice %d from Vendor%d Ltd. ", n, n) + strings.Repeat(fmt.Sprintf("Item: hex bolt M%d, price %d.50 EUR. ", n%9, n%40), 40)
		for _, h := range []History{HistoryLast, HistoryFull} {
			cfg := DefaultConfig()
			cfg.History = h
			res, _ := Run(context.Background(), p, doc, s, cfg)
			if res == nil {
				b.Fatal("nil result")
			}
			tokens[h] += res.Usage.Total()
			calls[h] += res.Calls()
			if res.Outcome == llm.OutcomeOK {
				valid[h]++
			}
		}
	}
	if valid[HistoryLast] == 0 || valid[HistoryFull] == 0 {
		b.Fatalf("no valid document: %v", valid)
	}
	last := float64(tokens[HistoryLast]) / float64(valid[HistoryLast])
	full := float64(tokens[HistoryFull]) / float64(valid[HistoryFull])
	b.ReportMetric(last, "tokens/valid-doc(last)")
	b.ReportMetric(full, "tokens/valid-doc(full)")
	b.ReportMetric(last/full, "last/full")
	b.ReportMetric(float64(valid[HistoryLast])/float64(n), "valid-fraction(last)")
	b.ReportMetric(float64(valid[HistoryFull])/float64(n), "valid-fraction(full)")
	b.ReportMetric(float64(calls[HistoryLast])/float64(n), "calls/doc(last)")
}
