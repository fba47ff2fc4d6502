// Package metrics defines the worker's Prometheus metrics. Everything is
// registered on a registry the caller supplies (no global state), and most
// counters are fed from one place: the audit record of a finished delivery.
package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
)

// Metrics holds the worker's collectors.
type Metrics struct {
	Jobs          *prometheus.CounterVec   // jobs finished, by pool and outcome
	Attempts      *prometheus.CounterVec   // model calls, by pool and class ("ok" when valid)
	Repairs       *prometheus.CounterVec   // local repairs applied, by kind
	Adjustments   *prometheus.CounterVec   // request parts a server refused and the adapter learned to change, by pool, model and adjustment
	Tokens        *prometheus.CounterVec   // tokens, by pool, model and kind (prompt|completion|cached|cache_write)
	CostUSD       *prometheus.CounterVec   // estimated cost, by pool and model
	CallSeconds   *prometheus.HistogramVec // provider-call latency, by pool
	JobSeconds    *prometheus.HistogramVec // end-to-end latency of a delivery, by pool
	InFlight      *prometheus.GaugeVec     // jobs running now, by pool
	Naks          *prometheus.CounterVec   // deliveries nak'd with delay, by pool and reason
	DeadLetters   *prometheus.CounterVec   // jobs moved to the dead-letter stream, by pool
	PoolInUse     *prometheus.GaugeVec     // concurrency slots in use, by pool
	PoolLimit     *prometheus.GaugeVec     // effective concurrency limit, by pool
	PoolShare     *prometheus.GaugeVec     // this worker's share of the fleet budget (0..1), by pool
	PoolFallback  *prometheus.GaugeVec     // 1 while the fleet share is the fallback (KV unreachable), by pool
	PoolPaused    *prometheus.GaugeVec     // 1 while a pool is paused, by pool and reason (ratelimit.PauseReasons)
	PoolPauses    *prometheus.CounterVec   // pauses, by pool
	CircuitState  *prometheus.GaugeVec     // circuit state (0 closed, 1 half-open, 2 open), by pool and reason
	CircuitMoves  *prometheus.CounterVec   // circuit transitions, by pool, reason and state entered
	RateLimited   *prometheus.CounterVec   // 429 and 529 answers, by pool
	ConsumerLag   *prometheus.GaugeVec     // messages waiting for each pool's consumer
	BatchRequests *prometheus.GaugeVec     // a batch pool's requests, by state (gathering, waiting)
	BatchesPolled *prometheus.GaugeVec     // provider batches this worker polls, by pool
	DLQMessages   prometheus.Gauge         // messages in the dead-letter stream
	FlushRows     prometheus.Histogram     // rows per audit flush
	FlushSeconds  prometheus.Histogram     // audit flush latency
	FlushFailures prometheus.Counter       // audit flushes that failed

	// The children every document touches, looked up once per label
	// values: WithLabelValues hashes its labels and takes the vector's
	// lock, about ten times per document.
	counters childCache[prometheus.Counter] // the other outcomes and classes

	// A clean document's series, by pool and by pool and model: a
	// document looks up two entries (and its start and end one each)
	// instead of hashing a vector and three labels ten times.
	seriesMu sync.RWMutex
	pools    map[string]*poolSeries
	models   map[[2]string]*modelSeries
}

// poolSeries holds the children of one pool that every document touches.
type poolSeries struct {
	inFlight    prometheus.Gauge
	jobsOK      prometheus.Counter // outcome "ok"
	attemptsOK  prometheus.Counter // class "ok"
	callSeconds prometheus.Observer
	jobSeconds  prometheus.Observer
}

// modelSeries holds the children of one pool and model that every
// document touches.
type modelSeries struct {
	tokens [4]prometheus.Counter // prompt, completion, cached, cache_write
	cost   prometheus.Counter
}

// pool returns the children of pool, made on first use. Nothing deletes
// children of these vectors, so a kept child is the vector's for good.
func (m *Metrics) pool(pool string) *poolSeries {
	m.seriesMu.RLock()
	s := m.pools[pool]
	m.seriesMu.RUnlock()
	if s != nil {
		return s
	}
	s = &poolSeries{
		inFlight:    m.InFlight.WithLabelValues(pool),
		jobsOK:      m.Jobs.WithLabelValues(pool, string(llm.OutcomeOK)),
		attemptsOK:  m.Attempts.WithLabelValues(pool, "ok"),
		callSeconds: m.CallSeconds.WithLabelValues(pool),
		jobSeconds:  m.JobSeconds.WithLabelValues(pool),
	}
	m.seriesMu.Lock()
	if m.pools == nil {
		m.pools = map[string]*poolSeries{}
	}
	m.pools[pool] = s
	m.seriesMu.Unlock()
	return s
}

