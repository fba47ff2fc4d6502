// Package worker is the fleet's run loop: for each provider pool it takes
// budget slots, pulls a job for each from the pool's durable consumer (one
// pull request for the slots free at once), runs the
// engine while telling the server the job is in progress, makes the outcome
// durable in the audit store and only then acks, naks with a delay, or
// dead-letters and terminates the job.
//
// Outages do not spend deliveries: each pool has a circuit breaker that
// opens after consecutive transport failures and stops the pool's pulling;
// jobs the worker holds then stay in progress (in-progress acks) and run
// again once a half-open probe succeeds. An audit write that fails pauses
// pulling the same way (reason audit) while the finished answer is kept in
// memory and written again, so its redelivery never pays the provider twice.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Pool is one provider budget group this worker serves.
type Pool struct {
	Name string
	// Concurrency is the number of jobs this worker runs at once in the
	// pool at most, counting a job until its calls are over (the jobs
	// whose results are being made durable and acked, up to three times
	// as many more and at most 4,096, hold no slot: runnersFor); Budget
	// may allow fewer at a time.
	Concurrency int
	// Budget hands out slots and paces calls; nil means a semaphore of
	// Concurrency.
	Budget Budget
	// Batch makes the pool a batch pool: its calls go through the
	// provider's batch API (batch.go), and Concurrency is the number of
	// jobs it holds at once while they wait for their batches. nil for an
	// online pool.
	Batch *batchpool.Settings
}

// Option configures a Worker.
type Option func(*Worker)

// WithID names the worker in logs, audit rows and dead letters (default:
// host name and process id).
func WithID(id string) Option { return func(w *Worker) { w.id = id } }

// WithPools sets the pools the worker serves.
func WithPools(p ...Pool) Option { return func(w *Worker) { w.pools = p } }

// WithConsumerSettings sets the consumers' ack wait, max deliver and backoff.
func WithConsumerSettings(s jobs.ConsumerSettings) Option {
	return func(w *Worker) { w.consumer = s }
}

// WithGrace sets how long in-flight jobs may run after shutdown begins
// before they are canceled and nak'd (default 30s).
func WithGrace(d time.Duration) Option { return func(w *Worker) { w.grace = d } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(w *Worker) { w.log = l } }

// WithProviders sets how a job's provider spec becomes a Provider (default
// extractq.NewProvider).
func WithProviders(f func(spec string) (llm.Provider, error)) Option {
	return func(w *Worker) { w.newProvider = f }
}

// WithCircuit tunes the circuit breakers (zero fields keep the defaults:
// open after 3 consecutive transport failures, for 5s, doubling per failed
// probe up to 1m). The audit circuit opens at the first failed write of a
// finished job and uses the same open periods.
func WithCircuit(s ratelimit.BreakerSettings) Option { return func(w *Worker) { w.circuit = s } }

// AuditReader tells where jobs stand in the audit store; *audit.Store
// implements it. The worker asks it before dead-lettering a job, so a job
// that already has a result is never dead-lettered. With it a dead letter
// is recorded in the audit before it is published (sequence 0), and its
// stream sequence set after (SetDeadLetterSeq): a worker that dies between
// the two leaves a letter its job's next delivery publishes, never a
// letter on the stream that the audit does not know.
type AuditReader interface {
	JobStates(ctx context.Context, ids []string) (map[string]audit.JobState, error)
	SetDeadLetterSeq(ctx context.Context, jobID string, seq uint64) error
}

// WithAuditReader sets the AuditReader (default: the audit writer when it
// implements AuditReader, else none, and no such check).
func WithAuditReader(r AuditReader) Option { return func(w *Worker) { w.reader = r } }

// WithPullWait sets how long one pull waits for a job (default 3s); it also
// bounds how long shutdown waits for pending pulls.
func WithPullWait(d time.Duration) Option { return func(w *Worker) { w.pullWait = d } }

// WithRequeueDelay sets the delay of jobs handed back at shutdown (default
// 1s): short, so another worker picks them up soon.
func WithRequeueDelay(d time.Duration) Option { return func(w *Worker) { w.requeueDelay = d } }

