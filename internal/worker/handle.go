package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/redact"
	"github.com/extractq/extractq/schema"
)

// auditTimeout bounds one audit write; a slower store means the job is
// nak'd and comes back, never acked without its rows.
const auditTimeout = 30 * time.Second

// delivery is one delivery of one job and what is known about it.
type delivery struct {
	msg     jetstream.Msg
	seq     uint64 // stream sequence on EXTRACTQ_JOBS
	n       int    // 1-based delivery count
	last    bool   // the consumer will not deliver it again
	env     *jobs.Envelope
	pool    string
	started time.Time
	log     *slog.Logger
}

// handle runs one delivery to its end: ack, nak with delay, or dead letter.
func (w *Worker) handle(ctx context.Context, p Pool, msg jetstream.Msg) {
	d := &delivery{msg: msg, pool: p.Name, started: time.Now(), log: w.log.With("pool", p.Name)}
	w.obs.JobStarted(p.Name)
	defer w.obs.JobFinished(p.Name)
	md, err := msg.Metadata()
	if err != nil { // not a JetStream message: nothing to ack
		d.log.Error("message without JetStream metadata ignored", "err", err)
		return
	}
	d.seq, d.n = md.Sequence.Stream, int(md.NumDelivered)
	d.last = d.n >= w.consumer.MaxDeliver
	// attempt is the delivery number: the job's nth run by some worker.
	d.log = d.log.With("stream_seq", d.seq, "attempt", d.n)

	env, err := jobs.DecodeEnvelope(msg.Data())
	if err != nil {
		if env != nil && env.JobID != "" && env.DocumentID != "" {
			d.env = env // readable enough to name the job in the audit
		}
		d.log = d.log.With(jobAttrs(d.env, msg)...)
		w.deadLetter(ctx, d, &Outcome{Outcome: llm.OutcomeFatal, Reason: err.Error()}, "decode")
		return
	}
	d.env = env
	d.log = d.log.With(jobAttrs(env, msg)...)

	stop := w.keepAlive(msg, d.log)
	defer stop()

	p2, text, s, out := w.prepare(ctx, p, d)
	if out == nil {
		out = w.engine.Extract(ctx, p2, text, s, env.Options)
	}
	w.finish(ctx, p, d, out)
}

// prepare resolves the document, the schema and the provider. A failure is
// returned as an outcome: fatal when retrying cannot help, transport when it
// may.
func (w *Worker) prepare(ctx context.Context, p Pool, d *delivery) (llm.Provider, string, *schema.Schema, *Outcome) {
	text, err := w.docs.Text(ctx, d.env)
	if err != nil {
		return nil, "", nil, prepFailure(err, errors.Is(err, jobs.ErrEnvelope))
	}
	s, err := w.schemas.get(ctx, d.env.Schema)
	if err != nil {
		return nil, "", nil, prepFailure(err, errors.Is(err, jobs.ErrSchemaNotFound) || errors.Is(err, schema.ErrInvalidSchema))
	}
	prov, err := w.provs.get(p, d.env.Provider, w.newProvider)
	if err != nil {
		return nil, "", nil, prepFailure(fmt.Errorf("provider %q: %w", d.env.Provider, err), true)
	}
	return prov, text, s, nil
}

func prepFailure(err error, permanent bool) *Outcome {
	if permanent {
		return &Outcome{Outcome: llm.OutcomeFatal, Reason: err.Error()}
	}
	return &Outcome{Outcome: llm.OutcomeTransport, Reason: err.Error()}
}