// model returns the children of pool and model, made on first use.
func (m *Metrics) model(pool, model string) *modelSeries {
	k := [2]string{pool, model}
	m.seriesMu.RLock()
	s := m.models[k]
	m.seriesMu.RUnlock()
	if s != nil {
		return s
	}
	s = &modelSeries{cost: m.CostUSD.WithLabelValues(pool, model)}
	for i, kind := range [...]string{"prompt", "completion", "cached", "cache_write"} {
		s.tokens[i] = m.Tokens.WithLabelValues(pool, model, kind)
	}
	m.seriesMu.Lock()
	if m.models == nil {
		m.models = map[[2]string]*modelSeries{}
	}
	m.models[k] = s
	m.seriesMu.Unlock()
	return s
}

// childCache keeps the children of metric vectors by vector and label
// values. Nothing deletes children of these vectors, so a kept child is
// the vector's for good. Its size is that of the series themselves.
type childCache[T any] struct {
	mu sync.RWMutex
	m  map[childKey]T
}

type childKey struct {
	vec    any // the vector
	labels [3]string
}

// get returns vec's child of labels (at most three), made by with on
// first use.
func (c *childCache[T]) get(vec any, with func(...string) T, labels ...string) T {
	k := childKey{vec: vec}
	copy(k.labels[:], labels)
	c.mu.RLock()
	ch, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return ch
	}
	ch = with(slices.Clone(labels)...) // labels stays on the caller's stack
	c.mu.Lock()
	if c.m == nil {
		c.m = map[childKey]T{}
	}
	c.m[k] = ch
	c.mu.Unlock()
	return ch
}

func (m *Metrics) counter(vec *prometheus.CounterVec, labels ...string) prometheus.Counter {
	return m.counters.get(vec, vec.WithLabelValues, labels...)
}

