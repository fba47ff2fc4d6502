// Package batchpool sends a batch pool's requests through a provider's
// batch API (llm.Batcher). It gathers the requests of many jobs into
// provider batches, records every batch so that any worker can take over
// its polling, stores each batch's result lines when it ends, and hands
// each job its answer as if its Chat call had returned it.
//
// The engine does not know: a job's extraction calls Chat on the Provider
// this package returns, and the call returns when the job's batch has
// ended, minutes or hours later. A re-ask is the job's next call; it goes
// into a batch of the next round. A job that comes back after its worker
// died replays the rounds it had been through from the stored lines (and
// waits for a batch still running) instead of asking the provider again.
//
// The package never imports NATS or pgx: Store is implemented by
// *audit.Store.
package batchpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/llm"
)

// Store keeps batches and their result lines; *audit.Store implements it.
type Store interface {
	RecordBatch(ctx context.Context, b audit.Batch, lease time.Duration) (int64, error)
	ClaimBatches(ctx context.Context, pool, worker string, lease time.Duration, limit int) ([]audit.Batch, error)
	UpdateBatch(ctx context.Context, id int64, worker, status string, counts audit.BatchCounts, lease time.Duration) error
	FinishBatch(ctx context.Context, id int64, worker, status, state string, failure *audit.BatchFailure, counts audit.BatchCounts, lines []audit.BatchLine) error
	BatchAnswer(ctx context.Context, pool, job string, round int) (audit.BatchAnswer, error)
	BatchClosed(ctx context.Context, ids []int64) (map[int64]bool, error)
	ClosedBatch(ctx context.Context, id int64) (audit.Batch, []audit.BatchLine, error)
	ReleaseBatches(ctx context.Context, worker string, ids []int64) error
}

// Settings tune a batch pool. MaxRequests and MaxWait come from the pool
// spec; the rest have defaults (DefaultSettings).
type Settings struct {
	// MaxRequests is the most requests one batch holds (the provider's
	// size limits may split it further).
	MaxRequests int
	// MaxWait is how long requests are gathered before a batch that is not
	// full is submitted, counted from its first request.
	MaxWait time.Duration
	// PollMin and PollMax bound the pause between two polls of a running
	// batch: it starts at PollMin and doubles up to PollMax.
	PollMin, PollMax time.Duration
	// Lease is how long a poll holds a batch for this worker. Another
	// worker takes the batch over once the lease has run out without a
	// poll, so it must be longer than PollMax.
	Lease time.Duration
	// SubmitRetries is how often a submission refused for a retryable
	// reason (a server error, the enqueued-token quota) is tried again,
	// halving the batch each time the quota refused it, before its
	// requests fail with that error (their jobs then retry as after any
	// transport failure).
	SubmitRetries int
}

// DefaultSettings are the defaults of the tuning fields: poll every 5s at
// first, at most every minute, leases of three minutes.
func DefaultSettings() Settings {
	return Settings{PollMin: 5 * time.Second, PollMax: time.Minute, Lease: 3 * time.Minute, SubmitRetries: 6}
}

// Validate names the first setting that cannot work.
func (s Settings) Validate() error {
	switch {
	case s.MaxRequests < 1:
		return fmt.Errorf("batch max_requests %d: must be at least 1", s.MaxRequests)
	case s.MaxWait <= 0:
		return fmt.Errorf("batch max_wait %s: must be positive", s.MaxWait)
	case s.PollMin <= 0 || s.PollMax < s.PollMin:
		return fmt.Errorf("batch poll interval %s..%s: want 0 < min <= max", s.PollMin, s.PollMax)
	case s.Lease <= s.PollMax:
		return fmt.Errorf("batch lease %s: must be longer than the longest poll interval (%s), or batches are taken over while their worker lives", s.Lease, s.PollMax)
	case s.SubmitRetries < 0:
		return fmt.Errorf("batch submit retries %d: must not be negative", s.SubmitRetries)
	}
	return nil
}

// withDefaults fills the zero tuning fields.
func (s Settings) withDefaults() Settings {
	d := DefaultSettings()
	if s.PollMin == 0 {
		s.PollMin = min(d.PollMin, max(s.PollMax, time.Millisecond))
	}
	if s.PollMax == 0 {
		s.PollMax = max(d.PollMax, s.PollMin)
	}
	if s.Lease == 0 {
		s.Lease = max(d.Lease, 3*s.PollMax)
	}
	if s.SubmitRetries == 0 {
		s.SubmitRetries = d.SubmitRetries
	}
	return s
}

