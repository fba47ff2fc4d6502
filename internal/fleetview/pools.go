// Package fleetview answers what an operator asks of a running fleet: how
// each pool's queue stands (JetStream and the membership bucket) and how each
// run is doing (the audit database), in one place that `extractq status` and
// the web console (`extractq ui`) both read. It only reads.
package fleetview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
)

// Pool is the state of one pool's queue: its durable consumer on
// EXTRACTQ_JOBS, its dead letters and the workers heartbeating for it.
type Pool struct {
	// Name is the pool as it appears in subjects and consumer names, e.g.
	// "openai_gpt-4o-mini".
	Name string `json:"pool"`
	// Consumer is false when no worker has ever served the pool: its jobs
	// wait on the stream with no consumer to count them in progress.
	Consumer bool `json:"consumer"`
	// Queued counts jobs not yet delivered to any worker (the consumer's
	// pending count), InProgress those delivered and not yet acked (ack
	// pending: running, or nak'd with a delay), Redelivered those of them
	// delivered more than once.
	Queued      uint64 `json:"queued"`
	InProgress  int    `json:"in_progress"`
	Redelivered int    `json:"redelivered"`
	// OldestQueued is when the oldest queued job was published (zero when
	// none is queued).
	OldestQueued time.Time `json:"oldest_queued,omitzero"`
	DeadLetters  uint64    `json:"dead_letters"`
	// Workers are the live workers serving the pool (their heartbeats in
	// EXTRACTQ_MEMBERS), by id.
	Workers []Worker `json:"workers"`
	// Paused is true while any live worker holds the pool paused (a 429,
	// a 529 or an exhausted provider budget; a refused key or model, an
	// outage or the audit store: see ratelimit.Snapshot); PauseReasons are
	// the workers' reasons, each once, sorted.
	Paused       bool     `json:"paused"`
	PauseReasons []string `json:"pause_reasons,omitempty"`
	// RateLimitedHour sums the workers' 429s of the last hour.
	RateLimitedHour int64 `json:"rate_limited_1h"`
}

// OldestAge is how long the oldest queued job has waited at now (0 when
// none is queued).
func (p Pool) OldestAge(now time.Time) time.Duration {
	if p.OldestQueued.IsZero() {
		return 0
	}
	return max(0, now.Sub(p.OldestQueued))
}

// Worker is one live worker of a pool, as its last heartbeat describes it.
type Worker struct {
	ID string `json:"worker"`
	// Spec is the pool's name in the worker's configuration, e.g.
	// "openai:gpt-4o-mini".
	Spec string `json:"spec"`
	// Share is the worker's part of the pool's fleet limits, Members the
	// number of workers it divides them by.
	Share       ratelimit.Limits      `json:"share"`
	Members     int                   `json:"members"`
	ShareSource ratelimit.ShareSource `json:"share_source,omitempty"`
	// InUse counts the budget slots the worker holds (a puller holds one
	// while it waits for a job).
	InUse       int       `json:"in_use"`
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	PauseReason string    `json:"pause_reason,omitempty"`
	// PauseCause is the failure that opened the circuit pausing the
	// worker's pool (e.g. the provider's 401 answer).
	PauseCause string `json:"pause_cause,omitempty"`
	// RateLimitedHour counts the worker's 429s of the last hour.
	RateLimitedHour int64     `json:"rate_limited_1h"`
	LastBeat        time.Time `json:"last_beat"`
}

// PauseText says why and until when the worker's pool is paused, e.g.
// "key until 14:02:05: openai: 401 …" or "outage, probing", or "no".
func (w Worker) PauseText() string {
	if !w.Paused {
		return "no"
	}
	t := w.PauseReason
	if t == "" {
		t = "yes"
	}
	if w.PausedUntil.IsZero() {
		t += ", probing"
	} else {
		t += " until " + w.PausedUntil.Local().Format(time.TimeOnly)
	}
	if w.PauseCause != "" {
		t += ": " + w.PauseCause
	}
	return t
}

// PauseText says whether the pool is paused and why, e.g. "yes (key)".
func (p Pool) PauseText() string {
	switch {
	case !p.Paused:
		return "no"
	case len(p.PauseReasons) == 0:
		return "yes"
	}
	return "yes (" + strings.Join(p.PauseReasons, ", ") + ")"
}

// ShareText is the worker's share of its pool's limits, e.g.
// "concurrency 4, 300 rpm (1/2)".
func (w Worker) ShareText() string {
	parts := []string{fmt.Sprintf("concurrency %d", w.Share.Concurrency)}
	if w.Share.RPM > 0 {
		parts = append(parts, fmt.Sprintf("%d rpm", w.Share.RPM))
	}
	if w.Share.TPM > 0 {
		parts = append(parts, fmt.Sprintf("%d tpm", w.Share.TPM))
	}
	s := strings.Join(parts, ", ")
	if w.Members > 0 {
		s += fmt.Sprintf(" (1/%d", w.Members)
		if w.ShareSource == ratelimit.ShareFallback { // the bucket was unreachable: a guess
			s += ", " + string(w.ShareSource)
		}
		s += ")"
	}
	return s
}

