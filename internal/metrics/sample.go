package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
)

// ObservedWriter is an audit.Writer that counts every record it made
// durable in Metrics. A record whose Write failed is not counted: the job
// is nak'd and its redelivery writes (and counts) it again, so the
// counters agree with the audit tables.
type ObservedWriter struct {
	audit.Writer
	Metrics *Metrics
}

// Write writes rec, then observes it.
func (w *ObservedWriter) Write(ctx context.Context, rec *audit.Record) error {
	if err := w.Writer.Write(ctx, rec); err != nil {
		return err
	}
	w.Metrics.ObserveRecord(rec)
	return nil
}

// WriteWithin writes rec within timeout (audit.WriteWithin: without a
// context when the wrapped writer needs none), then observes it.
func (w *ObservedWriter) WriteWithin(rec *audit.Record, timeout time.Duration) error {
	if err := audit.WriteWithin(w.Writer, rec, timeout); err != nil {
		return err
	}
	w.Metrics.ObserveRecord(rec)
	return nil
}

// SampledPool is a pool whose budget and consumer are sampled at scrape
// time.
type SampledPool struct {
	Name   string // the pool's name on the job subjects (jobs.PoolFor)
	Budget *ratelimit.Pool
	// Batch reads a batch pool's runner (nil for an online pool, whose
	// Budget is sampled instead).
	Batch func() batchpool.Stats
	// Pause is a batch pool's rate-limit pool, guarded by its circuits:
	// only its pauses are sampled (a key, a model, an outage, the audit).
	Pause *ratelimit.Pool
}

// sampleTimeout bounds the JetStream look-ups of one scrape.
const sampleTimeout = 2 * time.Second

// Sampler is a prometheus.Gatherer that first sets the gauges describing
// a moment (pool slots, limits, share and pauses, consumer lag per pool,
// dead-letter stream size) and then gathers from the wrapped Gatherer, so
// those gauges are never staler than the scrape. Serve it with
// promhttp.HandlerFor.
type Sampler struct {
	m     *Metrics
	g     prometheus.Gatherer
	js    jetstream.JetStream
	pools []SampledPool
	log   *slog.Logger

	mu     sync.Mutex // one sample at a time: pauses are counted by difference
	pauses []int64    // pauses already counted, per pool
}

// NewSampler returns a Sampler of m's gauges for pools, reading lag and the
// dead-letter stream from js, gathering from g (the registry m is on).
// JetStream look-up failures are logged at debug level and leave the
// gauges at their last value.
func NewSampler(m *Metrics, g prometheus.Gatherer, js jetstream.JetStream, pools []SampledPool, log *slog.Logger) *Sampler {
	return &Sampler{m: m, g: g, js: js, pools: pools, log: log, pauses: make([]int64, len(pools))}
}

// Gather samples, then gathers.
func (s *Sampler) Gather() ([]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	s.Sample(ctx)
	return s.g.Gather()
}

// Sample sets the gauges from the pools and JetStream now.
func (s *Sampler) Sample(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pools {
		if p.Budget != nil {
			snap := p.Budget.Snapshot()
			s.m.ObservePool(p.Name, snap, s.pauses[i])
			s.pauses[i] = snap.Pauses
		}
		if p.Pause != nil {
			s.m.ObservePause(p.Name, p.Pause.Snapshot())
		}
		if p.Batch != nil {
			st := p.Batch()
			s.m.BatchRequests.WithLabelValues(p.Name, "gathering").Set(float64(st.Gathering))
			s.m.BatchRequests.WithLabelValues(p.Name, "waiting").Set(float64(st.Waiting))
			s.m.BatchesPolled.WithLabelValues(p.Name).Set(float64(st.Polling))
		}

		c, err := s.js.Consumer(ctx, jobs.JobsStream, jobs.ConsumerName(p.Name))
		if err == nil {
			var info *jetstream.ConsumerInfo
			if info, err = c.Info(ctx); err == nil {
				s.m.ConsumerLag.WithLabelValues(p.Name).Set(float64(info.NumPending))
			}
		}
		if err != nil {
			s.log.Debug("metrics: consumer lag unavailable", "pool", p.Name, "err", err)
		}
	}
	st, err := s.js.Stream(ctx, jobs.DLQStream)
	if err == nil {
		var info *jetstream.StreamInfo
		if info, err = st.Info(ctx); err == nil {
			s.m.DLQMessages.Set(float64(info.State.Msgs))
		}
	}
	if err != nil {
		s.log.Debug("metrics: dead-letter stream size unavailable", "err", err)
	}
}
