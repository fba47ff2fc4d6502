// Package ratelimit keeps each provider pool within its budget: concurrent
// jobs, requests per minute and tokens per minute. A Pool hands out job slots
// (the worker takes one before it pulls a job, so a pool without room pulls
// nothing), paces every provider call it wraps, learns from the rate-limit
// headers the provider reports, pauses on 429/529 and backs off its
// concurrency when they repeat. Configured limits are fleet-wide: a
// Membership divides them among the live workers of each pool through
// heartbeats in a JetStream key-value bucket.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits is a pool's budget for the whole fleet. RPM and TPM of zero mean
// "not limited"; configuration refuses explicit zeros (see ParsePoolSpec), so
// zero only ever means an omitted setting.
type Limits struct {
	// Concurrency is the number of jobs in progress at once. Values below 1
	// are taken as 1 by NewPool.
	Concurrency int `json:"concurrency" yaml:"concurrency"`
	// RPM is requests per minute.
	RPM int `json:"rpm,omitempty" yaml:"rpm,omitempty"`
	// TPM is tokens (prompt plus completion) per minute.
	TPM int `json:"tpm,omitempty" yaml:"tpm,omitempty"`
}

// ShareSource tells where a pool's divisor of the fleet limits comes from.
type ShareSource string

// Share sources.
const (
	// ShareSolo: no membership runs; this worker takes the whole limit.
	ShareSolo ShareSource = "solo"
	// ShareFleet: the divisor is the live member count read from the bucket.
	ShareFleet ShareSource = "fleet"
	// ShareFallback: the bucket is unreachable; the divisor is a
	// conservative guess (see Membership).
	ShareFallback ShareSource = "fallback"
)

// Defaults of the adaptive behaviour; each has an option.
const (
	// DefaultMaxTokens is the answer size assumed for a request that sets no
	// MaxTokens, when estimating its tokens before the call.
	DefaultMaxTokens = 1024
	// DefaultMaxPause caps a pause asked for by Retry-After or a reset time.
	DefaultMaxPause = 2 * time.Minute
	// DefaultRampUp is how long the request rate takes to climb back from
	// half to full after a 429/529 pause.
	DefaultRampUp = 5 * time.Second
	// DefaultPause is the pause after a 429/529 that names no wait.
	DefaultPause = time.Second
	// aimdWindow: a 429 within this long of the previous one counts as
	// "repeated" and halves the effective concurrency.
	aimdWindow = 30 * time.Second
	// lowWater and minHeaderFactor: below this fraction of the limit
	// remaining, the pool paces a little under its share (see headerFactor).
	lowWater        = 0.10
	minHeaderFactor = 0.97
	// answerEWMA weighs each reported answer size in the moving average;
	// answerHeadroom is the margin the estimate adds to that average.
	answerEWMA     = 0.1
	answerHeadroom = 1.25
)

// Pause reasons, as Snapshot.PauseReason reports them.
const (
	PauseRateLimited = "rate_limited"          // a 429
	PauseOverloaded  = "overloaded"            // a 529 or 503 overloaded
	PauseNoRequests  = "no_requests_remaining" // the provider reported none left
	PauseNoTokens    = "no_tokens_remaining"   // the provider reported none left
)

// Option configures a Pool.
type Option func(*Pool)

// WithLogger sets the logger for pauses, learned limits and share changes.
func WithLogger(l *slog.Logger) Option { return func(p *Pool) { p.log = l } }

// WithDefaultMaxTokens sets the answer size assumed when a request sets no
// MaxTokens (default DefaultMaxTokens).
func WithDefaultMaxTokens(n int) Option {
	return func(p *Pool) {
		if n > 0 {
			p.defaultMaxTokens = n
		}
	}
}

// WithMaxPause caps any pause the provider asks for (default DefaultMaxPause).
func WithMaxPause(d time.Duration) Option {
	return func(p *Pool) {
		if d > 0 {
			p.maxPause = d
		}
	}
}

// WithRampUp sets how long the rate takes to climb back to full after a
// 429/529 pause (default DefaultRampUp); zero resumes at full rate at once.
func WithRampUp(d time.Duration) Option {
	return func(p *Pool) {
		if d >= 0 {
			p.rampUp = d
		}
	}
}

// withClock replaces the wall clock (tests).
func withClock(c clock) Option { return func(p *Pool) { p.clock = c } }

// withJitter replaces the random source of idleJitterLocked (tests).
func withJitter(f func() float64) Option { return func(p *Pool) { p.jitter = f } }