// ErrNoStreams matches the error of Pools when the fleet's streams do not
// exist yet.
var ErrNoStreams = errors.New("the fleet's streams do not exist")

// Pools reads the queue of every pool the server knows of: those with a
// consumer, jobs on the stream, dead letters or live workers; ordered by
// name.
func Pools(ctx context.Context, js jetstream.JetStream) ([]Pool, error) {
	pools := map[string]*Pool{}
	get := func(name string) *Pool {
		p := pools[name]
		if p == nil {
			p = &Pool{Name: name}
			pools[name] = p
		}
		return p
	}
	stream, err := js.Stream(ctx, jobs.JobsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %s is missing (run `worker migrate`, or start a worker or `extractq dev`)", ErrNoStreams, jobs.JobsStream)
	}
	if err != nil {
		return nil, fmt.Errorf("fleetview: open stream %s: %w", jobs.JobsStream, err)
	}
	onSubject, err := subjectCounts(ctx, stream, jobs.JobSubject(">"))
	if err != nil {
		return nil, err
	}
	next := map[string]uint64{} // first stream sequence a pool's consumer has not delivered
	for subject, n := range onSubject {
		if name, ok := strings.CutPrefix(subject, jobs.JobSubject("")); ok && n > 0 {
			p := get(name)
			p.Queued = n // without a consumer every job on the subject is queued
			next[name] = 1
		}
	}
	lister := stream.ListConsumers(ctx)
	for info := range lister.Info() {
		name, ok := strings.CutPrefix(info.Config.FilterSubject, jobs.JobSubject(""))
		if !ok || info.Config.Durable != jobs.ConsumerName(name) {
			continue // not a pool consumer
		}
		p := get(name)
		p.Consumer = true
		p.Queued, p.InProgress, p.Redelivered = info.NumPending, info.NumAckPending, info.NumRedelivered
		next[name] = info.Delivered.Stream + 1
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("fleetview: list consumers of %s: %w", jobs.JobsStream, err)
	}
	for name, seq := range next {
		p := get(name)
		if p.Queued == 0 {
			continue
		}
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(jobs.JobSubject(name)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // taken between the two reads
		}
		if err != nil {
			return nil, fmt.Errorf("fleetview: oldest queued job of pool %s: %w", name, err)
		}
		p.OldestQueued = m.Time
	}

	if dlq, err := js.Stream(ctx, jobs.DLQStream); err == nil {
		counts, err := subjectCounts(ctx, dlq, jobs.DLQSubject(">"))
		if err != nil {
			return nil, err
		}
		for subject, n := range counts {
			if name, ok := strings.CutPrefix(subject, jobs.DLQSubject("")); ok && n > 0 {
				get(name).DeadLetters = n
			}
		}
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("fleetview: open stream %s: %w", jobs.DLQStream, err)
	}

	beats, err := ratelimit.LiveHeartbeats(ctx, js, "")
	if err != nil {
		return nil, err
	}
	for _, h := range beats {
		p := get(jobs.PoolFor(h.Pool))
		p.Workers = append(p.Workers, Worker{
			ID: h.Worker, Spec: h.Pool, Share: h.Share, Members: h.Members, ShareSource: h.ShareSource, InUse: h.InUse,
			Paused: h.Paused, PausedUntil: h.PausedUntil, PauseReason: h.PauseReason, PauseCause: h.PauseCause, RateLimitedHour: h.RateLimitedHour, LastBeat: h.At,
		})
		p.Paused = p.Paused || h.Paused
		if h.Paused && h.PauseReason != "" && !slices.Contains(p.PauseReasons, h.PauseReason) {
			p.PauseReasons = append(p.PauseReasons, h.PauseReason)
			slices.Sort(p.PauseReasons)
		}
		p.RateLimitedHour += h.RateLimitedHour
	}

	out := make([]Pool, 0, len(pools))
	for _, p := range pools {
		sort.Slice(p.Workers, func(i, j int) bool { return p.Workers[i].ID < p.Workers[j].ID })
		if p.Workers == nil {
			p.Workers = []Worker{}
		}
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// subjectCounts returns the number of messages on each subject of s
// matching filter.
func subjectCounts(ctx context.Context, s jetstream.Stream, filter string) (map[string]uint64, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("fleetview: read stream %s: %w", s.CachedInfo().Config.Name, err)
	}
	return info.State.Subjects, nil
}
