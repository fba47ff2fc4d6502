package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/redact"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// auditTimeout bounds one audit write; a slower store means the write is
// tried again (a finished job) or the job is nak'd, never acked without
// its rows.
const auditTimeout = 30 * time.Second

// delivery is one delivery of one job and what is known about it.
type delivery struct {
	msg     jetstream.Msg
	seq     uint64 // stream sequence on EXTRACTQ_JOBS
	n       int    // 1-based delivery count
	last    bool   // the consumer will not deliver it again
	env     *jobs.Envelope
	pool    string
	i       int  // the pool's index
	batch   bool // the pool is a batch pool
	started time.Time
	log     *slog.Logger
	// lapsed: an ack wait or more passed without an in-progress ack
	// (the process was stopped), so the server may have given the job
	// to another worker meanwhile.
	lapsed bool
	// logs backs log (deliveryLogger) inside the delivery.
	logs deliveryLog
	// keep is the delivery's keep-alive (keepAlive).
	keep keeper
	// calls backs the provider of the job's run (callSlots.forJob).
	calls slottedCompleter
	// final backs the record of the result (finish): written once per
	// delivery, it needs no allocation of its own. durably's retries
	// make it again after each failed Write has returned; no writer keeps
	// a record past its Write (the group writer copies it into rows, the
	// metrics and events writers read it before returning).
	final audit.Record
}

// deliveryLog is a delivery's logger with its handler and attributes, kept
// in the delivery: none is an allocation of its own (they were three on
// every document, for a logger most jobs never write to).
type deliveryLog struct {
	logger slog.Logger
	lazy   lazyHandler
	attrs  [6]slog.Attr
}

// handle runs one delivery to its end: ack, nak with delay, or dead letter.
// ctx ends when shutdown begins, jobCtx when its grace period is over.
// probe says the delivery is its pool circuit's half-open probe. The job's
// budget slot is freed as soon as its calls are over: settling it (the
// audit's group commit, the ack) needs no slot of the provider's.
func (w *Worker) handle(ctx, jobCtx context.Context, i int, msg jetstream.Msg, probe bool, calls *slot) {
	p := w.pools[i]
	d := &delivery{msg: msg, pool: p.Name, i: i, batch: p.Batch != nil, started: time.Now()}
	w.obs.JobStarted(p.Name)
	defer w.obs.JobFinished(p.Name)
	md, err := msg.Metadata()
	if err != nil { // not a JetStream message: nothing to ack
		w.circuits[i].Abandon(probe)
		jobLogger(w.log, slog.String("pool", p.Name)).Error("message without JetStream metadata ignored", "err", err)
		return
	}
	d.seq, d.n = md.Sequence.Stream, int(md.NumDelivered)
	d.last = d.n >= w.consumer.MaxDeliver

	env, err := jobs.DecodeEnvelope(msg.Data())
	if err != nil {
		w.circuits[i].Abandon(probe)
		if env != nil && env.JobID != "" && env.DocumentID != "" {
			d.env = env // readable enough to name the job in the audit
		}
		d.log = w.deliveryLogger(d)
		w.deadLetter(jobCtx, d, &llm.Result{Outcome: llm.OutcomeFatal, Reason: err.Error()}, "decode")
		return
	}
	d.env = env
	d.log = w.deliveryLogger(d)
	if !w.running.start(env.JobID) {
		// This process still runs an earlier delivery of the job (its
		// in-progress acks were lost: the server thought it gone). Running
		// it twice could end it twice, a result beside a letter; the
		// earlier delivery settles it, and its in-progress acks, which
		// reach the server again, keep this one from coming back.
		w.circuits[i].Abandon(probe)
		d.log.Warn("job delivered again while this worker still runs it (in-progress acks lost, e.g. in a leader election): left to the running delivery")
		return
	}
	defer w.running.done(env.JobID)
	if d.n > 1 && w.settledBefore(d) {
		w.circuits[i].Abandon(probe)
		return
	}

	ka := w.keepAlive(d)
	defer ka.stop()

	jobCtx, span := tracing.StartJob(jobCtx, msg.Headers(), env.JobID, env.DocumentID, env.Run, p.Name, d.n)
	res := w.extract(ctx, jobCtx, i, d, probe)
	calls.free()
	defer tracing.EndJob(span, res)
	if res == nil { // handed back at shutdown while held
		return
	}
	d.lapsed = ka.lapsed()
	w.finish(jobCtx, p, d, res)
}