// finish makes the outcome durable and settles the message.
func (w *Worker) finish(ctx context.Context, p Pool, d *delivery, out *Outcome) {
	switch {
	case out.Outcome == llm.OutcomeOK:
		rec := w.record(d, out, true)
		if err := w.write(rec); err != nil {
			w.retryLater(d, out, fmt.Errorf("audit: %w", err), "audit")
			return
		}
		if err := d.msg.Ack(); err != nil {
			// The result is durable; a redelivery writes nothing new.
			d.log.Warn("ack failed; the job will be redelivered and its result found", "err", err)
		}
		w.counts.done.Add(1)
		d.log.Debug("job done", "attempts", len(out.Attempts), "tokens", out.Usage.Total())
	case out.Outcome == llm.OutcomeCanceled || ctx.Err() != nil:
		// Shutdown canceled the job: keep what it spent, hand it back.
		if len(out.Attempts) > 0 {
			if err := w.write(w.record(d, out, false)); err != nil {
				d.log.Warn("audit of a canceled job failed", "err", err)
			}
		}
		w.requeue(d.msg, d.pool, d.log)
	case out.Outcome == llm.OutcomeTransport && !d.last:
		if err := w.write(w.record(d, out, false)); err != nil {
			d.log.Warn("audit of a retried job failed", "err", err)
		}
		if until, paused := p.Budget.Paused(); paused && time.Until(until) > out.RetryAfter {
			out.RetryAfter = time.Until(until)
		}
		w.retryLater(d, out, errors.New(out.Reason), "transport")
	default:
		if out.Outcome == llm.OutcomeTransport {
			out.Reason = fmt.Sprintf("last delivery (%d of %d) failed: %s", d.n, w.consumer.MaxDeliver, out.Reason)
		}
		w.deadLetter(ctx, d, out, "worker")
	}
}

// retryLater naks with the provider's reset time, the pool's pause or an
// exponential backoff by delivery: never a bare nak that burns deliveries.
func (w *Worker) retryLater(d *delivery, out *Outcome, why error, reason string) {
	delay := backoff(d.n, 2*time.Second, 5*time.Minute)
	if out != nil && out.RetryAfter > 0 {
		delay = out.RetryAfter
	}
	w.counts.retried.Add(1)
	w.obs.Nak(d.pool, reason)
	d.log.Warn("job will be retried", "reason", why, "delay", delay)
	if err := d.msg.NakWithDelay(delay); err != nil {
		d.log.Warn("nak failed; the job returns after its ack wait", "err", err)
	}
}

// deadLetter publishes the job with its diagnostics to the DLQ, records the
// dead letter in the audit and terminates the job, in that order, so a
// crash anywhere leaves the job redeliverable (the DLQ publish is
// deduplicated by job id).
func (w *Worker) deadLetter(ctx context.Context, d *delivery, out *Outcome, source string) {
	dl := &jobs.DeadLetter{
		JobSeq: d.seq, Deliveries: d.n, Outcome: out.Outcome, Reason: out.Reason,
		Attempts: out.Attempts, Usage: out.Usage, WorkerID: w.id, Source: source,
		StartedAt: d.started, FinishedAt: time.Now(),
	}
	if d.env != nil {
		dl.Job = *d.env
	} else {
		dl.Job = unreadableEnvelope(d.msg.Headers().Get(jetstream.MsgIDHeader), d.seq, d.pool)
	}
	if dl.Reason == "" {
		dl.Reason = string(out.Outcome)
	}
	redactLetter(dl)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	seq, err := w.dlq.Publish(actx, dl)
	if err != nil {
		w.retryLater(d, nil, err, "dead_letter")
		return
	}
	if d.env == nil {
		d.env = &dl.Job
	}
	rec := w.record(d, out, true)
	rec.DeadLetter = &audit.DeadLetter{Stream: jobs.DLQStream, Seq: seq, Reason: dl.Reason}
	if err := w.write(rec); err != nil {
		w.retryLater(d, nil, fmt.Errorf("audit: %w", err), "audit")
		return
	}
	if err := jobs.Terminate(d.msg, truncate(dl.Reason, 200), w.termReason); err != nil {
		d.log.Warn("terminate failed; the job will be redelivered and dead-lettered once", "err", err)
	}
	w.counts.dead.Add(1)
	d.log.Info("job dead-lettered", "outcome", out.Outcome, "reason", dl.Reason, "dlq_seq", seq, "attempts", len(out.Attempts))
}

