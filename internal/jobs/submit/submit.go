package submit

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/termsafe"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/schema"
)

// Store is the part of the audit store submission needs; *audit.Store
// implements it.
type Store interface {
	RegisterSchema(ctx context.Context, name string, body []byte, fingerprint string) (version int, created bool, err error)
	PutDocuments(ctx context.Context, docs []audit.Document) error
	JobStates(ctx context.Context, jobIDs []string) (map[string]audit.JobState, error)
	HaveResults(ctx context.Context, fingerprint, model string, docs []audit.TextKey) (map[audit.TextKey]bool, error)
}

// Job is what every submitted document is extracted with.
type Job struct {
	Schema   jobs.SchemaRef
	Provider string // provider spec, e.g. "openai:gpt-4o-mini"
	Model    string
	Pool     string
	Run      string
	Options  jobs.Options
}

// Rejection is a document that was not queued, and why.
type Rejection struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// Summary counts what a submission did.
type Summary struct {
	Queued int `json:"queued"`
	// Duplicates were queued by an earlier submission within the
	// duplicate window and are still on the stream: they are followed
	// like the queued ones (JobIDs).
	Duplicates int `json:"duplicates"`
	// Lost counts documents JetStream took for duplicates of jobs it no
	// longer holds, while the audit has no final record of them (the
	// workers audit to another database, or the stream was purged): they
	// will not run until the duplicate window has passed.
	Lost int `json:"lost"`
	// AlreadyDone counts documents whose job (same id, text, schema and
	// model) is already final in the audit store, or that have a result for
	// that text, schema and model, so they were not queued again;
	// AlreadyFailed of them ended in a dead letter (redo them with `submit
	// resubmit --from-dlq`).
	AlreadyDone   int           `json:"already_done"`
	AlreadyFailed int           `json:"already_failed"`
	Rejected      []Rejection   `json:"rejected"`
	Elapsed       time.Duration `json:"elapsed_ns"`
	// JobIDs are the jobs this submission queued, and the duplicates still
	// queued, in order: the ones that will run, to follow until final.
	// JobSeqs are their sequences on the job stream, in the same order:
	// compared with the pool consumer's last delivered sequence they tell
	// this submission's running jobs from its queued ones.
	JobIDs  []string `json:"-"`
	JobSeqs []uint64 `json:"-"`
}

// Submitter queues documents. Bound its pending acks with
// jetstream.WithPublishAsyncMaxPending on js.
type Submitter struct {
	js      jetstream.JetStream
	store   Store
	pub     *jobs.Publisher
	schemas *jobs.Schemas
	batch   int
}

// Option configures a Submitter.
type Option func(*Submitter)

// WithBatch sets how many documents are stored and published per round
// (default 500).
func WithBatch(n int) Option { return func(s *Submitter) { s.batch = max(1, n) } }

// WithPublisher sets the publisher options (inline and maximum size).
func WithPublisher(o ...jobs.PublishOption) Option {
	return func(s *Submitter) { s.pub = jobs.NewPublisher(s.js, o...) }
}

// New returns a Submitter; the streams must exist (jobs.EnsureStreams).
func New(js jetstream.JetStream, store Store, opts ...Option) *Submitter {
	s := &Submitter{js: js, store: store, pub: jobs.NewPublisher(js), schemas: jobs.NewSchemas(js), batch: 500}
	for _, f := range opts {
		f(s)
	}
	return s
}

// RegisterSchema registers sc under name in the audit store (a new
// fingerprint becomes the next version) and its body in the schema bucket
// the workers read.
func (s *Submitter) RegisterSchema(ctx context.Context, name string, sc *schema.Schema) (jobs.SchemaRef, error) {
	version, _, err := s.store.RegisterSchema(ctx, name, sc.JSON(), sc.Fingerprint())
	if err != nil {
		return jobs.SchemaRef{}, err
	}
	ref := jobs.SchemaRef{Name: name, Version: version, Fingerprint: sc.Fingerprint()}
	if err := s.schemas.Put(ctx, jobs.SchemaBody{Name: name, Version: version, Fingerprint: ref.Fingerprint, Body: sc.JSON()}); err != nil {
		return jobs.SchemaRef{}, err
	}
	return ref, nil
}