// extract runs the job until it has an outcome to settle. A transport
// failure that opens the pool's circuit, or comes while it is open, and a
// configuration failure (configFailure), which opens it at once, do not
// end the delivery: the job is held in progress (its in-progress acks
// go on) and runs again when the circuit lets it, as the half-open probe
// or once the circuit closed. So an outage spends no delivery of a held
// job. Every run's attempts are kept: the outcome carries all of this
// delivery's. It returns nil when shutdown came while the job was held;
// the job has then been handed back.
func (w *Worker) extract(ctx, jobCtx context.Context, i int, d *delivery, probe bool) *llm.Result {
	p, circuit := w.pools[i], w.circuits[i]
	opts := jobOptions(d)
	var earlier []llm.Attempt
	var spent llm.Usage
	for {
		prov, doc, s, res := w.prepare(jobCtx, p, d)
		called := res == nil
		if called {
			// A batch pool's calls join batches (no slot each); an online
			// pool's share the pool's slots.
			runCtx, runProv := jobCtx, w.slots[i].forJob(prov, &d.calls)
			if d.batch {
				runCtx, runProv = batchpool.WithJob(jobCtx, d.env.JobID, d.n), prov
			}
			res = w.run(runCtx, runProv, &doc, s, opts)
		}
		if len(earlier) > 0 {
			res.Attempts = append(earlier[:len(earlier):len(earlier)], res.Attempts...)
			res.Usage = spent.Add(res.Usage)
		}
		switch pe := configFailure(res); {
		case !called || res.Outcome == llm.OutcomeCanceled || jobCtx.Err() != nil:
			// No verdict on the provider: no call, or shutdown cut it.
			circuit.Abandon(probe)
			return res
		case pe != nil:
			// The provider refused the pool's configuration: every job of
			// the pool would fail the same way, so the pool stops pulling
			// until someone fixes it, and this job is held like one caught
			// by an outage (below).
			pause := circuit.Trip(probe, configPause(pe.Class), pe)
			d.log.Error("provider refused the pool's configuration: the pool is paused and its jobs kept; fix the key or model, the pool retries by itself",
				"class", pe.Class, "status", pe.Status, "err", pe.Error(), "retry_in", pause)
		case res.Outcome != llm.OutcomeTransport:
			circuit.Success(probe) // the provider answered
			return res
		case !circuit.Failure(probe, errors.New(res.Reason), res.RetryAfter):
			return res // one failure among successes: nak with a delay
		}
		earlier, spent = res.Attempts, res.Usage
		w.held.Add(1)
		d.log.Info("provider circuit open: job held in progress until the circuit lets it run again; no delivery spent",
			"reason", res.Reason, "attempts", len(res.Attempts))
		var err error
		probe, err = circuit.Allow(ctx, true)
		w.held.Add(-1)
		if err != nil { // shutdown: hand it back with what it spent
			w.writeBestEffort(w.record(d, res, false), "audit of a held job handed back at shutdown failed", d.log)
			w.requeue(d.msg, d.pool, d.log)
			return nil
		}
	}
}

// jobOptions are the options the engine runs d's job with: the job's own,
// except that a batch pool sends documents whole. A batch job's calls are
// told apart only by their order (its rounds), so parts extracted in
// parallel would be confused; the batch provider hides the context window,
// so auto never splits there, and a chunk size the job asks for is
// overridden to off. The envelope is left as submitted: its dead letter,
// resubmitted to an online pool, is split as asked.
func jobOptions(d *delivery) jobs.Options {
	o := d.env.Options
	if !d.batch || o.Chunking == string(extractq.ChunkOff) {
		return o
	}
	if o.Chunking != "" && o.Chunking != string(extractq.ChunkAuto) {
		d.log.Debug("chunking off for this job: a batch pool sends documents whole, since its calls are told apart only by their order and parts extracted in parallel would be confused",
			"chunking", o.Chunking)
	}
	o.Chunking = string(extractq.ChunkOff)
	return o
}

// configFailure returns the provider error of a result that failed because
// of the pool's configuration rather than the document (401, 403, a model
// that does not exist, an exhausted quota): nothing a re-ask or another
// delivery of this job could fix, and every job of the pool would fail the
// same way. The pool pauses for its circuit's longest period (a minute by
// default: a fixed key is picked up without a restart) and holds its jobs
// in progress, spending no delivery. Dead-lettering is for documents that
// failed.
func configFailure(res *llm.Result) *llm.Error {
	if res.Outcome != llm.OutcomeFatal {
		return nil
	}
	var pe *llm.Error
	if !errors.As(res.Cause, &pe) {
		return nil
	}
	switch pe.Class {
	case llm.ClassAuth, llm.ClassPermission, llm.ClassNotFound, llm.ClassQuota:
		return pe
	}
	return nil
}

// configPause is the pause reason of a configuration failure of class c,
// as status and metrics show it.
func configPause(c llm.ErrorClass) string {
	switch c {
	case llm.ClassNotFound:
		return ratelimit.PauseModel
	case llm.ClassQuota:
		return ratelimit.PauseQuota
	}
	return ratelimit.PauseKey
}

