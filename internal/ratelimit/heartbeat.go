package ratelimit

import (
	"encoding/json"
	"fmt"
	"time"
)

// Heartbeat is the value of a member key in the membership bucket: who beat
// and when, and the worker's part of the pool as it stood at that beat.
// `extractq status` and the web console read it to show each pool's live
// workers, their shares, pauses and recent 429s.
type Heartbeat struct {
	Worker string    `json:"worker"`
	Pool   string    `json:"pool"` // the pool's name as configured, e.g. "openai:gpt-4o-mini"
	At     time.Time `json:"at"`

	// Share is this worker's part of the pool's fleet limits, Members the
	// divisor in force and ShareSource where it came from.
	Share       Limits      `json:"share"`
	Members     int         `json:"members,omitempty"`
	ShareSource ShareSource `json:"share_source,omitempty"`
	InUse       int         `json:"in_use"` // calls in progress
	// Paused is true while the pool waits out a 429/529 or an exhausted
	// provider budget, until PausedUntil, or while a circuit guarding it
	// is open (a refused key or model, an outage, the audit store): see
	// Snapshot. PauseCause is the failure that opened the circuit.
	Paused      bool      `json:"paused,omitempty"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	PauseReason string    `json:"pause_reason,omitempty"`
	PauseCause  string    `json:"pause_cause,omitempty"`
	// RateLimited counts 429 answers since the worker started,
	// RateLimitedHour those of the last hour (to the minute).
	RateLimited     int64 `json:"rate_limited"`
	RateLimitedHour int64 `json:"rate_limited_1h"`
}

// DecodeHeartbeat reads a member key's value.
func DecodeHeartbeat(b []byte) (Heartbeat, error) {
	var h Heartbeat
	if err := json.Unmarshal(b, &h); err != nil {
		return Heartbeat{}, fmt.Errorf("ratelimit: decode heartbeat: %w", err)
	}
	return h, nil
}

// heartbeatOf describes p as this worker's heartbeat; w keeps p's 429 count
// over the last hour.
func heartbeatOf(worker string, p *Pool, w *hourWindow, now time.Time) Heartbeat {
	s := p.Snapshot()
	return Heartbeat{
		Worker: worker, Pool: p.Name(), At: now.UTC(),
		Share: s.Share, Members: s.Members, ShareSource: s.ShareSource, InUse: s.InUse,
		Paused: s.Paused, PausedUntil: s.PausedUntil, PauseReason: s.PauseReason, PauseCause: s.PauseCause,
		RateLimited: s.RateLimited, RateLimitedHour: w.observe(now, s.RateLimited),
	}
}

// hourWindow turns a counter that only grows into its increase over the
// last hour, from at most one sample a minute (61 samples).
type hourWindow struct {
	samples []counterSample // oldest first
}

type counterSample struct {
	at    time.Time
	total int64
}

// observe records total at now and returns its increase over the last
// hour; while the counter is younger than an hour, all of it.
func (w *hourWindow) observe(now time.Time, total int64) int64 {
	if n := len(w.samples); n == 0 || now.Sub(w.samples[n-1].at) >= time.Minute {
		w.samples = append(w.samples, counterSample{now, total})
	}
	cut := now.Add(-time.Hour)
	// Keep one sample at or before the cut as the baseline.
	for len(w.samples) >= 2 && !w.samples[1].at.After(cut) {
		w.samples = w.samples[1:]
	}
	if w.samples[0].at.After(cut) {
		return total
	}
	return total - w.samples[0].total
}