// Option configures a Runner.
type Option func(*Runner)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// WithPollReport calls report after each poll of a running batch and each
// read of a finished batch's results, with the provider's error (nil when
// it answered): the worker makes a pause of a series of them (a key
// revoked while batches run, an outage), which status shows, since the
// pool's jobs only wait then.
func WithPollReport(report func(err error)) Option { return func(r *Runner) { r.pollReport = report } }

// Runner runs one batch pool for one worker. Create it with New, start
// Run, and hand jobs the providers of Provider.
type Runner struct {
	pool, worker string
	store        Store
	set          Settings
	build        func(spec string) (llm.Provider, error)
	log          *slog.Logger

	mu       sync.Mutex
	pending  map[groupKey]*group
	held     map[int64]*heldBatch // batches this worker polls
	waiting  map[int64][]*call    // calls waiting on a batch another worker polls
	batchers map[string]llm.Batcher
	kick     chan struct{}

	pollReport func(error) // WithPollReport; never nil
}

// New returns a Runner for pool, polling as worker. build makes a
// provider from a job's provider spec (it must implement llm.Batcher with
// a batch API); it is used for batches taken over from other workers.
func New(pool, worker string, store Store, s Settings, build func(spec string) (llm.Provider, error), opts ...Option) (*Runner, error) {
	s = s.withDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("pool %s: %w", pool, err)
	}
	if pool == "" || worker == "" || store == nil || build == nil {
		return nil, errors.New("batchpool: a pool, a worker id, a store and a provider builder are required")
	}
	r := &Runner{
		pool: pool, worker: worker, store: store, set: s, build: build,
		log:     slog.Default(),
		pending: map[groupKey]*group{}, held: map[int64]*heldBatch{}, waiting: map[int64][]*call{},
		batchers: map[string]llm.Batcher{}, kick: make(chan struct{}, 1),
		pollReport: func(error) {},
	}
	for _, o := range opts {
		o(r)
	}
	r.log = r.log.With("pool", pool)
	return r, nil
}

// Stats is what a Runner holds at one moment.
type Stats struct {
	Gathering int // requests waiting for their batch to be submitted
	Polling   int // batches this worker polls
	Waiting   int // requests waiting on batches other workers poll
}

// Stats returns what r holds now (for metrics).
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var st Stats
	for _, g := range r.pending {
		st.Gathering += len(g.calls)
	}
	st.Polling = len(r.held)
	for _, calls := range r.waiting {
		st.Waiting += len(calls)
	}
	return st
}

// jobKey carries a job's identity into its provider calls.
type jobKey struct{}

// job is what the runner knows of one job's calls in this process.
type job struct {
	id      string
	mu      sync.Mutex
	round   int
	last    []llm.Message
	checked int // rounds up to this one need no replay lookup
}

// WithJob marks ctx as the context of job id's extraction: its calls on a
// batch pool's provider are that job's requests, one round per distinct
// request (a request sent again unchanged is a transport retry of the
// same round). delivery is the job's 1-based delivery count: on its first
// no earlier worker can have sent its requests, so the store is not asked
// for rounds to replay.
func WithJob(ctx context.Context, id string, delivery int) context.Context {
	j := &job{id: id}
	if delivery <= 1 {
		j.checked = math.MaxInt
	}
	return context.WithValue(ctx, jobKey{}, j)
}

// next returns the round req belongs to (a request sent again unchanged
// is a transport retry of the same round) and whether the store has been
// asked about that round yet.
func (j *job) next(req llm.Request) (round int, checked bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.round == 0 || !slices.EqualFunc(j.last, req.Messages, llm.Message.Equal) {
		j.round++
		j.last = slices.Clone(req.Messages)
	}
	return j.round, j.round <= j.checked
}

// markChecked records that the store was asked about round.
func (j *job) markChecked(round int) {
	j.mu.Lock()
	j.checked = max(j.checked, round)
	j.mu.Unlock()
}

// call is one request waiting for its answer.
type call struct {
	spec string
	job  string
	req  llm.BatchRequest
	done chan llm.BatchResult // buffered: delivering never blocks
	ctx  context.Context
}

func (c *call) deliver(res llm.BatchResult) {
	select {
	case c.done <- res:
	default: // delivered once already
	}
}

// groupKey separates what cannot share a batch: the model, and the round
// (a batch is one round, so its row says which).
type groupKey struct {
	spec  string
	round int
}

// group is a batch being gathered.
type group struct {
	calls []*call
	first time.Time
}

// heldBatch is a batch this worker polls.
type heldBatch struct {
	row      audit.Batch
	b        llm.Batcher
	calls    map[string]*call // by custom id: this worker's own requests
	nextPoll time.Time
	polls    int
	busy     bool // a poll is under way
}

