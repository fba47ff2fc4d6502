package ratelimit

import (
	"context"
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/extractq/extractq/internal/providers"
)

// Wrap returns p paced by the pool: every Chat first waits out any pause and
// reserves one request and its estimated tokens (prompt characters / 4 plus
// the answer's MaxTokens), then, once answered, corrects the estimate with the
// reported usage and learns from the reported rate-limit state. A 429 or 529
// pauses the whole pool. Wrap does not take a job slot: the worker holds one
// for the whole job (AcquireSlot).
func (p *Pool) Wrap(inner providers.Provider) providers.Provider {
	return &paced{pool: p, inner: inner}
}

type paced struct {
	pool  *Pool
	inner providers.Provider
}

func (w *paced) Name() string                         { return w.inner.Name() }
func (w *paced) Model() string                        { return w.inner.Model() }
func (w *paced) Capabilities() providers.Capabilities { return w.inner.Capabilities() }
func (w *paced) Chat(ctx context.Context, req providers.Request) (*providers.Response, error) {
	est := w.pool.estimate(req)
	if err := w.pool.reserve(ctx, est); err != nil {
		return nil, &providers.Error{Provider: w.inner.Name(), Class: providers.ClassCanceled, Message: "waiting for rate-limit budget", Err: err}
	}
	resp, err := w.inner.Chat(ctx, req)
	w.pool.settle(est, resp, err)
	return resp, err
}

// estimate is the tokens a request is expected to use: about four characters
// per prompt token, plus the whole answer budget.
func (p *Pool) estimate(req providers.Request) int {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	answer := req.MaxTokens
	if answer <= 0 {
		answer = p.defaultMaxTokens
	}
	return chars/4 + answer
}

// reserve waits until the pool is not paused and the request and its tokens
// fit the pacing. If a pause starts while it waits, the reservation is
// spent (conservatively) and a new one is taken after the pause, so calls
// queued before the pause do not all fire the moment it ends.
func (p *Pool) reserve(ctx context.Context, tokens int) error {
	for {
		p.mu.Lock()
		now := p.clock.Now()
		if now.Before(p.pausedUntil) {
			d := p.pausedUntil.Sub(now)
			p.mu.Unlock()
			if err := p.sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		p.applyRatesLocked(now)
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
		p.mu.Unlock()

		if err := p.sleep(ctx, delay); err != nil {
			p.mu.Lock()
			at := p.clock.Now()
			for _, r := range taken {
				r.CancelAt(at)
			}
			p.tokenCredit += credit
			p.broadcastLocked()
			p.mu.Unlock()
			return err
		}
		if _, paused := p.Paused(); !paused {
			return nil
		}
	}
}

// settle corrects the token estimate with the reported usage, learns from
// the reported rate-limit state and adapts to the outcome.
func (p *Pool) settle(est int, resp *providers.Response, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	p.calls++
	if err == nil && resp != nil {
		used := resp.Usage.Total()
		if used <= 0 {
			used = est
		}
		p.tokensUsed += int64(used)
		p.correctTokensLocked(now, est, used)
		p.learnLocked(now, resp.RateLimit)
		p.succeededLocked()
		return
	}
	var pe *providers.Error
	if !errors.As(err, &pe) {
		return
	}
	p.learnLocked(now, pe.RateLimit)
	switch pe.Class {
	case providers.ClassRateLimited:
		p.rateLimited++
		p.throttledLocked(now, pe, "rate_limited")
	case providers.ClassOverloaded:
		p.overloaded++
		p.throttledLocked(now, pe, "overloaded")
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

// learnLocked takes what the provider reported: a limit lower than the
// configured one replaces it (only then: a reported limit's window is not
// always a minute, e.g. some providers report requests per day), and the
// remaining/reset pairs steer the pacing; nothing remaining pauses the pool
// until the reset.
func (p *Pool) learnLocked(now time.Time, rl providers.RateLimit) {
	if rl.HasRequests {
		if l := rl.LimitRequests; l > 0 && l < p.limits.RPM && l != p.learnedRPM {
			p.learnedRPM = l
			p.log.Warn("ratelimit: provider reports a lower request limit than configured; using it", "configured_rpm", p.limits.RPM, "reported", l)
		}
		p.reqHdr = headerState{at: now, limit: rl.LimitRequests, remaining: rl.RemainingRequests, reset: rl.ResetRequests}
		if rl.RemainingRequests == 0 && rl.ResetRequests > 0 {
			p.pauseLocked(now, rl.ResetRequests, "no_requests_remaining")
		}
	}
	if rl.HasTokens {
		if l := rl.LimitTokens; l > 0 && l < p.limits.TPM && l != p.learnedTPM {
			p.learnedTPM = l
			p.log.Warn("ratelimit: provider reports a lower token limit than configured; using it", "configured_tpm", p.limits.TPM, "reported", l)
		}
		p.tokHdr = headerState{at: now, limit: rl.LimitTokens, remaining: rl.RemainingTokens, reset: rl.ResetTokens}
		if rl.RemainingTokens == 0 && rl.ResetTokens > 0 {
			p.pauseLocked(now, rl.ResetTokens, "no_tokens_remaining")
		}
	}
	p.applyRatesLocked(now)
}

// throttledLocked handles a 429/529: pause the pool until Retry-After (else
// the reset the provider named, else DefaultPause), then ramp back up; a
// repeat within aimdWindow halves the effective concurrency. 429s from calls
// already in flight when the pause began belong to the same event.
func (p *Pool) throttledLocked(now time.Time, pe *providers.Error, reason string) {
	if now.Before(p.pausedUntil) && p.pauseReason != "no_requests_remaining" && p.pauseReason != "no_tokens_remaining" {
		return
	}
	d := pe.RateLimit.RetryAfter
	if d <= 0 {
		d = max(pe.RateLimit.ResetRequests, pe.RateLimit.ResetTokens)
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
		p.broadcastLocked()
	}
}
