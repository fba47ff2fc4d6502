package batchpool

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/llm"
)

// storeTimeout bounds one store call; a slower store is tried again later.
const storeTimeout = 30 * time.Second

// claimLimit is the most batches one claim takes over.
const claimLimit = 64

// Run gathers, submits and polls batches until ctx ends. Batches still
// running then stay recorded, their leases given up: the next worker of
// the pool that asks takes them over. Run owns every goroutine it starts
// and returns after they have stopped.
func (r *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer r.release()
	defer wg.Wait()
	tick := time.NewTicker(r.tick())
	defer tick.Stop()
	var claiming, watching sync.Mutex // one claim and one watch at a time
	var lastClaim, lastWatch time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.kick:
		}
		now := time.Now()
		for _, s := range r.due(now) {
			wg.Go(func() { r.submit(ctx, s.key, s.calls) })
		}
		for _, h := range r.pollable(now) {
			wg.Go(func() { r.poll(ctx, h) })
		}
		if now.Sub(lastClaim) >= r.set.PollMax && claiming.TryLock() {
			lastClaim = now
			wg.Go(func() { defer claiming.Unlock(); r.claim(ctx) })
		}
		if now.Sub(lastWatch) >= r.set.PollMin && watching.TryLock() {
			lastWatch = now
			wg.Go(func() { defer watching.Unlock(); r.watch(ctx) })
		}
	}
}

