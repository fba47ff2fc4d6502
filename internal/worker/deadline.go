package worker

import (
	"context"
	"sync"
	"time"
)

// writeDeadline is a context that ends a fixed time after it is taken, as
// context.WithTimeout(context.Background(), d) does, made to be used
// again: an audit write is made for every document, and WithTimeout cost
// five allocations each (its context, timer, timer function, cancel
// function and Done channel). One whose timer has not fired goes back to
// writeDeadlines when its write returns; one that fired is done for good
// and left to the collector, as a context that ended must stay ended.
// So a write must not keep it once it returns: none of the audit writers
// does (audit.GroupWriter, metrics.ObservedWriter, events.Writer).
type writeDeadline struct {
	t        *time.Timer
	done     chan struct{}
	deadline time.Time // set before the context is handed out, then read only

	mu  sync.Mutex
	err error // context.DeadlineExceeded once the timer fired
}

var writeDeadlines = sync.Pool{New: func() any {
	c := &writeDeadline{done: make(chan struct{})}
	c.t = time.AfterFunc(time.Hour, c.expire)
	c.t.Stop() // armed by takeWriteDeadline
	return c
}}

// takeWriteDeadline returns a context ending d from now; give it back with
// release once the write returned.
func takeWriteDeadline(d time.Duration) *writeDeadline {
	c := writeDeadlines.Get().(*writeDeadline)
	c.deadline = time.Now().Add(d)
	c.t.Reset(d)
	return c
}

// release ends the use of c: it is kept for another write unless its
// timer fired (or is firing).
func (c *writeDeadline) release() {
	if c.t.Stop() {
		writeDeadlines.Put(c)
	}
}

func (c *writeDeadline) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = context.DeadlineExceeded
	close(c.done)
}

// Deadline implements context.Context.
func (c *writeDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *writeDeadline) Done() <-chan struct{} { return c.done }

// Err implements context.Context.
func (c *writeDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value implements context.Context: there are none, as in Background.
func (c *writeDeadline) Value(any) any { return nil }

// String names the context in messages, as WithTimeout's does.
func (c *writeDeadline) String() string {
	return "worker.writeDeadline(" + c.deadline.String() + " [" + time.Until(c.deadline).String() + "])"
}