// Provider returns p as a batch pool's provider: its Chat calls join
// batches. spec is the provider spec jobs name (it is recorded with each
// batch, so another worker can rebuild the provider). p must implement
// llm.Batcher for a server with a batch API.
func (r *Runner) Provider(spec string, p llm.Provider) (llm.Provider, error) {
	b, ok := p.(llm.Batcher)
	if !ok || !b.BatchLimits().Supported() {
		return nil, fmt.Errorf("provider %s has no batch API; serve pool %s online", p.Name(), r.pool)
	}
	r.mu.Lock()
	r.batchers[spec] = b
	r.mu.Unlock()
	return &provider{Provider: p, r: r, b: b, spec: spec}, nil
}

// provider is a batch pool's llm.Provider.
type provider struct {
	llm.Provider
	r    *Runner
	b    llm.Batcher
	spec string
}

// Capabilities are the provider's without its context window, so that a
// long document is not split on its own account: a job's calls are its
// rounds, one after another, and parts extracted in parallel would be
// told apart by nothing but their order. A batch pool sends documents
// whole (one too long for the model fails as it would online).
func (p *provider) Capabilities() llm.Capabilities {
	c := p.Provider.Capabilities()
	c.ContextWindow = 0
	return c
}

// Chat queues req as the calling job's request of its current round and
// waits for the batch that carries it.
func (p *provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	j, _ := ctx.Value(jobKey{}).(*job)
	if j == nil {
		return nil, &llm.Error{Provider: p.Name(), Class: llm.ClassInvalidRequest, Message: "batch pool " + p.r.pool + ": a call without a job (batchpool.WithJob)"}
	}
	round, checked := j.next(req)
	c := &call{spec: p.spec, job: j.id, req: llm.BatchRequest{CustomID: llm.BatchCustomID(j.id, round), Request: req}, done: make(chan llm.BatchResult, 1), ctx: ctx}
	if checked { // a transport retry: the round's earlier request failed
		p.r.enqueue(c, round)
	} else {
		// The first request of a round asks the store first: a job
		// redelivered after its worker died finds the rounds it had been
		// through, answered or still running.
		if err := p.r.replay(ctx, p.b, c, round); err != nil {
			return nil, err
		}
		j.markChecked(round)
	}
	select {
	case res := <-c.done:
		return res.Response, res.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// replay answers c from a batch that already carries its job's round, or
// queues it.
func (r *Runner) replay(ctx context.Context, b llm.Batcher, c *call, round int) error {
	a, err := r.store.BatchAnswer(ctx, r.pool, c.job, round)
	switch {
	case errors.Is(err, audit.ErrNoBatch):
		r.enqueue(c, round)
		return nil
	case err != nil:
		// Sending now could pay for a request a running batch carries.
		return &llm.Error{Class: llm.ClassServer, Message: "batch pool " + r.pool + ": the audit store could not say whether this request was sent before; trying again", Err: err}
	case !a.Batch.ClosedAt.IsZero():
		c.deliver(b.ParseBatchLine(c.req, a.Line, finalStatus(a.Batch)))
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.held[a.Batch.ID]; ok {
		h.calls[c.req.CustomID] = c
	} else {
		r.waiting[a.Batch.ID] = append(r.waiting[a.Batch.ID], c)
	}
	r.log.Debug("request found in a running batch; waiting for it", "job_id", c.job, "round", round, "batch", a.Batch.ProviderBatchID)
	return nil
}

// enqueue adds c to the batch being gathered for its model and round.
func (r *Runner) enqueue(c *call, round int) {
	k := groupKey{c.spec, round}
	r.mu.Lock()
	g := r.pending[k]
	if g == nil {
		g = &group{first: time.Now()}
		r.pending[k] = g
	}
	g.calls = append(g.calls, c)
	full := len(g.calls) >= r.set.MaxRequests
	r.mu.Unlock()
	if full {
		r.wake()
	}
}

func (r *Runner) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// finalStatus rebuilds the final status of a closed batch row, for
// parsing a request the provider reported nothing for.
func finalStatus(b audit.Batch) llm.BatchStatus {
	st := llm.BatchStatus{ID: llm.BatchID(b.ProviderBatchID), State: llm.BatchState(b.State), ProviderStatus: b.Status}
	if f := b.Failure; f != nil {
		st.Failure = &llm.Error{Provider: b.Provider, Class: llm.ErrorClass(f.Class), Type: f.Type, Message: f.Message}
	}
	return st
}
