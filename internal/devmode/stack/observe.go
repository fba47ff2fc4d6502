package stack

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/metrics"
	"github.com/extractq/extractq/internal/ratelimit"
)

// ObservedWriter is an audit.Writer that counts every record it made
// durable in Metrics. A record whose Write failed is not counted: the job
// is nak'd and its redelivery writes (and counts) it again, so the
// counters agree with the audit tables.
type ObservedWriter struct {
	audit.Writer
	Metrics *metrics.Metrics
}

// Write writes rec, then observes it.
func (w *ObservedWriter) Write(ctx context.Context, rec *audit.Record) error {
	if err := w.Writer.Write(ctx, rec); err != nil {
		return err
	}
	w.Metrics.ObserveRecord(rec)
	return nil
}

// sampleTimeout bounds the JetStream look-ups of one scrape.
const sampleTimeout = 2 * time.Second

// sampler sets the gauges that describe a moment (pool budgets, consumer
// lag, dead-letter stream size) when /metrics is scraped, so they are never
// staler than the scrape.
type sampler struct {
	m     *metrics.Metrics
	js    jetstream.JetStream
	pools []*ratelimit.Pool
	names []string // the pools' subject names, index for index

	mu     sync.Mutex // one sample at a time: pauses are counted by difference
	pauses []int64    // pauses already counted, per pool
}

func (s *sampler) handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.sample(r.Context(), log)
		h.ServeHTTP(rw, r)
	})
}

func (s *sampler) sample(ctx context.Context, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	if s.pauses == nil {
		s.pauses = make([]int64, len(s.pools))
	}
	for i, p := range s.pools {
		name := s.names[i]
		snap := p.Snapshot()
		s.m.PoolInUse.WithLabelValues(name).Set(float64(snap.InUse))
		s.m.PoolLimit.WithLabelValues(name).Set(float64(snap.EffectiveConcurrency))
		if snap.Members > 0 {
			s.m.PoolShare.WithLabelValues(name).Set(1 / float64(snap.Members))
		}
		paused := 0.0
		if snap.Paused {
			paused = 1
		}
		s.m.PoolPaused.WithLabelValues(name).Set(paused)
		s.m.PoolPauses.WithLabelValues(name).Add(float64(snap.Pauses - s.pauses[i]))
		s.pauses[i] = snap.Pauses

		c, err := s.js.Consumer(ctx, jobs.JobsStream, jobs.ConsumerName(name))
		if err == nil {
			var info *jetstream.ConsumerInfo
			if info, err = c.Info(ctx); err == nil {
				s.m.ConsumerLag.WithLabelValues(name).Set(float64(info.NumPending))
			}
		}
		if err != nil {
			log.Debug("metrics: consumer lag unavailable", "pool", name, "err", err)
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
		log.Debug("metrics: dead-letter stream size unavailable", "err", err)
	}
}