// Observer is told what the worker does with deliveries besides what the
// audit records: jobs running, deliveries handed back, circuits opening and
// closing. *metrics.Metrics implements it. Its methods must not block.
type Observer interface {
	JobStarted(pool string)
	JobFinished(pool string)
	// Nak counts a delivery handed back for later: reason is transport,
	// dead_letter or shutdown.
	Nak(pool, reason string)
	// Circuit reports a pool's circuit entering state; reason is transport
	// (the pool's provider) or audit (the audit store, for every pool).
	Circuit(pool, reason string, state ratelimit.CircuitState)
}

type noObserver struct{}

func (noObserver) JobStarted(string)                              {}
func (noObserver) JobFinished(string)                             {}
func (noObserver) Nak(string, string)                             {}
func (noObserver) Circuit(string, string, ratelimit.CircuitState) {}

// WithObserver sets the Observer (default: none).
func WithObserver(o Observer) Option { return func(w *Worker) { w.obs = o } }

// withOnReady calls f once when Run starts pulling (Serve's WithReady).
func withOnReady(f func()) Option { return func(w *Worker) { w.onReady = f } }

// withStartGate makes Run call f once its streams and consumers are ready,
// before it pulls the first job, and return f's error: Serve finishes the
// audit database's start-up work there, overlapped with Run's round trips
// to JetStream.
func withStartGate(f func(context.Context) error) Option { return func(w *Worker) { w.startGate = f } }

// Worker pulls jobs and runs them. Create it with New, start it with Run.
type Worker struct {
	// keepers schedules the in-progress acks of the jobs in flight. It
	// holds no goroutine: its timer is armed while a job is in flight and
	// is not re-armed once none is, so a stopped worker leaves nothing.
	keepers      keepers
	js           jetstream.JetStream
	writer       audit.Writer
	engine       Engine
	id           string
	pools        []Pool
	consumer     jobs.ConsumerSettings
	grace        time.Duration
	pullWait     time.Duration
	requeueDelay time.Duration
	log          *slog.Logger
	newProvider  func(spec string) (llm.Provider, error)
	termReason   bool
	onReady      func()
	startGate    func(context.Context) error
	obs          Observer
	circuit      ratelimit.BreakerSettings
	reader       AuditReader
	ackLinger    time.Duration
	acks         *acker // while Run runs
	batchStore   batchpool.Store
	batchRunners []*batchpool.Runner  // by pool; nil for online pools
	pollCircuits []*ratelimit.Breaker // by pool: a batch pool's polls; nil for online pools

	docs    *jobs.Documents
	dlq     *jobs.DLQ
	schemas *schemaCache
	provs   providerCache
	// circuits[i] guards pools[i] against its provider's outages; audit
	// pauses every pool while the audit store refuses finished jobs.
	circuits     []*ratelimit.Breaker
	auditCircuit *ratelimit.Breaker
	// slots[i] lets the calls of pools[i]'s jobs share its budget.
	slots []*callSlots

	ready    atomic.Bool
	stopping atomic.Bool
	held     atomic.Int64 // jobs held in progress, waiting for a circuit
	counts   counters
	running  runningJobs

	// dieAt, set only by tests, is asked at each step of the dead-letter
	// path; true ends the path there, as if the process died.
	dieAt func(step string) bool
}

