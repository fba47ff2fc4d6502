package fleetview

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/llm"
)

// Job statuses the views group (a job's status is its last delivery's
// outcome, see audit).
const (
	StatusOK            = "ok"
	StatusUnextractable = "unextractable"
)

// Run is one run's totals, read from the counters migration 2 keeps beside
// the jobs table (run_totals), so it costs the same for ten jobs or ten
// million, corrected by the run's resubmitted documents (few, read from
// jobs). Tokens and cost count each job's last delivery, as the jobs table
// does; `extractq status` sums every attempt.
type Run struct {
	Name string `json:"run"`
	// FirstStarted and LastFinished bound the run's activity, its
	// resubmissions' included.
	FirstStarted time.Time `json:"first_started"`
	LastFinished time.Time `json:"last_finished"`
	// Jobs counts every job of the run, resubmissions included.
	Jobs int64 `json:"jobs"`
	// Documents counts the run's documents (under each schema and model
	// they were submitted with): its jobs less the resubmissions.
	Documents int64 `json:"documents"`
	// OK, Failed (every final outcome but ok and unextractable),
	// Unextractable and InProgress (delivered, not final) count documents
	// by their latest job's outcome and add up to Documents: a document
	// that failed and was resubmitted and extracted counts once, as ok.
	OK            int64            `json:"ok"`
	Failed        int64            `json:"failed"`
	Unextractable int64            `json:"unextractable"`
	InProgress    int64            `json:"in_progress"`
	ByStatus      map[string]int64 `json:"by_status"`
	Attempts      int64            `json:"attempts"`
	// PromptTokens and CompletionTokens are of each job's last delivery.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CostUSD is the list-price estimate of those tokens; CostComplete is
	// false when some provider's price is unknown.
	CostUSD      float64 `json:"cost_usd"`
	CostComplete bool    `json:"cost_complete"`
	// Facets of the run: its schema versions, models and providers.
	Schemas   []SchemaVersion `json:"schemas"`
	Models    []string        `json:"models"`
	Providers []string        `json:"providers"`
	// Resubmitted counts the documents queued again in the run after a
	// job of theirs ended; ResubmittedOK those whose latest job is ok;
	// ResubmittedJobs the jobs of those resubmissions.
	Resubmitted     int64 `json:"resubmitted"`
	ResubmittedOK   int64 `json:"resubmitted_ok"`
	ResubmittedJobs int64 `json:"resubmitted_jobs"`
	// ownFinal and ownFinished are the final jobs of the run less the
	// resubmissions, and when the last of them finished: the rate's span.
	ownFinal    int64
	ownFinished time.Time
}

// SchemaVersion names one version of a schema.
type SchemaVersion struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// Final counts the documents whose latest job ended (ok, failed or
// unextractable).
func (r Run) Final() int64 { return r.OK + r.Failed + r.Unextractable }

// Rate is the run's own final jobs per second over their span (first start
// to last finish), resubmissions excluded: a resubmission hours later does
// not dilute the rate the run had.
func (r Run) Rate() float64 {
	d := r.ownFinished.Sub(r.FirstStarted).Seconds()
	if d <= 0 || r.ownFinal == 0 {
		return 0
	}
	return float64(r.ownFinal) / d
}

// RunCursor is where a page of runs ends (newest first).
type RunCursor struct {
	Started time.Time
	Name    string
}

// Runs returns up to limit runs, newest first (by their first job's start),
// after cursor when it is not nil, and the cursor of the next page (nil on
// the last one).
func Runs(ctx context.Context, db *pgxpool.Pool, limit int, after *RunCursor) ([]Run, *RunCursor, error) {
	limit = max(1, limit)
	var cur []any
	page := `SELECT run, min(first_started) AS fs FROM run_totals GROUP BY run HAVING sum(jobs) > 0`
	if after != nil {
		page += ` AND (min(first_started), run) < ($2, $3)`
		cur = []any{after.Started, after.Name}
	}
	page += ` ORDER BY fs DESC, run DESC LIMIT $1`
	runs, err := totals(ctx, db, `WITH page AS (`+page+`) SELECT t.run, `+totalsCols+`
		FROM run_totals t JOIN page USING (run) GROUP BY t.run, 2, 3, 4, 5, 6`, append([]any{limit + 1}, cur...)...)
	if err == nil {
		err = byDocument(ctx, db, runs)
	}
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].FirstStarted.Equal(runs[j].FirstStarted) {
			return runs[i].FirstStarted.After(runs[j].FirstStarted)
		}
		return runs[i].Name > runs[j].Name
	})
	var next *RunCursor
	if len(runs) > limit {
		runs = runs[:limit]
		last := runs[limit-1]
		next = &RunCursor{Started: last.FirstStarted, Name: last.Name}
	}
	return runs, next, nil
}

// RunByName returns one run's totals; ok is false when the run has no jobs.
func RunByName(ctx context.Context, db *pgxpool.Pool, name string) (Run, bool, error) {
	runs, err := totals(ctx, db, `SELECT t.run, `+totalsCols+` FROM run_totals t WHERE t.run = $1 GROUP BY t.run, 2, 3, 4, 5, 6`, name)
	if err != nil || len(runs) == 0 || runs[0].Jobs == 0 {
		return Run{}, false, err
	}
	if err := byDocument(ctx, db, runs); err != nil {
		return Run{}, false, err
	}
	return runs[0], true, nil
}