// release gives up the leases of the batches this worker polls.
func (r *Runner) release() {
	r.mu.Lock()
	ids := make([]int64, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.ReleaseBatches(ctx, r.worker, ids); err != nil {
		r.log.Warn("leases of running batches not given up; other workers take them over when they run out", "batches", len(ids), "err", err)
		return
	}
	r.log.Info("leases of running batches given up for the next worker", "batches", len(ids))
}

// tick is how often Run looks for work: fine enough for the shortest of
// max_wait and the poll interval, at most a second.
func (r *Runner) tick() time.Duration {
	return min(max(min(r.set.MaxWait, r.set.PollMin)/4, 10*time.Millisecond), time.Second)
}

// submission is a gathered batch, ready to submit.
type submission struct {
	key   groupKey
	calls []*call
}

// due takes the groups that are full or have waited max_wait, dropping
// calls whose job has gone (shutdown, or its context ended).
func (r *Runner) due(now time.Time) []submission {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []submission
	for k, g := range r.pending {
		g.calls = live(g.calls)
		for len(g.calls) >= r.set.MaxRequests {
			out = append(out, submission{k, g.calls[:r.set.MaxRequests:r.set.MaxRequests]})
			g.calls = g.calls[r.set.MaxRequests:]
			g.first = now
		}
		if len(g.calls) > 0 && now.Sub(g.first) >= r.set.MaxWait {
			out = append(out, submission{k, g.calls})
			g.calls = nil
		}
		if len(g.calls) == 0 {
			delete(r.pending, k)
		}
	}
	return out
}

// live drops calls nobody waits for any more.
func live(calls []*call) []*call {
	out := calls[:0]
	for _, c := range calls {
		if c.ctx.Err() == nil {
			out = append(out, c)
		}
	}
	clear(calls[len(out):])
	return out
}

// submit sends one gathered batch, split within the provider's limits. A
// request the provider could never take fails alone.
func (r *Runner) submit(ctx context.Context, k groupKey, calls []*call) {
	r.mu.Lock()
	b := r.batchers[k.spec]
	r.mu.Unlock()
	parts, err := b.SplitBatch(requests(calls))
	if err != nil {
		ok := calls[:0:0]
		for _, c := range calls {
			if _, err := b.SplitBatch([]llm.BatchRequest{c.req}); err != nil {
				c.deliver(llm.BatchResult{CustomID: c.req.CustomID, Err: err})
				continue
			}
			ok = append(ok, c)
		}
		calls = ok
		if parts, err = b.SplitBatch(requests(calls)); err != nil {
			fail(calls, err)
			return
		}
	}
	for _, part := range parts {
		r.submitPart(ctx, b, k, calls[:len(part):len(part)], 0)
		calls = calls[len(part):]
	}
}

// jobContexts are the contexts of the calls' jobs, for the links of a
// batch's span: nil with traces off.
func jobContexts(calls []*call) []context.Context {
	if !tracing.On() {
		return nil
	}
	out := make([]context.Context, len(calls))
	for i, c := range calls {
		out[i] = c.ctx
	}
	return out
}

func requests(calls []*call) []llm.BatchRequest {
	out := make([]llm.BatchRequest, len(calls))
	for i, c := range calls {
		out[i] = c.req
	}
	return out
}

func fail(calls []*call, err error) {
	for _, c := range calls {
		c.deliver(llm.BatchResult{CustomID: c.req.CustomID, Err: err})
	}
}

// submitPart submits calls as one batch and records it. A retryable
// refusal is tried again after a pause; a refusal for the enqueued-token
// quota halves the batch first (the quota counts what is queued, so a
// smaller batch may fit now and the other half later). A batch refused as
// an invalid request is narrowed down to the request refused (isolate).
func (r *Runner) submitPart(ctx context.Context, b llm.Batcher, k groupKey, calls []*call, try int) {
	if calls, err := r.trySubmit(ctx, b, k, calls, try); err != nil {
		r.isolate(ctx, b, k, calls, err, try)
	}
}

// trySubmit is submitPart without isolate: a refusal that may be one
// request's (refusedForARequest) is returned, with the calls still
// waiting, instead of failing them.
func (r *Runner) trySubmit(ctx context.Context, b llm.Batcher, k groupKey, calls []*call, try int) ([]*call, error) {
	calls = live(calls)
	if len(calls) == 0 {
		return nil, nil
	}
	for ; ; try++ {
		sctx, span := tracing.StartBatch(ctx, "submit", r.pool, k.spec, "", len(calls), jobContexts(calls))
		id, err := b.SubmitBatch(sctx, requests(calls))
		tracing.EndBatch(span, err)
		if err == nil {
			r.record(ctx, b, k, calls, id)
			return nil, nil
		}
		if ctx.Err() != nil {
			fail(calls, err)
			return nil, nil
		}
		var pe *llm.Error
		if errors.As(err, &pe) && refusedForARequest(pe) {
			return calls, err
		}
		if pe == nil || !pe.Retryable() || try >= r.set.SubmitRetries {
			r.log.Error("batch refused; its requests fail with the refusal",
				"requests", len(calls), "round", k.round, "err", err, "tries", try+1)
			fail(calls, err)
			return nil, nil
		}
		if pe.Class == llm.ClassRateLimited {
			if r.requeueForQuota(ctx, b, k, calls, try+1) {
				return nil, nil
			}
		}
		wait := max(pause(try, r.set.PollMin, r.set.PollMax), pe.RateLimit.RetryAfter)
		r.log.Warn("batch submission failed; trying again", "requests", len(calls), "err", err, "retry_in", wait)
		if !sleep(ctx, wait) {
			fail(calls, ctx.Err())
			return nil, nil
		}
	}
}

// requeueForQuota sends again calls whose batch the enqueued-token quota
// refused, and reports whether it took them. The quota counts what is
// queued: while batches of the model run here, the same batch waits for
// one of them to end (halving it then would break it into ever smaller
// batches, each refused in turn); with none running here, the batch is
// too large by itself, or the fleet's other batches fill the quota, and it
// is sent in halves. A lone request with none running is not taken: it is
// tried again with backoff.
func (r *Runner) requeueForQuota(ctx context.Context, b llm.Batcher, k groupKey, calls []*call, try int) bool {
	if n := r.running(k.spec); n > 0 {
		r.log.Info("batch refused by the provider's queue quota while batches run; it waits for one to end",
			"requests", len(calls), "running", n)
		if !r.waitFewer(ctx, k.spec, n) {
			fail(calls, ctx.Err())
			return true
		}
		r.submitPart(ctx, b, k, calls, try)
		return true
	}
	if len(calls) < 2 {
		return false
	}
	half := len(calls) / 2
	r.log.Warn("batch refused by the provider's queue quota; submitting it in halves", "requests", len(calls))
	r.submitPart(ctx, b, k, calls[:half:half], try)
	r.submitPart(ctx, b, k, calls[half:], try)
	return true
}

// running is the number of batches of spec this worker polls.
func (r *Runner) running(spec string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.held {
		if h.row.Provider == spec {
			n++
		}
	}
	return n
}

// waitFewer waits until fewer than n batches of spec run here; false when
// ctx ended first.
func (r *Runner) waitFewer(ctx context.Context, spec string, n int) bool {
	for r.running(spec) >= n {
		if !sleep(ctx, r.tick()) {
			return false
		}
	}
	return true
}

// refusedForARequest reports whether a refusal may be about one request of
// the batch: a provider validates a batch's requests at submit (Anthropic
// answers 400 naming one request's params) and refuses the whole batch
// for one bad request.
func refusedForARequest(e *llm.Error) bool {
	return e.Class == llm.ClassInvalidRequest || e.Class == llm.ClassContextLength
}

// isolate handles calls whose batch was refused with err for a reason that
// may be one request's: without it, one bad request would fail every job
// gathered with it. The batch is submitted in halves and the refused half
// halved again until the refused request is alone; only its job fails.
// When both halves are refused the reason is the batch's (a model without
// batches, a key without access) or there are several bad requests: every
// job of both halves fails, so a refusal costs at most two submissions per
// halving, never one per request.
func (r *Runner) isolate(ctx context.Context, b llm.Batcher, k groupKey, calls []*call, err error, try int) {
	for len(calls) > 1 {
		half := len(calls) / 2
		left, errL := r.trySubmit(ctx, b, k, calls[:half:half], try)
		right, errR := r.trySubmit(ctx, b, k, calls[half:], try)
		switch {
		case errL != nil && errR != nil:
			r.log.Error("both halves of a refused batch refused too; their requests fail with the refusal",
				"requests", len(left)+len(right), "round", k.round, "err", errL)
			fail(left, errL)
			fail(right, errR)
			return
		case errL != nil:
			calls, err = left, errL
		case errR != nil:
			calls, err = right, errR
		default:
			return
		}
	}
	if len(calls) == 1 {
		r.log.Error("batch request refused; its job fails", "job_id", calls[0].job, "round", k.round, "err", err)
	}
	fail(calls, err)
}

// record stores a submitted batch and starts polling it. The provider
// already runs it, so recording is tried until it succeeds: a batch that
// is not recorded cannot be taken over by another worker.
func (r *Runner) record(ctx context.Context, b llm.Batcher, k groupKey, calls []*call, id llm.BatchID) {
	row := audit.Batch{
		Provider: k.spec, ProviderBatchID: string(id), Pool: r.pool, Round: k.round,
		Requests: len(calls), Status: "submitted", State: string(llm.BatchRunning), WorkerID: r.worker,
		JobIDs: make([]string, len(calls)),
	}
	byID := make(map[string]*call, len(calls))
	for i, c := range calls {
		row.JobIDs[i] = c.job
		byID[c.req.CustomID] = c
	}
	for try := 0; ; try++ {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		rowID, err := r.store.RecordBatch(sctx, row, r.set.Lease)
		cancel()
		if err == nil {
			row.ID = rowID
			break
		}
		r.log.Error("batch submitted but not recorded yet; trying again (it cannot be taken over until it is)",
			"batch", id, "requests", len(calls), "err", err)
		if !sleep(ctx, pause(try, time.Second, 30*time.Second)) {
			r.log.Error("shutting down with a batch that was never recorded: its requests will be sent again",
				"batch", id, "requests", len(calls))
			fail(calls, &llm.Error{Class: llm.ClassServer, Message: "the batch could not be recorded before shutdown", Err: err})
			return
		}
	}
	r.log.Info("batch submitted", "batch", id, "row", row.ID, "requests", len(calls), "round", k.round)
	r.mu.Lock()
	r.held[row.ID] = &heldBatch{row: row, b: b, calls: byID, nextPoll: time.Now().Add(r.set.PollMin)}
	r.mu.Unlock()
}

// pollable marks the held batches whose poll is due as busy and returns
// them.
func (r *Runner) pollable(now time.Time) []*heldBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*heldBatch
	for _, h := range r.held {
		if !h.busy && !now.Before(h.nextPoll) {
			h.busy = true
			out = append(out, h)
		}
	}
	return out
}

