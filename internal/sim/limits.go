package sim

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limiter shapes for RateLimits.Shape: how the simulator counts a
// per-minute budget. Providers differ here, and a client paced for one
// shape can fail against another, so the simulator offers each.
const (
	// ShapeTokenBucket (the default) holds one minute's worth and refills
	// continuously: unused budget accumulates up to a full minute, so a
	// burst after a quiet spell is forgiven.
	ShapeTokenBucket = "token-bucket"
	// ShapeSlidingWindow counts what was admitted in the trailing minute,
	// exactly (a log, to the millisecond): a request is refused when it
	// would take that count above the limit, and Retry-After says when
	// enough of the oldest requests leave the window. Strict: no burst is
	// forgiven, and pacing exactly at the limit with any jitter overflows.
	ShapeSlidingWindow = "sliding-window"
	// ShapeFixedWindow counts from the start of each wall-clock minute and
	// resets on the minute; Retry-After is the next minute. It allows up to
	// twice the limit across a boundary, and refuses everything once a
	// minute's budget is spent early.
	ShapeFixedWindow = "fixed-window"
)

// Header modes for RateLimits.Headers: what a response says of the limits.
const (
	// HeadersAll (the default) sends OpenAI's x-ratelimit-* and
	// Anthropic's anthropic-ratelimit-* on every response, and Retry-After
	// with retry-after-ms on a refusal.
	HeadersAll = "all"
	// HeadersRetryAfter sends only Retry-After, in whole seconds, on a
	// refusal, as Gemini and many OpenAI-compatible servers do: a client
	// learns nothing of the budget until it is refused.
	HeadersRetryAfter = "retry-after"
)

// LimiterShapes lists the shapes RateLimits.Shape accepts.
func LimiterShapes() []string {
	return []string{ShapeTokenBucket, ShapeSlidingWindow, ShapeFixedWindow}
}

// limitWindow is the period every budget is counted over.
const limitWindow = time.Minute

// meter counts one budget (requests or tokens) in one shape. Every method
// is called with the limiter's lock held and a non-decreasing now.
type meter interface {
	// avail is what may be spent now.
	avail(now time.Time) float64
	// wait is how long until amount fits (amount at most the limit).
	wait(now time.Time, amount float64) time.Duration
	// spend counts amount as admitted now.
	spend(now time.Time, amount float64)
	// reset is how long until the budget is whole again (0 when it is).
	reset(now time.Time) time.Duration
	// fill spends the whole budget as traffic arriving evenly at exactly
	// the limit would have, so nothing is held in reserve.
	fill(now time.Time)
}

func newMeter(shape string, limit int, now time.Time) meter {
	switch shape {
	case ShapeSlidingWindow:
		return &slidingWindow{limit: float64(limit)}
	case ShapeFixedWindow:
		return &fixedWindow{limit: float64(limit)}
	default:
		return &tokenBucket{limit: float64(limit), level: float64(limit), last: now}
	}
}

// tokenBucket holds limit units and refills at limit per minute.
type tokenBucket struct {
	limit, level float64
	last         time.Time
}

func (b *tokenBucket) refill(now time.Time) {
	if dt := now.Sub(b.last); dt > 0 {
		b.last = now
		b.level = math.Min(b.limit, b.level+dt.Minutes()*b.limit)
	}
}

func (b *tokenBucket) avail(now time.Time) float64 { b.refill(now); return b.level }

func (b *tokenBucket) wait(now time.Time, amount float64) time.Duration {
	b.refill(now)
	return perMinute(amount-b.level, b.limit)
}

func (b *tokenBucket) spend(now time.Time, amount float64) { b.refill(now); b.level -= amount }

func (b *tokenBucket) reset(now time.Time) time.Duration {
	b.refill(now)
	return perMinute(b.limit-b.level, b.limit)
}

func (b *tokenBucket) fill(now time.Time) { b.refill(now); b.level = 0 }

// slidingWindow is a log of what was admitted in the trailing minute. An
// entry leaves the window one minute after it was admitted; entries in the
// same millisecond share one slot (stamped with the latest, so a slot never
// leaves early), which bounds the log at 60,000 slots whatever the traffic.
type slidingWindow struct {
	limit float64
	log   []slot // oldest first; log[head:] is live
	head  int
	sum   float64
}

