package metrics

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/ratelimit"
)

func TestObserveRecord(t *testing.T) {
	m := New(prometheus.NewRegistry())
	start := time.Now()
	rec := &audit.Record{
		Pool: "p1", Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Outcome: llm.OutcomeOK, Final: true,
		StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond),
		Attempts: []llm.Attempt{
			{Class: llm.ClassSchema, Latency: 200 * time.Millisecond, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20},
				Repairs: []llm.Repair{{Kind: "trailing_comma"}, {Kind: "single_quotes"}}},
			{Class: llm.AttemptClass(llm.ClassRateLimited), Adjustments: []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustToolAuto}},
			{Latency: 300 * time.Millisecond, Usage: llm.Usage{PromptTokens: 150, CompletionTokens: 30, CachedPromptTokens: 128},
				Repairs: []llm.Repair{{Kind: "trailing_comma"}}},
		},
	}
	m.ObserveRecord(rec)
	m.ObserveRecord(&audit.Record{Pool: "p1", Model: "gpt-4o-mini", Outcome: llm.OutcomeExhausted, Final: true,
		DeadLetter: &audit.DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: 7}})

	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"jobs ok", testutil.ToFloat64(m.Jobs.WithLabelValues("p1", "ok")), 1},
		{"jobs exhausted", testutil.ToFloat64(m.Jobs.WithLabelValues("p1", "exhausted")), 1},
		{"dead letters", testutil.ToFloat64(m.DeadLetters.WithLabelValues("p1")), 1},
		{"attempts schema", testutil.ToFloat64(m.Attempts.WithLabelValues("p1", "schema")), 1},
		{"attempts ok", testutil.ToFloat64(m.Attempts.WithLabelValues("p1", "ok")), 1},
		{"429s", testutil.ToFloat64(m.RateLimited.WithLabelValues("p1")), 1},
		{"repairs trailing_comma", testutil.ToFloat64(m.Repairs.WithLabelValues("trailing_comma")), 2},
		{"adjustments learned", testutil.ToFloat64(m.Adjustments.WithLabelValues("p1", "gpt-4o-mini", "no_temperature")), 1},
		{"adjustments learned, tool_choice", testutil.ToFloat64(m.Adjustments.WithLabelValues("p1", "gpt-4o-mini", "tool_choice_auto")), 1},
		{"prompt tokens", testutil.ToFloat64(m.Tokens.WithLabelValues("p1", "gpt-4o-mini", "prompt")), 250},
		{"completion tokens", testutil.ToFloat64(m.Tokens.WithLabelValues("p1", "gpt-4o-mini", "completion")), 50},
		{"cached tokens", testutil.ToFloat64(m.Tokens.WithLabelValues("p1", "gpt-4o-mini", "cached")), 128},
		// 122 prompt tokens at 0.15, 128 cached at 0.075, 50 completion at 0.60 (USD per million).
		{"cost with cached reads", testutil.ToFloat64(m.CostUSD.WithLabelValues("p1", "gpt-4o-mini")) * 1e6, 122*0.15 + 128*0.075 + 50*0.60},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if cost := testutil.ToFloat64(m.CostUSD.WithLabelValues("p1", "gpt-4o-mini")); cost <= 0 {
		t.Errorf("estimated cost for a priced model = %v, want > 0", cost)
	}
	if n := testutil.CollectAndCount(m.CallSeconds); n != 1 {
		t.Errorf("call latency series = %d, want 1", n)
	}
}

// TestBatchAnswersCostHalf: attempts answered through a provider batch are
// priced at the batch price, the others of the same job at the list price.
func TestBatchAnswersCostHalf(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry())
	u := llm.Usage{PromptTokens: 1000, CompletionTokens: 100}
	m.ObserveRecord(&audit.Record{Pool: "b", Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Outcome: llm.OutcomeOK, Final: true,
		Attempts: []llm.Attempt{{Class: llm.ClassSchema, Usage: u, Batch: true}, {Usage: u, Batch: true}, {Usage: u}}})
	list := (1000*0.15 + 100*0.60) / 1e6 // one call at gpt-4o-mini's list price
	want := 2*list*0.5 + list
	if got := testutil.ToFloat64(m.CostUSD.WithLabelValues("b", "gpt-4o-mini")); got < want*0.999 || got > want*1.001 {
		t.Fatalf("cost = %v, want %v (two batch answers at half price, one online)", got, want)
	}
}

