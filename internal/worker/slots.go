package worker

import (
	"context"
	"sync/atomic"

	"github.com/extractq/extractq/llm"
)

// callSlots keeps every call of a pool's jobs within the pool's budget of
// slots, so that a pool of concurrency N never has more than N calls in
// flight, even when a long document's parts are extracted in parallel
// (extractq.WithChunkParallel).
//
// A job holds one slot from its pull until its calls are over (pull,
// handle), and one call of the job at a time runs on it. A further call of
// the same job needs a slot of its own, and never waits for one that jobs
// hold, so no job can wait for a job that waits for it: it takes a slot
// only when the budget has one free now (Budget.TryAcquireSlot), or when a
// puller hands it the slot it just acquired instead of pulling another job
// (finishing the jobs in hand comes first); otherwise it waits for its
// job's own slot, which one of the job's calls in flight frees when it
// ends. At worst the parts run one after the other on the job's slot, as a
// whole document would.
type callSlots struct {
	budget Budget
	// handoff passes a slot fresh from the budget to a call waiting for
	// one. It is unbuffered: a slot passes only to a call waiting right
	// now, so none is ever left in it.
	handoff chan func()
	waiting atomic.Int64 // calls waiting for a slot
}

func newCallSlots(b Budget) *callSlots {
	return &callSlots{budget: b, handoff: make(chan func())}
}

// offer hands release's slot to a call waiting for one and reports whether
// one took it.
func (c *callSlots) offer(release func()) bool {
	if c.waiting.Load() == 0 {
		return false
	}
	select {
	case c.handoff <- release:
		return true
	default:
		return false
	}
}

// extra wraps the release of a slot taken beyond a job's own: the slot
// goes back to the budget, and if a call is waiting and the budget has
// room (it may have shrunk meanwhile, after a 429), a slot goes to it.
func (c *callSlots) extra(release func()) func() {
	return func() {
		release()
		if c.waiting.Load() == 0 {
			return
		}
		if r, ok := c.budget.TryAcquireSlot(); ok && !c.offer(r) {
			r()
		}
	}
}

// forJob wraps p for one run of one job: every call takes the job's slot
// or another of the pool (see callSlots) for its duration. The wrapper is
// made in j, which the job's delivery holds: a wrapper of its own was two
// allocations per job (the job's slot, a channel, is still one). j is
// used once: a job run again (held through an outage) gets a new one, so
// that nothing of an earlier run can see it change.
func (c *callSlots) forJob(p llm.Provider, j *slottedCompleter) llm.Provider {
	if j.slots != nil {
		j = new(slottedCompleter)
	}
	j.slotted = slotted{slots: c, inner: p, own: make(chan struct{}, 1)}
	if cp, ok := p.(llm.Completer); ok { // keep prefill mode working
		j.completer = cp
		return j
	}
	return &j.slotted
}

// slotted is a job's provider whose calls each hold a slot.
type slotted struct {
	slots *callSlots
	inner llm.Provider
	own   chan struct{} // the job's own slot: full while one of its calls runs on it
}

func (s *slotted) Name() string                   { return s.inner.Name() }
func (s *slotted) Model() string                  { return s.inner.Model() }
func (s *slotted) Capabilities() llm.Capabilities { return s.inner.Capabilities() }

func (s *slotted) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(release)
	return s.inner.Chat(ctx, req)
}

// acquire takes the job's own slot if it is free, else a free slot of the
// pool, else waits for whichever of the two comes first. It returns the
// release of a pool's slot, or nil for the job's own: that one needs no
// function made for each call (release gives it back).
func (s *slotted) acquire(ctx context.Context) (func(), error) {
	select {
	case s.own <- struct{}{}:
		return nil, nil
	default:
	}
	if r, ok := s.slots.budget.TryAcquireSlot(); ok {
		return s.slots.extra(r), nil
	}
	s.slots.waiting.Add(1)
	defer s.slots.waiting.Add(-1)
	select {
	case s.own <- struct{}{}:
		return nil, nil
	case r := <-s.slots.handoff:
		return s.slots.extra(r), nil
	case <-ctx.Done():
		return nil, &llm.Error{Provider: s.inner.Name(), Class: llm.ClassCanceled, Message: "waiting for a slot of the pool's budget", Err: ctx.Err()}
	}
}

// release gives back the slot acquire took: the job's own when r is nil.
func (s *slotted) release(r func()) {
	if r == nil {
		<-s.own
		return
	}
	r()
}

// slottedCompleter is a slotted provider that keeps its inner provider's
// llm.Completer side, each completion holding a slot like a chat.
type slottedCompleter struct {
	slotted
	completer llm.Completer
}

func (s *slottedCompleter) Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Response, error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(release)
	return s.completer.Complete(ctx, req)
}