// poll asks the provider about one held batch; a final batch has its lines
// stored and its requests answered.
func (r *Runner) poll(ctx context.Context, h *heldBatch) {
	id := llm.BatchID(h.row.ProviderBatchID)
	log := r.log.With("batch", id, "row", h.row.ID, "round", h.row.Round)
	sctx, span := tracing.StartBatch(ctx, "status", r.pool, h.row.Provider, string(id), h.row.Requests, nil)
	st, err := h.b.BatchStatus(sctx, id)
	tracing.EndBatch(span, err)
	if ctx.Err() == nil {
		r.pollReport(err)
	}
	if err == nil && st.State.Final() {
		if r.finish(ctx, h, st, log) {
			return
		}
	} else if err != nil {
		log.Warn("batch poll failed; polling again", "err", err)
		st = llm.BatchStatus{ProviderStatus: h.row.Status} // the lease is renewed all the same
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	err = r.store.UpdateBatch(sctx, h.row.ID, r.worker, st.ProviderStatus, counts(st.Counts), r.set.Lease)
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	h.busy = false
	h.polls++
	h.row.Status = st.ProviderStatus
	h.nextPoll = time.Now().Add(min(r.set.PollMin<<min(h.polls, 20), r.set.PollMax))
	if errors.Is(err, audit.ErrBatchLeaseLost) {
		// Another worker took the batch over (this one was too slow to
		// renew): it polls and stores the lines; these jobs wait for them.
		log.Warn("batch taken over by another worker; waiting for its answers", "err", err)
		r.drop(h)
	} else if err != nil {
		log.Warn("batch lease not renewed; trying again at the next poll", "err", err)
	}
}

// finish handles a final batch. It returns false when it must be tried
// again at the next poll (its lines could not be read or stored).
func (r *Runner) finish(ctx context.Context, h *heldBatch, st llm.BatchStatus, log *slog.Logger) bool {
	id := llm.BatchID(h.row.ProviderBatchID)
	var lines []llm.BatchLine
	if st.State != llm.BatchFailed {
		var err error
		sctx, span := tracing.StartBatch(ctx, "output", r.pool, h.row.Provider, string(id), h.row.Requests, nil)
		st, lines, err = h.b.BatchOutput(sctx, id)
		tracing.EndBatch(span, err)
		if ctx.Err() == nil {
			r.pollReport(err)
		}
		if err != nil {
			log.Warn("batch ended but its results could not be read; trying again", "err", err)
			return false
		}
	}
	stored := make([]audit.BatchLine, 0, len(lines))
	byID := make(map[string][]byte, len(lines))
	for _, l := range lines {
		job, round, ok := llm.ParseBatchCustomID(l.CustomID)
		if !ok {
			log.Warn("result line with a custom id extractq did not make; ignored", "custom_id", l.CustomID)
			continue
		}
		stored = append(stored, audit.BatchLine{CustomID: l.CustomID, JobID: job, Round: round, Line: l.Raw})
		byID[l.CustomID] = l.Raw
	}
	var failure *audit.BatchFailure
	if f := st.Failure; f != nil {
		failure = &audit.BatchFailure{Class: string(f.Class), Type: f.Type, Message: f.Message}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	err := r.store.FinishBatch(sctx, h.row.ID, r.worker, st.ProviderStatus, string(st.State), failure, counts(st.Counts), stored)
	cancel()
	r.mu.Lock()
	switch {
	case errors.Is(err, audit.ErrBatchLeaseLost):
		log.Warn("batch taken over by another worker before its lines were stored; waiting for its answers")
		r.drop(h)
		r.mu.Unlock()
		return true
	case err != nil:
		log.Warn("batch ended but its lines could not be stored; trying again", "err", err)
		h.busy = false
		h.nextPoll = time.Now().Add(r.set.PollMin)
		r.mu.Unlock()
		return true
	}
	delete(r.held, h.row.ID)
	calls := make([]*call, 0, len(h.calls))
	for _, c := range h.calls {
		calls = append(calls, c)
	}
	r.mu.Unlock()
	log.Info("batch ended", "state", st.State, "succeeded", st.Counts.Succeeded, "errored", st.Counts.Errored,
		"expired", st.Counts.Expired, "lines", len(stored), "waiting_here", len(calls))
	if st.State == llm.BatchFailed && st.Failure != nil && st.Failure.Class == llm.ClassRateLimited &&
		r.requeueForQuota(ctx, h.b, groupKey{spec: h.row.Provider, round: h.row.Round}, calls, 1) {
		// Refused for the enqueued-token quota: this worker has the
		// requests and sends them again (a lone request that cannot wait
		// for room gets the refusal, retryable: its job tries again).
		return true
	}
	for _, c := range calls {
		c.deliver(h.b.ParseBatchLine(c.req, byID[c.req.CustomID], st))
	}
	return true
}

// drop stops polling h; its calls wait for whoever holds it. r.mu is held.
func (r *Runner) drop(h *heldBatch) {
	delete(r.held, h.row.ID)
	for _, c := range h.calls {
		r.waiting[h.row.ID] = append(r.waiting[h.row.ID], c)
	}
}

// claim takes over batches whose worker stopped renewing their lease.
func (r *Runner) claim(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	rows, err := r.store.ClaimBatches(sctx, r.pool, r.worker, r.set.Lease, claimLimit)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("claiming abandoned batches failed; trying again", "err", err)
		}
		return
	}
	for _, row := range rows {
		r.mu.Lock()
		_, mine := r.held[row.ID]
		r.mu.Unlock()
		if mine {
			// This worker's own poll of the batch outlived the lease (a
			// slow store or provider): the claim renewed the lease, and
			// that poll goes on with the batch's calls. A second holder
			// would replace it without them, and the first, no longer
			// held, would never be polled again.
			r.log.Warn("claimed back a batch whose poll here outlived its lease", "batch", row.ProviderBatchID, "row", row.ID)
			continue
		}
		b, err := r.batcher(row.Provider)
		if err != nil {
			r.log.Error("cannot poll a batch taken over: its provider cannot be built here; another worker takes it once the lease runs out",
				"batch", row.ProviderBatchID, "provider", row.Provider, "err", err)
			continue
		}
		r.mu.Lock()
		h := &heldBatch{row: row, b: b, calls: map[string]*call{}, nextPoll: time.Now()}
		for _, c := range r.waiting[row.ID] {
			h.calls[c.req.CustomID] = c
		}
		delete(r.waiting, row.ID)
		r.held[row.ID] = h
		r.mu.Unlock()
		r.log.Info("took over a batch whose worker stopped polling it", "batch", row.ProviderBatchID, "row", row.ID,
			"round", row.Round, "requests", row.Requests)
	}
}