func TestObserveFlush(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.ObserveFlush(120, 4*time.Millisecond, nil)
	m.ObserveFlush(0, 0, errors.New("connection refused"))
	if got := testutil.ToFloat64(m.FlushFailures); got != 1 {
		t.Errorf("flush failures = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.FlushRows); n != 1 {
		t.Errorf("flush rows series = %d, want 1", n)
	}
}

// fakeWriter fails when err is set and counts what it wrote.
type fakeWriter struct {
	err    error
	writes int
}

func (f *fakeWriter) Write(context.Context, *audit.Record) error {
	if f.err != nil {
		return f.err
	}
	f.writes++
	return nil
}

func TestObservedWriterCountsOnlyDurableRecords(t *testing.T) {
	tests := []struct {
		name     string
		writeErr error
		wantJobs float64
	}{
		{"durable", nil, 1},
		{"write failed", errors.New("flush failed"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(prometheus.NewRegistry())
			inner := &fakeWriter{err: tt.writeErr}
			w := &ObservedWriter{Writer: inner, Metrics: m}
			rec := &audit.Record{Pool: "sim_sloppy", Outcome: llm.OutcomeOK, Final: true,
				Attempts: []llm.Attempt{{}, {}}}
			err := w.Write(context.Background(), rec)
			if !errors.Is(err, tt.writeErr) {
				t.Fatalf("Write error = %v, want %v", err, tt.writeErr)
			}
			// WriteWithin (the worker's way) counts as Write does.
			if err := w.WriteWithin(rec, time.Minute); !errors.Is(err, tt.writeErr) {
				t.Fatalf("WriteWithin error = %v, want %v", err, tt.writeErr)
			}
			if got := testutil.ToFloat64(m.Jobs.WithLabelValues("sim_sloppy", "ok")); got != 2*tt.wantJobs {
				t.Errorf("extractq_jobs_total{ok} = %v, want %v", got, 2*tt.wantJobs)
			}
			if got := testutil.ToFloat64(m.Attempts.WithLabelValues("sim_sloppy", "ok")); got != 4*tt.wantJobs {
				t.Errorf("extractq_attempts_total = %v, want %v", got, 4*tt.wantJobs)
			}
		})
	}
}

func TestObserverMethods(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.JobStarted("p")
	m.JobStarted("p")
	m.JobFinished("p")
	m.Nak("p", "transport")
	m.Nak("p", "transport")
	m.Nak("p", "shutdown")
	// The worker reports closed circuits at start (no transition), then an
	// outage: open, half-open, open again, half-open, closed.
	m.Circuit("p", "transport", ratelimit.CircuitClosed)
	m.Circuit("p", "audit", ratelimit.CircuitClosed)
	for _, s := range []ratelimit.CircuitState{ratelimit.CircuitOpen, ratelimit.CircuitHalfOpen, ratelimit.CircuitOpen, ratelimit.CircuitHalfOpen} {
		m.Circuit("p", "transport", s)
	}
	m.Circuit("p", "audit", ratelimit.CircuitOpen)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"in flight", testutil.ToFloat64(m.InFlight.WithLabelValues("p")), 1},
		{"naks transport", testutil.ToFloat64(m.Naks.WithLabelValues("p", "transport")), 2},
		{"naks shutdown", testutil.ToFloat64(m.Naks.WithLabelValues("p", "shutdown")), 1},
		{"transport circuit half-open", testutil.ToFloat64(m.CircuitState.WithLabelValues("p", "transport")), 1},
		{"audit circuit open", testutil.ToFloat64(m.CircuitState.WithLabelValues("p", "audit")), 2},
		{"transport opens", testutil.ToFloat64(m.CircuitMoves.WithLabelValues("p", "transport", "open")), 2},
		{"transport half-opens", testutil.ToFloat64(m.CircuitMoves.WithLabelValues("p", "transport", "half_open")), 2},
		{"no transition at start", testutil.ToFloat64(m.CircuitMoves.WithLabelValues("p", "transport", "closed")), 0},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestObservePool(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.ObservePool("p", ratelimit.Snapshot{InUse: 3, EffectiveConcurrency: 8, Members: 4, ShareSource: ratelimit.ShareFallback, Paused: true, PauseReason: ratelimit.PauseRateLimited, Pauses: 2}, 0)
	if got := testutil.ToFloat64(m.PoolPaused.WithLabelValues("p", "rate_limited")); got != 1 {
		t.Errorf("paused{reason=rate_limited} = %v while paused by a 429, want 1", got)
	}
	m.ObservePool("p", ratelimit.Snapshot{InUse: 1, EffectiveConcurrency: 8, Members: 2, Pauses: 3}, 2)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"in use", testutil.ToFloat64(m.PoolInUse.WithLabelValues("p")), 1},
		{"share", testutil.ToFloat64(m.PoolShare.WithLabelValues("p")), 0.5},
		{"fallback cleared", testutil.ToFloat64(m.PoolFallback.WithLabelValues("p")), 0},
		{"pause cleared", testutil.ToFloat64(m.PoolPaused.WithLabelValues("p", "rate_limited")), 0},
		{"pauses counted once", testutil.ToFloat64(m.PoolPauses.WithLabelValues("p")), 3},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// A pool held by a refused key shows under reason "key" only.
	m.ObservePool("k", ratelimit.Snapshot{Members: 1, Paused: true, PauseReason: ratelimit.PauseKey}, 0)
	for _, r := range ratelimit.PauseReasons {
		want := boolGauge(r == ratelimit.PauseKey)
		if got := testutil.ToFloat64(m.PoolPaused.WithLabelValues("k", r)); got != want {
			t.Errorf("paused{pool=k,reason=%s} = %v, want %v", r, got, want)
		}
	}
	m.ObservePool("q", ratelimit.Snapshot{Members: 3, ShareSource: ratelimit.ShareFallback}, 0)
	if got := testutil.ToFloat64(m.PoolFallback.WithLabelValues("q")); got != 1 {
		t.Errorf("fallback gauge = %v, want 1 while the share is the fallback", got)
	}
}

