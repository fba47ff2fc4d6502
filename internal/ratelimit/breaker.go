package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// CircuitState is where a circuit breaker stands.
type CircuitState int

// Circuit states. The numbers are the values of the
// extractq_pool_circuit_state gauge.
const (
	// CircuitClosed: calls go; consecutive failures are counted.
	CircuitClosed CircuitState = 0
	// CircuitHalfOpen: one probe at a time may go; its outcome closes or
	// reopens the circuit.
	CircuitHalfOpen CircuitState = 1
	// CircuitOpen: nothing goes until the open period ends.
	CircuitOpen CircuitState = 2
)

func (s CircuitState) String() string {
	switch s {
	case CircuitClosed:
		return "closed"
	case CircuitHalfOpen:
		return "half_open"
	case CircuitOpen:
		return "open"
	}
	return fmt.Sprintf("CircuitState(%d)", int(s))
}

// Breaker defaults; each is a BreakerSettings field.
const (
	DefaultCircuitFailures = 3
	DefaultCircuitOpen     = 5 * time.Second
	DefaultCircuitMaxOpen  = time.Minute
)

// BreakerSettings tune a Breaker. Zero fields take the defaults.
type BreakerSettings struct {
	// Failures is the number of consecutive failures that open the circuit.
	Failures int
	// Open is the first open period; each failed probe doubles it, up to
	// MaxOpen. A success resets it.
	Open    time.Duration
	MaxOpen time.Duration
}

func (s BreakerSettings) withDefaults() BreakerSettings {
	if s.Failures < 1 {
		s.Failures = DefaultCircuitFailures
	}
	if s.Open <= 0 {
		s.Open = DefaultCircuitOpen
	}
	if s.MaxOpen <= 0 {
		s.MaxOpen = max(DefaultCircuitMaxOpen, s.Open)
	}
	s.MaxOpen = max(s.MaxOpen, s.Open)
	return s
}

// Validate names a setting that is out of range; zero means the default.
func (s BreakerSettings) Validate() error {
	switch {
	case s.Failures < 0:
		return fmt.Errorf("circuit_failures %d: must be at least 1 (0 for the default, %d)", s.Failures, DefaultCircuitFailures)
	case s.Open < 0:
		return fmt.Errorf("circuit_open %s: must not be negative (0 for the default, %s)", s.Open, DefaultCircuitOpen)
	case s.MaxOpen < 0:
		return fmt.Errorf("circuit_max_open %s: must not be negative (0 for the default, %s)", s.MaxOpen, DefaultCircuitMaxOpen)
	}
	return nil
}

// Transition is one change of a breaker's state, as its observer sees it.
type Transition struct {
	Name, Reason string
	From, To     CircuitState
	// Failures is the consecutive failure count when the circuit opened.
	Failures int
	// Until is the end of the open period when To is CircuitOpen.
	Until time.Time
	// Cause is the failure that opened the circuit, when To is CircuitOpen.
	Cause error
}

// BreakerOption configures a Breaker.
type BreakerOption func(*Breaker)

// WithTransitions calls f on every state change, outside the breaker's
// lock; f must not block.
func WithTransitions(f func(Transition)) BreakerOption {
	return func(b *Breaker) { b.onChange = f }
}

// WithPauseReason names the pause an outage (Failure opening the circuit)
// causes, as pools report it (Snapshot.PauseReason); the default is the
// breaker's reason. Trip names its own.
func WithPauseReason(why string) BreakerOption { return func(b *Breaker) { b.failWhy = why } }

// withBreakerClock replaces the wall clock (tests).
func withBreakerClock(c clock) BreakerOption { return func(b *Breaker) { b.clock = c } }

// Breaker is a circuit breaker: after Failures consecutive failures it
// opens, and callers of Allow wait instead of calling; when the open period
// ends it lets one probe through (half-open), which closes it on success or
// reopens it for twice as long on failure. The worker keeps one per pool
// for provider outages (reason "transport") and one for the audit store
// (reason "audit"): an open circuit stops pulling, so an outage spends no
// deliveries. It is safe for concurrent use.
type Breaker struct {
	name, reason string
	s            BreakerSettings
	clock        clock
	onChange     func(Transition)
	failWhy      string // the pause reason of an opening by Failure

	mu        sync.Mutex
	wake      wakeup // broadcast on every change waiters care about
	state     CircuitState
	failures  int
	openFor   time.Duration
	openUntil time.Time
	probing   bool // a probe is out
	held      int  // Allow(held) callers waiting: they probe before pullers
	opens     int64
	cause     error
	why       string // the pause reason of the last opening
}