// New checks the configuration and returns a worker; it does not connect
// or create anything until Run.
func New(js jetstream.JetStream, w audit.Writer, e Engine, opts ...Option) (*Worker, error) {
	host, _ := os.Hostname()
	wk := &Worker{
		js: js, writer: w, engine: e,
		id:           fmt.Sprintf("%s-%d", host, os.Getpid()),
		consumer:     jobs.DefaultConsumerSettings(),
		grace:        30 * time.Second,
		pullWait:     3 * time.Second,
		requeueDelay: time.Second,
		ackLinger:    ackLinger,
		log:          slog.Default(),
		newProvider:  func(spec string) (llm.Provider, error) { return extractq.NewProvider(spec) },
		obs:          noObserver{},
	}
	for _, f := range opts {
		f(wk)
	}
	if js == nil || w == nil || e == nil {
		return nil, errors.New("worker: JetStream, audit writer and engine are required")
	}
	if len(wk.pools) == 0 {
		return nil, errors.New("pools: the worker serves no pool; name at least one (--pool NAME)")
	}
	seen := map[string]bool{}
	for i := range wk.pools {
		p := &wk.pools[i]
		if err := jobs.ValidatePool(p.Name); err != nil {
			return nil, fmt.Errorf("pools[%d]: %w", i, err)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("pools[%d]: pool %q is listed twice", i, p.Name)
		}
		seen[p.Name] = true
		if p.Concurrency < 1 {
			return nil, fmt.Errorf("pools[%d] (%s): concurrency %d must be at least 1", i, p.Name, p.Concurrency)
		}
		if p.Budget == nil {
			p.Budget = NewSemaphore(p.Concurrency)
		}
	}
	if err := wk.consumer.Validate(); err != nil {
		return nil, err
	}
	if wk.grace < 0 {
		return nil, fmt.Errorf("grace %s: must not be negative", wk.grace)
	}
	if wk.pullWait < 100*time.Millisecond {
		return nil, fmt.Errorf("pull wait %s: must be at least 100ms", wk.pullWait)
	}
	if err := wk.circuit.Validate(); err != nil {
		return nil, err
	}
	if wk.reader == nil {
		wk.reader, _ = w.(AuditReader)
	}
	wk.log = wk.log.With("worker", wk.id)
	if err := wk.newBatchRunners(); err != nil {
		return nil, err
	}
	for _, p := range wk.pools {
		wk.circuits = append(wk.circuits, ratelimit.NewBreaker(p.Name, "transport", wk.circuit, ratelimit.WithTransitions(wk.onCircuit), ratelimit.WithPauseReason(ratelimit.PauseOutage)))
		wk.slots = append(wk.slots, newCallSlots(p.Budget))
	}
	auditSettings := wk.circuit
	auditSettings.Failures = 1 // a finished job that cannot be recorded: stop pulling at once
	wk.auditCircuit = ratelimit.NewBreaker("*", "audit", auditSettings, ratelimit.WithTransitions(wk.onCircuit))
	wk.docs = jobs.NewDocuments(js)
	wk.dlq = jobs.NewDLQ(js)
	wk.schemas = newSchemaCache(jobs.NewSchemas(js))
	wk.termReason = jobs.SupportsTermReason(js.Conn().ConnectedServerVersion())
	return wk, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.id }

// Ready reports whether the worker is pulling jobs: its streams and
// consumers are in place, shutdown has not begun and the audit store
// accepts writes (pulling pauses while it does not).
func (w *Worker) Ready() bool {
	return w.ready.Load() && w.auditCircuit.State() == ratelimit.CircuitClosed
}

// Circuits returns the state of every pool's circuit and of the audit
// circuit.
func (w *Worker) Circuits() []ratelimit.BreakerSnapshot {
	out := make([]ratelimit.BreakerSnapshot, 0, len(w.circuits)+1)
	for _, c := range w.circuits {
		out = append(out, c.Snapshot())
	}
	return append(out, w.auditCircuit.Snapshot())
}

// Held is the number of jobs held in progress now, waiting for an open
// circuit (provider or audit) instead of being handed back.
func (w *Worker) Held() int64 { return w.held.Load() }

// onCircuit logs a circuit's transition and tells the observer; the audit
// circuit stands for every pool.
func (w *Worker) onCircuit(t ratelimit.Transition) {
	if t.Reason == PollCircuitReason {
		w.logPollCircuit(t)
	} else {
		ratelimit.LogTransition(w.log, t)
	}
	if t.Reason != "audit" {
		w.obs.Circuit(t.Name, t.Reason, t.To)
		return
	}
	for _, p := range w.pools {
		w.obs.Circuit(p.Name, t.Reason, t.To)
	}
}