// ResolveProvider checks a provider spec the way a worker will build it and
// returns its model identity (providers.Identity: family, model and
// simulator profile, what results and job ids are keyed by) and default
// pool. No call is made and no key is needed here: the workers hold the
// keys.
func ResolveProvider(spec string) (model, pool string, err error) {
	id, err := providers.Identity(spec, "")
	if err != nil {
		return "", "", err
	}
	return id, jobs.PoolFor(id), nil
}

// Submit stores and queues every document read delivers, in batches. Bad
// documents are rejected with a reason and the rest still queued; a
// document is either queued (stored, published and acked by the server) or
// listed as rejected. progress, if set, is called after each batch. The
// error is for failures that stop the whole submission (ctx, reading).
func (s *Submitter) Submit(ctx context.Context, job Job, read func(func(Doc) error) error, progress func(Summary)) (sum Summary, err error) {
	ctx, span := tracing.StartSubmit(ctx, jobs.JobSubject(job.Pool), job.Run, job.Pool, job.Model)
	defer func() { tracing.EndSubmit(span, sum.Queued, len(sum.Rejected), err) }()
	start := time.Now()
	seen := map[string]bool{}
	var batch []Doc
	// One batch is stored in the audit while the one before it waits for
	// its publish acks: the two round trips overlap. Every batch is still
	// stored before it is published, and published once the one before is
	// acked, so no more than a batch waits for acks (the pending limit).
	var inflight *published
	report := func() {
		sum.Elapsed = time.Since(start)
		if progress != nil {
			progress(sum)
		}
	}
	settle := func() error {
		if inflight == nil {
			return nil
		}
		p := inflight
		inflight = nil
		if err := s.settle(ctx, p, &sum); err != nil {
			return err
		}
		report()
		return nil
	}
	flush := func() error {
		p, err := s.stage(ctx, job, batch, &sum)
		batch = nil // p keeps the batch's documents
		if serr := settle(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		if p == nil { // nothing to publish: the batch is settled already
			report()
			return nil
		}
		p.acks = s.publishAsync(ctx, p.items)
		inflight = p
		return nil
	}
	err = read(func(d Doc) error {
		if d.Err == nil {
			d.Err = checkDoc(&d)
		}
		if d.Err == nil {
			d.Err = s.pub.CheckSize(d.Text)
		}
		if d.Err == nil && seen[d.ID] {
			d.Err = reject("id %q appears twice in this submission", d.ID)
		}
		if d.Err != nil {
			sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: d.Err.Error()})
			return nil
		}
		seen[d.ID] = true
		batch = append(batch, d)
		if len(batch) >= s.batch {
			return flush()
		}
		return ctx.Err()
	})
	if err == nil {
		err = flush()
	}
	if serr := settle(); err == nil {
		err = serr
	}
	sum.Elapsed = time.Since(start)
	return sum, err
}

// checkDoc rejects what the audit database could not store (see
// audit.CheckDocumentID, CheckText and CheckMetadata), before the batch:
// one bad document must never make the database refuse its neighbours.
func checkDoc(d *Doc) error {
	if err := audit.CheckDocumentID(d.ID); err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	if err := audit.CheckText(d.Text); err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	if err := audit.CheckMetadata(d.Metadata); err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return nil
}

// printableID is id as a rejection reports it: control characters escaped
// and cut to 120 bytes, since a rejected id may be neither printable nor
// short (the source still locates the document).
func printableID(id string) string {
	const limit = 120
	if len(id) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(id[cut]) {
			cut--
		}
		id = id[:cut] + fmt.Sprintf("… (%d bytes)", len(id))
	}
	return termsafe.String(id)
}

