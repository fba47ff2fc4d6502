package submit

import (
	"context"
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
// implements it. Submit calls its methods from several goroutines at once
// (batches are looked up and stored side by side).
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
	// RunJobs are the jobs this submission queued (acked as new) into
	// its job's run, in order; RunSeen the jobs of that run it found
	// queued (duplicates whose original is in the run) or final already.
	// A submission counts both into its run (audit CountRunJobs: each job
	// once): a job queued by a submission killed after the server acked
	// it and before it was counted is among a rerun's RunSeen. Both grow
	// by appending, so a progress report's are prefixes of the next's.
	RunJobs []string `json:"-"`
	RunSeen []string `json:"-"`
}

// Submitter queues documents. Its publishes awaiting the server's ack are
// bounded by a window (WithMaxPending) and by the JetStream context's own
// limit (jetstream.WithPublishAsyncMaxPending on js), whichever is
// smaller: a slow server slows submission down, and only a stall (no ack
// for the stall timeout, see WithStallTimeout) fails it.
type Submitter struct {
	js         jetstream.JetStream
	store      Store
	pub        *jobs.Publisher
	schemas    *jobs.Schemas
	batch      int
	stall      time.Duration
	maxPending int
}

// DefaultStallTimeout is how long a submission waits without a single
// publish ack from NATS before it gives up (WithStallTimeout).
const DefaultStallTimeout = 30 * time.Second

// Option configures a Submitter.
type Option func(*Submitter)

// WithBatch sets how many documents are stored and published per round
// (default 500).
func WithBatch(n int) Option { return func(s *Submitter) { s.batch = max(1, n) } }

// WithPublisher sets the publisher options (inline and maximum size).
func WithPublisher(o ...jobs.PublishOption) Option {
	return func(s *Submitter) { s.pub = jobs.NewPublisher(s.js, o...) }
}

// WithStallTimeout sets how long publishing may go without any ack from
// NATS before the submission fails with ErrPublishStalled (default
// DefaultStallTimeout). Slow acks never fail a submission: while the
// pending limit is reached it waits for them. Raise it on a machine so
// loaded that the server can pause longer than this.
func WithStallTimeout(d time.Duration) Option {
	return func(s *Submitter) {
		if d > 0 {
			s.stall = d
		}
	}
}

// WithMaxPending bounds the publishes awaiting the server's ack (default
// 1024); the JetStream context's own limit, if smaller, bounds them too.
func WithMaxPending(n int) Option { return func(s *Submitter) { s.maxPending = max(1, n) } }

// New returns a Submitter; the streams must exist (jobs.EnsureStreams).
func New(js jetstream.JetStream, store Store, opts ...Option) *Submitter {
	s := &Submitter{js: js, store: store, pub: jobs.NewPublisher(js), schemas: jobs.NewSchemas(js), batch: 500, stall: DefaultStallTimeout, maxPending: 1024}
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

// Warm readies the audit store's connections for Submit's first batches,
// if the store can (audit.Store.WarmForSubmit): as many as Submit looks up
// and stores batches at once, each opened and having run the statements a
// batch runs. Without it the first batches wait for their connections and
// for each new Postgres backend's first use of the tables, most of what a
// submission of ten thousand documents spends before its first publish.
// Call it beside other start-up work (connecting to NATS, reading the
// schema), not right before Submit. Nothing is stored; Submit works
// without it, and after a failure.
func (s *Submitter) Warm(ctx context.Context) error {
	if w, ok := s.store.(interface {
		WarmForSubmit(context.Context, int) error
	}); ok {
		return w.WarmForSubmit(ctx, stagers)
	}
	return nil
}

// Submit stores and queues every document read delivers, in batches. Bad
// documents are rejected with a reason and the rest still queued; a
// document is either queued (stored, published and acked by the server) or
// listed as rejected. progress, if set, is called after each batch, from
// one goroutine at a time. The error is for failures that stop the whole
// submission (ctx, reading, a publish stall: ErrPublishStalled).
//
// The batches go through a pipeline (see pipeline): while one is looked
// up and stored in the audit store, the one before it is published and
// the ones before that wait for their acks. Every batch is stored before
// it is published.
func (s *Submitter) Submit(ctx context.Context, job Job, read func(func(Doc) error) error, progress func(Summary)) (sum Summary, err error) {
	ctx, span := tracing.StartSubmit(ctx, jobs.JobSubject(job.Pool), job.Run, job.Pool, job.Model)
	defer func() { tracing.EndSubmit(span, sum.Queued, len(sum.Rejected), err) }()
	p := s.startPipeline(ctx, job, progress)
	seen := newIDSet()
	batch := make([]Doc, 0, s.batch)
	err = read(func(d Doc) error {
		if d.Err == nil {
			d.Err = checkDoc(&d)
		}
		if d.Err == nil {
			d.Err = s.pub.CheckSize(d.Text)
		}
		if d.Err == nil && seen.add(d.ID) {
			d.Err = DuplicateID(d.ID)
		}
		if d.Err != nil {
			p.reject(Rejection{ID: printableID(d.ID), Source: d.Source, Reason: d.Err.Error()})
			return nil
		}
		batch = append(batch, d)
		if len(batch) >= s.batch {
			if err := p.send(batch); err != nil {
				return err
			}
			batch = make([]Doc, 0, s.batch)
		}
		return p.err()
	})
	if err == nil {
		err = p.send(batch)
	}
	sum, perr := p.finish()
	if err == nil {
		err = perr
	}
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