// Pool is one named budget. It is safe for concurrent use.
type Pool struct {
	name             string
	limits           Limits
	log              *slog.Logger
	clock            clock
	defaultMaxTokens int
	maxPause         time.Duration
	rampUp           time.Duration
	jitter           func() float64 // uniform in [0, 1)

	// reqLim and tokLim pace requests and tokens at this worker's share;
	// nil when the dimension is not limited.
	reqLim, tokLim *rate.Limiter

	mu   sync.Mutex
	wake chan struct{} // closed and replaced whenever room may have appeared

	inUse     int // slots held
	granted   int // slots whose job has not reserved a call yet
	effConc   int // AIMD concurrency, 1..shareConc()
	successes int // successful calls since effConc last grew

	members     int
	shareSource ShareSource

	pausedUntil time.Time
	pauseReason string
	spreadUntil time.Time // a hold of a fraction of an interval, not a pause
	rampFrom    time.Time // when the rate starts climbing back (end of a 429 pause)
	last429     time.Time // start of the last 429/529 pause, for "repeated"

	learnedRPM, learnedTPM int // provider-reported limits below the configured ones
	reqHdr, tokHdr         headerState
	tokenCredit            float64   // tokens reserved but not used, handed to the next call
	answerAvg              float64   // moving average of reported answer tokens (0: none yet)
	lastEstimate           int       // the latest call's token estimate
	lastCall               time.Time // when the latest call goes (or went) out

	calls, rateLimited, overloaded, pauses, tokensUsed int64
}

// headerState is the last remaining/reset pair the provider reported.
type headerState struct {
	at        time.Time
	limit     int
	remaining int
	reset     time.Duration
}

// NewPool returns a pool named name (by convention "provider:model") with
// fleet-wide limits l. Until a Membership says otherwise the pool takes the
// whole limit. Validate configuration before (ParsePoolSpec, Validate): NewPool
// never fails.
func NewPool(name string, l Limits, opts ...Option) *Pool {
	if l.Concurrency < 1 {
		l.Concurrency = 1
	}
	l.RPM = max(l.RPM, 0)
	l.TPM = max(l.TPM, 0)
	p := &Pool{
		name:             name,
		limits:           l,
		log:              slog.Default(),
		clock:            realClock{},
		jitter:           rand.Float64,
		defaultMaxTokens: DefaultMaxTokens,
		maxPause:         DefaultMaxPause,
		rampUp:           DefaultRampUp,
		wake:             make(chan struct{}),
		members:          1,
		shareSource:      ShareSolo,
	}
	for _, o := range opts {
		o(p)
	}
	p.log = p.log.With("pool", name)
	p.lastEstimate = p.defaultMaxTokens // until a call says better
	p.effConc = p.shareConc()
	now := p.clock.Now()
	// Burst 1 request spaces calls evenly: a provider counting over a
	// sliding window never sees a burst. Tokens get one second's worth, so
	// a call is not split into many tiny reservations.
	if l.RPM > 0 {
		p.reqLim = rate.NewLimiter(p.reqRateLocked(now), 1)
		p.reqLim.AllowN(now, 1) // start empty: no burst at start-up either
	}
	if l.TPM > 0 {
		r := p.tokRateLocked(now)
		p.tokLim = rate.NewLimiter(r, max(1, int(r)))
		p.tokLim.AllowN(now, p.tokLim.Burst())
	}
	return p
}

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// Limits is the fleet-wide budget the pool was configured with.
func (p *Pool) Limits() Limits { return p.limits }

// AcquireSlot waits until the pool has room for one more job: a free slot
// under the effective concurrency, no pause, and no request or token debt
// (calls already waiting for budget). The worker calls it before pulling a
// job, so budget is the back-pressure and no job is pulled only to wait.
// release gives the slot back; calling it more than once is harmless.
func (p *Pool) AcquireSlot(ctx context.Context) (release func(), err error) {
	for {
		p.mu.Lock()
		now := p.clock.Now()
		wait := p.roomDelayLocked(now)
		if wait == 0 && p.inUse < p.effConc {
			p.inUse++
			p.granted++
			p.mu.Unlock()
			var once sync.Once
			return func() { once.Do(p.releaseSlot) }, nil
		}
		woken := p.wake
		p.mu.Unlock()
		if err := p.waitFor(ctx, woken, wait); err != nil {
			return nil, err
		}
	}
}

func (p *Pool) releaseSlot() {
	p.mu.Lock()
	p.inUse--
	// A job that made no call leaves its grant unclaimed.
	p.granted = min(p.granted, p.inUse)
	p.broadcastLocked()
	p.mu.Unlock()
}

