package submit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
)

// ErrPublishStalled is matched by the error of a submission that gave up
// because NATS acknowledged none of its pending publishes for the stall
// timeout (WithStallTimeout). The documents of the batches not yet
// acknowledged are stored in the audit; submitting again queues each job
// once.
var ErrPublishStalled = errors.New("publishing stalled")

// item is one job to publish and what became of it.
type item struct {
	env  *jobs.Envelope
	text string
	msg  *nats.Msg // built ahead of publishing (nil: window.publish builds it)
	dup  bool      // the server already had it (duplicate window)
	seq  uint64    // stream sequence of the job, or of the original of a duplicate
	err  error     // not queued
}

// pendingAck is a publish awaiting the server's ack.
type pendingAck struct {
	it    *item
	f     jetstream.PubAckFuture
	batch *batch // nil outside Submit's pipeline
}

// window publishes jobs with at most max of them awaiting their acks:
// when it is full, publish waits for the oldest ack first, so a slow
// server slows publishing down. The JetStream context's own limit
// (jetstream.WithPublishAsyncMaxPending) bounds it too. Only a stall
// fails it: no ack at all for the Submitter's stall timeout. A window is
// used by one goroutine.
type window struct {
	s       *Submitter
	max     int
	opts    []jetstream.PublishOpt // the stall wait, made once
	pending []pendingAck           // oldest first
	head    int                    // pending[head:] are awaiting their acks
	timer   *time.Timer
}

func (s *Submitter) newWindow() *window {
	return &window{s: s, max: s.maxPending, opts: []jetstream.PublishOpt{jetstream.WithStallWait(s.stall)}}
}

// publish publishes it, after waiting for room. A job that cannot be
// published gets its error in it.err; the error returned stops the
// submission (ctx, a stall).
func (w *window) publish(ctx context.Context, it *item, b *batch) error {
	for len(w.pending)-w.head >= w.max {
		if err := w.resolveOldest(ctx); err != nil {
			return err
		}
	}
	msg := it.msg
	if msg == nil {
		var err error
		if msg, err = w.s.pub.Message(ctx, it.env, it.text); err != nil {
			it.err = fmt.Errorf("publish: %w", err)
			return nil
		}
	}
	// The context's own limit may be smaller than the window: then the
	// client waits for room as well, up to the stall timeout, which only
	// passes if no ack at all arrives meanwhile.
	f, err := w.s.js.PublishMsgAsync(msg, w.opts...)
	if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		return w.stalled()
	}
	if err != nil {
		it.err = fmt.Errorf("publish job %s: %w (submit again: a job is queued once)", it.env.JobID, err)
		return nil
	}
	it.msg = nil // the client keeps the message until its ack
	if len(w.pending) == cap(w.pending) && w.head > 0 {
		w.pending = w.pending[:copy(w.pending, w.pending[w.head:])]
		w.head = 0
	}
	w.pending = append(w.pending, pendingAck{it: it, f: f, batch: b})
	if b != nil {
		b.unacked++
	}
	return nil
}

// resolveOldest waits for the oldest pending ack and records it in its
// item (and counts it off its batch). It fails after the stall timeout
// without that ack.
func (w *window) resolveOldest(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	p := w.pending[w.head]
	// Acks come in bursts: the oldest is mostly in already, and then
	// neither its error channel is asked for (the client makes it on the
	// first Err call, under its lock: an allocation per job, which a
	// publisher that only waits for all its acks does not make) nor the
	// stall timer armed (a timer's reset costs about what the rest of this
	// does). A future gets an ack or an error, never both.
	select {
	case ack := <-p.f.Ok():
		p.it.dup, p.it.seq = ack.Duplicate, ack.Sequence
	default:
		if err := w.await(ctx, p); err != nil {
			return err
		}
	}
	w.pending[w.head] = pendingAck{}
	w.head++
	if p.batch != nil {
		p.batch.unacked--
	}
	return nil
}

// await waits, the stall timer armed, for p's ack or error and records
// it in p's item; it fails when ctx ends or the timer fires first.
func (w *window) await(ctx context.Context, p pendingAck) error {
	if w.timer == nil {
		w.timer = time.NewTimer(w.s.stall)
	} else {
		w.timer.Reset(w.s.stall)
	}
	select {
	case ack := <-p.f.Ok():
		p.it.dup, p.it.seq = ack.Duplicate, ack.Sequence
	case err := <-p.f.Err():
		p.it.err = fmt.Errorf("publish: %w (submit again: a job is queued once)", err)
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-w.timer.C:
		return w.stalled()
	}
	return nil
}

// drain waits for every pending ack.
func (w *window) drain(ctx context.Context) error {
	for w.head < len(w.pending) {
		if err := w.resolveOldest(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (w *window) stalled() error {
	return fmt.Errorf("%w: NATS acknowledged none of %d pending publishes for %s: check that the JetStream server is up and that stream %s has room (`nats stream info %s`), then submit again (a job is queued once); if the server is only slow, raise the stall timeout",
		ErrPublishStalled, w.s.js.PublishAsyncPending(), w.s.stall, jobs.JobsStream, jobs.JobsStream)
}

// publishAll publishes items and waits for every ack.
func (s *Submitter) publishAll(ctx context.Context, items []item) error {
	w := s.newWindow()
	for i := range items {
		if err := w.publish(ctx, &items[i], nil); err != nil {
			return err
		}
	}
	return w.drain(ctx)
}
