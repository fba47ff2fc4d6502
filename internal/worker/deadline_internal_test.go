package worker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWriteDeadlineEndsLikeWithTimeout: the context ends when its time is
// up, with WithTimeout's error and cause, and not before.
func TestWriteDeadlineEndsLikeWithTimeout(t *testing.T) {
	start := time.Now()
	c := takeWriteDeadline(30 * time.Millisecond)
	defer c.release()
	var ctx context.Context = c
	if dl, ok := ctx.Deadline(); !ok || dl.Before(start.Add(30*time.Millisecond)) || dl.After(time.Now().Add(30*time.Millisecond)) {
		t.Errorf("deadline %v, %v; want about 30ms from %v", dl, ok, start)
	}
	if ctx.Err() != nil || ctx.Value("k") != nil {
		t.Fatalf("fresh context: err %v, value %v", ctx.Err(), ctx.Value("k"))
	}
	select {
	case <-ctx.Done():
		t.Fatal("done at once")
	default:
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("never done")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("done after %v, before its deadline", took)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || context.Cause(ctx) != context.DeadlineExceeded {
		t.Errorf("err %v, cause %v; want context.DeadlineExceeded", ctx.Err(), context.Cause(ctx))
	}
}

// TestWriteDeadlineReused: a context released before its time is used
// again, live and with a new deadline; one that ended never comes back.
func TestWriteDeadlineReused(t *testing.T) {
	// WithTimeout made five objects a write; sync.Pool drops some of
	// what it is given under the race detector, hence the margin.
	if n := testing.AllocsPerRun(200, func() { takeWriteDeadline(time.Minute).release() }); n > 2 {
		t.Errorf("a write's context allocated %v times, want about 0", n)
	}
	ended := takeWriteDeadline(time.Millisecond)
	<-ended.Done()
	ended.release()
	for range 100 {
		c := takeWriteDeadline(time.Minute)
		if c == ended {
			t.Fatal("an ended context was handed out again")
		}
		if c.Err() != nil {
			t.Fatalf("a context handed out ended: %v", c.Err())
		}
		select {
		case <-c.Done():
			t.Fatal("a context handed out is done")
		default:
		}
		if dl, _ := c.Deadline(); time.Until(dl) < 59*time.Second {
			t.Fatalf("deadline %v: not renewed", dl)
		}
		defer c.release()
	}
}
