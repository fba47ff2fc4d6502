package fleet

import (
	"context"
	"fmt"
	"sync"

	"github.com/extractq/extractq/internal/audit"
)

// runCount counts the jobs one Submit queues into its run (the audit's
// run_done) as the batches are acked, so that a run sealed later awaits
// exactly the jobs queued into it, and a Submit stopped half-way has
// counted what it queued. The counting runs beside the queueing, one
// statement at a time, coalescing the batches acked meanwhile: the
// submitting goroutine only hands a number over (a statement costs a few
// milliseconds, a tenth of a batch of 500). Submit owns the goroutine and
// stops it before it returns.
type runCount struct {
	store *audit.Store
	run   string

	mu      sync.Mutex
	queued  int   // jobs queued so far (the latest summary's)
	counted int   // of which recorded in the audit store
	err     error // the last failure to record, nil once recorded
	kick    chan struct{}
	stopped chan struct{}
}

// startRunCount starts counting the jobs queued into run; stop ends it.
func startRunCount(ctx context.Context, store *audit.Store, run string) *runCount {
	r := &runCount{store: store, run: run, kick: make(chan struct{}, 1), stopped: make(chan struct{})}
	go func() {
		defer close(r.stopped)
		for range r.kick {
			r.record(ctx)
		}
	}()
	return r
}

// progress hands over the jobs queued so far (a summary's Queued).
func (r *runCount) progress(queued int) {
	r.mu.Lock()
	r.queued = max(r.queued, queued)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default: // a count is pending: it will include this one
	}
}

// record writes the jobs queued and not yet counted.
func (r *runCount) record(ctx context.Context) {
	r.mu.Lock()
	n := r.queued - r.counted
	r.mu.Unlock()
	if n <= 0 {
		return
	}
	err := r.store.AddRunJobs(ctx, r.run, n)
	r.mu.Lock()
	if r.err = err; err == nil {
		r.counted += n
	}
	r.mu.Unlock()
}

// stop ends the counting after recording what was queued (also when ctx
// was cancelled: what was queued stays queued), and returns the last
// failure to record.
func (r *runCount) stop(ctx context.Context) error {
	close(r.kick)
	<-r.stopped
	r.record(context.WithoutCancel(ctx))
	return r.err
}

// SealRun records that the submissions into run have finished queueing
// and returns the run's new done generation: a worker announces the run
// done (extractq.events.<run>.done, and its webhook) once every job
// counted into it is final. Submit seals its run itself unless given
// KeepRunOpen; sealing a run again (after more submissions into it) gives
// it one more done event.
func (c *Client) SealRun(ctx context.Context, run string) (int, error) {
	gen, err := c.store.SealRun(ctx, run)
	if err != nil {
		return 0, fmt.Errorf("fleet: %w", err)
	}
	return gen, nil
}
