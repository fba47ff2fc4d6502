package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/llm"
)

// A batch pool's job runs like any other (handle: the engine, the audit,
// ack or dead letter), but its provider calls join provider batches
// (internal/batchpool), so one job waits minutes to hours for each answer.
// The pool therefore holds many jobs at once, each in progress on
// JetStream (its in-progress acks go on while it waits), and one puller
// per pool fetches them in bulk. A worker that dies stops those acks: its
// jobs come back after the ack wait to another worker, which replays their
// answered rounds from the audit store and waits for their running
// batches, which it takes over once their lease has run out.

// WithBatchStore sets where batch pools keep their batches (the audit
// store); required when a pool is a batch pool.
func WithBatchStore(s batchpool.Store) Option { return func(w *Worker) { w.batchStore = s } }

// batchMaxAckPending is the consumer limit of a batch pool: jobs waiting
// in batches across the fleet. A batch pool exists to hold many.
const batchMaxAckPending = 1_000_000

// maxBatchFetch is the most jobs one pull of a batch pool asks for.
const maxBatchFetch = 256

// newBatchRunners builds the runner and the poll circuit of each batch
// pool (nil for online pools).
func (w *Worker) newBatchRunners() error {
	w.batchRunners = make([]*batchpool.Runner, len(w.pools))
	w.pollCircuits = make([]*ratelimit.Breaker, len(w.pools))
	for i, p := range w.pools {
		if p.Batch == nil {
			continue
		}
		if w.batchStore == nil {
			return fmt.Errorf("pools[%d] (%s): a batch pool needs the audit store (WithBatchStore)", i, p.Name)
		}
		w.pollCircuits[i] = ratelimit.NewBreaker(p.Name, PollCircuitReason, w.circuit, ratelimit.WithTransitions(w.onCircuit),
			ratelimit.WithPauseReason(ratelimit.PauseOutage))
		r, err := batchpool.New(p.Name, w.id, w.batchStore, *p.Batch, w.newProvider, batchpool.WithLogger(w.log),
			batchpool.WithPollReport(pollHealth(w.pollCircuits[i])))
		if err != nil {
			return fmt.Errorf("pools[%d]: %w", i, err)
		}
		w.batchRunners[i] = r
	}
	return nil
}

// PollCircuitReason is the reason label of a batch pool's poll circuit.
const PollCircuitReason = "batch_poll"

// pollHealth makes a batch pool's poll results its poll circuit: a key
// the provider refuses (401, 403) or a spent quota opens it at once for
// that reason, other failures in a row as an outage, and an answer closes
// it. The pool's heartbeat and metrics then show it paused: its jobs,
// waiting for batches nobody can poll, would otherwise look merely slow.
// The circuit stops no pulling (the pool's own circuit does, when new
// batches are refused too).
func pollHealth(c *ratelimit.Breaker) func(error) {
	return func(err error) {
		var pe *llm.Error
		switch {
		case err == nil:
			c.Success(false)
		case !errors.As(err, &pe) || (pe.Class != llm.ClassAuth && pe.Class != llm.ClassPermission && pe.Class != llm.ClassQuota):
			c.Failure(false, err, 0)
		case c.State() != ratelimit.CircuitOpen: // open already: one transition a period, not one a poll
			why := ratelimit.PauseKey
			if pe.Class == llm.ClassQuota {
				why = ratelimit.PauseQuota
			}
			c.Trip(false, why, pe)
		}
	}
}

// logPollCircuit logs a transition of a batch pool's poll circuit, which,
// unlike the pool's own, stops no pulling.
func (w *Worker) logPollCircuit(t ratelimit.Transition) {
	attrs := []any{"pool", t.Name, "from", t.From.String(), "to", t.To.String()}
	switch t.To {
	case ratelimit.CircuitClosed:
		w.log.Info("batch polls answered again: the pool's pause is over", attrs...)
	case ratelimit.CircuitOpen:
		w.log.Warn("batch polls refused: the pool shows paused until a poll is answered; its jobs wait for their batches",
			append(attrs, "consecutive_failures", t.Failures, "err", t.Cause)...)
	}
}

// BatchStats returns what the batch pool named pool holds now; ok is
// false for an online pool or one this worker does not serve.
func (w *Worker) BatchStats(pool string) (st batchpool.Stats, ok bool) {
	for i, p := range w.pools {
		if p.Name == pool && w.batchRunners[i] != nil {
			return w.batchRunners[i].Stats(), true
		}
	}
	return st, false
}

// consumerSettings are the consumer settings of pool i.
func (w *Worker) consumerSettings(i int) jobs.ConsumerSettings {
	s := w.consumer
	if w.pools[i].Batch != nil {
		s.MaxAckPending = max(s.MaxAckPending, batchMaxAckPending)
	}
	return s
}

// startBatchRunners runs the batch pools' runners until the returned stop
// is called: after the jobs have ended, since their calls need them.
func (w *Worker) startBatchRunners() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range w.batchRunners {
		if r != nil {
			wg.Go(func() { _ = r.Run(ctx) })
		}
	}
	return func() { cancel(); wg.Wait() }
}

// pullBatchPool is a batch pool's puller: it fetches as many jobs as the
// pool has room for (up to maxBatchFetch at a time) and runs each in its
// own goroutine, owned by running.
func (w *Worker) pullBatchPool(ctx, jobCtx context.Context, i int, c jetstream.Consumer, running *sync.WaitGroup) {
	p, circuit := w.pools[i], w.circuits[i]
	log := w.log.With("pool", p.Name)
	room := make(chan struct{}, p.Concurrency)
	failures := 0
	for ctx.Err() == nil {
		probe, ok := w.mayPull(ctx, circuit)
		if !ok {
			continue
		}
		select { // one slot, waiting for it; then all that are free
		case room <- struct{}{}:
		case <-ctx.Done():
			circuit.Abandon(probe)
			continue
		}
		n := 1
		for n < maxBatchFetch && !probe && len(room) < cap(room) {
			room <- struct{}{}
			n++
		}
		batch, err := c.Fetch(n, jetstream.FetchMaxWait(w.pullWait))
		if err != nil {
			circuit.Abandon(probe)
			freeRoom(room, n)
			pullFailed(ctx, log, &failures, "pull failed; retrying", err)
			continue
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			if w.stopping.Load() {
				circuit.Abandon(probe)
				w.requeue(msg, p.Name, log)
				<-room
				continue
			}
			isProbe := probe // only the first job is the half-open probe
			probe = false
			running.Go(func() {
				defer func() { <-room }()
				w.handle(ctx, jobCtx, i, msg, isProbe, nil) // a batch job holds room, not a slot
			})
		}
		if got == 0 {
			circuit.Abandon(probe)
		}
		freeRoom(room, n-got)
		if err := fetchError(batch); err != nil {
			pullFailed(ctx, log, &failures, "pull ended with an error", err)
			continue
		}
		failures = 0
	}
}

func freeRoom(room chan struct{}, n int) {
	for range n {
		<-room
	}
}