// run calls the engine; a nil Result (a configuration the library
// refuses) becomes a fatal one.
func (w *Worker) run(ctx context.Context, p llm.Provider, doc *jobDocument, s *schema.Schema, o jobs.Options) *llm.Result {
	var res *llm.Result
	var err error
	if de, ok := w.engine.(DocumentEngine); ok && doc.doc != nil {
		res, err = de.ExtractDocument(ctx, p, doc.doc, doc.original, s, o)
	} else {
		res, err = w.engine.Extract(ctx, p, doc.text, s, o)
	}
	if res != nil {
		return res
	}
	if err == nil {
		err = errors.New("the engine returned no result and no error")
	}
	return &llm.Result{Outcome: llm.OutcomeFatal, Reason: err.Error(), Cause: err}
}

// prepare resolves the document, the schema and the provider. A failure is
// returned as a Result: fatal when retrying cannot help, transport when it
// may.
func (w *Worker) prepare(ctx context.Context, p Pool, d *delivery) (llm.Provider, jobDocument, *schema.Schema, *llm.Result) {
	doc, err := w.document(ctx, d.env)
	if err != nil {
		return nil, jobDocument{}, nil, prepFailure(err, errors.Is(err, jobs.ErrEnvelope) || errors.Is(err, errUnreadable))
	}
	if doc.mismatch != "" {
		d.log.Warn("the original read again does not line up with the job's pages", "reason", doc.mismatch, "reader", d.env.Reader)
	}
	s, err := w.schemas.get(ctx, d.env.Schema)
	if err != nil {
		return nil, jobDocument{}, nil, prepFailure(err, errors.Is(err, jobs.ErrSchemaNotFound) || errors.Is(err, schema.ErrInvalidSchema))
	}
	prov, err := w.provs.get(p, w.batchRunners[d.i], d.env.Provider, w.newProvider)
	if err != nil {
		return nil, jobDocument{}, nil, prepFailure(fmt.Errorf("provider %q: %w", d.env.Provider, err), true)
	}
	return prov, doc, s, nil
}

func prepFailure(err error, permanent bool) *llm.Result {
	if permanent {
		return &llm.Result{Outcome: llm.OutcomeFatal, Reason: err.Error(), Cause: err}
	}
	return &llm.Result{Outcome: llm.OutcomeTransport, Reason: err.Error(), Cause: err}
}

// finish makes the outcome durable and settles the message.
func (w *Worker) finish(jobCtx context.Context, p Pool, d *delivery, res *llm.Result) {
	switch {
	case res.Outcome == llm.OutcomeOK:
		if (d.n > 1 || d.lapsed) && w.deadLetteredMeanwhile(d) {
			return
		}
		if err := w.durably(jobCtx, d, func() error { return w.write(w.recordInto(&d.final, d, res, true)) }); err != nil {
			// Shutdown came before the audit store recovered: the answer
			// goes with the process and the job comes back.
			d.log.Warn("shutting down with a result the audit store never accepted; the job is handed back", "err", err)
			w.requeue(d.msg, d.pool, d.log)
			return
		}
		// Durable: the acker sends the ack with those of the jobs the same
		// commit released.
		w.ack(d.msg, d.log)
		w.counts.done.Add(1)
		d.log.Debug("job done", "attempts", len(res.Attempts), "tokens", res.Usage.Total())
	case res.Outcome == llm.OutcomeCanceled || jobCtx.Err() != nil:
		// Shutdown canceled the job: keep what it spent, hand it back.
		if len(res.Attempts) > 0 {
			w.writeBestEffort(w.record(d, res, false), "audit of a canceled job failed", d.log)
		}
		w.requeue(d.msg, d.pool, d.log)
	case res.Outcome == llm.OutcomeTransport && !d.last:
		w.writeBestEffort(w.record(d, res, false), "audit of a retried job failed", d.log)
		if until, paused := p.Budget.Paused(); paused && time.Until(until) > res.RetryAfter {
			res.RetryAfter = time.Until(until)
		}
		w.retryLater(d, res.RetryAfter, errors.New(res.Reason), "transport")
	default:
		if res.Outcome == llm.OutcomeTransport {
			res.Reason = fmt.Sprintf("last delivery (%d of %d) failed: %s", d.n, w.consumer.MaxDeliver, res.Reason)
		}
		w.deadLetter(jobCtx, d, res, "worker")
	}
}