// published is a batch whose publishes are on their way: settle waits
// for their acks.
type published struct {
	batch []Doc
	items []item
	acks  []jetstream.PubAckFuture
}

// stage skips the documents whose job is already final and stores the
// rest in the audit store, ready to publish (publishAsync). Documents the audit store refuses are rejected one by one
// and the rest published; if the store fails as a whole (unreachable), the
// batch is rejected and nothing of it is published. It returns nil when
// nothing is left to publish.
func (s *Submitter) stage(ctx context.Context, job Job, batch []Doc, sum *Summary) (*published, error) {
	batch, err := s.skipFinal(ctx, job, batch, sum)
	if err != nil || len(batch) == 0 {
		return nil, err
	}
	// Originals first, addressed by their hash: one stored for a document
	// that is then not queued is harmless, a job without its original is not.
	originals := make([]*jobs.ObjectRef, len(batch))
	for i, d := range batch {
		if d.Original == nil {
			continue
		}
		if originals[i], _, err = s.pub.PutOriginal(ctx, d.Original); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s: %w", d.Source, err) // the object store is down: so is the job stream
		}
	}
	docs := make([]audit.Document, len(batch))
	for i, d := range batch {
		docs[i] = audit.Document{ID: d.ID, Hash: contentHash(d), Source: d.Source, Metadata: d.Metadata, Text: d.Text}
		if d.Document != nil {
			docs[i].Pages = pageRanges(d.Document)
		}
	}
	if err := s.store.PutDocuments(ctx, docs); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var some *audit.DocumentErrors
		if !errors.As(err, &some) {
			for _, d := range batch {
				sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: fmt.Sprintf("store in the audit database: %v", err)})
			}
			return nil, nil
		}
		rest := batch[:0:0]
		for i, d := range batch {
			if e, bad := some.Errs[i]; bad {
				sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: fmt.Sprintf("%v: %v", ErrBadInput, e)})
				continue
			}
			rest = append(rest, d)
		}
		if batch = rest; len(batch) == 0 {
			return nil, nil
		}
	}
	now := time.Now().UTC()
	items := make([]item, len(batch))
	for i, d := range batch {
		env := &jobs.Envelope{
			Run: job.Run, DocumentID: d.ID, Metadata: d.Metadata, Schema: job.Schema,
			Provider: job.Provider, Model: job.Model, Pool: job.Pool, Options: job.Options, SubmittedAt: now,
		}
		describe(env, d, originals[i])
		items[i] = item{text: d.Text, env: env}
	}
	return &published{batch: batch, items: items}, nil
}

// settle waits for a staged batch's publish acks and counts what became
// of each document.
func (s *Submitter) settle(ctx context.Context, p *published, sum *Summary) error {
	if err := s.awaitAcks(ctx, p.items, p.acks); err != nil {
		return err
	}
	batch := p.batch
	var gone []string // duplicates whose original left the stream
	for i, it := range p.items {
		switch {
		case it.err != nil:
			sum.Rejected = append(sum.Rejected, Rejection{ID: batch[i].ID, Source: batch[i].Source, Reason: it.err.Error()})
		case it.dup:
			queued, err := s.stillQueued(ctx, it.env.JobID, it.seq)
			if err != nil {
				return err
			}
			if queued {
				sum.Duplicates++
				sum.JobIDs, sum.JobSeqs = append(sum.JobIDs, it.env.JobID), append(sum.JobSeqs, it.seq)
			} else {
				gone = append(gone, it.env.JobID)
			}
		default:
			sum.Queued++
			sum.JobIDs, sum.JobSeqs = append(sum.JobIDs, it.env.JobID), append(sum.JobSeqs, it.seq)
		}
	}
	return s.settleGone(ctx, gone, sum)
}

