package ratelimit

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/extractq/extractq/llm"

	"golang.org/x/time/rate"
)

// Wrap returns p paced by the pool: every Chat first waits out any pause and
// reserves one request and its estimated tokens (see estimate), then, once
// answered, corrects the estimate with the reported usage and learns from the
// reported rate-limit state. A 429 or 529
// pauses the whole pool. Wrap does not take a job slot: the worker holds one
// for the whole job (AcquireSlot).
func (p *Pool) Wrap(inner llm.Provider) llm.Provider {
	w := &paced{pool: p, inner: inner}
	if c, ok := inner.(llm.Completer); ok { // keep prefill mode working (complete.go)
		return &pacedCompleter{paced: w, completer: c}
	}
	return w
}

type paced struct {
	pool  *Pool
	inner llm.Provider
}

func (w *paced) Name() string                   { return w.inner.Name() }
func (w *paced) Model() string                  { return w.inner.Model() }
func (w *paced) Capabilities() llm.Capabilities { return w.inner.Capabilities() }
func (w *paced) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	est := w.pool.estimate(req)
	if err := w.pool.reserve(ctx, est); err != nil {
		return nil, &llm.Error{Provider: w.inner.Name(), Class: llm.ClassCanceled, Message: "waiting for rate-limit budget", Err: err}
	}
	resp, err := w.inner.Chat(ctx, req)
	w.pool.settle(est, resp, err)
	return resp, err
}

// estimate is the tokens a request is expected to use: about four characters
// per prompt token, plus the answer budget: MaxTokens (or the pool's default)
// until the pool has seen answers, then their recent average with headroom,
// never above MaxTokens. Reserving every call's whole MaxTokens would leave
// most of a token budget idle while calls are in flight (answers are usually
// far shorter); the reported usage corrects the estimate either way.
func (p *Pool) estimate(req llm.Request) int {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	answer := req.MaxTokens
	if answer <= 0 {
		answer = p.defaultMaxTokens
	}
	p.mu.Lock()
	if p.answerAvg > 0 {
		answer = min(answer, int(math.Ceil(p.answerAvg*answerHeadroom)))
	}
	p.mu.Unlock()
	return chars/4 + answer
}

