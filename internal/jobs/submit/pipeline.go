package submit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
)

// stagers is how many batches are looked up and stored in the audit store
// at once: their Postgres round trips overlap, and a batch's jobs are
// encoded while others wait for Postgres. The audit store's pool has at
// least four connections (two lookups of a batch run at once, so some wait).
const stagers = 4

// batch is one batch of documents on its way through Submit's pipeline:
// staged (looked up, stored, encoded), published, acked, settled.
type batch struct {
	docs   []Doc
	staged chan struct{} // closed when stage is done with the batch

	// Set by stage.
	items    []item // the jobs to publish, one per document left
	idx      []int  // items[i] is of docs[idx[i]]
	rejected []Rejection
	done     int // already done (final in the audit, or a result for the text)
	failed   int // of done, ended in a dead letter
	// seen are the jobs of the submission's run among done: final in the
	// audit, recorded in the run (Summary.RunSeen).
	seen []string

	// Set by the publisher.
	unacked int // publishes awaiting their ack
}

// pipeline runs Submit's batches through three stages, each its own
// goroutine(s): stage (audit lookups and store, encoding; stagers of
// them), publish (in order, within the window) and settle (in order:
// counts and progress). Each keeps draining its input after a failure, so
// no send ever blocks for good; finish closes the inputs and waits.
type pipeline struct {
	s        *Submitter
	job      Job
	progress func(Summary)
	start    time.Time
	ctx      context.Context
	cancel   context.CancelCauseFunc

	work    chan *batch // to the stagers
	order   chan *batch // to the publisher, in the order read
	settled chan *batch // to the settler, acked, in order
	done    chan struct{}
	stagers sync.WaitGroup

	mu      sync.Mutex // guards sum and failure
	sum     Summary
	failure error
	batches int
}

