package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Job is what every document of a submission is extracted with.
type Job struct {
	// Schema is the JSON Schema of the value; it is registered under
	// SchemaName (a new version when it changed).
	Schema     *schema.Schema
	SchemaName string
	// Provider is "family:model", e.g. "openai:gpt-4o-mini" or a family
	// registered with extractq.RegisterProvider.
	Provider string
	// Variant, when set, is added to the model identity results and job
	// ids are keyed by ("sim:realistic@v2"), to keep apart results of the
	// same provider:model served differently.
	Variant string
	// Pool is the pool (budget group) the jobs go to; empty: the one
	// Provider names, which a worker serving Provider pulls from.
	Pool string
	// Run groups the jobs for status, the console and resubmission;
	// empty: run-<UTC time>.
	Run string
	// Options are the engine settings every job of the submission runs
	// with; zero: the worker's.
	Options JobOptions
}

// JobOptions are a job's engine settings. A nil number leaves the
// worker's default; a set one, zero included, is used as given
// (MaxReasks 0: ask once). Empty strings leave the worker's default.
type JobOptions struct {
	MaxReasks   *int     // re-asks after an invalid answer (default 3)
	MaxTokens   *int     // cap on each answer's tokens (0: the provider's)
	TokenBudget *int     // cap on the tokens spent per document (0: none)
	Temperature *float64 // sampling temperature
	// Mode is the structured-output mode (auto, text, json, strict,
	// tools, prefill), Repair the local repair policy (off, syntax,
	// coerce), Chunking how long documents are split (auto, off, or a
	// size: extractq.ParseChunking).
	Mode     llm.Mode
	Repair   extractq.RepairPolicy
	Chunking extractq.Chunking
	// Input is how a document read from a file reaches the model: text,
	// native (a PDF or image sent as it is, to a model that reads it) or
	// auto (empty: native only for pages without a text layer).
	Input extractq.Input
}

func (o JobOptions) internal() jobs.Options {
	return jobs.Options{MaxReasks: o.MaxReasks, MaxTokens: o.MaxTokens, TokenBudget: o.TokenBudget, Temperature: o.Temperature,
		Mode: string(o.Mode), RepairPolicy: string(o.Repair), Chunking: string(o.Chunking), Input: string(o.Input)}
}

// JobError is a Job field that cannot work; it matches ErrBadJob.
type JobError struct {
	Field string // "Schema", "Provider", "Variant", "Pool" or (Resubmit) "Reader"
	Err   error
}

func (e *JobError) Error() string   { return fmt.Sprintf("fleet: job %s: %v", e.Field, e.Err) }
func (e *JobError) Unwrap() []error { return []error{ErrBadJob, e.Err} }

// Target is the model identity the job's results are keyed by (family,
// model, simulator profile and Variant) and the pool its jobs go to, as
// Submit resolves them. It connects to nothing and needs no API key (the
// workers hold the keys); its error is a *JobError.
func (j Job) Target() (model, pool string, err error) {
	model, pool, err = submit.ResolveProvider(j.Provider)
	if err != nil {
		return "", "", &JobError{Field: "Provider", Err: err}
	}
	if j.Variant != "" {
		if model, err = providers.Identity(j.Provider, j.Variant); err != nil {
			return "", "", &JobError{Field: "Variant", Err: err}
		}
	}
	if j.Pool != "" {
		pool = j.Pool
	}
	if err := jobs.ValidatePool(pool); err != nil {
		return "", "", &JobError{Field: "Pool", Err: err}
	}
	return model, pool, nil
}

// Document is one document to extract from: its text, or what a reader
// made of a file (package document).
type Document struct {
	// ID names the document in the audit and results; the same ID with the
	// same content, schema and model is queued once.
	ID string
	// Source says where the document came from (a path, a URL) in
	// rejections and the audit; empty: ID.
	Source string
	// Text is what the model reads.
	Text string
	// Metadata is a JSON object, or nil.
	Metadata json.RawMessage
	// Document is what a reader made of the original (document.ReadBytes):
	// its pages, the pages without text (sent to the model as pictures),
	// the reader's name and version. Nil for plain text.
	Document *document.Document
	// Original is the file's bytes when they are not Text itself (a PDF,
	// an e-mail): stored by hash in the object store, so that a document
	// can be read again after a reader upgrade (Resubmit with Reread).
	// Its hash, not Text's, is then the document's identity.
	Original []byte
	// WithPassword says Document needed a password to be read
	// (document.Options.Password; Document.Locked says so): jobs carry
	// none, so a worker may not read Original again, and the pictures of
	// its pages go with its job instead. Set it to Document.Locked when
	// you pass a password; a document that opened without it needs none
	// stored.
	WithPassword bool
	// Err, when set, rejects the document with this reason (a file that
	// could not be read); the others are still queued.
	Err error
}