// NewBreaker returns a closed breaker. name is what it guards (a pool),
// reason why it opens ("transport", "audit"); both label its transitions.
func NewBreaker(name, reason string, s BreakerSettings, opts ...BreakerOption) *Breaker {
	b := &Breaker{name: name, reason: reason, failWhy: reason, s: s.withDefaults(), clock: realClock{}}
	b.openFor = b.s.Open
	for _, o := range opts {
		o(b)
	}
	return b
}

// Allow blocks until a call may go. While closed it returns at once. While
// open it waits for the open period to end; then one caller gets
// probe=true and the rest wait for the probe's outcome. held callers (jobs
// the worker already holds) get the probe before the others (pullers, who
// would take a new delivery for it). A probe must be settled with Success,
// Failure or Abandon. It returns ctx's error if ctx ends first.
func (b *Breaker) Allow(ctx context.Context, held bool) (probe bool, err error) {
	if held {
		b.mu.Lock()
		b.held++
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			b.held--
			if b.held == 0 {
				b.wake.broadcast() // pullers may probe now
			}
			b.mu.Unlock()
		}()
	}
	for {
		b.mu.Lock()
		wait, tr := b.advanceLocked()
		switch {
		case b.state == CircuitClosed:
			b.mu.Unlock()
			b.notify(tr)
			return false, nil
		case b.state == CircuitHalfOpen && !b.probing && (held || b.held == 0):
			b.probing = true
			b.mu.Unlock()
			b.notify(tr)
			return true, nil
		}
		woken := b.wake.channel()
		b.mu.Unlock()
		b.notify(tr)
		if err := b.waitFor(ctx, woken, wait); err != nil {
			return false, err
		}
	}
}

// WaitClosed blocks until the circuit is closed, without ever probing; it
// returns ctx's error if ctx ends first.
func (b *Breaker) WaitClosed(ctx context.Context) error {
	for {
		b.mu.Lock()
		wait, tr := b.advanceLocked()
		if b.state == CircuitClosed {
			b.mu.Unlock()
			return nil
		}
		woken := b.wake.channel()
		b.mu.Unlock()
		b.notify(tr)
		if err := b.waitFor(ctx, woken, wait); err != nil {
			return err
		}
	}
}

// Success reports a call that worked: the circuit closes (whatever state
// it was in: the outage is over) and the failure count restarts.
func (b *Breaker) Success(probe bool) {
	b.mu.Lock()
	if probe {
		b.probing = false
	}
	b.failures = 0
	var tr *Transition
	if b.state != CircuitClosed {
		tr = b.setLocked(CircuitClosed)
		b.openFor = b.s.Open
		b.cause = nil
	}
	b.wake.broadcast()
	b.mu.Unlock()
	b.notify(tr)
}

// Failure reports a call that failed for the reason the breaker guards. It
// opens the circuit after Failures consecutive ones, or at once when the
// failed call was the half-open probe (for twice the previous period). A
// retryAfter the provider asked for lengthens the open period. It reports
// whether the circuit is not closed now.
func (b *Breaker) Failure(probe bool, cause error, retryAfter time.Duration) (open bool) {
	b.mu.Lock()
	now := b.clock.Now()
	var tr *Transition
	switch {
	case probe && b.state == CircuitHalfOpen:
		b.probing = false
		b.openFor = min(2*b.openFor, b.s.MaxOpen)
		tr = b.openLocked(now, b.failWhy, cause, retryAfter)
	case b.state == CircuitClosed:
		b.failures++
		if b.failures >= b.s.Failures {
			tr = b.openLocked(now, b.failWhy, cause, retryAfter)
		}
	case b.state == CircuitOpen:
		// A call that started before the circuit opened: it only extends
		// the period when the provider asked for a longer wait.
		if until := now.Add(retryAfter); until.After(b.openUntil) {
			b.openUntil = until
		}
	}
	if probe {
		b.probing = false
	}
	b.wake.broadcast()
	open = b.state != CircuitClosed
	b.mu.Unlock()
	b.notify(tr)
	return open
}

// Trip opens the circuit at once for its longest period (MaxOpen),
// whatever its state: the provider refused the pool's configuration (a
// revoked key, a model that is gone), which no retry of the same job can
// fix. The half-open probe after it finds out whether someone fixed it.
// why is the pause reason pools report while it stays open (PauseKey,
// PauseModel, PauseQuota). It returns the period.
func (b *Breaker) Trip(probe bool, why string, cause error) time.Duration {
	b.mu.Lock()
	if probe {
		b.probing = false
	}
	tr := b.openLocked(b.clock.Now(), why, cause, b.s.MaxOpen)
	b.wake.broadcast()
	b.mu.Unlock()
	b.notify(tr)
	return b.s.MaxOpen
}