// TestSampleBatchPool: a batch pool's gathering, waiting and polled counts
// are sampled at scrape time; its pool gauges (it has no rate budget) are
// left alone.
func TestSampleBatchPool(t *testing.T) {
	t.Parallel()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	reg := prometheus.NewRegistry()
	m := New(reg)
	st := batchpool.Stats{Gathering: 7, Waiting: 2, Polling: 3}
	s := NewSampler(m, reg, js, []SampledPool{{Name: "openai_gpt-4o-mini", Batch: func() batchpool.Stats { return st }}}, slog.New(slog.DiscardHandler))
	s.Sample(t.Context())
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"gathering", testutil.ToFloat64(m.BatchRequests.WithLabelValues("openai_gpt-4o-mini", "gathering")), 7},
		{"waiting", testutil.ToFloat64(m.BatchRequests.WithLabelValues("openai_gpt-4o-mini", "waiting")), 2},
		{"polled", testutil.ToFloat64(m.BatchesPolled.WithLabelValues("openai_gpt-4o-mini")), 3},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.PoolLimit); n != 0 {
		t.Errorf("%d pool limit series for a batch pool; want none", n)
	}
}

// BenchmarkObserveDocument prices what the metrics add to a clean fleet
// document: its delivery started and finished, and its record observed
// (one valid attempt, on a "sim:" provider as in bench/fleet).
func BenchmarkObserveDocument(b *testing.B) {
	m := New(prometheus.NewRegistry())
	start := time.Now()
	rec := &audit.Record{
		Pool: "sim", Provider: "sim:fleet", Model: "fleet", Outcome: llm.OutcomeOK, Final: true,
		StartedAt: start, FinishedAt: start.Add(40 * time.Millisecond),
		Attempts: []llm.Attempt{{Latency: 30 * time.Millisecond, Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 60}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		m.JobStarted(rec.Pool)
		m.ObserveRecord(rec)
		m.JobFinished(rec.Pool)
	}
}

// TestObserveRecordSeriesApart: the series kept per pool and per pool and
// model are counted apart, from several goroutines at once (run with
// -race).
func TestObserveRecordSeriesApart(t *testing.T) {
	m := New(prometheus.NewRegistry())
	keys := [][2]string{{"p1", "m1"}, {"p1", "m2"}, {"p2", "m1"}}
	done := make(chan struct{})
	for i, k := range keys {
		go func() {
			defer func() { done <- struct{}{} }()
			for range i + 1 {
				m.JobStarted(k[0])
				m.ObserveRecord(&audit.Record{Pool: k[0], Model: k[1], Provider: "openai:gpt-4o-mini", Outcome: llm.OutcomeOK, Final: true,
					Attempts: []llm.Attempt{{Latency: time.Millisecond, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 1}}}})
			}
		}()
	}
	for range keys {
		<-done
	}
	for i, k := range keys {
		if got := testutil.ToFloat64(m.Tokens.WithLabelValues(k[0], k[1], "prompt")); got != float64(10*(i+1)) {
			t.Errorf("prompt tokens of %v = %v, want %v", k, got, 10*(i+1))
		}
	}
	for pool, want := range map[string]float64{"p1": 3, "p2": 3} {
		if got := testutil.ToFloat64(m.Jobs.WithLabelValues(pool, "ok")); got != want {
			t.Errorf("jobs ok of %s = %v, want %v", pool, got, want)
		}
		if got := testutil.ToFloat64(m.Attempts.WithLabelValues(pool, "ok")); got != want {
			t.Errorf("attempts ok of %s = %v, want %v", pool, got, want)
		}
		if got := testutil.ToFloat64(m.InFlight.WithLabelValues(pool)); got != want {
			t.Errorf("in flight of %s = %v, want %v", pool, got, want)
		}
	}
}