func (s *Submitter) startPipeline(ctx context.Context, job Job, progress func(Summary)) *pipeline {
	p := &pipeline{s: s, job: job, progress: progress, start: time.Now(),
		work: make(chan *batch), order: make(chan *batch, stagers+1), settled: make(chan *batch, 2), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	for range stagers {
		p.stagers.Go(p.stageLoop)
	}
	go p.publishLoop()
	go p.settleLoop()
	return p
}

// send queues docs as the next batch; it blocks while the pipeline is full.
func (p *pipeline) send(docs []Doc) error {
	if len(docs) == 0 {
		return p.err()
	}
	p.batches++
	b := &batch{docs: docs, staged: make(chan struct{})}
	select {
	case p.order <- b:
	case <-p.ctx.Done():
		return p.err()
	}
	select {
	case p.work <- b:
		return nil
	case <-p.ctx.Done():
		close(b.staged) // the publisher skips it
		return p.err()
	}
}

// reject records a document the reader refused.
func (p *pipeline) reject(r Rejection) {
	p.mu.Lock()
	p.sum.Rejected = append(p.sum.Rejected, r)
	p.mu.Unlock()
}

// fail stops the pipeline with err (the first one counts).
func (p *pipeline) fail(err error) {
	p.mu.Lock()
	if p.failure == nil && p.ctx.Err() == nil {
		p.failure = err
	}
	p.mu.Unlock()
	p.cancel(err)
}

// err is why the pipeline stopped, or nil.
func (p *pipeline) err() error {
	if p.ctx.Err() == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failure != nil {
		return p.failure
	}
	return p.ctx.Err()
}

// finish waits for the batches sent to be settled and returns the summary.
func (p *pipeline) finish() (Summary, error) {
	close(p.work)
	close(p.order)
	<-p.done
	p.stagers.Wait()
	err := p.err()
	p.cancel(nil)
	if p.batches == 0 {
		p.report() // the rejections, when no batch was left
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum.Elapsed = time.Since(p.start)
	return p.sum, err
}

func (p *pipeline) report() {
	if p.progress == nil {
		return
	}
	p.mu.Lock()
	p.sum.Elapsed = time.Since(p.start)
	sum := p.sum
	p.mu.Unlock()
	p.progress(sum)
}

func (p *pipeline) stageLoop() {
	for b := range p.work {
		if p.ctx.Err() == nil {
			if err := p.s.stage(p.ctx, p.job, b); err != nil {
				p.fail(err)
			}
		}
		close(b.staged)
	}
}

// publishLoop publishes the staged batches in order and hands each to the
// settler once all its acks are in.
func (p *pipeline) publishLoop() {
	defer close(p.settled)
	w := p.s.newWindow()
	var waiting []*batch // published, some acks outstanding, oldest first
	handOff := func() {
		for len(waiting) > 0 && waiting[0].unacked == 0 {
			p.settled <- waiting[0]
			waiting = waiting[1:]
		}
	}
	for b := range p.order {
		select {
		case <-b.staged:
		case <-p.ctx.Done():
		}
		if p.ctx.Err() != nil {
			continue
		}
		for i := range b.items {
			if err := w.publish(p.ctx, &b.items[i], b); err != nil {
				p.fail(err)
				break
			}
			handOff()
		}
		if p.ctx.Err() != nil {
			continue
		}
		waiting = append(waiting, b)
		handOff()
	}
	for p.ctx.Err() == nil && len(waiting) > 0 {
		if err := w.resolveOldest(p.ctx); err != nil {
			p.fail(err)
			break
		}
		handOff()
	}
}

func (p *pipeline) settleLoop() {
	defer close(p.done)
	for b := range p.settled {
		if p.ctx.Err() != nil {
			continue
		}
		if err := p.settle(b); err != nil {
			p.fail(err)
			continue
		}
		p.report()
	}
}

// settle counts what became of each document of an acked batch.
func (p *pipeline) settle(b *batch) error {
	var dups []int // items JetStream called duplicates
	for i, it := range b.items {
		if it.err == nil && it.dup {
			dups = append(dups, i)
		}
	}
	queued, err := p.s.stillQueued(p.ctx, b.items, dups)
	if err != nil {
		return err
	}
	run := p.job.Run
	p.mu.Lock()
	defer p.mu.Unlock()
	sum := &p.sum
	sum.Rejected = append(sum.Rejected, b.rejected...)
	sum.AlreadyDone += b.done
	sum.AlreadyFailed += b.failed
	sum.RunSeen = append(sum.RunSeen, b.seen...)
	var gone []string // duplicates whose original left the stream
	for i, it := range b.items {
		original, still := queued[i]
		switch {
		case it.err != nil:
			d := b.docs[b.idx[i]]
			sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: it.err.Error()})
		case it.dup && !still:
			gone = append(gone, it.env.JobID)
		case it.dup:
			sum.Duplicates++
			sum.JobIDs, sum.JobSeqs = append(sum.JobIDs, it.env.JobID), append(sum.JobSeqs, it.seq)
			if run != "" && original == run {
				sum.RunSeen = append(sum.RunSeen, it.env.JobID)
			}
		default:
			sum.Queued++
			sum.JobIDs, sum.JobSeqs = append(sum.JobIDs, it.env.JobID), append(sum.JobSeqs, it.seq)
			if run != "" {
				sum.RunJobs = append(sum.RunJobs, it.env.JobID)
			}
		}
	}
	return p.s.settleGone(p.ctx, run, gone, sum)
}

// stillQueued reports which of the duplicates items[dups] are still on the
// job stream at their seq (the original's sequence): waiting, or being
// worked on, since a worker acks only after the audit is durable. The map
// holds the run of each one still queued, as its original names it ("" if
// unreadable): a job queued into the run by a submission killed before it
// counted it is among these (Summary.RunSeen).
func (s *Submitter) stillQueued(ctx context.Context, items []item, dups []int) (map[int]string, error) {
	if len(dups) == 0 {
		return nil, nil
	}
	st, err := s.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", jobs.JobsStream, err)
	}
	out := make(map[int]string, len(dups))
	for _, i := range dups {
		it := items[i]
		m, err := st.GetMsg(ctx, it.seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look up job %s on %s: %w", it.env.JobID, jobs.JobsStream, err)
		}
		if m.Header.Get(jetstream.MsgIDHeader) != it.env.JobID {
			continue
		}
		var run string
		if env, err := jobs.DecodeEnvelope(m.Data); err == nil {
			run = env.Run
		}
		out[i] = run
	}
	return out, nil
}