// Abandon gives back a probe that made no call (no job was pulled, or the
// job ended before calling): another caller may probe.
func (b *Breaker) Abandon(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	b.probing = false
	b.wake.broadcast()
	b.mu.Unlock()
}

// State is the breaker's state now.
func (b *Breaker) State() CircuitState {
	b.mu.Lock()
	_, tr := b.advanceLocked()
	s := b.state
	b.mu.Unlock()
	b.notify(tr)
	return s
}

// BreakerSnapshot is a breaker's state for probes and metrics.
type BreakerSnapshot struct {
	Name      string    `json:"name"`
	Reason    string    `json:"reason"`
	State     string    `json:"state"`
	Failures  int       `json:"consecutive_failures"`
	OpenUntil time.Time `json:"open_until,omitzero"`
	Opens     int64     `json:"opens"`
	Cause     string    `json:"cause,omitempty"`
	// PauseReason is why the circuit is not closed (e.g. "key",
	// "outage", "audit"); empty while closed.
	PauseReason string `json:"pause_reason,omitempty"`
}

// Snapshot returns the breaker's state now.
func (b *Breaker) Snapshot() BreakerSnapshot {
	b.mu.Lock()
	_, tr := b.advanceLocked()
	defer b.notify(tr)
	defer b.mu.Unlock()
	s := BreakerSnapshot{Name: b.name, Reason: b.reason, State: b.state.String(), Failures: b.failures, Opens: b.opens}
	if b.state == CircuitOpen {
		s.OpenUntil = b.openUntil
	}
	if b.state != CircuitClosed {
		s.PauseReason = b.why
		if b.cause != nil {
			s.Cause = b.cause.Error()
		}
	}
	return s
}

// advanceLocked moves an open circuit whose period ended to half-open
// (returning that transition, to notify once unlocked) and otherwise
// returns how long the circuit stays open (0 when it is not open).
func (b *Breaker) advanceLocked() (time.Duration, *Transition) {
	if b.state != CircuitOpen {
		return 0, nil
	}
	now := b.clock.Now()
	if now.Before(b.openUntil) {
		return b.openUntil.Sub(now), nil
	}
	tr := b.setLocked(CircuitHalfOpen)
	b.wake.broadcast()
	return 0, tr
}

func (b *Breaker) openLocked(now time.Time, why string, cause error, retryAfter time.Duration) *Transition {
	b.openUntil = now.Add(max(b.openFor, retryAfter))
	b.cause, b.why = cause, why
	b.opens++
	tr := b.setLocked(CircuitOpen)
	if tr == nil { // already open: a new period
		tr = &Transition{Name: b.name, Reason: b.reason, From: CircuitOpen, To: CircuitOpen}
	}
	tr.Failures, tr.Until, tr.Cause = b.failures, b.openUntil, cause
	return tr
}

func (b *Breaker) setLocked(to CircuitState) *Transition {
	if b.state == to {
		return nil
	}
	tr := &Transition{Name: b.name, Reason: b.reason, From: b.state, To: to}
	b.state = to
	return tr
}

func (b *Breaker) notify(tr *Transition) {
	if tr != nil && b.onChange != nil {
		b.onChange(*tr)
	}
}

// waitFor blocks until woken is closed, d has passed (when d > 0) or ctx
// ends.
func (b *Breaker) waitFor(ctx context.Context, woken <-chan struct{}, d time.Duration) error {
	var timer <-chan time.Time
	if d > 0 {
		c, stop := b.clock.Timer(d)
		defer stop()
		timer = c
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-woken:
	case <-timer:
	}
	return nil
}

// LogTransition logs a transition: a WARN when a circuit opens (pulling
// stops), INFO when it half-opens or closes.
func LogTransition(log *slog.Logger, t Transition) {
	attrs := []any{"pool", t.Name, "reason", t.Reason, "from", t.From.String(), "to", t.To.String()}
	switch t.To {
	case CircuitOpen:
		attrs = append(attrs, "consecutive_failures", t.Failures, "until", t.Until.Format(time.RFC3339), "err", t.Cause)
		log.Warn("circuit open: pulling stopped; held jobs stay in progress and are not nak'd", attrs...)
	case CircuitHalfOpen:
		log.Info("circuit half-open: one probe job may run", attrs...)
	default:
		log.Info("circuit closed: pulling resumed", attrs...)
	}
}