// batcher returns the Batcher of a provider spec, building it if no job
// here has used it yet.
func (r *Runner) batcher(spec string) (llm.Batcher, error) {
	r.mu.Lock()
	b, ok := r.batchers[spec]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	p, err := r.build(spec)
	if err != nil {
		return nil, err
	}
	bp, err := r.Provider(spec, p)
	if err != nil {
		return nil, err
	}
	return bp.(*provider).b, nil
}

// watch answers the calls waiting on batches another worker polls, once
// that worker has stored their lines.
func (r *Runner) watch(ctx context.Context) {
	r.mu.Lock()
	ids := make([]int64, 0, len(r.waiting))
	for id, calls := range r.waiting {
		if calls = live(calls); len(calls) == 0 {
			delete(r.waiting, id)
			continue
		}
		r.waiting[id] = calls
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	closed, err := r.store.BatchClosed(sctx, ids)
	if err != nil {
		r.log.Warn("asking which batches ended failed; trying again", "err", err)
		return
	}
	for id := range closed {
		r.mu.Lock()
		calls := r.waiting[id]
		r.mu.Unlock()
		row, lines, err := r.store.ClosedBatch(sctx, id)
		if err != nil {
			r.log.Warn("reading the stored answers of a batch failed; trying again", "row", id, "err", err)
			continue
		}
		byID := make(map[string][]byte, len(lines))
		for _, l := range lines {
			byID[l.CustomID] = l.Line
		}
		st := finalStatus(row)
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
		for _, c := range calls {
			r.mu.Lock()
			b := r.batchers[c.spec]
			r.mu.Unlock()
			c.deliver(b.ParseBatchLine(c.req, byID[c.req.CustomID], st))
		}
	}
}

func counts(c llm.BatchCounts) audit.BatchCounts {
	return audit.BatchCounts{Succeeded: c.Succeeded, Errored: c.Errored, Expired: c.Expired, Canceled: c.Canceled}
}

// pause is an exponential pause with jitter: try is 0-based.
func pause(try int, base, ceiling time.Duration) time.Duration {
	d := base << min(try, 20)
	if d <= 0 || d > ceiling {
		d = ceiling
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