// redactLetter removes anything that looks like a credential from the
// diagnostics (providers redact already; this is defence in depth, as in
// the audit). The job itself is left as submitted.
func redactLetter(dl *jobs.DeadLetter) {
	dl.Reason = redact.Credentials(dl.Reason)
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

// jobAttrs name a job on every log line about it. A body too broken to
// decode is named by its message id (the job id) alone.
func jobAttrs(env *jobs.Envelope, msg jetstream.Msg) []any {
	if env == nil {
		return []any{"job_id", msg.Headers().Get(jetstream.MsgIDHeader), "document_id", "", "run", ""}
	}
	return []any{"job_id", env.JobID, "document_id", env.DocumentID, "run", env.Run}
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

func (w *Worker) record(d *delivery, out *Outcome, final bool) *audit.Record {
	e := d.env
	rec := &audit.Record{
		JobID: e.JobID, DocumentID: e.DocumentID, DocumentHash: e.DocumentHash, Run: e.Run,
		SchemaName: e.Schema.Name, SchemaVersion: e.Schema.Version, SchemaFingerprint: e.Schema.Fingerprint,
		Provider: e.Provider, Model: e.Model, Pool: d.pool, Delivery: d.n, WorkerID: w.id,
		StartedAt: d.started, FinishedAt: time.Now(),
		Attempts: out.Attempts, Outcome: out.Outcome, Reason: out.Reason, Usage: out.Usage, Final: final,
	}
	if final && out.Outcome == llm.OutcomeOK {
		rec.Value = out.Value
	}
	return rec
}

// write blocks until rec is durable; it outlives shutdown's cancellation.
func (w *Worker) write(rec *audit.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	return w.audit.Write(ctx, rec)
}

// keepAlive tells the server the job is still being worked on every third
// of the ack wait until stop is called.
func (w *Worker) keepAlive(msg jetstream.Msg, log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	every := w.consumer.ProgressInterval()
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					log.Warn("in-progress ack failed", "err", err)
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// onMaxDeliveries is the safety net: a job that exhausted its deliveries
// without a worker settling it (the worker died or stalled on the last one)
// is moved from the stream to the DLQ. A nil error means the advisory is
// settled (moved, or nothing left to move).
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
		JobSeq: ev.StreamSeq, Deliveries: ev.Deliveries, Outcome: llm.OutcomeTransport,
		Reason:   fmt.Sprintf("max deliveries (%d) reached without a final answer: the worker holding the last delivery died or stalled", ev.Deliveries),
		WorkerID: w.id, Source: "advisory", FinishedAt: time.Now(),
	}
	if derr == nil {
		dl.Job = *env
	} else {
		dl.Outcome, dl.Reason = llm.OutcomeFatal, derr.Error()
		dl.Job = unreadableEnvelope(raw.Header.Get(jetstream.MsgIDHeader), ev.StreamSeq, pool)
	}
	seq, err := w.dlq.Publish(ctx, dl)
	if err != nil {
		return err
	}
	d := &delivery{env: &dl.Job, seq: ev.StreamSeq, n: ev.Deliveries, pool: pool, started: dl.FinishedAt}
	rec := w.record(d, &Outcome{Outcome: dl.Outcome, Reason: dl.Reason}, true)
	rec.DeadLetter = &audit.DeadLetter{Stream: jobs.DLQStream, Seq: seq, Reason: dl.Reason}
	if err := w.write(rec); err != nil {
		return fmt.Errorf("audit the dead letter of job %s: %w", dl.Job.JobID, err)
	}
	if err := jobs.DeleteJob(ctx, w.js, ev.StreamSeq); err != nil {
		return err
	}
	w.counts.dead.Add(1)
	log.Info("job dead-lettered after max deliveries", "dlq_seq", seq)
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