// stillQueued reports whether the job JetStream called a duplicate is still
// on the job stream at seq (the original's sequence): waiting, or being
// worked on, since a worker acks only after the audit is durable.
func (s *Submitter) stillQueued(ctx context.Context, jobID string, seq uint64) (bool, error) {
	st, err := s.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return false, fmt.Errorf("open stream %s: %w", jobs.JobsStream, err)
	}
	m, err := st.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up job %s on %s: %w", jobID, jobs.JobsStream, err)
	}
	return m.Header.Get(jetstream.MsgIDHeader) == jobID, nil
}

// settleGone classifies duplicates whose original has left the stream: its
// worker acked or terminated it after auditing it, so the audit has it
// final (already done), unless the audit is another database or the stream
// was purged (lost).
func (s *Submitter) settleGone(ctx context.Context, ids []string, sum *Summary) error {
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
	}
	return nil
}

// skipFinal removes from batch the documents whose job is already final in
// the audit store (a result or a dead letter), or that have a result for
// the same text, schema fingerprint and model (made by a job of another
// id: a resubmission, or a job keyed before job ids included the document
// id), and counts them as already done. JetStream's duplicate window
// cannot do this: it forgets a job once the window has passed or the
// server restarted, while the audit does not.
func (s *Submitter) skipFinal(ctx context.Context, job Job, batch []Doc, sum *Summary) ([]Doc, error) {
	if len(batch) == 0 {
		return batch, nil
	}
	ids := make([]string, len(batch))
	keys := make([]audit.TextKey, len(batch))
	for i, d := range batch {
		keys[i] = audit.TextKey{DocumentID: d.ID, ContentHash: contentHash(d)}
		ids[i] = jobs.MsgID(d.ID, keys[i].ContentHash, job.Schema.Fingerprint, job.Model, "")
	}
	states, err := s.store.JobStates(ctx, ids)
	var done map[audit.TextKey]bool
	if err == nil {
		done, err = s.store.HaveResults(ctx, job.Schema.Fingerprint, job.Model, keys)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for _, d := range batch {
			sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: fmt.Sprintf("look up earlier results in the audit database: %v", err)})
		}
		return nil, nil
	}
	rest := batch[:0]
	for i, d := range batch {
		st, ok := states[ids[i]]
		switch {
		case done[keys[i]]:
			sum.AlreadyDone++
		case ok && st.Final():
			sum.AlreadyDone++
			if !st.OK() {
				sum.AlreadyFailed++
			}
		default:
			rest = append(rest, d)
		}
	}
	return rest, nil
}

// item is one job to publish and what became of it.
type item struct {
	env  *jobs.Envelope
	text string
	dup  bool   // the server already had it (duplicate window)
	seq  uint64 // stream sequence of the job, or of the original of a duplicate
	err  error  // not queued
}

// publishAll publishes items and waits for every ack.
func (s *Submitter) publishAll(ctx context.Context, items []item) error {
	return s.awaitAcks(ctx, items, s.publishAsync(ctx, items))
}

// publishAsync publishes items asynchronously (bounded by the JetStream
// context's pending limit); awaitAcks waits for their acks.
func (s *Submitter) publishAsync(ctx context.Context, items []item) []jetstream.PubAckFuture {
	futures := make([]jetstream.PubAckFuture, len(items))
	for i := range items {
		f, err := s.pub.PublishAsync(ctx, items[i].env, items[i].text)
		if err != nil {
			items[i].err = fmt.Errorf("publish: %w", err)
			continue
		}
		futures[i] = f
	}
	return futures
}

func (s *Submitter) awaitAcks(ctx context.Context, items []item, futures []jetstream.PubAckFuture) error {
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			items[i].dup, items[i].seq = ack.Duplicate, ack.Sequence
		case err := <-f.Err():
			items[i].err = fmt.Errorf("publish: %w (submit again: a job is queued once)", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