const totalsCols = `t.status, t.schema_name, t.schema_version, t.provider, t.model,
	sum(t.jobs), sum(t.attempts), sum(t.prompt_tokens), sum(t.completion_tokens), min(t.first_started), max(t.last_finished)`

// totals folds run_totals rows (run, status, schema, version, provider,
// model and their sums) into runs.
func totals(ctx context.Context, db *pgxpool.Pool, sql string, args ...any) ([]Run, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("fleetview: read run totals: %w (has `extractq audit migrate` run?)", err)
	}
	byName := map[string]*Run{}
	var order []string
	type usage struct{ prompt, completion int64 }
	cost := map[string]map[string]usage{} // run → provider → tokens
	var (
		name, status, schemaName, provider, model string
		version                                   int
		n, attempts, pt, ct                       int64
		first, last                               time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &status, &schemaName, &version, &provider, &model, &n, &attempts, &pt, &ct, &first, &last}, func() error {
		r := byName[name]
		if r == nil {
			r = &Run{Name: name, ByStatus: map[string]int64{}, FirstStarted: first, LastFinished: last}
			byName[name] = r
			order = append(order, name)
			cost[name] = map[string]usage{}
		}
		if first.Before(r.FirstStarted) {
			r.FirstStarted = first
		}
		if last.After(r.LastFinished) {
			r.LastFinished = last
		}
		if n == 0 && attempts == 0 && pt == 0 && ct == 0 {
			return nil // every job of this group moved on or was pruned
		}
		r.Jobs += n
		r.count(status, n)
		r.Attempts += attempts
		r.PromptTokens += pt
		r.CompletionTokens += ct
		u := cost[name][provider]
		cost[name][provider] = usage{u.prompt + pt, u.completion + ct}
		if n > 0 {
			r.Schemas = addSchema(r.Schemas, SchemaVersion{schemaName, version})
			r.Models = addString(r.Models, model)
			r.Providers = addString(r.Providers, provider)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fleetview: read run totals: %w", err)
	}
	out := make([]Run, 0, len(order))
	for _, name := range order {
		r := byName[name]
		r.Documents, r.ownFinal, r.ownFinished = r.Jobs, r.Final(), r.LastFinished
		r.CostComplete = true
		for prov, u := range cost[name] {
			usd, known := providers.EstimateCost(prov, llm.Usage{PromptTokens: int(u.prompt), CompletionTokens: int(u.completion)})
			r.CostUSD += usd
			r.CostComplete = r.CostComplete && (known || u.prompt+u.completion == 0)
		}
		out = append(out, *r)
	}
	return out, nil
}

func addString(list []string, s string) []string {
	i := sort.SearchStrings(list, s)
	if i < len(list) && list[i] == s {
		return list
	}
	list = append(list, "")
	copy(list[i+1:], list[i:])
	list[i] = s
	return list
}

func addSchema(list []SchemaVersion, v SchemaVersion) []SchemaVersion {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	list = append(list, v)
	sort.Slice(list, func(i, j int) bool {
		if list[i].Name != list[j].Name {
			return list[i].Name < list[j].Name
		}
		return list[i].Version < list[j].Version
	})
	return list
}

// Bucket is one bar of a throughput chart: jobs that ended in [Start,
// Start+Width).
type Bucket struct {
	Start  time.Time     `json:"start"`
	Width  time.Duration `json:"width_ns"`
	OK     int64         `json:"ok"`
	Failed int64         `json:"failed"` // every final outcome but ok
}

// Throughput returns, for each named run, the jobs that ended over time in
// at most bars buckets of whole minutes spanning the run.
func Throughput(ctx context.Context, db *pgxpool.Pool, runs []string, bars int) (map[string][]Bucket, error) {
	bars = max(1, bars)
	rows, err := db.Query(ctx, `SELECT run, minute, sum(ok), sum(failed) FROM run_minutes
		WHERE run = ANY($1) GROUP BY run, minute HAVING sum(ok) <> 0 OR sum(failed) <> 0 ORDER BY run, minute`, runs)
	if err != nil {
		return nil, fmt.Errorf("fleetview: read throughput: %w", err)
	}
	type minute struct {
		at         time.Time
		ok, failed int64
	}
	per := map[string][]minute{}
	var (
		run        string
		m          minute
		ok, failed int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&run, &m.at, &ok, &failed}, func() error {
		m.ok, m.failed = ok, failed
		per[run] = append(per[run], m)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("fleetview: read throughput: %w", err)
	}
	out := make(map[string][]Bucket, len(per))
	for run, ms := range per {
		first, last := ms[0].at, ms[len(ms)-1].at
		span := int(last.Sub(first)/time.Minute) + 1
		per := (span + bars - 1) / bars // minutes per bucket
		n := (span + per - 1) / per
		bs := make([]Bucket, n)
		for i := range bs {
			bs[i] = Bucket{Start: first.Add(time.Duration(i*per) * time.Minute), Width: time.Duration(per) * time.Minute}
		}
		for _, x := range ms {
			i := int(x.at.Sub(first)/time.Minute) / per
			bs[i].OK += x.ok
			bs[i].Failed += x.failed
		}
		out[run] = bs
	}
	return out, nil
}