type slot struct {
	at     time.Time
	amount float64
}

// prune drops the entries that have left the window (admitted a minute or
// more ago).
func (w *slidingWindow) prune(now time.Time) {
	for w.head < len(w.log) && !now.Before(w.log[w.head].at.Add(limitWindow)) {
		w.sum -= w.log[w.head].amount
		w.head++
	}
	if w.head == len(w.log) {
		w.log, w.head, w.sum = w.log[:0], 0, 0 // also clears float drift
	} else if w.head > 1024 && w.head > len(w.log)/2 {
		w.log = append(w.log[:0], w.log[w.head:]...)
		w.head = 0
	}
}

func (w *slidingWindow) avail(now time.Time) float64 { w.prune(now); return w.limit - w.sum }

// wait walks from the oldest entry until enough has left the window.
func (w *slidingWindow) wait(now time.Time, amount float64) time.Duration {
	w.prune(now)
	need := w.sum + amount - w.limit
	if need <= 0 {
		return 0
	}
	for _, s := range w.log[w.head:] {
		need -= s.amount
		if need <= 1e-9 {
			return ceilMilli(s.at.Add(limitWindow).Sub(now))
		}
	}
	return limitWindow // unreachable while amount <= limit
}

func (w *slidingWindow) spend(now time.Time, amount float64) {
	w.prune(now)
	w.sum += amount
	if n := len(w.log); n > w.head && w.log[n-1].at.Truncate(time.Millisecond).Equal(now.Truncate(time.Millisecond)) {
		w.log[n-1].at, w.log[n-1].amount = now, w.log[n-1].amount+amount
		return
	}
	w.log = append(w.log, slot{at: now, amount: amount})
}

func (w *slidingWindow) reset(now time.Time) time.Duration {
	w.prune(now)
	if w.head == len(w.log) {
		return 0
	}
	return ceilMilli(w.log[len(w.log)-1].at.Add(limitWindow).Sub(now))
}

// fill replaces the log with a minute of admissions spread evenly over
// every millisecond, the last one now: the next unit leaves the window
// after 60 s / limit, as it would after a long run at exactly the limit.
func (w *slidingWindow) fill(now time.Time) {
	const slots = int(limitWindow / time.Millisecond)
	const n = float64(slots)
	w.log, w.head, w.sum = w.log[:0], 0, 0
	total := math.Floor(w.limit)
	start := now.Add(-limitWindow)
	for i := range slots {
		a := math.Floor(float64(i+1)*total/n) - math.Floor(float64(i)*total/n)
		if a > 0 {
			w.log = append(w.log, slot{at: start.Add(time.Duration(i+1) * time.Millisecond), amount: a})
			w.sum += a
		}
	}
}

// fixedWindow counts from the start of the current wall-clock minute.
type fixedWindow struct {
	limit, used float64
	start       time.Time
}

func (w *fixedWindow) roll(now time.Time) {
	if s := now.Truncate(limitWindow); !s.Equal(w.start) {
		w.start, w.used = s, 0
	}
}

func (w *fixedWindow) avail(now time.Time) float64 { w.roll(now); return w.limit - w.used }

func (w *fixedWindow) wait(now time.Time, amount float64) time.Duration {
	w.roll(now)
	if w.used+amount <= w.limit {
		return 0
	}
	return w.start.Add(limitWindow).Sub(now)
}

func (w *fixedWindow) spend(now time.Time, amount float64) { w.roll(now); w.used += amount }

func (w *fixedWindow) reset(now time.Time) time.Duration {
	w.roll(now)
	if w.used == 0 {
		return 0
	}
	return w.start.Add(limitWindow).Sub(now)
}

// fill counts what traffic at exactly the limit, evenly spread, has used of
// the current minute so far.
func (w *fixedWindow) fill(now time.Time) {
	w.roll(now)
	w.used = math.Floor(w.limit * float64(now.Sub(w.start)) / float64(limitWindow))
}

