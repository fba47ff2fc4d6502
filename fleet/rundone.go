package fleet

import (
	"context"
	"fmt"
	"sync"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// runCount counts the jobs one Submit queues into its run (the audit's
// run_done) as the batches are acked, so that a run sealed later awaits
// exactly the jobs queued into it, and a Submit stopped half-way has
// counted what it queued. It counts them by id (audit CountRunJobs), the
// new ones and those of the run the Submit found queued or final already,
// so that the rerun of a Submit killed between the server's ack and the
// count counts what the killed one did not, and no job twice. The
// counting runs beside the queueing, one statement at a time, coalescing
// the batches acked meanwhile: the submitting goroutine only hands the
// summary's lists over (a statement costs a few milliseconds, a tenth of
// a batch of 500). Submit owns the goroutine and stops it before it
// returns.
type runCount struct {
	store *audit.Store
	run   string

	mu     sync.Mutex
	queued []string // the summary's RunJobs so far (each report's extends the last's)
	seen   []string // the summary's RunSeen so far
	// How many of queued and seen are recorded in the audit store.
	countedQueued, countedSeen int
	err                        error // the last failure to record, nil once recorded
	kick                       chan struct{}
	stopped                    chan struct{}
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

// progress hands over a summary's jobs of the run so far.
func (r *runCount) progress(s submit.Summary) {
	r.mu.Lock()
	if len(s.RunJobs) > len(r.queued) {
		r.queued = s.RunJobs
	}
	if len(s.RunSeen) > len(r.seen) {
		r.seen = s.RunSeen
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default: // a count is pending: it will include this one
	}
}

// record writes the jobs queued or seen and not yet counted.
func (r *runCount) record(ctx context.Context) {
	r.mu.Lock()
	queued, seen := r.queued[r.countedQueued:], r.seen[r.countedSeen:]
	r.mu.Unlock()
	if len(queued) == 0 && len(seen) == 0 {
		return
	}
	_, err := r.store.CountRunJobs(ctx, r.run, queued, seen)
	r.mu.Lock()
	if r.err = err; err == nil {
		r.countedQueued += len(queued)
		r.countedSeen += len(seen)
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
