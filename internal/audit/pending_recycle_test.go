package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// TestToPendingRecycled checks that a record converted by a recycled
// pending makes no allocation (its pending, done channel and rows' buffer
// were three) and the same rows as a fresh pending, even after a larger
// record filled the buffer.
func TestToPendingRecycled(t *testing.T) {
	now := time.Now()
	small := testRecord("job-s", "doc-s", 1, 1, llm.OutcomeOK)
	big := testRecord("job-b", "doc-b", 2, 3, llm.OutcomeOK)
	big.Reason = string(bytes.Repeat([]byte("r"), 4000))
	want := freshPending(t, small, now)

	p, err := toPending(big, now)
	if err != nil {
		t.Fatal(err)
	}
	recyclePending(p)
	got, err := toPending(small, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.jobID != want.jobID || got.delivery != want.delivery || got.final != want.final || got.nAttempts != want.nAttempts ||
		!bytes.Equal(got.attempts, want.attempts) || !bytes.Equal(got.job, want.job) || !bytes.Equal(got.result, want.result) ||
		got.dead != nil || got.err != nil || len(got.done) != 0 {
		t.Errorf("recycled pending differs from a fresh one:\n%+v\n%+v", got, want)
	}
	recyclePending(got)

	allocs := testing.AllocsPerRun(100, func() {
		p, err := toPending(small, now)
		if err != nil {
			t.Fatal(err)
		}
		recyclePending(p)
	})
	// A pending made anew costs three allocations (it, its channel, its
	// rows' buffer); under -race, sync.Pool drops a quarter of the
	// recycled ones, about 0.75 a record.
	limit := 0.0
	if raceEnabled {
		limit = 2
	}
	if allocs > limit {
		t.Errorf("toPending of a recycled pending made %.2f allocations, want at most %.0f", allocs, limit)
	}
}

// freshPending converts rec with a pending of its own, as toPending did
// before pendings were recycled.
func freshPending(t *testing.T, rec *Record, now time.Time) *pending {
	t.Helper()
	p := &pending{done: make(chan struct{}, 1)}
	if err := p.fill(rec, now); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriteRecyclesAfterSettle checks Writes in a row through one
// writer, each recycling its pending: every record is stored as written.
func TestWriteRecyclesAfterSettle(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	for i, rec := range []*Record{
		testRecord("rc-1", "doc-rc-1", 1, 3, llm.OutcomeOK),
		testRecord("rc-2", "doc-rc-2", 1, 1, llm.OutcomeOK),
		testRecord("rc-3", "doc-rc-3", 1, 2, llm.OutcomeOK),
	} {
		if err := w.Write(ctx, rec); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for _, id := range []string{"rc-1", "rc-2", "rc-3"} {
		st, err := s.JobStates(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		if !st[id].OK() {
			t.Errorf("job %s: state %+v, want ok", id, st[id])
		}
	}
}

// TestWriteWithin checks a Write with a deadline of its own: past the
// deadline it fails as Write with a context.WithTimeout does (wrapping
// context.DeadlineExceeded); the pooled timer it used fires no more, so
// the next wait, given time, sees its record made durable.
func TestWriteWithin(t *testing.T) {
	s := newTestStore(t)
	w := newTestWriter(t, s)
	for i := range 3 {
		err := w.WriteWithin(testRecord(fmt.Sprintf("ww-late-%d", i), "doc-ww", 1, 1, llm.OutcomeOK), time.Nanosecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a wait of 1ns: %v, want context.DeadlineExceeded", err)
		}
		if err := w.WriteWithin(testRecord(fmt.Sprintf("ww-%d", i), "doc-ww", 1, 1, llm.OutcomeOK), time.Minute); err != nil {
			t.Fatalf("a wait of a minute after one that expired: %v", err)
		}
	}
}

// plainWriter is a Writer without WriteWithin: it records its context's
// deadline.
type plainWriter struct{ deadline time.Time }

func (p *plainWriter) Write(ctx context.Context, _ *Record) error {
	p.deadline, _ = ctx.Deadline()
	return nil
}

// TestWriteWithinPlainWriter checks that a writer without WriteWithin
// gets a context with the deadline.
func TestWriteWithinPlainWriter(t *testing.T) {
	var p plainWriter
	start := time.Now()
	if err := WriteWithin(&p, testRecord("j", "d", 1, 1, llm.OutcomeOK), time.Hour); err != nil {
		t.Fatal(err)
	}
	if p.deadline.Before(start.Add(time.Hour)) || p.deadline.After(time.Now().Add(time.Hour)) {
		t.Errorf("deadline %v, want an hour from %v", p.deadline, start)
	}
}
