// Package ratelimit keeps each provider pool within its budget: concurrent
// jobs, requests per minute and tokens per minute. A Pool hands out job slots
// (the worker takes one before it pulls a job, so a pool without room pulls
// nothing), paces every provider call it wraps, learns from the rate-limit
// headers the provider reports, pauses on 429/529 and backs off its
// concurrency when they repeat. Configured limits are fleet-wide: a
// Membership divides them among the live workers of each pool through
// heartbeats in a JetStream key-value bucket.
//
// # Pacing against any limiter shape
//
// Providers count a per-minute budget in different ways: a token bucket
// (unused budget accumulates up to a minute's worth, so a burst after a
// quiet spell is forgiven), a strict sliding window (whatever was admitted
// in the trailing minute counts, so a burst is not forgiven, and is
// punished again a minute later when it leaves the window after a gap and
// steady calls meet the gap's echo), or a fixed window reset on the
// minute. The pool paces so that the fleet fits the strictest of these,
// the sliding window, which then fits the others too:
//
//   - Headroom: each worker paces at its share less DefaultHeadroom (2%).
//     Pacing at exactly the limit against a window that counts arrivals
//     overflows with any network or scheduling jitter; the headroom absorbs
//     it. Headers that report little remaining slow the pool further (see
//     headerFactor) but never compound with the headroom: the lower wins.
//     Tokens also leave one typical call per minute unused: a worker can be
//     about one call ahead at a minute's edge (the provider counts a call
//     when it admits it, the pool only its estimate until usage is
//     reported), which matters when a share is only tens of calls a minute.
//   - No saved-up budget: requests are spaced one interval apart (burst 1),
//     and the token limiter saves at most tokenBank (100 ms) of the share,
//     so a gap (idle, a pause, a hold) is never made up by a burst a
//     sliding window would count against the minute that follows.
//   - After a 429/529 pause the rate climbs back from half (rampLocked), and
//     calls queued during the pause take new reservations.
//   - Newcomers hold: a worker whose first count finds peers sends nothing
//     until the peers have counted it (one heartbeat interval); until then
//     their shares already add up to the whole limit (see countMembers).
//     Pools with only a concurrency limit do not hold.
//   - Hysteresis: a lower member count (a larger share) is applied only
//     when two rounds in a row see it, so one late heartbeat does not let
//     the others grow while its worker still runs; a higher count (a
//     smaller share) applies at once.
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
	// DefaultHeadroom is the part of its share a pool leaves unused, so
	// that arrival jitter (network, scheduling, a loaded host) cannot tip a
	// strict sliding window that the fleet fills: at 1,200 requests per
	// minute it is 24 requests of slack in every trailing minute.
	DefaultHeadroom = 0.02
	// tokenBank is the most unused token budget the pool saves up, as time
	// at its share. A larger bank (a second's worth, say) lets a pool back
	// from a gap spend what it saved at once: a token bucket forgives that,
	// a sliding window counts it on top of the minute of steady calls that
	// follows. It stays above zero so a call is not split into reservations
	// of one token, and so the pull of the next job (a slot is granted when
	// the budget is out of debt, then the job is pulled and its call
	// reserved) costs no budget unless it takes longer than the bank.
	tokenBank = 100 * time.Millisecond
)

// Pause reasons, as Snapshot.PauseReason reports them.
const (
	PauseRateLimited = "rate_limited"          // a 429
	PauseOverloaded  = "overloaded"            // a 529 or 503 overloaded
	PauseNoRequests  = "no_requests_remaining" // the provider reported none left
	PauseNoTokens    = "no_tokens_remaining"   // the provider reported none left

	// Pauses of a circuit guarding the pool (Guard): the provider refused
	// the pool's key (401, 403), its model (404) or its quota, the provider
	// is out (transport failures in a row), or the audit store is.
	PauseKey    = "key"
	PauseModel  = "model"
	PauseQuota  = "quota"
	PauseOutage = "outage"
	PauseAudit  = "audit"
)

// PauseReasons lists every pause reason, for metrics that show each.
var PauseReasons = []string{PauseRateLimited, PauseOverloaded, PauseNoRequests, PauseNoTokens, PauseKey, PauseModel, PauseQuota, PauseOutage, PauseAudit}

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

