package submit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// countingFuture is a publish's future that counts the calls of Err: the
// NATS client makes the error channel on the first.
type countingFuture struct {
	ok      chan *jetstream.PubAck
	err     chan error
	errAsks int
}

func (f *countingFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *countingFuture) Err() <-chan error            { f.errAsks++; return f.err }
func (f *countingFuture) Msg() *nats.Msg               { return nil }

// TestResolveOldestAskedForErrorOnlyWhenNoAck: an ack already in is taken
// without asking the future for its error channel; an error is still
// taken, and an ack that comes later still wakes the wait.
func TestResolveOldestAskedForErrorOnlyWhenNoAck(t *testing.T) {
	w := &window{s: &Submitter{stall: 5 * time.Second}, max: 10}
	acked := &countingFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	acked.ok <- &jetstream.PubAck{Sequence: 7, Duplicate: true}
	failed := &countingFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	failed.err <- errors.New("boom")
	late := &countingFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	items := make([]item, 3)
	for i, f := range []jetstream.PubAckFuture{acked, failed, late} {
		w.pending = append(w.pending, pendingAck{it: &items[i], f: f})
	}
	for range 2 {
		if err := w.resolveOldest(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		late.ok <- &jetstream.PubAck{Sequence: 9}
	}()
	if err := w.resolveOldest(t.Context()); err != nil {
		t.Fatal(err)
	}
	if items[0].seq != 7 || !items[0].dup || items[0].err != nil || acked.errAsks != 0 {
		t.Errorf("acked: %+v, error channel asked for %d times, want 0", items[0], acked.errAsks)
	}
	if items[1].err == nil || !strings.Contains(items[1].err.Error(), "boom") {
		t.Errorf("failed: %+v", items[1])
	}
	if items[2].seq != 9 || items[2].err != nil {
		t.Errorf("late: %+v", items[2])
	}
}
