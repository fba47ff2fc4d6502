// Package evalrun runs `extractq eval`: it extracts the labelled documents
// with each configuration (provider × mode) through the library, or reads
// what a run already in the audit made of them, and scores every outcome
// with package eval. It keeps each configuration's outcomes in a state
// folder as they finish, so a run stopped by a failing provider continues
// with --resume instead of starting again.
package evalrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/eval"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Combination is one configuration to evaluate.
type Combination struct {
	Provider string   // a provider string, "openai:gpt-4o-mini"
	Mode     llm.Mode // "" or auto: the provider's strongest
}

// Name is how reports and state files name the combination.
func (c Combination) Name() string {
	m := c.Mode
	if m == "" {
		m = llm.ModeAuto
	}
	return c.Provider + " " + string(m)
}

// Combinations is every provider with every mode, in the order given.
func Combinations(providers []string, modes []llm.Mode) []Combination {
	if len(modes) == 0 {
		modes = []llm.Mode{llm.ModeAuto}
	}
	var out []Combination
	for _, p := range providers {
		for _, m := range modes {
			out = append(out, Combination{Provider: p, Mode: m})
		}
	}
	return out
}

// Settings configure a one-shot evaluation.
type Settings struct {
	Schema *schema.Schema
	Labels []eval.Label
	Score  eval.Options
	// MaxReasks is passed to the library when >= 0.
	MaxReasks int
	// Concurrency bounds the documents extracted at once (default 4).
	Concurrency int
	// StateDir keeps each combination's outcomes (one JSONL file each) so
	// that Resume continues a stopped evaluation; "" keeps none.
	StateDir string
	Resume   bool
	// NewProvider makes a combination's provider (default
	// extractq.NewProvider).
	NewProvider func(spec string) (llm.Provider, error)
	// Options are added to every extraction.
	Options []extractq.Option
	// Progress, when set, is called after each document.
	Progress func(c Combination, done, total int)
}