// settleGone classifies duplicates whose original has left the stream: its
// worker acked or terminated it after auditing it, so the audit has it
// final (already done), unless the audit is another database or the stream
// was purged (lost). Those final in run are the run's (Summary.RunSeen).
func (s *Submitter) settleGone(ctx context.Context, run string, ids []string, sum *Summary) error {
	if len(ids) == 0 {
		return nil
	}
	states, err := s.store.JobStates(ctx, ids)
	if err != nil {
		return fmt.Errorf("look up earlier results: %w", err)
	}
	for _, id := range ids {
		st, ok := states[id]
		switch {
		case !ok || !st.Final():
			sum.Lost++
		case st.OK():
			sum.AlreadyDone++
		default:
			sum.AlreadyDone++
			sum.AlreadyFailed++
		}
		if ok && st.Final() && run != "" && st.Run == run {
			sum.RunSeen = append(sum.RunSeen, id)
		}
	}
	return nil
}

// stage skips the documents of b whose job is already final, stores the
// rest in the audit store and encodes their jobs (b.items). Documents the
// audit store refuses are rejected one by one and the rest published; if
// the store fails as a whole (unreachable), the batch is rejected and
// nothing of it is published. The error stops the submission (ctx, the
// object store).
func (s *Submitter) stage(ctx context.Context, job Job, b *batch) error {
	hashes := contentHashes(b.docs)
	left, ids, err := s.skipFinal(ctx, job, b, hashes)
	if err != nil || len(left) == 0 {
		return err
	}
	// Originals first, addressed by their hash: one stored for a document
	// that is then not queued is harmless, a job without its original is not.
	// A document read with a password has its pages' pictures stored too:
	// a worker could not read its original again.
	originals, pictures := make([]*jobs.ObjectRef, len(left)), make([]*jobs.ObjectRef, len(left))
	for k, i := range left {
		d := &b.docs[i]
		if d.Original == nil {
			continue
		}
		if originals[k], _, err = s.pub.PutOriginal(ctx, d.Original); err == nil && d.WithPassword {
			if pics := pagePictures(d.Document, job.Options.Input); pics != nil {
				pictures[k], err = s.pub.PutPictures(ctx, originals[k].Name, pics)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: %w", d.Source, err) // the object store is down: so is the job stream
		}
	}
	// The documents are stored while their jobs are encoded.
	docs := make([]audit.Document, len(left))
	for k, i := range left {
		d := &b.docs[i]
		docs[k] = audit.Document{ID: d.ID, Hash: hashes[i], Source: d.Source, Metadata: d.Metadata, Text: d.Text}
		if d.Document != nil {
			docs[k].Pages = pageRanges(d.Document)
		}
	}
	stored := make(chan error, 1)
	go func() { stored <- s.store.PutDocuments(ctx, docs) }()
	now := time.Now().UTC()
	items := make([]item, len(left))
	envs := make([]jobs.Envelope, len(left))
	var encodeErr error
	mb := s.pub.NewMessageBatch(len(left)) // the batch's messages share their allocations
	for k, i := range left {
		d := &b.docs[i]
		env := &envs[k]
		*env = jobs.Envelope{
			V: jobs.EnvelopeVersion, JobID: ids[k], DocumentHash: hashes[i],
			Run: job.Run, DocumentID: d.ID, Metadata: d.Metadata, Schema: job.Schema,
			Provider: job.Provider, Model: job.Model, Pool: job.Pool, Options: job.Options, SubmittedAt: now,
		}
		describe(env, *d, originals[k])
		env.Pictures = pictures[k]
		items[k] = item{env: env}
		if encodeErr == nil {
			items[k].msg, items[k].err = mb.Sealed(ctx, env, d.Text)
			if items[k].err != nil {
				if ctx.Err() != nil {
					encodeErr = ctx.Err()
				}
				items[k].err = fmt.Errorf("publish: %w", items[k].err)
			}
		}
	}
	err = <-stored
	if encodeErr != nil {
		return encodeErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var some *audit.DocumentErrors
		if !errors.As(err, &some) {
			for _, i := range left {
				d := &b.docs[i]
				b.rejected = append(b.rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: fmt.Sprintf("store in the audit database: %v", err)})
			}
			return nil
		}
		kept, keptIdx := items[:0], left[:0]
		for k, i := range left {
			if e, bad := some.Errs[k]; bad {
				d := &b.docs[i]
				b.rejected = append(b.rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: fmt.Sprintf("%v: %v", ErrBadInput, e)})
				continue
			}
			kept, keptIdx = append(kept, items[k]), append(keptIdx, i)
		}
		items, left = kept, keptIdx
	}
	b.items, b.idx = items, left
	return nil
}