// New creates the collectors and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	latency := []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		Jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_jobs_total", Help: "Job deliveries finished, by pool and outcome (ok, exhausted, unextractable, budget_exceeded, fatal, transport, canceled).",
		}, []string{"pool", "outcome"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_attempts_total", Help: "Model calls, by pool and error class (ok for a valid answer).",
		}, []string{"pool", "class"}),
		Repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_repairs_total", Help: "Local JSON repairs and coercions applied, by kind.",
		}, []string{"kind"}),
		Adjustments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_provider_adjustments_total", Help: "Request parts a provider's server refused with a 400 that the adapter learned to drop or change (no_temperature, tool_choice_auto, no_system_role, no_strict_tool, no_native_schema, drop_keyword:NAME), by pool, model and adjustment; each cost one extra call, no re-ask.",
		}, []string{"pool", "model", "adjustment"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_tokens_total", Help: "Tokens reported by providers, by pool, model and kind (prompt, completion; cached and cache_write are the parts of prompt the provider's prompt cache served and stored).",
		}, []string{"pool", "model", "kind"}),
		CostUSD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_cost_usd_total", Help: "Estimated cost in US dollars from list prices, by pool and model.",
		}, []string{"pool", "model"}),
		CallSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "extractq_provider_call_seconds", Help: "Latency of one model call, by pool.", Buckets: latency,
		}, []string{"pool"}),
		JobSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "extractq_job_seconds", Help: "End-to-end time of one delivery (all attempts and the audit write), by pool.", Buckets: latency,
		}, []string{"pool"}),
		InFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_jobs_in_flight", Help: "Jobs running now, by pool.",
		}, []string{"pool"}),
		Naks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_naks_total", Help: "Deliveries nak'd with a delay for redelivery, by pool and reason.",
		}, []string{"pool", "reason"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_dead_letters_total", Help: "Jobs moved to the dead-letter stream, by pool.",
		}, []string{"pool"}),
		PoolInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_pool_slots_in_use", Help: "Concurrency slots in use, by pool.",
		}, []string{"pool"}),
		PoolLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_pool_slots_limit", Help: "Effective concurrency limit of this worker (after fleet share and 429 back-off), by pool.",
		}, []string{"pool"}),
		PoolShare: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_pool_share", Help: "This worker's share of the pool's fleet-wide budget (1/live workers, or the fallback share), by pool.",
		}, []string{"pool"}),
		PoolFallback: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_pool_share_fallback", Help: "1 while this worker cannot reach the fleet membership bucket and uses the conservative fallback share, else 0.",
		}, []string{"pool"}),
		PoolPaused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_pool_paused", Help: "1 while the pool is paused for this reason, else 0, by pool and reason: rate_limited (429), overloaded (529), no_requests_remaining, no_tokens_remaining, key (401/403: the provider refused the key), model (404: the model does not exist), quota (the account's quota is spent), outage (transport failures in a row), audit (the audit store fails). sum by (pool) is 1 while the pool is paused.",
		}, []string{"pool", "reason"}),
		PoolPauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_pool_pauses_total", Help: "Times a pool was paused after a 429 or 529.",
		}, []string{"pool"}),
		CircuitState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_pool_circuit_state", Help: "Circuit breaker state: 0 closed (pulling), 1 half-open (one probe job), 2 open (not pulling; held jobs stay in progress), by pool and reason (transport: the pool's provider; audit: the audit store, for every pool; batch_poll: a batch pool's polls of its running batches, whose circuit stops no pulling but shows the pool paused).",
		}, []string{"pool", "reason"}),
		CircuitMoves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_pool_circuit_transitions_total", Help: "Circuit breaker transitions, by pool, reason and the state entered (open, half_open, closed).",
		}, []string{"pool", "reason", "state"}),
		RateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extractq_rate_limited_total", Help: "Provider answers 429 (rate limited) and 529 (overloaded), by pool.",
		}, []string{"pool"}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_consumer_lag", Help: "Messages not yet delivered to each pool's JetStream consumer.",
		}, []string{"pool"}),
		BatchRequests: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_batch_requests", Help: "Requests of a batch pool's jobs in this worker, by pool and state: gathering (not submitted yet) or waiting (on a batch another worker polls).",
		}, []string{"pool", "state"}),
		BatchesPolled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extractq_batches_polled", Help: "Provider batches this worker polls, by pool.",
		}, []string{"pool"}),
		DLQMessages: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "extractq_dlq_messages", Help: "Messages in the dead-letter stream.",
		}),
		FlushRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "extractq_audit_flush_rows", Help: "Rows written per audit group commit.", Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		FlushSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "extractq_audit_flush_seconds", Help: "Latency of one audit group commit.", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		FlushFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "extractq_audit_flush_failures_total", Help: "Audit group commits that failed (their jobs were nak'd).",
		}),
	}
	reg.MustRegister(m.Jobs, m.Attempts, m.Repairs, m.Adjustments, m.Tokens, m.CostUSD, m.CallSeconds, m.JobSeconds,
		m.InFlight, m.Naks, m.DeadLetters, m.PoolInUse, m.PoolLimit, m.PoolShare, m.PoolFallback, m.PoolPaused, m.PoolPauses,
		m.CircuitState, m.CircuitMoves, m.RateLimited, m.ConsumerLag, m.BatchRequests, m.BatchesPolled, m.DLQMessages, m.FlushRows, m.FlushSeconds, m.FlushFailures)
	return m
}

