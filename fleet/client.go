package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Client queues documents for the fleet, follows their jobs and reads the
// audit. It is safe for concurrent use; Close it when done.
type Client struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	store *audit.Store
	sub   *submit.Submitter
}

// Dial connects to NATS at natsURL and to the audit database at
// databaseURL, and checks that `worker migrate` (or a worker with
// Config.Migrate) has made the streams and the audit tables.
func Dial(ctx context.Context, natsURL, databaseURL string) (*Client, error) {
	nc, err := nats.Connect(natsURL, nats.Name("extractq-fleet-client"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("fleet: connect to NATS at %s: %w (is nats-server running with JetStream?)", natsURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("fleet: JetStream: %w", err)
	}
	if _, err := jobs.CheckStreams(ctx, js); err != nil {
		nc.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	store, err := audit.Open(ctx, databaseURL)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if err := store.CheckSchema(ctx); err != nil {
		store.Close()
		nc.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &Client{nc: nc, js: js, store: store, sub: submit.New(js, store)}, nil
}

// Close releases the connections.
func (c *Client) Close() {
	c.store.Close()
	_ = c.nc.Drain()
}

// Job is what every document of a submission is extracted with.
type Job struct {
	// Schema is the JSON Schema of the value; it is registered under
	// SchemaName (a new version when it changed).
	Schema     *schema.Schema
	SchemaName string
	// Provider is "family:model", e.g. "openai:gpt-4o-mini" or a family
	// registered with extractq.RegisterProvider.
	Provider string
	// Pool is the pool (budget group) the jobs go to; empty: the one
	// Provider names, which a worker serving Provider pulls from.
	Pool string
	// Run groups the jobs for status, the console and resubmission;
	// empty: run-<UTC time>.
	Run     string
	Options JobOptions
}

// JobOptions are a job's engine settings. A nil number leaves the
// worker's default; a set one, zero included, is used as given
// (MaxReasks 0: ask once). Empty strings leave the worker's default.
type JobOptions struct {
	MaxReasks   *int
	MaxTokens   *int
	TokenBudget *int
	Temperature *float64
	Mode        llm.Mode
	Repair      extractq.RepairPolicy
	Chunking    extractq.Chunking
}

// Document is one document to extract from.
type Document struct {
	// ID names the document in the audit and results; the same ID with the
	// same text, schema and model is queued once.
	ID       string
	Text     string
	Metadata json.RawMessage // a JSON object, or nil
}

// Rejection is a document that was not queued, and why.
type Rejection struct {
	ID     string
	Reason string
}

// Submission is what Submit did.
type Submission struct {
	Run string
	// Queued jobs are new; Duplicates were queued before and still wait;
	// AlreadyDone documents had a final job (AlreadyFailed of them a dead
	// letter) and were not queued again.
	Queued, Duplicates, AlreadyDone, AlreadyFailed int
	Rejected                                       []Rejection
	// JobIDs are the jobs to follow (queued and duplicates).
	JobIDs []string
}

// ErrNoDocuments is returned by Submit when docs yields nothing.
var ErrNoDocuments = errors.New("fleet: no documents to submit")

// Submit registers the job's schema, stores the documents in the audit and
// queues one job per document. A document that cannot be queued is
// rejected with a reason; the others are still queued. Submitting the same
// documents again queues nothing twice.
func (c *Client) Submit(ctx context.Context, job Job, docs iter.Seq[Document]) (*Submission, error) {
	if job.Schema == nil || job.SchemaName == "" || job.Provider == "" {
		return nil, errors.New("fleet: a job needs Schema, SchemaName and Provider")
	}
	model, pool, err := submit.ResolveProvider(job.Provider)
	if err != nil {
		return nil, fmt.Errorf("fleet: provider %q: %w", job.Provider, err)
	}
	if job.Pool != "" {
		pool = job.Pool
	}
	if err := jobs.ValidatePool(pool); err != nil {
		return nil, fmt.Errorf("fleet: pool: %w", err)
	}
	if job.Run == "" {
		job.Run = "run-" + time.Now().UTC().Format("20060102-150405")
	}
	if err := jobs.EnsurePoolConsumer(ctx, c.js, pool, jobs.DefaultConsumerSettings()); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	ref, err := c.sub.RegisterSchema(ctx, job.SchemaName, job.Schema)
	if err != nil {
		return nil, fmt.Errorf("fleet: register schema %s: %w", job.SchemaName, err)
	}
	o := job.Options
	sj := submit.Job{Schema: ref, Provider: job.Provider, Model: model, Pool: pool, Run: job.Run, Options: jobs.Options{
		MaxReasks: o.MaxReasks, MaxTokens: o.MaxTokens, TokenBudget: o.TokenBudget, Temperature: o.Temperature,
		Mode: string(o.Mode), RepairPolicy: string(o.Repair), Chunking: string(o.Chunking),
	}}
	n := 0
	sum, err := c.sub.Submit(ctx, sj, func(fn func(submit.Doc) error) error {
		for d := range docs {
			n++
			if err := fn(submit.Doc{ID: d.ID, Source: d.ID, Text: d.Text, Metadata: d.Metadata}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	out := &Submission{Run: job.Run, Queued: sum.Queued, Duplicates: sum.Duplicates, AlreadyDone: sum.AlreadyDone,
		AlreadyFailed: sum.AlreadyFailed, JobIDs: sum.JobIDs}
	for _, r := range sum.Rejected {
		out.Rejected = append(out.Rejected, Rejection{ID: r.ID, Reason: r.Reason})
	}
	switch {
	case err != nil:
		return out, fmt.Errorf("fleet: submit: %w", err)
	case n == 0:
		return out, ErrNoDocuments
	}
	return out, nil
}

// Progress is how far followed jobs are.
type Progress struct {
	Total, Done, Failed, Pending int
	Tokens                       int64 // spent by the finished jobs
	Elapsed                      time.Duration
}

// Follow polls the audit every interval until every job in jobIDs is final
// (a valid result, or a dead letter: Failed) or ctx ends, calling progress
// (when not nil) after each poll.
func (c *Client) Follow(ctx context.Context, jobIDs []string, every time.Duration, progress func(Progress)) (Progress, error) {
	conv := func(p submit.Progress) Progress {
		return Progress{Total: p.Total, Done: p.Done, Failed: p.Failed, Pending: p.InFlight, Tokens: p.Tokens, Elapsed: p.Elapsed}
	}
	p, err := submit.Follow(ctx, c.store, jobIDs, every, func(p submit.Progress) {
		if progress != nil {
			progress(conv(p))
		}
	})
	return conv(p), err
}

// Result is a valid value the fleet stored for a document.
type Result struct {
	DocumentID    string
	Schema        string
	SchemaVersion int
	Provider      string
	Model         string // the model identity, e.g. "openai:gpt-4o-mini"
	Run           string
	JobID         string
	Attempts      int
	Tokens        int64
	Value         json.RawMessage
	// Sources say where each value was found in the document (page, range
	// within the page, box, snippet), by JSON pointer; nil when the
	// result has none (a plain text sent whole, a result stored before
	// the audit kept sources).
	Sources   map[string]llm.Source
	CreatedAt time.Time
}

// Results returns the valid results stored for a document (one per
// schema version and model it was extracted with), oldest first; none
// when it has none yet.
func (c *Client) Results(ctx context.Context, documentID string) ([]Result, error) {
	h, err := c.store.History(ctx, documentID)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	out := make([]Result, 0, len(h.Results))
	for _, r := range h.Results {
		out = append(out, Result{DocumentID: r.DocumentID, Schema: r.SchemaName, SchemaVersion: r.SchemaVersion, Provider: r.Provider,
			Model: r.Model, Run: r.Run, JobID: r.JobID, Attempts: r.Attempts, Tokens: r.PromptTokens + r.CompletionTokens,
			Value: r.Value, Sources: r.Sources, CreatedAt: r.CreatedAt})
	}
	return out, nil
}
