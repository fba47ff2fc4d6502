package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
)

// Progress is how far followed jobs are.
type Progress struct {
	Total   int           // jobs followed
	Done    int           // final with a valid result
	Failed  int           // final without one: a dead letter
	Pending int           // not final yet
	Tokens  int64         // spent by the finished jobs
	Elapsed time.Duration // since Follow started
	// Open are the Pending jobs' ids, valid until the next report.
	Open []string
}

// Follow polls the audit every interval until every job in jobIDs is final
// (a valid result, or a dead letter: Failed) or ctx ends, calling progress
// (when not nil) after each poll. It follows exactly jobIDs
// (Submission.JobIDs): other jobs of the pool or run cannot keep it
// waiting.
func (c *Client) Follow(ctx context.Context, jobIDs []string, every time.Duration, progress func(Progress)) (Progress, error) {
	conv := func(p submit.Progress) Progress {
		return Progress{Total: p.Total, Done: p.Done, Failed: p.Failed, Pending: p.InFlight, Tokens: p.Tokens, Elapsed: p.Elapsed, Open: p.Open}
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
	Schema        string // the schema's name
	SchemaVersion int
	Provider      string // the job's provider, "family:model"
	Model         string // the model identity, e.g. "openai:gpt-4o-mini"
	Run           string
	JobID         string
	Attempts      int             // model calls it took, re-asks included
	Tokens        int64           // prompt and completion tokens of all its attempts
	Value         json.RawMessage // valid against the schema version
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
