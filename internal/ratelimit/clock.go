package ratelimit

import "time"

// clock is the pool's source of time. Tests swap in a fake one so pacing can
// be checked by counting calls instead of measuring durations.
type clock interface {
	Now() time.Time
	// Timer returns a channel that receives once d has passed, and a
	// function that releases the timer early.
	Timer(d time.Duration) (<-chan time.Time, func())
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