// retryLater naks with the provider's reset time, the pool's pause or an
// exponential backoff by delivery: never a bare nak that burns deliveries.
func (w *Worker) retryLater(d *delivery, retryAfter time.Duration, why error, reason string) {
	delay := backoff(d.n, 2*time.Second, 5*time.Minute)
	if retryAfter > 0 {
		delay = retryAfter
	}
	w.counts.retried.Add(1)
	w.obs.Nak(d.pool, reason)
	d.log.Warn("job will be retried", "reason", why, "delay", delay)
	if err := d.msg.NakWithDelay(delay); err != nil {
		d.log.Warn("nak failed; the job returns after its ack wait", "err", err)
	}
}

// deadLetter records the dead letter in the audit (its stream sequence
// not known yet: 0), publishes the job with its diagnostics to the DLQ,
// records the letter's sequence and terminates the job, in that order. A
// crash anywhere leaves the job redeliverable and never a letter the audit
// does not know: a redelivery finds the letter recorded, publishes it if
// it is not on the stream yet (the publish is deduplicated by job id) and
// does not run the job again (settledBefore). A job that already has a
// result (another delivery of it finished) is terminated without a
// letter: a document ends as exactly one of result or dead letter.
func (w *Worker) deadLetter(jobCtx context.Context, d *delivery, res *llm.Result, source string) {
	dl := &jobs.DeadLetter{
		JobSeq: d.seq, Deliveries: d.n, Result: *res, ChunkFailure: jobs.ChunkFailureOf(res), WorkerID: w.id, Source: source,
		StartedAt: d.started, FinishedAt: time.Now(),
	}
	if d.env != nil {
		dl.Job = *d.env
	} else {
		dl.Job = unreadableEnvelope(d.msg.Headers().Get(jetstream.MsgIDHeader), d.seq, d.pool)
	}
	if dl.Reason == "" {
		dl.Reason = string(res.Outcome)
	}
	redactLetter(dl)
	if d.env == nil {
		d.env = &dl.Job
	}

	var done bool
	if err := w.durably(jobCtx, d, func() (err error) {
		done, err = w.hasResult(dl.Job.JobID)
		return err
	}); err != nil {
		d.log.Warn("shutting down before the audit store could be asked about the job; it is handed back", "err", err)
		w.requeue(d.msg, d.pool, d.log)
		return
	}
	if done {
		w.terminate(d, "already has a result")
		d.log.Info("job already has a result from another delivery: terminated without a dead letter", "outcome", res.Outcome)
		return
	}

	rec := w.letterRecord(d, res, dl.Reason)
	if err := w.durably(jobCtx, d, func() error { return w.recordLetter(rec) }); err != nil {
		d.log.Warn("shutting down with a dead letter the audit store never accepted; the job is handed back", "err", err)
		w.requeue(d.msg, d.pool, d.log)
		return
	}
	if w.died("recorded") {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(jobCtx), auditTimeout)
	defer cancel()
	seq, err := w.dlq.Publish(actx, dl)
	if err != nil {
		w.retryLater(d, 0, err, "dead_letter")
		return
	}
	if w.died("published") {
		return
	}
	if err := w.durably(jobCtx, d, func() error { return w.recordLetterSeq(rec, seq) }); err != nil {
		d.log.Warn("shutting down before the audit store knew where the dead letter is; the job is handed back (its next delivery records it)", "err", err)
		w.requeue(d.msg, d.pool, d.log)
		return
	}
	w.terminate(d, dl.Reason)
	w.counts.dead.Add(1)
	d.log.Info("job dead-lettered", "outcome", res.Outcome, "reason", dl.Reason, "dlq_seq", seq, "attempts", len(res.Attempts))
}

// letterRecord is the final audit record of a job dead-lettered for
// reason, its letter at sequence 0 until published.
func (w *Worker) letterRecord(d *delivery, res *llm.Result, reason string) *audit.Record {
	rec := w.record(d, res, true)
	rec.DeadLetter = &audit.DeadLetter{Stream: jobs.DLQStream, Reason: reason}
	return rec
}

// recordLetter writes rec, the letter at sequence 0, before the letter is
// published; a worker without an AuditReader writes it after, with its
// sequence (recordLetterSeq).
func (w *Worker) recordLetter(rec *audit.Record) error {
	if w.reader == nil {
		return nil
	}
	return w.write(rec)
}

