package worker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ackLinger is how long the acker waits, after the first ack of a batch
// comes in, for the others. The audit's group commit releases the jobs of
// one transaction (about thirty at full speed) at once, and their runners
// hand their acks over within a few hundred microseconds of each other; a
// millisecond gathers them. It delays only the ack: the job's runner and
// slot are free already, and the ack wait is seconds.
const ackLinger = time.Millisecond

// maxAckBatch sends a batch at once, lingering or not, when it holds this
// many acks.
const maxAckBatch = 256

// ackFlushTimeout bounds how long stop waits for the server to confirm
// it has the last acks.
const ackFlushTimeout = 5 * time.Second

// acker sends the acks of jobs whose results are durable, several at a
// time. Acked one by one as each job finished, nearly every ack took a
// write of its own on the connection (nats.go's flusher wakes for each
// publish) and woke the server's read loop: about 6 µs of the worker's
// CPU per document besides the server's. The acker publishes a batch back
// to back, so the flusher writes it in one or two writes and the server
// reads it in one go.
//
// The guarantees are those of acking in place: an ack is handed over only
// once the result is durable, a failed ack is logged (the job is
// redelivered and its result found), and stop sends every pending ack
// before the worker's Run returns, so before the connection is closed.
// Naks, terms and in-progress acks go straight to the server: they are
// rare, and a nak's delay or a term's reason must not wait behind a batch.
type acker struct {
	nc     *nats.Conn
	log    *slog.Logger
	linger time.Duration

	mu      sync.Mutex
	pending []pendingAck
	spare   []pendingAck // the last batch's slice, reused
	stopped bool         // add acks in place once set

	wake chan struct{} // 1-buffered: a batch began, or is full
	quit chan struct{}
	done chan struct{}
}

type pendingAck struct {
	msg jetstream.Msg
	log *slog.Logger
}

// newAcker starts an acker on nc (flushed by stop); linger 0 sends what
// is pending as soon as the acker wakes.
func newAcker(nc *nats.Conn, linger time.Duration, log *slog.Logger) *acker {
	a := &acker{
		nc: nc, log: log, linger: linger,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go a.loop()
	return a
}

// add hands over the ack of a job whose result is durable; log names the
// job if the ack fails. After stop the ack is sent in place.
func (a *acker) add(msg jetstream.Msg, log *slog.Logger) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		ackNow(msg, log)
		return
	}
	a.pending = append(a.pending, pendingAck{msg, log})
	n := len(a.pending)
	a.mu.Unlock()
	if n == 1 || n == maxAckBatch {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

func (a *acker) loop() {
	defer close(a.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-a.wake:
		case <-a.quit:
			a.send()
			return
		}
		if a.linger > 0 && a.waiting() > 0 && a.waiting() < maxAckBatch {
			t.Reset(a.linger)
			select {
			case <-t.C:
			case <-a.wake: // full
				t.Stop()
			case <-a.quit:
				t.Stop()
				a.send()
				return
			}
		}
		a.send()
	}
}

func (a *acker) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}

// send publishes the pending acks back to back.
func (a *acker) send() {
	a.mu.Lock()
	batch := a.pending
	a.pending, a.spare = a.spare[:0], nil
	a.mu.Unlock()
	for i, p := range batch {
		ackNow(p.msg, p.log)
		batch[i] = pendingAck{} // let the message go
	}
	a.mu.Lock()
	a.spare = batch[:0]
	a.mu.Unlock()
}

// stop sends the pending acks, makes later adds ack in place, and waits
// (up to ackFlushTimeout) until the server has read them: when it returns
// no ack handed over is left in this process.
func (a *acker) stop() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	close(a.quit)
	<-a.done
	if !a.nc.IsConnected() {
		return // what is buffered goes out on reconnect or is lost with the connection; those jobs are redelivered and their results found
	}
	if err := a.nc.FlushTimeout(ackFlushTimeout); err != nil {
		a.log.Warn("last acks not confirmed by the server; their jobs may be redelivered and their results found", "err", err)
	}
}

// ackNow acks a job whose result is durable.
func ackNow(msg jetstream.Msg, log *slog.Logger) {
	if err := msg.Ack(); err != nil {
		// The result is durable; a redelivery writes nothing new.
		log.Warn("ack failed; the job will be redelivered and its result found", "err", err)
	}
}