// Run checks the streams (`worker migrate` creates them), then serves the
// pools until ctx ends, then shuts down gracefully: it stops
// pulling, lets in-flight jobs finish within the grace period, cancels and
// naks (with a short delay) the rest, and returns nil. Flushing the audit
// writer is the caller's (it owns the writer).
func (w *Worker) Run(ctx context.Context) error {
	// Only `worker migrate` creates or changes streams: the worker checks
	// them, waiting out a leader election, and warns about any that one
	// lost node could take offline.
	warnings, err := jobs.CheckStreams(ctx, w.js, jobs.WithCheckWait(streamCheckWait), jobs.WithOptionalStream(MembersStream))
	for _, msg := range warnings {
		w.log.Warn(msg)
	}
	if err != nil {
		return err
	}
	// The pools' consumers and the advisory consumer are created or updated
	// at once: one round trip for all, not one each. The first to fail for
	// good stops the others (which may be waiting out an election) and is
	// the error.
	sctx, stopStarting := context.WithCancel(ctx)
	defer stopStarting()
	consumers := make([]jetstream.Consumer, len(w.pools))
	var advisories jetstream.Consumer
	var (
		started  sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	fail := func(err error) {
		if err != nil {
			failOnce.Do(func() { failed = err; stopStarting() })
		}
	}
	for i, p := range w.pools {
		started.Go(func() {
			var err error
			consumers[i], err = jobs.StartConsumer(sctx, w.js, p.Name, w.consumerSettings(i), w.log)
			fail(err)
		})
	}
	started.Go(func() {
		var err error
		advisories, err = jobs.StartAdvisoryConsumer(sctx, w.js, w.log)
		fail(err)
	})
	started.Wait()
	if failed != nil {
		return failed
	}
	if w.startGate != nil {
		if err := w.startGate(ctx); err != nil {
			return err
		}
	}

	// Acks of durable results go out in batches until every job settled.
	w.acks = newAcker(w.js.Conn(), w.ackLinger, w.log)

	// Jobs run under their own context: shutdown stops the pulling at once
	// but gives running jobs the grace period.
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	stopBatches := w.startBatchRunners()
	defer stopBatches()
	// pullers counts the pull loops and the jobs of batch pools, which
	// run in goroutines of their own.
	var pullers sync.WaitGroup
	pullers.Add(1)
	go func() {
		defer pullers.Done()
		w.watchAdvisories(ctx, advisories)
	}()
	for i, p := range w.pools {
		w.obs.Circuit(p.Name, "transport", ratelimit.CircuitClosed)
		w.obs.Circuit(p.Name, "audit", ratelimit.CircuitClosed)
		if p.Batch != nil {
			w.obs.Circuit(p.Name, PollCircuitReason, ratelimit.CircuitClosed)
			pullers.Go(func() { w.pullBatchPool(ctx, jobCtx, i, consumers[i], &pullers) })
			continue
		}
		pullers.Go(func() { w.pullOnline(ctx, jobCtx, i, consumers[i]) })
	}
	w.ready.Store(true)
	if w.onReady != nil {
		w.onReady()
	}
	w.log.Info("worker started", "pools", len(w.pools), "ack_wait", w.consumer.AckWait, "max_deliver", w.consumer.MaxDeliver, "term_reason", w.termReason)

	<-ctx.Done()
	w.stopping.Store(true)
	w.ready.Store(false)
	w.log.Info("shutting down: pulling stopped, waiting for in-flight jobs", "grace", w.grace)
	done := make(chan struct{})
	go func() { pullers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.grace):
		w.log.Warn("grace period over: canceling in-flight jobs; they are handed back with a short delay")
		cancelJobs()
		<-done
	}
	// Every job is settled or handed back: send the acks still pending, so
	// none is lost with the connection the caller closes next.
	w.acks.stop()
	w.log.Info("worker stopped", "done", w.counts.done.Load(), "dead_lettered", w.counts.dead.Load(), "requeued", w.counts.requeued.Load())
	return nil
}