// recordLetterSeq makes the audit know where the letter of rec's job is
// on the DLQ: it sets the sequence of the letter recorded before it was
// published, or, for a worker without an AuditReader (nowhere to set it
// later), writes rec with it.
func (w *Worker) recordLetterSeq(rec *audit.Record, seq uint64) error {
	if w.reader == nil {
		rec.DeadLetter.Seq = seq
		return w.write(rec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	return w.reader.SetDeadLetterSeq(ctx, rec.JobID, seq)
}

// died reports whether a test ends the dead-letter path at step.
func (w *Worker) died(step string) bool { return w.dieAt != nil && w.dieAt(step) }

// publishRecorded publishes the dead letter an earlier delivery of the job
// recorded in the audit and died before publishing, or before recording
// where it landed, and records its sequence. When the earlier letter did
// reach the stream the publish is deduplicated by the job id and returns
// its sequence; otherwise the letter is made from the job and the audit's
// outcome and reason (its attempts are in the audit store). It reports
// false when the job was handed back to try again later.
func (w *Worker) publishRecorded(d *delivery, st audit.JobState) bool {
	dl := &jobs.DeadLetter{
		Job: *d.env, JobSeq: d.seq, Deliveries: d.n - 1, WorkerID: w.id, Source: "recorded", FinishedAt: time.Now(),
		Result: llm.Result{Outcome: llm.Outcome(st.Status), Reason: st.DeadLetterReason},
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	seq, err := w.dlq.Publish(ctx, dl)
	if err == nil {
		err = w.reader.SetDeadLetterSeq(ctx, d.env.JobID, seq)
	}
	if err != nil {
		w.retryLater(d, 0, fmt.Errorf("publish the dead letter an earlier delivery recorded: %w", err), "dead_letter")
		return false
	}
	d.log.Info("job dead-lettered by an earlier delivery that stopped before its letter was on the DLQ: letter published", "dlq_seq", seq)
	return true
}

func (w *Worker) terminate(d *delivery, reason string) {
	if err := jobs.Terminate(d.msg, truncate(reason, 200), w.termReason); err != nil {
		d.log.Warn("terminate failed; the job will be redelivered and settled once", "err", err)
	}
}

// durably runs fn (an audit write or read a finished job depends on) until
// it succeeds. While it fails the finished job is held: kept in memory,
// its delivery in progress, pulling paused by the audit circuit, and fn
// tried again as the circuit's probe. It gives up only when jobCtx ends
// (shutdown past its grace period); the job is then redelivered.
func (w *Worker) durably(jobCtx context.Context, d *delivery, fn func() error) error {
	probe := false
	for {
		err := fn()
		if err == nil {
			w.auditCircuit.Success(probe)
			return nil
		}
		w.auditCircuit.Failure(probe, err, 0)
		if jobCtx.Err() != nil {
			return err
		}
		d.log.Warn("audit store failed: the finished job is kept in memory and in progress, pulling is paused, and the write is tried again", "err", err)
		w.held.Add(1)
		var werr error
		probe, werr = w.auditCircuit.Allow(jobCtx, true)
		w.held.Add(-1)
		if werr != nil {
			return fmt.Errorf("%w (and shutdown came first: %w)", err, werr)
		}
	}
}

// settledBefore settles a redelivered job that an earlier delivery already
// brought to a final state in the audit: a worker died after its audit
// write and before its ack or terminate reached the server. A result is
// acked and a dead letter terminated, and the job does not run again, so a
// document never ends with both (a second run may well succeed where the
// first was dead-lettered). When the audit store cannot answer the job
// runs as usual: its dead-letter path asks again.
func (w *Worker) settledBefore(d *delivery) bool {
	st, ok := w.auditState(d, "audit store not asked whether an earlier delivery settled the job; it runs again")
	if !ok {
		return false
	}
	switch {
	case st.OK():
		if err := d.msg.Ack(); err != nil {
			d.log.Warn("ack of an already settled job failed; it will be redelivered and settled once", "err", err)
		}
		d.log.Info("job already has a result from an earlier delivery: acked without running again")
		return true
	case st.DeadLettered:
		w.settleLetter(d, st)
		d.log.Info("job already dead-lettered by an earlier delivery: terminated without running again")
		return true
	}
	return false
}

// auditState asks the audit store for d's job's state. ok is false when
// the worker has no AuditReader or the store cannot answer; the latter is
// logged with unanswered, which says what the job does instead.
func (w *Worker) auditState(d *delivery, unanswered string) (st audit.JobState, ok bool) {
	if w.reader == nil {
		return st, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	states, err := w.reader.JobStates(ctx, []string{d.env.JobID})
	if err != nil {
		d.log.Warn(unanswered, "err", err)
		return st, false
	}
	return states[d.env.JobID], true
}

// settleLetter ends a delivery of a job another delivery dead-lettered:
// the letter the audit recorded is published if it is not on the DLQ yet,
// and the job terminated (or handed back when the publish failed).
func (w *Worker) settleLetter(d *delivery, st audit.JobState) {
	if st.DeadLetterSeq == 0 && !w.publishRecorded(d, st) {
		return
	}
	w.terminate(d, "already dead-lettered")
}

// deadLetteredMeanwhile settles a delivery that got a valid answer for a
// job another delivery of it dead-lettered while this one ran: two
// deliveries of one job run at once when the first outlived its ack wait
// (its worker was stopped longer than that) and the
// server gave the job to another worker. The result is not written, so
// the document keeps its one final state, the letter. It is asked only
// then (d.n > 1, or the delivery lapsed): a first delivery kept alive
// cannot have a twin. When the audit store cannot answer, the result is
// written as usual.
func (w *Worker) deadLetteredMeanwhile(d *delivery) bool {
	st, ok := w.auditState(d, "audit store not asked whether another delivery dead-lettered the job; its result is written")
	if !ok || !st.DeadLettered {
		return false
	}
	w.settleLetter(d, st)
	d.log.Warn("valid answer dropped: another delivery of the job dead-lettered it while this one ran (this delivery outlived its ack wait)",
		"delivery", d.n, "lapsed", d.lapsed)
	return true
}

// hasResult reports whether the audit store has a result for the job (none
// when the worker has no AuditReader).
func (w *Worker) hasResult(jobID string) (bool, error) {
	if w.reader == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	states, err := w.reader.JobStates(ctx, []string{jobID})
	if err != nil {
		return false, fmt.Errorf("audit: state of job %s: %w", jobID, err)
	}
	return states[jobID].OK(), nil
}

// redactLetter removes anything that looks like a credential from the
// diagnostics (providers redact already; this is defence in depth, as in
// the audit). The job itself is left as submitted.
func redactLetter(dl *jobs.DeadLetter) {
	dl.Reason = redact.Credentials(dl.Reason)
	if dl.ChunkFailure != nil {
		dl.ChunkFailure.Reason = redact.Credentials(dl.ChunkFailure.Reason)
	}
	atts := make([]llm.Attempt, len(dl.Attempts))
	for i, a := range dl.Attempts {
		a.Raw, a.Error = redact.Credentials(a.Raw), redact.Credentials(a.Error)
		if len(a.Value) > 0 {
			a.Value = redact.JSON(a.Value)
		}
		atts[i] = a
	}
	dl.Attempts = atts
}

// deliveryLogger names a delivery on every log line about it: its pool,
// stream sequence, delivery number (attempt: the job's nth run by some
// worker) and job. A body too broken to decode is named by its message id
// (the job id) alone. The attributes are built in one go and formatted
// only when the job logs (jobLogger); the logger lives in d (deliveryLog).
func (w *Worker) deliveryLogger(d *delivery) *slog.Logger {
	jobID, docID, run := "", "", ""
	if d.env != nil {
		jobID, docID, run = d.env.JobID, d.env.DocumentID, d.env.Run
	} else {
		jobID = d.msg.Headers().Get(jetstream.MsgIDHeader)
	}
	l := &d.logs
	l.attrs = [...]slog.Attr{slog.String("pool", d.pool), slog.Uint64("stream_seq", d.seq), slog.Int("attempt", d.n),
		slog.String("job_id", jobID), slog.String("document_id", docID), slog.String("run", run)}
	// What jobLogger builds, in place.
	l.lazy = lazyHandler{base: w.log.Handler(), attrs: l.attrs[:]}
	l.logger = *slog.New(&l.lazy)
	return &l.logger
}

// unreadableEnvelope stands for a job whose body cannot be read, so the
// dead letter and the audit row still name it: by its message id, else by
// its stream sequence.
func unreadableEnvelope(msgID string, seq uint64, pool string) jobs.Envelope {
	if msgID == "" {
		msgID = fmt.Sprintf("seq-%d", seq)
	}
	return jobs.Envelope{JobID: msgID, DocumentID: "unreadable:" + msgID, Pool: pool}
}

func (w *Worker) record(d *delivery, res *llm.Result, final bool) *audit.Record {
	return w.recordInto(new(audit.Record), d, res, final)
}

// recordInto is record made in rec, which it returns.
func (w *Worker) recordInto(rec *audit.Record, d *delivery, res *llm.Result, final bool) *audit.Record {
	e := d.env
	*rec = audit.Record{
		JobID: e.JobID, DocumentID: e.DocumentID, DocumentHash: e.DocumentHash, Run: e.Run,
		SchemaName: e.Schema.Name, SchemaVersion: e.Schema.Version, SchemaFingerprint: e.Schema.Fingerprint,
		Provider: e.Provider, Model: e.Model, Pool: d.pool, Delivery: d.n, WorkerID: w.id,
		StartedAt: d.started, FinishedAt: time.Now(),
		Attempts: res.Attempts, Outcome: res.Outcome, Reason: res.Reason, Usage: res.Usage, Final: final,
	}
	if final && res.Outcome == llm.OutcomeOK {
		rec.Value, rec.Sources = res.Value, res.Sources
	}
	if d.batch && !final {
		// A batch pool's next delivery replays these attempts from the
		// stored batch answers and records them then: recording them now
		// too would count each paid answer twice.
		rec.Attempts, rec.Usage = nil, llm.Usage{}
	}
	return rec
}

// write blocks until rec is durable; it outlives shutdown's cancellation.
// A writer that waits with a deadline of its own (audit.TimedWriter: the
// group writer, bare or observed) is spared a context per record.
func (w *Worker) write(rec *audit.Record) error {
	return audit.WriteWithin(w.writer, rec, auditTimeout)
}

// writeBestEffort writes a record the job does not wait for (attempts of
// a delivery that is handed back): a failure is logged, and the job's
// next delivery records its own.
func (w *Worker) writeBestEffort(rec *audit.Record, what string, log *slog.Logger) {
	if err := w.write(rec); err != nil {
		log.Warn(what, "err", err)
	}
}

// keepAlive tells the server the job is still being worked on every third
// of the ack wait (the progress interval) until stop is called; after stop
// returns it sends nothing more. The keeper lives in the delivery and
// joins the worker's keepers, whose one timer serves every job in flight:
// starting and stopping a job's keep-alive is a slice append and a swap, no
// allocation and no timer of its own (a timer per job, created and stopped
// on every document, was 3 allocations and ~1.9k instructions).
func (w *Worker) keepAlive(d *delivery) *keeper {
	k := &d.keep
	*k = keeper{msg: d.msg, log: d.log, every: w.consumer.ProgressInterval(), last: d.started}
	w.keepers.start(k)
	return k
}

// keepers is a set of keep-alives with one timer, set for the earliest
// in-progress ack due. A job joins with its first ack due a progress
// interval after its start; since every ack already scheduled is due no
// later than a progress interval from now, the timer needs resetting on
// a start only when it is not armed (or the job's interval is shorter than
// those in the set). When it fires, it sends the acks due (or due
// within an eighth of their interval, so that jobs started close together
// share a firing) and is set for the next one due.
type keepers struct {
	mu    sync.Mutex // guards everything below and the keepers' state; held while sending, so stop orders after any send
	jobs  []*keeper
	t     *time.Timer
	armed time.Time // when t fires; zero when not armed
}

// keeper is one job's keep-alive, kept in its delivery.
type keeper struct {
	set   *keepers
	i     int // index in set.jobs; -1 once stopped
	msg   jetstream.Msg
	log   *slog.Logger
	every time.Duration
	due   time.Time     // the next in-progress ack
	last  time.Time     // the delivery's start, then the last in-progress ack sent
	gap   time.Duration // the longest time between two of those
}

func (s *keepers) start(k *keeper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k.set, k.i, k.due = s, len(s.jobs), k.last.Add(k.every)
	s.jobs = append(s.jobs, k)
	if s.armed.IsZero() || k.due.Before(s.armed) {
		s.arm(k.due)
	}
}

// arm sets the timer for at; s.mu is held.
func (s *keepers) arm(at time.Time) {
	s.armed = at
	if s.t == nil {
		s.t = time.AfterFunc(time.Until(at), s.fire)
		return
	}
	s.t.Reset(time.Until(at))
}

// fire sends the in-progress acks due and sets the timer for the next.
func (s *keepers) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var next time.Time
	for _, k := range s.jobs {
		if !k.due.After(now.Add(k.every / 8)) {
			k.send(now)
		}
		if next.IsZero() || k.due.Before(next) {
			next = k.due
		}
	}
	s.armed = time.Time{}
	if !next.IsZero() {
		s.arm(next)
	}
}

// send sends one in-progress ack and schedules the next; s.mu is held.
func (k *keeper) send(now time.Time) {
	if err := k.msg.InProgress(); err != nil {
		k.log.Warn("in-progress ack failed", "err", err)
	} else {
		k.gap = max(k.gap, now.Sub(k.last))
		k.last = now
	}
	k.due = now.Add(k.every)
}

// lapsed reports whether, at some point of the delivery, the server's
// redelivery timer (the ack wait, or the shortest back-off, three
// progress intervals) ran out with no in-progress ack sent: the process
// was stopped (SIGSTOP, a frozen VM) or starved, so its timer could not
// fire. The server may then have delivered the job again.
func (k *keeper) lapsed() bool {
	k.set.mu.Lock()
	defer k.set.mu.Unlock()
	return max(k.gap, time.Since(k.last)) >= 3*k.every
}

// stop ends the keep-alive; no in-progress ack is sent after it returns.
func (k *keeper) stop() {
	s := k.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if k.i < 0 {
		return
	}
	last := len(s.jobs) - 1
	s.jobs[k.i] = s.jobs[last]
	s.jobs[k.i].i = k.i
	s.jobs[last] = nil
	s.jobs = s.jobs[:last]
	k.i = -1
}

// onMaxDeliveries is the safety net: a job that exhausted its deliveries
// without a worker settling it (the worker died or stalled on the last one)
// is moved from the stream to the DLQ, unless the audit store has a result
// for it: then it is only removed. A letter whose job got a result while it
// was being written (a stalled worker finished after all) is withdrawn. A
// nil error means the advisory is settled (moved, removed, or nothing left
// to move); an error leaves it for another try, so nothing is
// dead-lettered while the audit store cannot be asked.
func (w *Worker) onMaxDeliveries(ctx context.Context, data []byte) (err error) {
	var ev jobs.MaxDeliveriesEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		w.log.Warn("unreadable max-deliveries advisory dropped", "err", err)
		return nil
	}
	if ev.Stream != jobs.JobsStream {
		return nil
	}
	log := w.log.With("stream_seq", ev.StreamSeq, "consumer", ev.Consumer, "attempt", ev.Deliveries)
	defer func() {
		if err != nil { // log names the job once it is known
			log.Error("max deliveries: job not moved yet; will retry", "err", err)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, auditTimeout)
	defer cancel()
	stream, err := w.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", jobs.JobsStream, err)
	}
	raw, err := stream.GetMsg(ctx, ev.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// Settled meanwhile: acked or terminated (a work queue removes it).
		log.Debug("max deliveries: job already gone from the stream")
		return nil
	}
	if err != nil {
		return fmt.Errorf("fetch job %d: %w", ev.StreamSeq, err)
	}
	env, derr := jobs.DecodeEnvelope(raw.Data)
	pool := jobs.PoolFor(strings.TrimPrefix(raw.Subject, jobs.JobSubject("")))
	if derr == nil {
		log = log.With("job_id", env.JobID, "document_id", env.DocumentID, "run", env.Run)
	} else {
		log = log.With("job_id", raw.Header.Get(jetstream.MsgIDHeader), "document_id", "", "run", "")
	}
	dl := &jobs.DeadLetter{
		JobSeq: ev.StreamSeq, Deliveries: ev.Deliveries,
		Result: llm.Result{
			Outcome: llm.OutcomeTransport,
			Reason:  fmt.Sprintf("max deliveries (%d) reached without a final answer: the worker holding the last delivery died or stalled", ev.Deliveries),
		},
		WorkerID: w.id, Source: "advisory", FinishedAt: time.Now(),
	}
	if derr == nil {
		dl.Job = *env
	} else {
		dl.Outcome, dl.Reason = llm.OutcomeFatal, derr.Error()
		dl.Job = unreadableEnvelope(raw.Header.Get(jetstream.MsgIDHeader), ev.StreamSeq, pool)
	}
	done, err := w.hasResult(dl.Job.JobID)
	if err != nil {
		return fmt.Errorf("before dead-lettering: %w", err)
	}
	if done {
		if err := jobs.DeleteJob(ctx, w.js, ev.StreamSeq); err != nil {
			return err
		}
		log.Info("max deliveries: the job already has a result; removed from the stream without a dead letter")
		return nil
	}
	// Recorded, published, its sequence recorded: as deadLetter does. A
	// letter an earlier try (or the dying worker) recorded keeps its row.
	d := &delivery{env: &dl.Job, seq: ev.StreamSeq, n: ev.Deliveries, pool: pool, started: dl.FinishedAt}
	rec := w.letterRecord(d, &dl.Result, dl.Reason)
	if err := w.recordLetter(rec); err != nil {
		return fmt.Errorf("audit the dead letter of job %s: %w", dl.Job.JobID, err)
	}
	seq, err := w.dlq.Publish(ctx, dl)
	if err != nil {
		return err
	}
	if err := w.recordLetterSeq(rec, seq); err != nil {
		return fmt.Errorf("audit the dead letter of job %s: %w", dl.Job.JobID, err)
	}
	if done, err := w.hasResult(dl.Job.JobID); err == nil && done {
		if err := w.dlq.Delete(ctx, seq); err != nil {
			return fmt.Errorf("withdraw the dead letter %d of job %s, which has a result: %w", seq, dl.Job.JobID, err)
		}
		log.Warn("max deliveries: the job got a result while its dead letter was written; letter withdrawn from the DLQ (its audit row remains)", "dlq_seq", seq)
	} else {
		w.counts.dead.Add(1)
		log.Info("job dead-lettered after max deliveries", "dlq_seq", seq)
	}
	if err := jobs.DeleteJob(ctx, w.js, ev.StreamSeq); err != nil {
		return err
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
