package sim

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// limiter enforces a profile's per-minute request and token budgets with
// two token buckets that hold one minute's worth and refill continuously.
type limiter struct {
	mu         sync.Mutex
	rpm, tpm   int
	reqs, toks float64 // available now
	last       time.Time
}

// limitState is what one response reports of the limits.
type limitState struct {
	rpm, tpm           int
	remReqs, remToks   int
	resetReqs, resetTs time.Duration // until the bucket is full again
	// retryAfter is set on a refusal: the wait until the request fits.
	retryAfter time.Duration
	// exceeded names the budget that refused ("requests" or "tokens").
	exceeded string
	// tooLarge is a request larger than the whole token budget.
	tooLarge bool
}

func newLimiter(rl RateLimits, now time.Time) *limiter {
	if rl.RequestsPerMinute == 0 && rl.TokensPerMinute == 0 {
		return nil
	}
	return &limiter{rpm: rl.RequestsPerMinute, tpm: rl.TokensPerMinute,
		reqs: float64(rl.RequestsPerMinute), toks: float64(rl.TokensPerMinute), last: now}
}

func (l *limiter) refill(now time.Time) {
	dt := now.Sub(l.last).Minutes()
	if dt <= 0 {
		return
	}
	l.last = now
	l.reqs = math.Min(float64(l.rpm), l.reqs+dt*float64(l.rpm))
	l.toks = math.Min(float64(l.tpm), l.toks+dt*float64(l.tpm))
}

// take spends one request and n tokens if both budgets allow, and reports
// the state either way.
func (l *limiter) take(now time.Time, n int) (limitState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	ok := true
	var st limitState
	switch {
	case l.rpm > 0 && l.reqs < 1:
		ok, st.exceeded = false, "requests"
		st.retryAfter = perMinute(1-l.reqs, l.rpm)
	case l.tpm > 0 && n > l.tpm:
		ok, st.exceeded, st.tooLarge = false, "tokens", true
		st.retryAfter = time.Minute
	case l.tpm > 0 && l.toks < float64(n):
		ok, st.exceeded = false, "tokens"
		st.retryAfter = perMinute(float64(n)-l.toks, l.tpm)
	}
	if ok {
		l.reqs--
		l.toks -= float64(n)
	}
	l.fill(&st)
	return st, ok
}

// peek reports the state without spending anything, for answers that
// never reach the budget (malformed requests).
func (l *limiter) peek(now time.Time) limitState {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	var st limitState
	l.fill(&st)
	return st
}

func (l *limiter) fill(st *limitState) {
	st.rpm, st.tpm = l.rpm, l.tpm
	if l.rpm > 0 {
		st.remReqs = max(0, int(l.reqs))
		st.resetReqs = perMinute(float64(l.rpm)-l.reqs, l.rpm)
	}
	if l.tpm > 0 {
		st.remToks = max(0, int(l.toks))
		st.resetTs = perMinute(float64(l.tpm)-l.toks, l.tpm)
	}
}

// perMinute is how long a bucket refilling at rate per minute takes to
// gain amount, to the millisecond (rounded, so float noise does not add a
// second to Retry-After).
func perMinute(amount float64, rate int) time.Duration {
	if amount <= 0 {
		return 0
	}
	d := time.Duration(amount / float64(rate) * float64(time.Minute)).Round(time.Millisecond)
	return max(d, time.Millisecond)
}

// writeHeaders sets OpenAI's x-ratelimit-* and Anthropic's
// anthropic-ratelimit-* headers (every API gets both, so any adapter can
// learn from any route), and Retry-After on a refusal.
func (st *limitState) writeHeaders(h http.Header, now time.Time) {
	if st.rpm > 0 {
		set(h, "X-Ratelimit-Limit-Requests", strconv.Itoa(st.rpm))
		set(h, "X-Ratelimit-Remaining-Requests", strconv.Itoa(st.remReqs))
		set(h, "X-Ratelimit-Reset-Requests", st.resetReqs.String())
		set(h, "Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(st.rpm))
		set(h, "Anthropic-Ratelimit-Requests-Remaining", strconv.Itoa(st.remReqs))
		set(h, "Anthropic-Ratelimit-Requests-Reset", now.Add(st.resetReqs).UTC().Format(time.RFC3339))
	}
	if st.tpm > 0 {
		set(h, "X-Ratelimit-Limit-Tokens", strconv.Itoa(st.tpm))
		set(h, "X-Ratelimit-Remaining-Tokens", strconv.Itoa(st.remToks))
		set(h, "X-Ratelimit-Reset-Tokens", st.resetTs.String())
		set(h, "Anthropic-Ratelimit-Tokens-Limit", strconv.Itoa(st.tpm))
		set(h, "Anthropic-Ratelimit-Tokens-Remaining", strconv.Itoa(st.remToks))
		set(h, "Anthropic-Ratelimit-Tokens-Reset", now.Add(st.resetTs).UTC().Format(time.RFC3339))
	}
	if st.exceeded != "" {
		secs := int64(math.Ceil(st.retryAfter.Seconds()))
		set(h, "Retry-After", strconv.FormatInt(max(1, secs), 10))
		set(h, "Retry-After-Ms", strconv.FormatInt(st.retryAfter.Milliseconds(), 10))
	}
}

// set stores a header under an already canonical key, skipping the
// canonicalisation Header.Set does on every call.
func set(h http.Header, key, value string) { h[key] = []string{value} }
