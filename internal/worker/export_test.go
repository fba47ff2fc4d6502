package worker

import "time"

// WithDeathAt makes the dead-letter path stop, as if the process died, at
// each step for which die returns true: "recorded" (the letter is in the
// audit, not yet published) and "published" (on the stream, its sequence
// not yet in the audit).
func WithDeathAt(die func(step string) bool) Option { return func(w *Worker) { w.dieAt = die } }

// WithAckLinger sets how long the acker gathers acks before it sends them
// (default ackLinger).
func WithAckLinger(d time.Duration) Option { return func(w *Worker) { w.ackLinger = d } }