// limiter enforces a profile's per-minute request and token budgets, each
// counted by a meter of the profile's shape. A request is admitted only
// when both budgets allow it, and then spends from both.
type limiter struct {
	mu       sync.Mutex
	shape    string
	headers  string
	rpm, tpm int
	reqs     meter // nil when requests are not limited
	toks     meter // nil when tokens are not limited
}

// limitState is what one response reports of the limits.
type limitState struct {
	onlyRetryAfter     bool // HeadersRetryAfter
	rpm, tpm           int
	remReqs, remToks   int
	resetReqs, resetTs time.Duration // until the budget is whole again
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
	l := &limiter{shape: rl.Shape, headers: rl.Headers, rpm: rl.RequestsPerMinute, tpm: rl.TokensPerMinute}
	if l.shape == "" {
		l.shape = ShapeTokenBucket
	}
	if l.rpm > 0 {
		l.reqs = newMeter(l.shape, l.rpm, now)
	}
	if l.tpm > 0 {
		l.toks = newMeter(l.shape, l.tpm, now)
	}
	return l
}

// take spends one request and n tokens if both budgets allow, and reports
// the state either way.
func (l *limiter) take(now time.Time, n int) (limitState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var st limitState
	switch {
	case l.reqs != nil && l.reqs.avail(now) < 1:
		st.exceeded, st.retryAfter = "requests", l.reqs.wait(now, 1)
	case l.toks != nil && n > l.tpm:
		st.exceeded, st.tooLarge, st.retryAfter = "tokens", true, limitWindow
	case l.toks != nil && l.toks.avail(now) < float64(n):
		st.exceeded, st.retryAfter = "tokens", l.toks.wait(now, float64(n))
	}
	ok := st.exceeded == ""
	if ok {
		if l.reqs != nil {
			l.reqs.spend(now, 1)
		}
		if l.toks != nil {
			l.toks.spend(now, float64(n))
		}
	}
	l.fillState(now, &st)
	return st, ok
}

// peek reports the state without spending anything, for answers that
// never reach the budget (malformed requests).
func (l *limiter) peek(now time.Time) limitState {
	l.mu.Lock()
	defer l.mu.Unlock()
	var st limitState
	l.fillState(now, &st)
	return st
}

// fill spends both budgets as traffic at exactly the limits would have.
func (l *limiter) fill(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range []meter{l.reqs, l.toks} {
		if m != nil {
			m.fill(now)
		}
	}
}

func (l *limiter) fillState(now time.Time, st *limitState) {
	st.rpm, st.tpm = l.rpm, l.tpm
	st.onlyRetryAfter = l.headers == HeadersRetryAfter
	if l.reqs != nil {
		st.remReqs = max(0, int(l.reqs.avail(now)))
		st.resetReqs = l.reqs.reset(now)
	}
	if l.toks != nil {
		st.remToks = max(0, int(l.toks.avail(now)))
		st.resetTs = l.toks.reset(now)
	}
}

// perMinute is how long a bucket refilling at rate per minute takes to
// gain amount, to the millisecond (rounded, so float noise does not add a
// second to Retry-After).
func perMinute(amount, rate float64) time.Duration {
	if amount <= 0 {
		return 0
	}
	d := time.Duration(amount / rate * float64(time.Minute)).Round(time.Millisecond)
	return max(d, time.Millisecond)
}

// ceilMilli rounds a wait up to the millisecond: a client that waits what
// the header says must find the room there.
func ceilMilli(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// writeHeaders sets OpenAI's x-ratelimit-* and Anthropic's
// anthropic-ratelimit-* headers (every API gets both, so any adapter can
// learn from any route), and Retry-After on a refusal. Whatever the shape,
// "remaining" is what may be spent now and "reset" is when the budget is
// whole again, as both providers document them. With HeadersRetryAfter
// only a refusal's Retry-After is sent.
func (st *limitState) writeHeaders(h http.Header, now time.Time) {
	if st.onlyRetryAfter {
		if st.exceeded != "" {
			set(h, "Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(st.retryAfter.Seconds()))), 10))
		}
		return
	}
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