// waitFor blocks until woken is closed, d has passed (when d > 0) or ctx ends.
func (p *Pool) waitFor(ctx context.Context, woken <-chan struct{}, d time.Duration) error {
	var timer <-chan time.Time
	if d > 0 {
		c, stop := p.clock.Timer(d)
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

// sleep blocks for d or until ctx ends.
func (p *Pool) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return p.waitFor(ctx, nil, d)
}

// broadcastLocked wakes every AcquireSlot waiter to look again.
func (p *Pool) broadcastLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// roomDelayLocked is how long until the pool may start another job: the rest
// of a pause, or the time the limiters need to pay back what is already
// owed: reservations of calls waiting inside Chat, and one expected call for
// every slot granted whose job has not called yet (the worker pulls its job
// between the two; without counting them, a burst of grants would pull
// many jobs that then wait). Tokens reserved but unused count as room.
func (p *Pool) roomDelayLocked(now time.Time) time.Duration {
	if until := p.blockedUntilLocked(); now.Before(until) {
		return until.Sub(now)
	}
	p.applyRatesLocked(now)
	var d time.Duration
	owed := func(lim *rate.Limiter, room float64) {
		if room < 0 {
			d = max(d, time.Duration(-room/float64(lim.Limit())*float64(time.Second))+time.Millisecond)
		}
	}
	if p.reqLim != nil {
		owed(p.reqLim, p.reqLim.TokensAt(now)-float64(p.granted))
	}
	if p.tokLim != nil {
		owed(p.tokLim, p.tokLim.TokensAt(now)+p.tokenCredit-float64(p.granted*p.lastEstimate))
	}
	return d
}

// blockedUntilLocked is when calls may go again: the end of a pause or of a
// hold that spreads idle calls (see idleJitterLocked).
func (p *Pool) blockedUntilLocked() time.Time {
	if p.spreadUntil.After(p.pausedUntil) {
		return p.spreadUntil
	}
	return p.pausedUntil
}

// Paused reports whether the pool is paused (after a 429/529, or because the
// provider said no requests or tokens remain) and until when.
func (p *Pool) Paused() (until time.Time, paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pausedUntil, p.clock.Now().Before(p.pausedUntil)
}

// shareConc is this worker's share of the fleet concurrency: rounded down so
// the fleet never exceeds it, but at least one.
func (p *Pool) shareConc() int { return max(1, p.limits.Concurrency/p.members) }

// fleetRPM is the configured RPM, or the lower one the provider reported.
func (p *Pool) fleetRPM() int {
	if p.learnedRPM > 0 && p.learnedRPM < p.limits.RPM {
		return p.learnedRPM
	}
	return p.limits.RPM
}

// fleetTPM is the configured TPM, or the lower one the provider reported.
func (p *Pool) fleetTPM() int {
	if p.learnedTPM > 0 && p.learnedTPM < p.limits.TPM {
		return p.learnedTPM
	}
	return p.limits.TPM
}

// rampLocked is the fraction of the share usable now: half at the end of a
// 429 pause, climbing linearly to all of it over rampUp.
func (p *Pool) rampLocked(now time.Time) float64 {
	if p.rampFrom.IsZero() || p.rampUp == 0 {
		return 1
	}
	since := now.Sub(p.rampFrom)
	if since >= p.rampUp {
		return 1
	}
	return 0.5 + 0.5*math.Max(0, float64(since))/float64(p.rampUp)
}

// headerFactor is the fraction of the share to use given what the provider
// last said remains. Providers refill their budgets continuously (a bucket
// that is full again after "reset"), so pacing at the share keeps a nearly
// empty bucket nearly empty, where any jitter is a 429. Below lowWater of
// the limit the pool slows to between minHeaderFactor and full, in
// proportion, so the bucket refills a little and the limit is approached
// smoothly instead of hit. The state counts only until its reset.
func headerFactor(h headerState, fleetLimit int, now time.Time) float64 {
	if h.at.IsZero() || h.reset <= 0 || !now.Before(h.at.Add(h.reset)) {
		return 1
	}
	limit := h.limit
	if limit == 0 {
		limit = fleetLimit
	}
	low := lowWater * float64(limit)
	if limit == 0 || float64(h.remaining) >= low {
		return 1
	}
	return minHeaderFactor + (1-minHeaderFactor)*float64(h.remaining)/low
}

// reqRateLocked is this worker's request rate per second now.
func (p *Pool) reqRateLocked(now time.Time) rate.Limit {
	r := float64(p.fleetRPM()) / 60 / float64(p.members) * p.rampLocked(now) * headerFactor(p.reqHdr, p.fleetRPM(), now)
	return rate.Limit(math.Max(r, 1e-3))
}

// tokRateLocked is this worker's token rate per second now.
func (p *Pool) tokRateLocked(now time.Time) rate.Limit {
	r := float64(p.fleetTPM()) / 60 / float64(p.members) * p.rampLocked(now) * headerFactor(p.tokHdr, p.fleetTPM(), now)
	return rate.Limit(math.Max(r, 1e-3))
}

// applyRatesLocked brings both limiters to the rates in force now (share,
// ramp, headers).
func (p *Pool) applyRatesLocked(now time.Time) {
	if p.reqLim != nil {
		if r := p.reqRateLocked(now); r != p.reqLim.Limit() {
			p.reqLim.SetLimitAt(now, r)
		}
	}
	if p.tokLim != nil {
		if r := p.tokRateLocked(now); r != p.tokLim.Limit() {
			p.tokLim.SetLimitAt(now, r)
		}
	}
}

// setMembers sets the divisor of the fleet limits (Membership calls it).
func (p *Pool) setMembers(n int, src ShareSource) {
	n = max(n, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if n == p.members && src == p.shareSource {
		return
	}
	oldShare := p.shareConc()
	oldMembers, oldSrc := p.members, p.shareSource
	p.members, p.shareSource = n, src
	newShare := p.shareConc()
	// The effective concurrency keeps its proportion of the share: a pool
	// at its full share follows it, one cut back by AIMD stays cut back.
	p.effConc = max(1, min(newShare, int(math.Round(float64(p.effConc)*float64(newShare)/float64(oldShare)))))
	now := p.clock.Now()
	p.applyRatesLocked(now)
	if p.tokLim != nil {
		p.tokLim.SetBurstAt(now, max(1, int(p.tokLim.Limit())))
	}
	p.broadcastLocked()
	p.log.Info("ratelimit: pool share changed", "members", n, "from_members", oldMembers, "source", string(src), "from_source", string(oldSrc), "concurrency", p.effConc)
}

// Snapshot is a pool's budget use at one moment, for metrics and status.
type Snapshot struct {
	Pool string `json:"pool"`
	// Limits is the fleet-wide configuration.
	Limits Limits `json:"limits"`
	// Members is the divisor in force and ShareSource where it came from.
	Members     int         `json:"members"`
	ShareSource ShareSource `json:"share_source"`
	// Share is this worker's part of Limits (RPM/TPM after any lower limit
	// the provider reported, before ramp and header pacing).
	Share Limits `json:"share"`
	// EffectiveConcurrency is the AIMD concurrency (≤ Share.Concurrency).
	EffectiveConcurrency int `json:"effective_concurrency"`
	InUse                int `json:"in_use"`
	// RPMNow and TPMNow are the pacing rates in force (per minute).
	RPMNow float64 `json:"rpm_now"`
	TPMNow float64 `json:"tpm_now"`
	// LearnedRPM and LearnedTPM are provider-reported limits lower than
	// the configured ones (0 when none).
	LearnedRPM  int       `json:"learned_rpm,omitempty"`
	LearnedTPM  int       `json:"learned_tpm,omitempty"`
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	PauseReason string    `json:"pause_reason,omitempty"`
	// Calls, RateLimited (429), Overloaded (529/503), Pauses and TokensUsed
	// (as reported, else estimated) count since the pool was made.
	Calls       int64 `json:"calls"`
	RateLimited int64 `json:"rate_limited"`
	Overloaded  int64 `json:"overloaded"`
	Pauses      int64 `json:"pauses"`
	TokensUsed  int64 `json:"tokens_used"`
}

// Snapshot returns the pool's budget use now.
func (p *Pool) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	s := Snapshot{
		Pool:                 p.name,
		Limits:               p.limits,
		Members:              p.members,
		ShareSource:          p.shareSource,
		Share:                Limits{Concurrency: p.shareConc(), RPM: p.fleetRPM() / p.members, TPM: p.fleetTPM() / p.members},
		EffectiveConcurrency: p.effConc,
		InUse:                p.inUse,
		LearnedRPM:           p.learnedRPM,
		LearnedTPM:           p.learnedTPM,
		Paused:               now.Before(p.pausedUntil),
		Calls:                p.calls,
		RateLimited:          p.rateLimited,
		Overloaded:           p.overloaded,
		Pauses:               p.pauses,
		TokensUsed:           p.tokensUsed,
	}
	if s.Paused {
		s.PausedUntil, s.PauseReason = p.pausedUntil, p.pauseReason
	}
	if p.reqLim != nil {
		s.RPMNow = float64(p.reqRateLocked(now)) * 60
	}
	if p.tokLim != nil {
		s.TPMNow = float64(p.tokRateLocked(now)) * 60
	}
	return s
}