// submittedLookup is implemented by *audit.Store: both of skipFinal's
// lookups in one round trip.
type submittedLookup interface {
	LookUpSubmitted(ctx context.Context, fingerprint, model string, jobIDs []string, keys []audit.TextKey) (map[string]audit.JobState, map[audit.TextKey]bool, error)
}

// lookUp returns the states of jobIDs and which keys have a result: in
// one round trip when the store can, else with its two lookups at once.
func (s *Submitter) lookUp(ctx context.Context, job Job, jobIDs []string, keys []audit.TextKey) (map[string]audit.JobState, map[audit.TextKey]bool, error) {
	if l, ok := s.store.(submittedLookup); ok {
		return l.LookUpSubmitted(ctx, job.Schema.Fingerprint, job.Model, jobIDs, keys)
	}
	var (
		states   map[string]audit.JobState
		stateErr error
		looked   = make(chan struct{})
	)
	go func() {
		defer close(looked)
		states, stateErr = s.store.JobStates(ctx, jobIDs)
	}()
	done, err := s.store.HaveResults(ctx, job.Schema.Fingerprint, job.Model, keys)
	<-looked
	if err == nil {
		err = stateErr
	}
	return states, done, err
}

// skipFinal leaves out of b the documents whose job is already final in
// the audit store (a result or a dead letter), or that have a result for
// the same text, schema fingerprint and model (made by a job of another
// id: a resubmission, or a job keyed before job ids included the document
// id), and counts them as already done. JetStream's duplicate window
// cannot do this: it forgets a job once the window has passed or the
// server restarted, while the audit does not. It returns the indexes of
// the documents left and their job ids. The two lookups go in one round
// trip (lookUp).
func (s *Submitter) skipFinal(ctx context.Context, job Job, b *batch, hashes []string) (left []int, ids []string, err error) {
	all := jobIDs(job, b.docs, hashes)
	keys := make([]audit.TextKey, len(b.docs))
	for i := range b.docs {
		keys[i] = audit.TextKey{DocumentID: b.docs[i].ID, ContentHash: hashes[i]}
	}
	states, done, err := s.lookUp(ctx, job, all, keys)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		for _, d := range b.docs {
			b.rejected = append(b.rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: fmt.Sprintf("look up earlier results in the audit database: %v", err)})
		}
		return nil, nil, nil
	}
	left, ids = make([]int, 0, len(b.docs)), make([]string, 0, len(b.docs))
	for i := range b.docs {
		st, ok := states[all[i]]
		if ok && st.Final() && job.Run != "" && st.Run == job.Run {
			b.seen = append(b.seen, all[i]) // whether or not it has a result (the case below)
		}
		switch {
		case done[keys[i]]:
			b.done++
		case ok && st.Final():
			b.done++
			if !st.OK() {
				b.failed++
			}
		default:
			left, ids = append(left, i), append(ids, all[i])
		}
	}
	return left, ids, nil
}
