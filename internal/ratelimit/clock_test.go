package ratelimit

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock whose time moves only when a test advances it, so
// pacing is checked by counting what became due, never by measuring.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		return t.c, func() {}
	}
	f.timers = append(f.timers, t)
	return t.c, func() { f.remove(t) }
}

func (f *fakeClock) remove(t *fakeTimer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return
		}
	}
}

// Advance moves time on by d and fires every timer now due; it returns how
// many fired.
func (f *fakeClock) Advance(d time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept, fired := f.timers[:0], 0
	for _, t := range f.timers {
		if t.at.After(f.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- f.now
		fired++
	}
	f.timers = kept
	return fired
}

// AdvanceToNext moves time to the earliest pending timer and fires it (and
// any due at the same instant).
func (f *fakeClock) AdvanceToNext() {
	f.mu.Lock()
	ats := make([]time.Time, 0, len(f.timers))
	for _, t := range f.timers {
		ats = append(ats, t.at)
	}
	now := f.now
	f.mu.Unlock()
	if len(ats) == 0 {
		return
	}
	sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
	f.Advance(ats[0].Sub(now))
}

func (f *fakeClock) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// eventually polls cond (real time, generous: the box may be loaded) and
// fails the test with msg if it never holds.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