// pulled is a job in hand: its delivery, the budget slot it runs in, and
// whether it is its pool circuit's half-open probe. It holds a runner's
// token on its pool's idle semaphore, given back when it is settled.
type pulled struct {
	msg   jetstream.Msg
	slot  func() // gives the budget slot back
	probe bool
}

// slot is a job's budget slot, given back once: when the job's calls are
// over (handle), or when the job ends without them. A nil *slot holds none.
type slot struct{ release func() }

func (s *slot) free() {
	if s != nil && s.release != nil {
		s.release()
		s.release = nil
	}
}

// runnersPer is how many jobs an online pool may hold per slot of its
// concurrency. A job's slot is for its calls (callSlots): it goes back when
// the last call ends, and making the result durable and acking it run
// beside the next job's calls. With a fast provider (a local model, the
// simulator) that tail is most of a job's time: the audit's transaction
// lingers (Config.AuditLinger) and commits, a few milliseconds in all,
// while a call takes less; at two runners per slot the calls then waited
// for runners, not for slots, and the CPUs idled (doc/performance-cpu.md,
// thirteenth pass). So a pool of concurrency N holds at most 4N jobs, and
// never has more than N calls in flight; with a provider that takes a
// second or more, the extra runners sit idle.
const runnersPer = 4

// maxTailRunners bounds the runners a pool holds beyond its concurrency
// (those whose jobs wait for the audit's commit and their ack). They
// cover the jobs that finish during one tail of a few milliseconds: 4,096
// of them keep up with more than half a million jobs a second per pool,
// beyond what one worker's CPUs extract. Without the bound a pool at the
// largest concurrency (10,000) held 40,000 goroutines, 80–310 MiB of
// stacks, most never needed; now at most 14,096.
const maxTailRunners = 4096

// runnersFor is the number of runners of an online pool of concurrency
// n: runnersPer × n, the part beyond n bounded by maxTailRunners.
func runnersFor(n int) int { return n + min((runnersPer-1)*n, maxTailRunners) }

// pullLinger is how long a pull loop waits, once it holds a free runner
// and slot, before it takes the others free then and pulls. The audit's
// group commit frees the runners of its jobs within a few hundred
// microseconds of each other; a loop that pulled at the first asked for
// about five jobs a request, one that waits a millisecond for about
// eight. A pull request costs the worker a subscription, a
// timer and a goroutine, and the server a waiting request: fewer, larger
// ones cut the NATS server's CPU by about a tenth (doc/performance-cpu.md,
// sixth pass). No job is held meanwhile: the wait comes before the pull.
const pullLinger = time.Millisecond

// maxFetch bounds the jobs one pull request asks for.
const maxFetch = 32

// pullersFor is the number of pull loops of an online pool of concurrency
// n: a few, so that a pull request asks for the several slots that came
// free during the previous one, yet one slow request does not stall the
// pool.
func pullersFor(n int) int { return min(max(n/16, 1), 4) }

// pullOnline serves an online pool until ctx ends: a few pull loops
// (pull) fetch jobs for the slots they hold and hand each to one of the
// pool's runners (runnersFor its Concurrency), which runs it, gives its slot
// back when its calls are over, and its runner when it is settled.
// Before, each of Concurrency loops fetched one job at a time: a
// subscription, a pull request, a timer and a goroutine per job.
func (w *Worker) pullOnline(ctx, jobCtx context.Context, i int, c jetstream.Consumer) {
	p := w.pools[i]
	jobs := make(chan pulled)
	// idle holds a token per runner free to take a job: a loop pulls only
	// for runners that can start at once, so no job waits in this worker.
	n := runnersFor(p.Concurrency)
	idle := NewSemaphore(n)
	var runners, pullers sync.WaitGroup
	for range n {
		runners.Go(func() {
			for j := range jobs {
				// On this runner's stack: handle frees it, or
				// this loop once handle returned.
				calls := slot{release: j.slot}
				w.handle(ctx, jobCtx, i, j.msg, j.probe, &calls)
				calls.free()
				idle.giveRunner()
			}
		})
	}
	for range pullersFor(p.Concurrency) {
		pullers.Go(func() { w.pull(ctx, i, c, idle, jobs) })
	}
	pullers.Wait()
	close(jobs)
	runners.Wait()
}