// reserve waits until the pool is not paused and the request and its tokens
// fit the pacing. If a 429/529 pause starts while it waits, the reservation
// is spent (conservatively) and a new one is taken after the pause, so calls
// queued before the pause do not all fire the moment it ends; a pause for
// an exhausted budget (headers) is only waited out.
func (p *Pool) reserve(ctx context.Context, tokens int) error {
	for {
		// waitPause's check and the reservation share one lock and one
		// reading of the clock.
		p.mu.Lock()
		now := p.clock.Now()
		if d := p.blockedUntilLocked().Sub(now); d > 0 {
			p.mu.Unlock()
			if err := p.sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		throttles := p.pauses
		p.granted = max(0, p.granted-1)
		p.lastEstimate = tokens
		p.applyRatesLocked(now)
		if j := p.idleJitterLocked(now, tokens); j > 0 {
			// Hold the whole pool, so the pacing schedule moves with the
			// call and the calls after it do not fire together either.
			p.spreadUntil, p.lastCall = now.Add(j), now.Add(j)
			p.mu.Unlock()
			continue
		}
		var delay time.Duration
		var taken []*rate.Reservation
		if p.reqLim != nil {
			r := p.reqLim.ReserveN(now, 1)
			taken = append(taken, r)
			delay = max(delay, r.DelayFrom(now))
		}
		credit := 0.0
		if p.tokLim != nil {
			credit = min(p.tokenCredit, float64(tokens))
			p.tokenCredit -= credit
			for need := tokens - int(credit); need > 0; {
				n := min(need, p.tokLim.Burst())
				r := p.tokLim.ReserveN(now, n)
				taken = append(taken, r)
				delay = max(delay, r.DelayFrom(now))
				need -= n
			}
		}
		p.lastCall = now.Add(delay)
		p.mu.Unlock()

		if err := p.sleep(ctx, delay); err != nil {
			p.mu.Lock()
			at := p.clock.Now()
			for _, r := range taken {
				r.CancelAt(at)
			}
			p.tokenCredit += credit
			p.wake.broadcast()
			p.mu.Unlock()
			return err
		}
		p.mu.Lock()
		throttled := p.pauses != throttles
		var blocked time.Duration
		if until := p.blockedUntilLocked(); !throttled && until.After(now) {
			// The clock never goes back: a block that ended by now, when
			// the reservation was taken, has ended; only a later one
			// needs the clock again.
			blocked = until.Sub(p.clock.Now())
		}
		p.mu.Unlock()
		if !throttled {
			if blocked <= 0 {
				return nil
			}
			return p.waitPause(ctx)
		}
	}
}

// idleJitterLocked is a random hold of up to one pacing interval for a call
// that finds its pool idle (no call for two intervals, and the bucket full)
// while the provider's budget may be low (nothing reported yet, or little
// remaining at the last report). Idle workers all hold a ready call; without
// the wait a fleet started or woken together would fire them at one instant,
// one call per worker, which a nearly empty provider budget answers with
// 429s. Spread over the interval, the fleet's first calls arrive at the
// fleet's rate. A busy pool, or a provider reporting plenty remaining, costs
// no wait.
func (p *Pool) idleJitterLocked(now time.Time, tokens int) time.Duration {
	idle := func(lim *rate.Limiter, units float64) float64 {
		interval := units / float64(lim.Limit()) // seconds
		if lim.TokensAt(now) < float64(lim.Burst()) || now.Sub(p.lastCall).Seconds() < 2*interval {
			return 0
		}
		return interval
	}
	// mayBeLow first: a provider reporting plenty left (a busy pool's
	// case) costs no look at the limiters, each behind its own lock.
	var interval float64
	if p.reqLim != nil && mayBeLow(p.reqHdr, p.fleetRPM(), now) {
		interval = idle(p.reqLim, 1)
	}
	if p.tokLim != nil && mayBeLow(p.tokHdr, p.fleetTPM(), now) {
		interval = max(interval, idle(p.tokLim, float64(tokens)))
	}
	return time.Duration(p.jitter() * interval * float64(time.Second))
}

// mayBeLow reports whether the provider's budget may be nearly spent: it
// has reported nothing yet, or less than lowWater of its limit remaining
// and its reset (the budget full again) has not passed.
func mayBeLow(h headerState, fleetLimit int, now time.Time) bool {
	if h.at.IsZero() {
		return true
	}
	if !now.Before(h.until) {
		return false
	}
	limit := h.limit
	if limit == 0 {
		limit = fleetLimit
	}
	return float64(h.remaining) < lowWater*float64(limit)
}

// waitPause returns once the pool is neither paused nor holding to spread
// idle calls (or ctx ends).
func (p *Pool) waitPause(ctx context.Context) error {
	for {
		p.mu.Lock()
		d := p.blockedUntilLocked().Sub(p.clock.Now())
		p.mu.Unlock()
		if d <= 0 {
			return nil
		}
		if err := p.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// settle corrects the token estimate with the reported usage, learns from
// the reported rate-limit state and adapts to the outcome.
func (p *Pool) settle(est int, resp *llm.Response, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	p.calls++
	defer p.wake.broadcast() // returned tokens or a grown concurrency may make room
	if err == nil && resp != nil {
		used := resp.Usage.Total()
		if used <= 0 {
			used = est
		}
		p.tokensUsed += int64(used)
		if p.callAvg == 0 {
			p.callAvg = float64(used)
		} else {
			p.callAvg += answerEWMA * (float64(used) - p.callAvg)
		}
		if c := resp.Usage.CompletionTokens; c > 0 {
			if p.answerAvg == 0 {
				p.answerAvg = float64(c)
			} else {
				p.answerAvg += answerEWMA * (float64(c) - p.answerAvg)
			}
		}
		p.correctTokensLocked(now, est, used)
		p.learnLocked(now, resp.RateLimit, est)
		p.succeededLocked()
		return
	}
	var pe *llm.Error
	if !errors.As(err, &pe) {
		return
	}
	p.learnLocked(now, pe.RateLimit, est)
	switch pe.Class {
	case llm.ClassRateLimited:
		p.rateLimited++
		p.throttledLocked(now, pe, est, PauseRateLimited)
	case llm.ClassOverloaded:
		p.overloaded++
		p.throttledLocked(now, pe, est, PauseOverloaded)
	}
}

// correctTokensLocked hands tokens reserved but not used to the next call,
// or borrows the excess from the future when the call used more.
func (p *Pool) correctTokensLocked(now time.Time, est, used int) {
	if p.tokLim == nil {
		return
	}
	if diff := est - used; diff > 0 {
		// Capped so an idle pool does not hoard a burst.
		p.tokenCredit = min(p.tokenCredit+float64(diff), float64(max(p.tokLim.Burst(), est)))
		return
	}
	for over := used - est; over > 0; {
		n := min(over, p.tokLim.Burst())
		p.tokLim.ReserveN(now, n) // debt: later calls wait for it
		over -= n
	}
}

// learnLocked takes what the provider reported on a call estimated at est
// tokens. A limit lower than the configured one replaces it (only then: a
// reported limit's window is not always a minute, e.g. some providers report
// requests per day). The remaining/reset pairs steer the pacing
// (headerFactor); nothing remaining pauses the pool until the provider's
// bucket, refilling at (limit-remaining)/reset, holds one call for every
// member of the fleet.
func (p *Pool) learnLocked(now time.Time, rl llm.RateLimit, est int) {
	if rl.HasRequests {
		if l := rl.LimitRequests; l > 0 && l < p.limits.RPM && l != p.learnedRPM {
			p.learnedRPM = l
			p.log.Warn("ratelimit: provider reports a lower request limit than configured; using it", "configured_rpm", p.limits.RPM, "reported", l)
		}
		p.reqHdr = newHeaderState(now, rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests)
		if rl.RemainingRequests == 0 && rl.ResetRequests > 0 {
			p.pauseLocked(now, refillTime(rl.ResetRequests, rl.LimitRequests, p.members), PauseNoRequests)
		}
	}
	if rl.HasTokens {
		if l := rl.LimitTokens; l > 0 && l < p.limits.TPM && l != p.learnedTPM {
			p.learnedTPM = l
			p.log.Warn("ratelimit: provider reports a lower token limit than configured; using it", "configured_tpm", p.limits.TPM, "reported", l)
		}
		p.tokHdr = newHeaderState(now, rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens)
		if rl.RemainingTokens == 0 && rl.ResetTokens > 0 {
			p.pauseLocked(now, refillTime(rl.ResetTokens, rl.LimitTokens, p.members*est), PauseNoTokens)
		}
	}
	p.applyRatesLocked(now)
}

// refillTime is how long an empty bucket of limit units, full again after
// reset, takes to hold need units; the whole reset when the limit is unknown.
func refillTime(reset time.Duration, limit, need int) time.Duration {
	if limit <= 0 || need >= limit {
		return reset
	}
	return time.Duration(float64(reset) * float64(need) / float64(limit))
}

// throttledLocked handles a 429/529: pause the pool until Retry-After (else
// until the provider's bucket, by its reset, holds a call for every member;
// else DefaultPause), then ramp back up; a repeat within aimdWindow halves
// the effective concurrency. 429s from calls already in flight when the
// pause began belong to the same event.
func (p *Pool) throttledLocked(now time.Time, pe *llm.Error, est int, reason string) {
	if now.Before(p.pausedUntil) && (p.pauseReason == PauseRateLimited || p.pauseReason == PauseOverloaded) {
		return
	}
	rl := pe.RateLimit
	d := rl.RetryAfter
	if d <= 0 {
		d = max(refillTime(rl.ResetRequests, rl.LimitRequests, p.members), refillTime(rl.ResetTokens, rl.LimitTokens, p.members*est))
	}
	if d <= 0 {
		d = DefaultPause
	}
	if !p.last429.IsZero() && now.Sub(p.last429) < aimdWindow && p.effConc > 1 {
		p.effConc = max(1, p.effConc/2)
		p.log.Warn("ratelimit: repeated 429/529; concurrency halved", "concurrency", p.effConc)
	}
	p.last429 = now
	p.successes = 0
	p.pauses++
	p.pauseLocked(now, d, reason)
	p.rampFrom = p.pausedUntil
}

// pauseLocked pauses the pool for d (capped), never shortening a pause.
func (p *Pool) pauseLocked(now time.Time, d time.Duration, reason string) {
	until := now.Add(min(d, p.maxPause))
	if !until.After(p.pausedUntil) {
		return
	}
	p.pausedUntil, p.pauseReason = until, reason
	p.log.Info("ratelimit: pool paused", "reason", reason, "for", min(d, p.maxPause))
}

// succeededLocked grows the effective concurrency by one per round of
// successful calls (additive increase) up to the share.
func (p *Pool) succeededLocked() {
	if p.effConc >= p.shareConc() {
		return
	}
	p.successes++
	if p.successes >= p.effConc {
		p.effConc++
		p.successes = 0
		p.wake.broadcast()
	}
}