// ObserveRecord counts one finished delivery: its outcome, every attempt,
// repairs, tokens, estimated cost and latencies.
func (m *Metrics) ObserveRecord(rec *audit.Record) {
	pool := rec.Pool
	ps := m.pool(pool)
	if rec.Final || rec.Outcome != "" {
		if rec.Outcome == llm.OutcomeOK {
			ps.jobsOK.Inc()
		} else {
			m.counter(m.Jobs, pool, string(rec.Outcome)).Inc()
		}
	}
	if rec.DeadLetter != nil {
		m.DeadLetters.WithLabelValues(pool).Inc()
	}
	var online, batched llm.Usage // batched: answered through provider batches
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		class := string(a.Class)
		if class == "" || class == "ok" {
			ps.attemptsOK.Inc()
		} else {
			m.counter(m.Attempts, pool, class).Inc()
		}
		if class == string(llm.ClassRateLimited) || class == string(llm.ClassOverloaded) {
			m.RateLimited.WithLabelValues(pool).Inc()
		}
		for _, r := range a.Repairs {
			m.Repairs.WithLabelValues(r.Kind).Inc()
		}
		for _, adj := range a.Adjustments {
			m.Adjustments.WithLabelValues(pool, rec.Model, string(adj)).Inc()
		}
		if a.Latency > 0 {
			ps.callSeconds.Observe(a.Latency.Seconds())
		}
		if a.Batch {
			batched = batched.Add(a.Usage)
		} else {
			online = online.Add(a.Usage)
		}
	}
	usage := online.Add(batched)
	ms := m.model(pool, rec.Model)
	ms.tokens[0].Add(float64(usage.PromptTokens))
	ms.tokens[1].Add(float64(usage.CompletionTokens))
	ms.tokens[2].Add(float64(usage.CachedPromptTokens))
	ms.tokens[3].Add(float64(usage.CacheCreationTokens))
	// Priced by provider string so every "sim:…" model gets the notional
	// price; answers of provider batches at the batch price.
	onlineUSD, ok := providers.EstimateCost(rec.Provider, online)
	var batchUSD float64 // nothing to price without batch answers: an online document asks once
	if batched != (llm.Usage{}) {
		batchUSD, _ = providers.EstimateBatchCost(rec.Provider, batched)
	}
	if ok {
		ms.cost.Add(onlineUSD + batchUSD)
	}
	if !rec.StartedAt.IsZero() && rec.FinishedAt.After(rec.StartedAt) {
		ps.jobSeconds.Observe(rec.FinishedAt.Sub(rec.StartedAt).Seconds())
	}
}

// ObserveFlush records one audit group commit.
func (m *Metrics) ObserveFlush(rows int, took time.Duration, err error) {
	if err != nil {
		m.FlushFailures.Inc()
		return
	}
	m.FlushRows.Observe(float64(rows))
	m.FlushSeconds.Observe(took.Seconds())
}

// JobStarted counts a delivery the worker began (worker.Observer).
func (m *Metrics) JobStarted(pool string) { m.pool(pool).inFlight.Inc() }

// JobFinished counts a delivery the worker settled (worker.Observer).
func (m *Metrics) JobFinished(pool string) { m.pool(pool).inFlight.Dec() }

// Nak counts a delivery handed back for later, by reason (worker.Observer).
func (m *Metrics) Nak(pool, reason string) { m.Naks.WithLabelValues(pool, reason).Inc() }

// Circuit records a pool's circuit entering state (worker.Observer). The
// worker reports every circuit closed when it starts, which sets the gauge
// without counting a transition.
func (m *Metrics) Circuit(pool, reason string, state ratelimit.CircuitState) {
	g := m.CircuitState.WithLabelValues(pool, reason)
	var was dto.Metric
	_ = g.Write(&was)
	g.Set(float64(state))
	if was.GetGauge().GetValue() != float64(state) {
		m.CircuitMoves.WithLabelValues(pool, reason, state.String()).Inc()
	}
}

// ObservePool sets a pool's gauges from its budget snapshot; seenPauses is
// the pause count already added to the pauses counter.
func (m *Metrics) ObservePool(pool string, snap ratelimit.Snapshot, seenPauses int64) {
	m.PoolInUse.WithLabelValues(pool).Set(float64(snap.InUse))
	m.PoolLimit.WithLabelValues(pool).Set(float64(snap.EffectiveConcurrency))
	if snap.Members > 0 {
		m.PoolShare.WithLabelValues(pool).Set(1 / float64(snap.Members))
	}
	m.PoolFallback.WithLabelValues(pool).Set(boolGauge(snap.ShareSource == ratelimit.ShareFallback))
	m.ObservePause(pool, snap)
	if d := snap.Pauses - seenPauses; d > 0 {
		m.PoolPauses.WithLabelValues(pool).Add(float64(d))
	}
}

// ObservePause sets a pool's paused gauges from its snapshot: 1 for the
// reason it is paused for, if any. A batch pool has only these (its
// circuits pause it; nothing paces it per minute).
func (m *Metrics) ObservePause(pool string, snap ratelimit.Snapshot) {
	for _, r := range ratelimit.PauseReasons {
		m.PoolPaused.WithLabelValues(pool, r).Set(boolGauge(snap.Paused && snap.PauseReason == r))
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