// pull is one pull loop of an online pool: wait while a circuit is open,
// take a free runner and a budget slot, wait pullLinger, then take as
// many more of both as are free now (none for the half-open probe, which
// does not wait), fetch up to that many jobs in
// one pull request and hand each to a runner with its slot. A slot that a
// call of a job in hand is waiting for goes to that call instead (see
// callSlots). Pulling only with a slot in hand means no job waits in this
// worker while its ack deadline runs; pulling only with the circuits
// closed (or as the one half-open probe) means an outage takes no new
// deliveries.
func (w *Worker) pull(ctx context.Context, i int, c jetstream.Consumer, idle Semaphore, jobs chan<- pulled) {
	p, circuit := w.pools[i], w.circuits[i]
	log := w.log.With("pool", p.Name)
	failures := 0
	held := make([]room, 0, maxFetch)
	// One timer and one fetch option for every pull of this loop: a timer
	// and an option made per pull were two allocations each.
	linger := time.NewTimer(pullLinger)
	linger.Stop()
	maxWait := jetstream.FetchMaxWait(w.pullWait)
	for ctx.Err() == nil {
		probe, ok := w.mayPull(ctx, circuit)
		if !ok {
			continue
		}
		if !idle.takeRunner(ctx) {
			circuit.Abandon(probe)
			continue
		}
		release, err := p.Budget.AcquireSlot(ctx)
		if err != nil {
			idle.giveRunner()
			circuit.Abandon(probe)
			if ctx.Err() == nil {
				log.Error("acquire slot", "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		if w.slots[i].offer(release) {
			// A call of a job in hand was waiting for a slot: it has this
			// one, and this loop pulls when the budget has room again.
			idle.giveRunner()
			circuit.Abandon(probe)
			continue
		}
		held = append(held[:0], room{idle: idle, slot: release})
		if !probe {
			linger.Reset(pullLinger)
			select {
			case <-linger.C:
			case <-ctx.Done():
				linger.Stop()
			}
		}
		for !probe && len(held) < maxFetch {
			r, ok := w.moreRoom(i, idle)
			if !ok {
				break
			}
			held = append(held, r)
		}
		batch, err := c.Fetch(len(held), maxWait)
		if err != nil {
			circuit.Abandon(probe)
			releaseAll(held)
			pullFailed(ctx, log, &failures, "pull failed; retrying", err)
			continue
		}
		n := 0
		for msg := range batch.Messages() {
			r := held[n]
			n++
			if w.stopping.Load() {
				circuit.Abandon(probe)
				w.requeue(msg, p.Name, log)
				r.release()
				continue
			}
			jobs <- pulled{msg: msg, slot: r.slot, probe: probe}
		}
		if n == 0 {
			circuit.Abandon(probe)
		}
		releaseAll(held[n:])
		if err := fetchError(batch); err != nil {
			pullFailed(ctx, log, &failures, "pull ended with an error", err)
			continue
		}
		failures = 0
	}
}

// moreRoom takes a free runner and a free budget slot if both are free
// now, handing the slot to a call waiting for one first (callSlots.offer).
func (w *Worker) moreRoom(i int, idle Semaphore) (room, bool) {
	if !idle.tryTakeRunner() {
		return room{}, false
	}
	for {
		slot, ok := w.pools[i].Budget.TryAcquireSlot()
		if !ok {
			idle.giveRunner()
			return room{}, false
		}
		if !w.slots[i].offer(slot) {
			return room{idle: idle, slot: slot}, true
		}
	}
}

// room is a runner (a token held on idle) and a budget slot taken for one
// job to be pulled.
type room struct {
	idle Semaphore
	slot func()
}

// release gives back the slot, then the runner.
func (r room) release() { r.slot(); r.idle.giveRunner() }

// takeRunner takes a runner's token on the idle semaphore s, false when
// ctx ended first. The pull loops hold runners as bare tokens: each is
// given back exactly once (giveRunner), so they need none of the release
// functions AcquireSlot and TryAcquireSlot make, an allocation or two per
// job pulled.
func (s Semaphore) takeRunner(ctx context.Context) bool {
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// tryTakeRunner takes a runner's token if one is free now.
func (s Semaphore) tryTakeRunner() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// giveRunner gives back a runner's token taken by takeRunner or
// tryTakeRunner.
func (s Semaphore) giveRunner() { <-s }

func releaseAll(rs []room) {
	for _, r := range rs {
		r.release()
	}
}

// mayPull waits until a pool may pull: the audit store takes finished jobs
// (a job pulled before it does could not be made durable) and the pool's
// circuit is closed, or lets this pull be its half-open probe. ok is false
// when ctx ended first.
func (w *Worker) mayPull(ctx context.Context, circuit *ratelimit.Breaker) (probe, ok bool) {
	if err := w.auditCircuit.WaitClosed(ctx); err != nil {
		return false, false
	}
	probe, err := circuit.Allow(ctx, false)
	return probe, err == nil
}

// pullFailed logs a failed pull and waits before the next: failures counts
// the consecutive ones.
func pullFailed(ctx context.Context, log *slog.Logger, failures *int, what string, err error) {
	*failures++
	log.Warn(what, "err", err, "consecutive", *failures)
	sleep(ctx, backoff(*failures, 100*time.Millisecond, 5*time.Second))
}

// fetchError is how a fetch ended, nil when it ended for lack of jobs.
func fetchError(b jetstream.MessageBatch) error {
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return err
	}
	return nil
}

// watchAdvisories moves the jobs named by max-deliveries advisories to the
// DLQ until ctx ends.
func (w *Worker) watchAdvisories(ctx context.Context, c jetstream.Consumer) {
	failures := 0
	for ctx.Err() == nil {
		batch, err := c.Fetch(16, jetstream.FetchMaxWait(w.pullWait))
		if err != nil {
			pullFailed(ctx, w.log, &failures, "pull advisories failed; retrying", err)
			continue
		}
		failures = 0
		for m := range batch.Messages() {
			if err := w.onMaxDeliveries(context.WithoutCancel(ctx), m.Data()); err != nil {
				_ = m.NakWithDelay(5 * time.Second)
				continue
			}
			_ = m.Ack()
		}
	}
}

// ack acks a job whose result is durable: through the acker while Run
// runs, else at once.
func (w *Worker) ack(msg jetstream.Msg, log *slog.Logger) {
	if w.acks == nil {
		ackNow(msg, log)
		return
	}
	w.acks.add(msg, log)
}

// requeue hands a job back for another worker, soon.
func (w *Worker) requeue(msg jetstream.Msg, pool string, log *slog.Logger) {
	w.counts.requeued.Add(1)
	w.obs.Nak(pool, "shutdown")
	if err := msg.NakWithDelay(w.requeueDelay); err != nil {
		log.Warn("nak at shutdown failed; the job returns after its ack wait", "err", err)
	}
}

type counters struct {
	done, dead, retried, requeued atomic.Int64
}

// Counts is what a worker did since it started.
type Counts struct {
	Done         int64 `json:"done"`          // results acked
	DeadLettered int64 `json:"dead_lettered"` // jobs moved to the DLQ
	Retried      int64 `json:"retried"`       // jobs nak'd with delay for redelivery
	Requeued     int64 `json:"requeued"`      // jobs handed back at shutdown
}

// Counts returns the worker's counters.
func (w *Worker) Counts() Counts {
	return Counts{Done: w.counts.done.Load(), DeadLettered: w.counts.dead.Load(), Retried: w.counts.retried.Load(), Requeued: w.counts.requeued.Load()}
}

// backoff is an exponential delay with full jitter: n is 1-based.
func backoff(n int, base, ceiling time.Duration) time.Duration {
	d := base << min(n-1, 20)
	if d <= 0 || d > ceiling {
		d = ceiling
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// schemaCache compiles each schema fingerprint once: the first job of a
// schema fetches and compiles it while the pool's other jobs of that
// schema wait for it (they once compiled it side by side, each copy then
// building its own prompt forms).
type schemaCache struct {
	store *jobs.Schemas
	mu    sync.Mutex
	m     map[string]*schemaEntry
}

type schemaEntry struct {
	ready chan struct{} // closed once s or err is set
	s     *schema.Schema
	err   error
}

func newSchemaCache(s *jobs.Schemas) *schemaCache {
	return &schemaCache{store: s, m: map[string]*schemaEntry{}}
}

// maxCachedSchemas bounds the cache; a fleet rarely runs more than a few.
const maxCachedSchemas = 1024

func (c *schemaCache) get(ctx context.Context, ref jobs.SchemaRef) (*schema.Schema, error) {
	c.mu.Lock()
	e, ok := c.m[ref.Fingerprint]
	if !ok {
		if len(c.m) >= maxCachedSchemas {
			clear(c.m)
		}
		e = &schemaEntry{ready: make(chan struct{})}
		// A copy: the envelope's short strings share their bytes
		// (jobs.DecodeEnvelope), which the cache would keep alive.
		c.m[strings.Clone(ref.Fingerprint)] = e
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return e.s, e.err // a failure is shared by the jobs that waited for it, not cached
	}
	e.s, e.err = c.compile(ctx, ref)
	if e.err != nil { // not cached: the next job asks the store again
		c.mu.Lock()
		if c.m[ref.Fingerprint] == e {
			delete(c.m, ref.Fingerprint)
		}
		c.mu.Unlock()
	}
	close(e.ready)
	return e.s, e.err
}

func (c *schemaCache) compile(ctx context.Context, ref jobs.SchemaRef) (*schema.Schema, error) {
	b, err := c.store.Get(ctx, ref.Fingerprint)
	if err != nil {
		return nil, err
	}
	s, err := schema.Compile(b.Body)
	if err != nil {
		return nil, fmt.Errorf("schema %s v%d (%s): %w", ref.Name, ref.Version, ref.Fingerprint, err)
	}
	return s, nil
}

// providerCache builds each pool's provider for a spec once, wrapped by the
// pool's budget, or made a batch pool's provider.
type providerCache struct {
	mu sync.Mutex
	m  map[providerKey]llm.Provider
}

// providerKey names a cached provider: a pool's, for a spec. A struct of
// the two costs a look-up no allocation; the key built as one string was
// one per job.
type providerKey struct{ pool, spec string }

func (c *providerCache) get(p Pool, batch *batchpool.Runner, spec string, build func(string) (llm.Provider, error)) (llm.Provider, error) {
	key := providerKey{p.Name, spec}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pr, ok := c.m[key]; ok {
		return pr, nil
	}
	pr, err := build(spec)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[providerKey]llm.Provider{}
	}
	if batch != nil {
		if pr, err = batch.Provider(spec, pr); err != nil {
			return nil, err
		}
	} else {
		pr = p.Budget.Wrap(pr)
	}
	// The spec is a job's envelope's, whose short strings share their
	// bytes (jobs.DecodeEnvelope): a copy keeps none of them alive.
	key.spec = strings.Clone(spec)
	c.m[key] = pr
	return pr, nil
}

// runningJobs are the jobs this process is running, by job id: a second
// delivery of one of them (the server redelivered it because in-progress
// acks were lost, e.g. in a stream leader election) is left to the first.
type runningJobs struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// start records id as running; false when it already is.
func (r *runningJobs) start(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ids[id]; ok {
		return false
	}
	if r.ids == nil {
		r.ids = make(map[string]struct{})
	}
	r.ids[id] = struct{}{}
	return true
}

func (r *runningJobs) done(id string) {
	r.mu.Lock()
	delete(r.ids, id)
	r.mu.Unlock()
}