// ProviderError stops a combination: its provider failed in a way no
// document can succeed through (an outage that outlasted the retries, a
// refused key, an unknown model). The other combinations go on.
type ProviderError struct {
	Combination Combination
	Err         error
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("%s: the provider failed, so the combination is incomplete (fix it, then run again with --resume): %v", e.Combination.Name(), e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// providerDown reports whether an extraction error is the provider's rather
// than the document's.
func providerDown(err error) bool {
	if errors.Is(err, extractq.ErrTransport) {
		return true
	}
	var pe *llm.Error
	if errors.As(err, &pe) {
		switch pe.Class {
		case llm.ClassAuth, llm.ClassPermission, llm.ClassNotFound, llm.ClassQuota:
			return true
		}
	}
	return false
}

// Run extracts every label's document with c and scores the outcomes. A
// provider failure stops the combination: the summary is then marked
// incomplete, the outcomes so far are kept (in StateDir), and the error is a
// *ProviderError.
func Run(ctx context.Context, st Settings, c Combination) (eval.Summary, []eval.Outcome, error) {
	newProvider := st.NewProvider
	if newProvider == nil {
		newProvider = func(spec string) (llm.Provider, error) { return extractq.NewProvider(spec) }
	}
	p, err := newProvider(c.Provider)
	if err != nil {
		return eval.Summary{}, nil, fmt.Errorf("%s: %w", c.Name(), err)
	}
	state, done, err := openState(st.StateDir, c, st.Resume)
	if err != nil {
		return eval.Summary{}, nil, err
	}
	defer state.close()

	opts := append([]extractq.Option{extractq.WithProvider(p)}, st.Options...)
	if c.Mode != "" {
		opts = append(opts, extractq.WithMode(c.Mode))
	}
	if st.MaxReasks >= 0 {
		opts = append(opts, extractq.WithMaxReasks(st.MaxReasks))
	}
	x, err := extractq.New(opts...)
	if err != nil {
		return eval.Summary{}, nil, fmt.Errorf("%s: %w", c.Name(), err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu       sync.Mutex
		outcomes []eval.Outcome
		failure  error
	)
	for _, l := range st.Labels {
		if o, ok := done[l.ID]; ok {
			outcomes = append(outcomes, o)
		}
	}
	n := len(outcomes)
	wp := pool.New().WithMaxGoroutines(max(1, st.Concurrency))
	for _, l := range st.Labels {
		if _, ok := done[l.ID]; ok {
			continue
		}
		wp.Go(func() {
			if ctx.Err() != nil {
				return
			}
			start := time.Now()
			res, err := x.Extract(ctx, l.Text, st.Schema)
			if err != nil && providerDown(err) {
				mu.Lock()
				if failure == nil {
					failure = &ProviderError{Combination: c, Err: err}
					cancel(failure)
				}
				mu.Unlock()
				return
			}
			if ctx.Err() != nil {
				return // canceled mid-document: not an outcome
			}
			o := outcomeOf(l.ID, p.Name(), res, err, time.Since(start))
			mu.Lock()
			defer mu.Unlock()
			if werr := state.write(o); werr != nil && failure == nil {
				failure = werr
				cancel(werr)
				return
			}
			outcomes = append(outcomes, o)
			n++
			if st.Progress != nil {
				st.Progress(c, n, len(st.Labels))
			}
		})
	}
	wp.Wait()
	if failure == nil {
		failure = context.Cause(ctx)
	}
	sum, err := score(c.Name(), st.Schema, st.Labels, outcomes, st.Score)
	if err != nil {
		return sum, outcomes, err
	}
	if failure != nil {
		sum.Incomplete, sum.Error = true, failure.Error()
	}
	return sum, outcomes, failure
}

// outcomeOf turns one extraction into an outcome (unscored).
func outcomeOf(id, providerName string, res *llm.Result, err error, took time.Duration) eval.Outcome {
	o := eval.Outcome{ID: id, Latency: took, CostKnown: true}
	if err != nil {
		o.Reason = err.Error()
	}
	if res == nil {
		return o
	}
	if err == nil && res.Outcome.Accepted() {
		o.Valid, o.Value = true, res.Value
	}
	o.Calls = len(res.Attempts)
	o.Reasks = max(0, o.Calls-1)
	for _, a := range res.Attempts {
		usd, known := providers.EstimateCost(providerName, a.Usage)
		o.CostUSD += usd
		o.CostKnown = o.CostKnown && known
	}
	return o
}

// score compares every outcome with its label and sums them.
func score(name string, s *schema.Schema, labels []eval.Label, outcomes []eval.Outcome, opts eval.Options) (eval.Summary, error) {
	byID := make(map[string]eval.Label, len(labels))
	for _, l := range labels {
		byID[l.ID] = l
	}
	for i := range outcomes {
		l, ok := byID[outcomes[i].ID]
		if !ok {
			continue
		}
		var value json.RawMessage
		if outcomes[i].Valid {
			value = outcomes[i].Value
		}
		sc, err := eval.Score(l.Expected, value, s, opts)
		if err != nil {
			return eval.Summary{}, fmt.Errorf("%s: scoring %s: %w", name, l.ID, err)
		}
		outcomes[i].Score = sc
	}
	return eval.Summarize(name, len(labels), outcomes), nil
}

// state is a combination's outcomes on disk, one JSON line each.
type state struct {
	f *os.File
	w *bufio.Writer
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// StateFile is where a combination's outcomes are kept under dir.
func StateFile(dir string, c Combination) string {
	return filepath.Join(dir, strings.Trim(unsafeName.ReplaceAllString(c.Name(), "_"), "_")+".jsonl")
}

// openState opens c's state file: read back (resume) or started afresh.
func openState(dir string, c Combination, resume bool) (*state, map[string]eval.Outcome, error) {
	done := map[string]eval.Outcome{}
	if dir == "" {
		return &state{}, done, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("state folder %s: %w (choose another with --state)", dir, err)
	}
	path := StateFile(dir, c)
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if resume {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("resume %s: %w", path, err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var o eval.Outcome
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				// A line cut by a crash is the last one: its document runs again.
				if i == strings.Count(string(b), "\n") {
					break
				}
				return nil, nil, fmt.Errorf("resume %s: line %d is corrupt (%v): delete the file to start the combination afresh", path, i+1, err)
			}
			done[o.ID] = o
		}
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return &state{f: f, w: bufio.NewWriter(f)}, done, nil
}

func (s *state) write(o eval.Outcome) error {
	if s.f == nil {
		return nil
	}
	o.Score = nil // scores are recomputed: a changed rule applies on resume
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	s.w.Write(b)
	s.w.WriteByte('\n')
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("state file %s: %w", s.f.Name(), err)
	}
	return nil
}

func (s *state) close() {
	if s.f != nil {
		s.w.Flush()
		s.f.Close()
	}
}

// FromRun scores what run made of the labelled documents, calling no
// model. The run must have used schema s (the same fingerprint): a run made
// with another version is refused, naming both. A label is matched to the
// run's document by id, else by the hash of its text.
func FromRun(ctx context.Context, store *audit.Store, run string, s *schema.Schema, labels []eval.Label, opts eval.Options) (eval.Summary, []eval.Outcome, error) {
	schemas, err := store.RunSchemas(ctx, run)
	if err != nil {
		return eval.Summary{}, nil, err
	}
	if !slices.ContainsFunc(schemas, func(rs audit.RunSchema) bool { return rs.Fingerprint == s.Fingerprint() }) {
		var made []string
		for _, rs := range schemas {
			made = append(made, fmt.Sprintf("%s v%d (fingerprint %.12s)", rs.Name, rs.Version, rs.Fingerprint))
		}
		return eval.Summary{}, nil, fmt.Errorf("run %q was extracted with schema %s, not with the schema the labels are scored against (%s, fingerprint %.12s): score the run with that version's schema file (extractq schema list shows the versions the audit holds), or score a run made with this schema",
			run, strings.Join(made, ", "), schemaLabel(s), s.Fingerprint())
	}
	byID := make(map[string]eval.Label, len(labels))
	byHash := make(map[string]eval.Label, len(labels))
	for _, l := range labels {
		byID[l.ID] = l
		byHash[jobs.HashText(l.Text)] = l
	}
	seen := map[string]bool{}
	var outcomes []eval.Outcome
	err = store.RunDocuments(ctx, run, s.Fingerprint(), func(d audit.RunDocument) error {
		l, ok := byID[d.DocumentID]
		if !ok {
			if l, ok = byHash[d.ContentHash]; !ok {
				return nil // a document of the run without a label
			}
		}
		if seen[l.ID] {
			return nil
		}
		seen[l.ID] = true
		o := eval.Outcome{ID: l.ID, Valid: d.Value != nil, Value: d.Value, Reason: d.Reason, Calls: d.Calls, Reasks: max(0, d.Calls-1), Latency: d.Elapsed}
		u := llm.Usage{PromptTokens: int(d.PromptTokens), CompletionTokens: int(d.CompletionTokens), CachedPromptTokens: int(d.CachedPromptTokens), CacheCreationTokens: int(d.CacheCreationTokens)}
		if d.Batch {
			o.CostUSD, o.CostKnown = providers.EstimateBatchCost(d.Provider, u)
		} else {
			o.CostUSD, o.CostKnown = providers.EstimateCost(d.Provider, u)
		}
		outcomes = append(outcomes, o)
		return nil
	})
	if err != nil {
		return eval.Summary{}, nil, err
	}
	sum, err := score("run "+run, s, labels, outcomes, opts)
	if err == nil && sum.Done < sum.Docs {
		sum.Incomplete = true
		sum.Error = fmt.Sprintf("%d of %d labelled documents have no final job in run %q", sum.Docs-sum.Done, sum.Docs, run)
	}
	return sum, outcomes, err
}

func schemaLabel(s *schema.Schema) string {
	if s.Name() != "" {
		return "schema " + s.Name()
	}
	return "the given schema"
}

// Fleet submits every combination's documents to the fleet as a run named
// after the combination, waits until each document's job is final, and
// scores the runs from the audit.
type Fleet struct {
	Submitter *submit.Submitter
	Store     *audit.Store
	// SchemaName registers the schema under this name.
	SchemaName string
	// RunPrefix starts every run's name ("eval"): the run of a
	// combination is PREFIX-PROVIDER-MODE.
	RunPrefix string
	// Poll is how often the audit is asked whether the runs are done
	// (default 2 s); Timeout bounds the wait (default 1 h).
	Poll, Timeout time.Duration
	// Progress, when set, is called after each poll.
	Progress func(c Combination, done, total int)
}

// RunName is the fleet run of a combination.
func (f *Fleet) RunName(c Combination) string {
	prefix := f.RunPrefix
	if prefix == "" {
		prefix = "eval"
	}
	return prefix + "-" + strings.Trim(unsafeName.ReplaceAllString(strings.ReplaceAll(c.Name(), " ", "-"), "_"), "_")
}

// Run queues c's documents, waits for their final states, and scores them.
func (f *Fleet) Run(ctx context.Context, st Settings, c Combination) (eval.Summary, []eval.Outcome, error) {
	ref, err := f.Submitter.RegisterSchema(ctx, f.SchemaName, st.Schema)
	if err != nil {
		return eval.Summary{}, nil, fmt.Errorf("%s: register schema: %w", c.Name(), err)
	}
	model, pool, err := submit.ResolveProvider(c.Provider)
	if err != nil {
		return eval.Summary{}, nil, fmt.Errorf("%s: %w", c.Name(), err)
	}
	job := submit.Job{Schema: ref, Provider: c.Provider, Model: model, Pool: pool, Run: f.RunName(c)}
	if c.Mode != "" && c.Mode != llm.ModeAuto {
		job.Options.Mode = string(c.Mode)
	}
	if st.MaxReasks >= 0 {
		job.Options.MaxReasks = &st.MaxReasks
	}
	sum, err := f.Submitter.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for _, l := range st.Labels {
			if err := fn(submit.Doc{ID: l.ID, Source: l.Source, Text: l.Text}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return eval.Summary{}, nil, fmt.Errorf("%s: submit: %w", c.Name(), err)
	}
	if len(sum.Rejected) > 0 {
		return eval.Summary{}, nil, fmt.Errorf("%s: %d labelled document(s) rejected by submit, first %s: %s", c.Name(), len(sum.Rejected), sum.Rejected[0].ID, sum.Rejected[0].Reason)
	}
	// Follow exactly the jobs this submission queued (documents already
	// final are not waited for), as submit --wait does.
	poll, timeout := cmpOr(f.Poll, 2*time.Second), cmpOr(f.Timeout, time.Hour)
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	before := len(st.Labels) - len(sum.JobIDs)
	last, err := submit.Follow(fctx, f.Store, sum.JobIDs, poll, func(p submit.Progress) {
		if f.Progress != nil {
			f.Progress(c, before+p.Done+p.Failed, len(st.Labels))
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return eval.Summary{}, nil, context.Cause(ctx)
		}
		s, o, ferr := FromRun(ctx, f.Store, job.Run, st.Schema, st.Labels, st.Score)
		s.Name, s.Incomplete = c.Name(), true
		s.Error = fmt.Sprintf("%d of %d documents final after %s: is a worker serving pool %s? (extractq status)", before+last.Done+last.Failed, len(st.Labels), timeout, pool)
		return s, o, ferr
	}
	s, o, err := FromRun(ctx, f.Store, job.Run, st.Schema, st.Labels, st.Score)
	s.Name = c.Name()
	return s, o, err
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