// Rejection is a document that was not queued, and why.
type Rejection struct {
	ID     string `json:"id"`     // the document's id, control characters escaped, a long one cut
	Source string `json:"source"` // Document.Source
	Reason string `json:"reason"` // what to fix
}

// Submission is what Submit did. It encodes to JSON as `submit --json`
// prints it.
type Submission struct {
	Run           string `json:"run"`
	Schema        string `json:"schema"`
	SchemaVersion int    `json:"schema_version"`
	Provider      string `json:"provider"`
	Model         string `json:"model"` // the model identity (Job.Target)
	Pool          string `json:"pool"`
	// Queued jobs are new; Duplicates were queued before and still wait;
	// AlreadyDone documents had a final job (AlreadyFailed of them a dead
	// letter), or a result for the same content, schema and model, and
	// were not queued again.
	Queued        int `json:"queued"`
	Duplicates    int `json:"duplicates"`
	AlreadyDone   int `json:"already_done"`
	AlreadyFailed int `json:"already_failed"`
	// Lost documents were taken by JetStream for duplicates of jobs it no
	// longer holds while the audit has no final record of them (the
	// workers audit to another database, or the stream was purged): they
	// can be queued again once the stream's duplicate window has passed.
	Lost     int           `json:"lost"`
	Rejected []Rejection   `json:"rejected"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Generation is the run's done generation this Submit sealed (see
	// Client.SealRun); 0 when it did not seal (KeepRunOpen, or an error).
	Generation int `json:"generation,omitempty"`
	// JobIDs are the jobs to follow (queued and duplicates), in order;
	// JobSeqs their sequences on the job stream: one above the pool
	// consumer's last delivered sequence has not reached a worker yet.
	// Both are nil in OnProgress's reports.
	JobIDs  []string `json:"-"`
	JobSeqs []uint64 `json:"-"`
}

// SubmitOption configures one Submit.
type SubmitOption func(*submitConfig)

type submitConfig struct {
	progress func(Submission)
	keepOpen bool
}

// OnProgress calls report after each batch of documents is queued (500 by
// default), with the counts so far.
func OnProgress(report func(Submission)) SubmitOption {
	return func(c *submitConfig) { c.progress = report }
}

// KeepRunOpen leaves the run open when Submit ends: more submissions into
// it follow, and the last caller seals it with Client.SealRun. Without it
// Submit seals the run once everything was queued, so that the run gets
// its done event when its jobs are final.
func KeepRunOpen() SubmitOption {
	return func(c *submitConfig) { c.keepOpen = true }
}

// Submit registers the job's schema, stores the documents in the audit and
// queues one job per document. A document that cannot be queued is
// rejected with a reason; the others are still queued. Submitting the same
// documents again queues nothing twice.
//
// The jobs queued are counted into the job's run as they are queued, and
// the run is sealed at the end (Submission.Generation; see KeepRunOpen and
// Client.SealRun): a worker then announces the run done once all its jobs
// are final, whether or not anyone follows them.
//
// The error matches ErrBadJob (a *JobError: nothing was queued, and the
// Submission is nil), ErrNoDocuments, or ErrRunNotSealed (everything was
// queued, but the run could not be counted or sealed: submit again, or
// call SealRun); any other stopped the submission part way (ctx, a
// server), and the Submission says what was queued before.
func (c *Client) Submit(ctx context.Context, job Job, docs iter.Seq[Document], opts ...SubmitOption) (*Submission, error) {
	var cfg submitConfig
	for _, o := range opts {
		o(&cfg)
	}
	model, pool, err := job.Target()
	if err != nil {
		return nil, err
	}
	if job.Schema == nil || job.SchemaName == "" {
		return nil, &JobError{Field: "Schema", Err: errors.New("a job needs a Schema and a SchemaName")}
	}
	if job.Run == "" {
		job.Run = "run-" + time.Now().UTC().Format("20060102-150405")
	}
	c.ensureConsumer(ctx, pool)
	out := &Submission{Run: job.Run, Schema: job.SchemaName, Provider: job.Provider, Model: model, Pool: pool}
	ref, err := c.register(ctx, job.SchemaName, job.Schema)
	if err != nil {
		return out, fmt.Errorf("fleet: register schema %s: %w", job.SchemaName, err)
	}
	out.SchemaVersion = ref.Version
	// Jobs the audit holds of the run from before counting began (an older
	// build's) are awaited too: counted before any of this Submit's.
	if err := c.store.StartRunCount(ctx, job.Run); err != nil {
		return out, fmt.Errorf("fleet: %w", err)
	}
	sj := submit.Job{Schema: ref, Provider: job.Provider, Model: model, Pool: pool, Run: job.Run, Options: job.Options.internal()}
	counter := startRunCount(ctx, c.store, job.Run)
	progress := func(s submit.Summary) {
		counter.progress(s)
		if cfg.progress != nil {
			p := *out
			p.count(s)
			p.JobIDs, p.JobSeqs = nil, nil
			cfg.progress(p)
		}
	}
	n := 0
	sum, err := c.sub.Submit(ctx, sj, func(fn func(submit.Doc) error) error {
		for d := range docs {
			n++
			if d.Source == "" {
				d.Source = d.ID
			}
			if err := fn(submit.Doc(d)); err != nil {
				return err
			}
		}
		return nil
	}, progress)
	out.count(sum)
	counter.progress(sum)
	countErr := counter.stop(ctx)
	switch {
	case err != nil:
		// What was queued stays counted: the same submission run again
		// queues the rest and seals the run.
		return out, fmt.Errorf("fleet: submit: %w", err)
	case n == 0:
		return out, ErrNoDocuments
	case countErr != nil:
		return out, fmt.Errorf("%w: run %s (its jobs are queued; submit again, or call SealRun once the count is right): %w", ErrRunNotSealed, job.Run, countErr)
	case cfg.keepOpen:
		return out, nil
	}
	if out.Generation, err = c.store.SealRun(ctx, job.Run); err != nil {
		return out, fmt.Errorf("%w: run %s (its jobs are queued and counted; call SealRun or submit again): %w", ErrRunNotSealed, job.Run, err)
	}
	return out, nil
}

// count sets s's counts from the submitter's summary.
func (s *Submission) count(sum submit.Summary) {
	s.Queued, s.Duplicates, s.AlreadyDone, s.AlreadyFailed, s.Lost = sum.Queued, sum.Duplicates, sum.AlreadyDone, sum.AlreadyFailed, sum.Lost
	s.Elapsed, s.JobIDs, s.JobSeqs = sum.Elapsed, sum.JobIDs, sum.JobSeqs
	s.Rejected = rejections(sum.Rejected)
}

// rejections converts the submitter's rejections (nil stays nil, as the
// JSON output had it).
func rejections(rs []submit.Rejection) []Rejection {
	if rs == nil {
		return nil
	}
	out := make([]Rejection, len(rs))
	for i, r := range rs {
		out[i] = Rejection(r)
	}
	return out
}

// Schema returns a registered schema and its version: version 0 is the
// latest. The error matches ErrNotFound when there is none.
func (c *Client) Schema(ctx context.Context, name string, version int) (*schema.Schema, int, error) {
	info, err := c.store.SchemaByName(ctx, name, version)
	if errors.Is(err, audit.ErrNotFound) {
		return nil, 0, &kindError{ErrNotFound, err}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("fleet: %w", err)
	}
	sc, err := schema.Compile(info.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("fleet: registered schema %s v%d: %w", info.Name, info.Version, err)
	}
	return sc, info.Version, nil
}

// RegisterSchema registers sc under name, as Submit does, and returns its
// version: the same version again for the same schema, the next one when
// it changed.
func (c *Client) RegisterSchema(ctx context.Context, name string, sc *schema.Schema) (int, error) {
	ref, err := c.register(ctx, name, sc)
	if err != nil {
		return 0, fmt.Errorf("fleet: register schema %s: %w", name, err)
	}
	return ref.Version, nil
}

// register registers sc under name once per client: a name and
// fingerprint keep the version they were given.
func (c *Client) register(ctx context.Context, name string, sc *schema.Schema) (jobs.SchemaRef, error) {
	key := [2]string{name, sc.Fingerprint()}
	c.mu.Lock()
	ref, ok := c.versions[key]
	c.mu.Unlock()
	if ok {
		return ref, nil
	}
	ref, err := c.sub.RegisterSchema(ctx, name, sc)
	if err != nil {
		return ref, err
	}
	c.mu.Lock()
	if c.versions == nil {
		c.versions = map[[2]string]jobs.SchemaRef{}
	}
	c.versions[key] = ref
	c.mu.Unlock()
	return ref, nil
}

// ensureConsumer makes sure once per client that pool's consumer exists
// before any worker needs it, so that a worker started while a cluster
// node is down finds it. A failure is a warning (the pool's first worker
// creates it), tried again by the next Submit.
func (c *Client) ensureConsumer(ctx context.Context, pool string) {
	c.mu.Lock()
	done := c.ensured[pool]
	c.mu.Unlock()
	if done {
		return
	}
	if err := jobs.EnsurePoolConsumer(ctx, c.js, pool, jobs.DefaultConsumerSettings()); err != nil {
		c.warn(fmt.Errorf("%w; the first worker of the pool creates it", err))
		return
	}
	c.mu.Lock()
	if c.ensured == nil {
		c.ensured = map[string]bool{}
	}
	c.ensured[pool] = true
	c.mu.Unlock()
}
