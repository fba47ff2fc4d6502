package fleetview

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/providers"
)

// LetterFilter selects dead-letter references in the audit. Zero fields
// match everything.
type LetterFilter struct {
	Run string
	// RunPrefix keeps the letters of runs whose name starts with it (e.g.
	// "march" for march-1, march-2).
	RunPrefix string
	// All includes letters already resubmitted; by default only those
	// still waiting are listed.
	All bool
}

// LetterCursor is a position in the dead letters, newest first: the page
// after it (older letters), or with Back the page before it (newer ones).
type LetterCursor struct {
	CreatedAt time.Time
	JobID     string
	Back      bool
}

// LetterRow is one dead letter as the audit references it, with its job's
// pool and provider.
type LetterRow struct {
	Stream        string     `json:"stream"`
	Seq           uint64     `json:"seq"`
	JobID         string     `json:"job_id"`
	DocumentID    string     `json:"document_id"`
	Run           string     `json:"run"`
	SchemaName    string     `json:"schema"`
	SchemaVersion int        `json:"schema_version"`
	Reason        string     `json:"reason"`
	CreatedAt     time.Time  `json:"created_at"`
	ResubmittedAt *time.Time `json:"resubmitted_at,omitempty"`
	Pool          string     `json:"pool"`
	Provider      string     `json:"provider"`
	Status        string     `json:"status"` // the job's last outcome
}

// LetterPage is one page of dead letters with the cursors of the next page
// (older letters; nil on the last) and of the previous one (newer; nil on
// the first).
type LetterPage struct {
	Rows []LetterRow
	Next *LetterCursor
	Prev *LetterCursor
}

// DeadLetters returns up to limit dead letters, newest first, after cursor
// (keyset on created_at, job_id).
func DeadLetters(ctx context.Context, db *pgxpool.Pool, f LetterFilter, after *LetterCursor, limit int) (LetterPage, error) {
	limit = max(1, limit)
	var w where
	if f.Run != "" {
		w.add("d.run = ?", f.Run)
	}
	if f.RunPrefix != "" {
		w.add(`d.run LIKE ? ESCAPE '\'`, likePrefix(f.RunPrefix))
	}
	if !f.All {
		w.add("d.resubmitted_at IS NULL")
	}
	order := "DESC"
	switch {
	case after != nil && after.Back:
		w.add("(d.created_at, d.job_id) > (?, ?)", after.CreatedAt, after.JobID)
		order = "ASC" // the letters just newer than the cursor, reversed below
	case after != nil:
		w.add("(d.created_at, d.job_id) < (?, ?)", after.CreatedAt, after.JobID)
	}
	w.args = append(w.args, limit+1)
	rows, _ := db.Query(ctx, `SELECT d.stream, d.seq, d.job_id, d.document_id, d.run, d.schema_name, d.schema_version, d.reason,
		d.created_at, d.resubmitted_at, coalesce(j.pool, ''), coalesce(j.provider, ''), coalesce(j.status, '')
		FROM dead_letters d LEFT JOIN jobs j USING (job_id) WHERE `+w.sql()+`
		ORDER BY d.created_at `+order+`, d.job_id `+order+` LIMIT $`+strconv.Itoa(len(w.args)), w.args...)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LetterRow, error) {
		var l LetterRow
		var seq int64
		err := r.Scan(&l.Stream, &seq, &l.JobID, &l.DocumentID, &l.Run, &l.SchemaName, &l.SchemaVersion, &l.Reason,
			&l.CreatedAt, &l.ResubmittedAt, &l.Pool, &l.Provider, &l.Status)
		l.Seq = uint64(seq)
		return l, err
	})
	if err != nil {
		return LetterPage{}, fmt.Errorf("fleetview: list dead letters: %w", err)
	}
	more := len(got) > limit
	page := LetterPage{Rows: got[:min(len(got), limit)]}
	back := after != nil && after.Back
	if back {
		slices.Reverse(page.Rows)
	}
	if len(page.Rows) == 0 {
		return page, nil
	}
	first, last := page.Rows[0], page.Rows[len(page.Rows)-1]
	// Going forward, newer letters exist past a cursor, older ones when
	// there was more; going back, the reverse.
	if (!back && more) || back {
		page.Next = &LetterCursor{CreatedAt: last.CreatedAt, JobID: last.JobID}
	}
	if (back && more) || (!back && after != nil) {
		page.Prev = &LetterCursor{CreatedAt: first.CreatedAt, JobID: first.JobID, Back: true}
	}
	return page, nil
}

