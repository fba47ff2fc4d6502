package worker

import (
	"context"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"
)

// Budget is a pool's capacity: job slots, call pacing and pauses.
// *ratelimit.Pool implements it; Semaphore is a budget with concurrency only.
type Budget interface {
	// AcquireSlot blocks until the pool may run one more job. The worker
	// takes a slot before it pulls, so a pool without room pulls nothing.
	AcquireSlot(ctx context.Context) (release func(), err error)
	// TryAcquireSlot takes a slot only if one is free now. A job's calls
	// beyond its own one (the parts of a long document extracted in
	// parallel) take slots this way (see callSlots).
	TryAcquireSlot() (release func(), ok bool)
	// Wrap paces every call of p within the pool's limits.
	Wrap(p llm.Provider) llm.Provider
	// Paused reports a pool-wide pause (after a 429/529) and its end.
	Paused() (until time.Time, paused bool)
}

// Semaphore is a Budget that bounds concurrency only.
type Semaphore chan struct{}

// NewSemaphore returns a budget of n concurrent jobs.
func NewSemaphore(n int) Semaphore { return make(Semaphore, max(1, n)) }

// AcquireSlot takes one of the n slots.
func (s Semaphore) AcquireSlot(ctx context.Context) (func(), error) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TryAcquireSlot takes one of the n slots if one is free.
func (s Semaphore) TryAcquireSlot() (func(), bool) {
	select {
	case s <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-s }) }, true
	default:
		return nil, false
	}
}

// Wrap returns p unchanged: a semaphore does not pace calls.
func (s Semaphore) Wrap(p llm.Provider) llm.Provider { return p }

// Paused is never true for a semaphore.
func (s Semaphore) Paused() (time.Time, bool) { return time.Time{}, false }