// WithHeadroom sets the part of the share left unused as slack for arrival
// jitter (default DefaultHeadroom); values from 0 to 0.5 are accepted.
func WithHeadroom(f float64) Option {
	return func(p *Pool) {
		if f >= 0 && f <= 0.5 {
			p.headroom = f
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
	headroom         float64
	jitter           func() float64 // uniform in [0, 1)

	// reqLim and tokLim pace requests and tokens at this worker's share;
	// nil when the dimension is not limited.
	reqLim, tokLim *rate.Limiter
	// The limit and burst last given to the limiters (only NewPool and
	// applyRatesLocked set them): applyRatesLocked compares with these
	// rather than lock each limiter to read them back, on every call.
	reqRate, tokRate rate.Limit
	tokBurst         int

	mu   sync.Mutex
	wake wakeup // broadcast whenever room may have appeared, to AcquireSlot's waiters

	inUse int // slots held
	// held is, by place, the number of the slot held there (0: none), and
	// free the places not held (grantLocked): a release finds its slot's
	// number in its place once, so that calling it again is harmless.
	held      []uint64
	free      []int
	lastSlot  uint64 // the number of the last slot granted
	granted   int    // slots whose job has not reserved a call yet
	effConc   int    // AIMD concurrency, 1..shareConc()
	successes int    // successful calls since effConc last grew

	members     int
	shareSource ShareSource
	fewerSeen   int       // a lower member count seen once, not yet applied (hysteresis)
	joinUntil   time.Time // a newcomer's hold: until its peers have counted it

	pausedUntil time.Time
	guards      []*Breaker // circuits whose pauses the snapshot shows
	pauseReason string
	spreadUntil time.Time // a hold of a fraction of an interval, not a pause
	rampFrom    time.Time // when the rate starts climbing back (end of a 429 pause)
	last429     time.Time // start of the last 429/529 pause, for "repeated"

	learnedRPM, learnedTPM int // provider-reported limits below the configured ones
	reqHdr, tokHdr         headerState
	tokenCredit            float64   // tokens reserved but not used, handed to the next call
	answerAvg              float64   // moving average of reported answer tokens (0: none yet)
	callAvg                float64   // moving average of the tokens a call used (0: none yet)
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
	until     time.Time // at + reset, added once (newHeaderState): every call reads it
}

// newHeaderState is the state reported at now.
func newHeaderState(now time.Time, limit, remaining int, reset time.Duration) headerState {
	return headerState{at: now, limit: limit, remaining: remaining, reset: reset, until: now.Add(reset)}
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
		headroom:         DefaultHeadroom,
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
	// Burst 1 request spaces calls at least one interval apart, so no
	// trailing minute ever holds more than the rate allows; tokens save up
	// at most tokenBank of the share (see tokenBurstLocked). Both start
	// empty: no burst at start-up either.
	if l.RPM > 0 {
		p.reqRate = p.reqRateLocked(now)
		p.reqLim = rate.NewLimiter(p.reqRate, 1)
		p.reqLim.AllowN(now, 1)
	}
	if l.TPM > 0 {
		p.tokRate, p.tokBurst = p.tokRateLocked(now), p.tokenBurstLocked()
		p.tokLim = rate.NewLimiter(p.tokRate, p.tokBurst)
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
			release = p.grantLocked()
			p.mu.Unlock()
			return release, nil
		}
		woken := p.wake.channel()
		p.mu.Unlock()
		if err := p.waitFor(ctx, woken, wait); err != nil {
			return nil, err
		}
	}
}

// TryAcquireSlot takes a slot only when AcquireSlot would not wait, and
// reports whether it did. It is for a call beyond its job's own (the parts
// of a long document extracted in parallel), which must never wait for
// slots that jobs hold. release gives the slot back; calling it more than
// once is harmless.
func (p *Pool) TryAcquireSlot() (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.roomDelayLocked(p.clock.Now()) > 0 || p.inUse >= p.effConc {
		return nil, false
	}
	return p.grantLocked(), true
}

// grantLocked takes a slot; p.mu is held. Its release is a closure over
// the slot's place and number: one allocation, where a sync.Once of its
// own and a closure over it were two.
func (p *Pool) grantLocked() (release func()) {
	p.inUse++
	p.granted++
	p.lastSlot++
	n := p.lastSlot
	var at int
	if k := len(p.free); k > 0 {
		at, p.free = p.free[k-1], p.free[:k-1]
	} else {
		at, p.held = len(p.held), append(p.held, 0)
	}
	p.held[at] = n
	return func() { p.releaseSlot(at, n) }
}

// releaseSlot gives slot n, held at place at, back once: a second call
// finds another number there, or none.
func (p *Pool) releaseSlot(at int, n uint64) {
	p.mu.Lock()
	if p.held[at] == n {
		p.held[at] = 0
		p.free = append(p.free, at)
		p.inUse--
		// A job that made no call leaves its grant unclaimed.
		p.granted = min(p.granted, p.inUse)
		p.wake.broadcast()
	}
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

// blockedUntilLocked is when calls may go again: the end of a pause, of a
// hold that spreads idle calls (see idleJitterLocked), or of a newcomer's
// hold (see countMembers).
func (p *Pool) blockedUntilLocked() time.Time {
	until := p.pausedUntil
	for _, t := range []time.Time{p.spreadUntil, p.joinUntil} {
		if t.After(until) {
			until = t
		}
	}
	return until
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
	if h.at.IsZero() || h.reset <= 0 || !now.Before(h.until) {
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

// paceFactor is the fraction of the share to pace at: the share less the
// headroom, or less when the provider reports little remaining
// (headerFactor). The lower of the two wins; they do not compound, since
// both are slack for the same thing.
func (p *Pool) paceFactor(h headerState, fleetLimit int, now time.Time) float64 {
	return math.Min(1-p.headroom, headerFactor(h, fleetLimit, now))
}

// reqRateLocked is this worker's request rate per second now.
func (p *Pool) reqRateLocked(now time.Time) rate.Limit {
	r := float64(p.fleetRPM()) / 60 / float64(p.members) * p.rampLocked(now) * p.paceFactor(p.reqHdr, p.fleetRPM(), now)
	return rate.Limit(math.Max(r, 1e-3))
}

// tokRateLocked is this worker's token rate per second now. Besides the
// headroom it leaves one call per minute unused: at the edge of a minute a
// worker may be up to about one call ahead of its share, since a provider
// counts a call's tokens when it admits it while the pool counts only the
// estimate until the answer reports usage, and hands what a call did not
// use to the next one. Against a window the fleet fills, every worker's
// call counts, so this matters when shares are small (16 workers on
// 600,000 tokens per minute: one call is about 1.3% of a share).
func (p *Pool) tokRateLocked(now time.Time) rate.Limit {
	r := float64(p.fleetTPM()) / 60 / float64(p.members) * p.rampLocked(now) * p.paceFactor(p.tokHdr, p.fleetTPM(), now)
	r -= math.Min(p.callTokensLocked()/60, r/2)
	return rate.Limit(math.Max(r, 1e-3))
}

// callTokensLocked is the tokens of a typical call: the moving average of
// reported usage, else the latest estimate.
func (p *Pool) callTokensLocked() float64 {
	if p.callAvg > 0 {
		return p.callAvg
	}
	return float64(p.lastEstimate)
}

// tokenBurstLocked is the token limiter's burst: tokenBank of the share.
func (p *Pool) tokenBurstLocked() int {
	return max(1, int(math.Ceil(float64(p.fleetTPM())/60/float64(p.members)*tokenBank.Seconds())))
}

// applyRatesLocked brings both limiters to the rates in force now (share,
// ramp, headers) and the token limiter to the burst of the share.
func (p *Pool) applyRatesLocked(now time.Time) {
	if p.reqLim != nil {
		if r := p.reqRateLocked(now); r != p.reqRate {
			p.reqLim.SetLimitAt(now, r)
			p.reqRate = r
		}
	}
	if p.tokLim != nil {
		if r := p.tokRateLocked(now); r != p.tokRate {
			p.tokLim.SetLimitAt(now, r)
			p.tokRate = r
		}
		if b := p.tokenBurstLocked(); b != p.tokBurst {
			p.tokLim.SetBurstAt(now, b)
			p.tokBurst = b
		}
	}
}

// countMembers takes a membership round's count of the live members,
// including this worker (Membership calls it). A count of more members
// than the divisor in force applies at once: the share shrinks, which is
// always safe. A count of fewer (the share grows) applies only when the
// round before also counted fewer, and then the larger of the two: a
// heartbeat that was late, or a count that missed a key, must not let
// this worker grow while the other still runs at its share. The cost is
// one heartbeat interval before a departed worker's share is taken up.
//
// join > 0 says this worker's heartbeat has just appeared (its first
// round, or the first since its key may have expired). If the count finds
// peers, they have not counted this worker yet and their shares still add
// up to the whole limit, so the pool holds every call for join (a
// heartbeat interval and a margin: by then every live peer has counted
// it). A newcomer that finds none starts at once: a peer starting at the
// same moment finds it, and holds. A pool without RPM or TPM limits does
// not hold: a provider remembers requests and tokens for a window, but
// not concurrency, so a brief excess there is gone when it ends.
func (p *Pool) countMembers(n int, src ShareSource, join time.Duration) {
	n = max(n, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if join > 0 && n > 1 && (p.reqLim != nil || p.tokLim != nil) {
		p.joinUntil = p.clock.Now().Add(join)
		p.log.Info("ratelimit: joining a fleet; holding calls until the other workers have counted this one", "members", n, "for", join)
		p.wake.broadcast()
	}
	if src == ShareFleet && p.shareSource == ShareFleet && n < p.members {
		if p.fewerSeen == 0 {
			p.fewerSeen = n
			return
		}
		n = max(n, p.fewerSeen)
	}
	p.fewerSeen = 0
	p.setMembersLocked(n, src)
}

// setMembers sets the divisor of the fleet limits at once (tests; the
// membership goes through countMembers).
func (p *Pool) setMembers(n int, src ShareSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMembersLocked(max(n, 1), src)
}

func (p *Pool) setMembersLocked(n int, src ShareSource) {
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
	p.applyRatesLocked(p.clock.Now())
	p.wake.broadcast()
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
	// the provider reported, before headroom, ramp and header pacing).
	Share Limits `json:"share"`
	// EffectiveConcurrency is the AIMD concurrency (≤ Share.Concurrency).
	EffectiveConcurrency int `json:"effective_concurrency"`
	InUse                int `json:"in_use"`
	// RPMNow and TPMNow are the pacing rates in force (per minute): the
	// share less the headroom, the ramp and header pacing.
	RPMNow float64 `json:"rpm_now"`
	TPMNow float64 `json:"tpm_now"`
	// LearnedRPM and LearnedTPM are provider-reported limits lower than
	// the configured ones (0 when none).
	LearnedRPM int `json:"learned_rpm,omitempty"`
	LearnedTPM int `json:"learned_tpm,omitempty"`
	// Paused is true while the pool waits out a 429/529 or an exhausted
	// provider budget, or while a circuit guarding it (Guard) is not
	// closed; PauseReason says which (a Pause… constant), PausedUntil
	// until when (zero while a half-open circuit probes), PauseCause the
	// failure that opened a circuit.
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	PauseReason string    `json:"pause_reason,omitempty"`
	PauseCause  string    `json:"pause_cause,omitempty"`
	// JoiningUntil is set while a newcomer holds its calls until the
	// fleet has counted it (see countMembers).
	JoiningUntil time.Time `json:"joining_until,omitzero"`
	// Calls, RateLimited (429), Overloaded (529/503), Pauses and TokensUsed
	// (as reported, else estimated) count since the pool was made.
	Calls       int64 `json:"calls"`
	RateLimited int64 `json:"rate_limited"`
	Overloaded  int64 `json:"overloaded"`
	Pauses      int64 `json:"pauses"`
	TokensUsed  int64 `json:"tokens_used"`
}

// Guard names circuits that stop the pool's calls while they are not
// closed (the worker's circuit for the pool's provider and the audit
// circuit): the pool's Snapshot, and so its heartbeat, status and
// metrics, show their pause and its reason.
func (p *Pool) Guard(circuits ...*Breaker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.guards = append(p.guards, circuits...)
}

// Snapshot returns the pool's budget use now.
func (p *Pool) Snapshot() Snapshot {
	p.mu.Lock()
	guards := p.guards
	p.mu.Unlock()
	var open *BreakerSnapshot // the first guard not closed, read outside p.mu
	for _, g := range guards {
		if gs := g.Snapshot(); gs.State != CircuitClosed.String() {
			open = &gs
			break
		}
	}
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
	switch {
	case s.Paused:
		s.PausedUntil, s.PauseReason = p.pausedUntil, p.pauseReason
	case open != nil:
		s.Paused, s.PausedUntil, s.PauseReason, s.PauseCause = true, open.OpenUntil, open.PauseReason, open.Cause
	}
	if now.Before(p.joinUntil) {
		s.JoiningUntil = p.joinUntil
	}
	if p.reqLim != nil {
		s.RPMNow = float64(p.reqRateLocked(now)) * 60
	}
	if p.tokLim != nil {
		s.TPMNow = float64(p.tokRateLocked(now)) * 60
	}
	return s
}