// likePrefix is a LIKE pattern matching what starts with p, with LIKE's
// wildcards in p taken literally.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)
	return r.Replace(p) + "%"
}

// ResubmitPlan is what a resubmission of dead letters would queue, for a
// confirmation before it runs.
type ResubmitPlan struct {
	// Letters is how many dead letters the request selects (the count the
	// resubmission itself reports in a dry run).
	Letters int `json:"letters"`
	// Seqs are their sequences on EXTRACTQ_DLQ, oldest first, and Items
	// the letters themselves.
	Seqs  []uint64   `json:"seqs"`
	Items []PlanItem `json:"items"`
	// PromptTokens and CompletionTokens are what the selected letters'
	// last deliveries used: the estimate of running them again.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CostUSD prices those tokens at the target provider's list price
	// (each letter's own provider unless the request names another);
	// CostComplete is false when a price is unknown.
	CostUSD      float64 `json:"cost_usd"`
	CostComplete bool    `json:"cost_complete"`
	// Providers are the providers the jobs will run on.
	Providers []string `json:"providers"`
}

// PlanItem is one dead letter a resubmission selects.
type PlanItem struct {
	Seq           uint64 `json:"seq"`
	DocumentID    string `json:"document_id"`
	Run           string `json:"run"`
	SchemaName    string `json:"schema"`
	SchemaVersion int    `json:"schema_version"`
	// Provider is the provider the job will run on.
	Provider string `json:"provider"`
	Reason   string `json:"reason"`
}

// PlanResubmit selects the dead letters req would resubmit (FromDLQ with
// Seqs, Run and Schema, as submit.Submitter.Resubmit selects them) and
// estimates their cost.
func PlanResubmit(ctx context.Context, js jetstream.JetStream, req submit.ResubmitRequest) (ResubmitPlan, error) {
	plan := ResubmitPlan{CostComplete: true}
	want := map[uint64]bool{}
	for _, s := range req.Seqs {
		want[s] = true
	}
	err := jobs.NewDLQ(js).List(ctx, jobs.ListFilter{Run: req.Run}, func(l *jobs.Letter) error {
		if len(want) > 0 && !want[l.Seq] || req.Schema != "" && l.Job.Schema.Name != req.Schema {
			return nil
		}
		plan.Letters++
		prov := l.Job.Provider
		if req.Provider != "" {
			prov = req.Provider
		}
		plan.Seqs = append(plan.Seqs, l.Seq)
		plan.Items = append(plan.Items, PlanItem{Seq: l.Seq, DocumentID: l.Job.DocumentID, Run: l.Job.Run,
			SchemaName: l.Job.Schema.Name, SchemaVersion: l.Job.Schema.Version, Provider: prov, Reason: l.Reason})
		plan.PromptTokens += int64(l.Usage.PromptTokens)
		plan.CompletionTokens += int64(l.Usage.CompletionTokens)
		usd, known := providers.EstimateCost(prov, l.Usage)
		plan.CostUSD += usd
		plan.CostComplete = plan.CostComplete && known
		if !slices.Contains(plan.Providers, prov) {
			plan.Providers = append(plan.Providers, prov)
		}
		return nil
	})
	if err != nil {
		return ResubmitPlan{}, fmt.Errorf("fleetview: select dead letters to resubmit: %w", err)
	}
	slices.Sort(plan.Providers)
	return plan, nil
}
