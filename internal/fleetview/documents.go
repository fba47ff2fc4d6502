package fleetview

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/extractq/extractq/internal/audit"
)

// Outcome filters of a run's documents, besides an exact job status.
const (
	OutcomeOK            = "ok"
	OutcomeFailed        = "failed" // every final outcome but ok and unextractable
	OutcomeUnextractable = "unextractable"
	OutcomeInProgress    = "in_progress"
)

// DocFilter selects a run's documents. Zero fields match everything.
type DocFilter struct {
	Run string
	// Outcome is OutcomeOK, OutcomeFailed, OutcomeUnextractable,
	// OutcomeInProgress or an exact job status ("exhausted", "fatal", …).
	Outcome       string
	SchemaVersion int
	Model         string
	// IDPrefix keeps documents whose id starts with it (a range of the
	// index: fast on any run); IDContains those whose id contains it,
	// ignoring case (a scan of the run's ids).
	IDPrefix   string
	IDContains string
	// EveryJob lists every job of the run. By default a document under a
	// schema shows only its latest job: a job that a resubmission of its
	// document superseded (the later job started after it ended, as the
	// run's counts by document have it) is left out, so the outcome filter
	// matches the counts.
	EveryJob bool
}

// DocCursor is a position in a run's documents, ordered by document id then
// job id (a document may run under several schemas or models).
type DocCursor struct {
	DocumentID string
	JobID      string
}

// DocRow is one job of a run: a document under one schema on one pool.
type DocRow struct {
	JobID            string    `json:"job_id"`
	DocumentID       string    `json:"document_id"`
	Status           string    `json:"status"`
	Reason           string    `json:"reason,omitempty"`
	SchemaName       string    `json:"schema"`
	SchemaVersion    int       `json:"schema_version"`
	Provider         string    `json:"provider"`
	Model            string    `json:"model"`
	Deliveries       int       `json:"deliveries"`
	Attempts         int       `json:"attempts"`
	PromptTokens     int64     `json:"prompt_tokens"`
	CompletionTokens int64     `json:"completion_tokens"`
	FinishedAt       time.Time `json:"finished_at"`
	// Resubmitted is true when the job superseded an earlier job of its
	// document and schema in the run (a resubmission).
	Resubmitted bool `json:"resubmitted,omitempty"`
}

// DocPage is one page of a run's documents with the cursors of its
// neighbours (nil at either end).
type DocPage struct {
	Rows       []DocRow
	Prev, Next *DocCursor
}

// Documents returns a page of at most limit rows of f's run: the first page
// when after and before are nil, the rows following after, or the rows
// preceding before. It pages by keyset on (document_id, job_id) in byte
// order along the index jobs_run_doc_idx, never by OFFSET, so every page
// costs the same on a run of millions (a filter that few rows pass reads
// further along the run to fill a page).
func Documents(ctx context.Context, db *pgxpool.Pool, f DocFilter, after, before *DocCursor, limit int) (DocPage, error) {
	limit = max(1, limit)
	sql, args := documentsQuery(f, after, before, limit)
	var got []DocRow
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// A page reads a few rows along the index, but the planner prices a
		// filtered walk of a run of millions as if it read them all, and
		// JIT-compiles it: 0.9 s of compiling for a 0.1 s id search.
		if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return err
		}
		// Planned with its values every time (an unnamed statement): after
		// five runs of a prepared statement PostgreSQL may switch to a
		// generic plan, which knows no run and, for an outcome filter, reads
		// every failed job of the run through the partial index and sorts
		// them (630 ms on a run of 781,250 jobs instead of 10 ms).
		rows, _ := tx.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
		var err error
		got, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (DocRow, error) {
			var d DocRow
			err := r.Scan(&d.JobID, &d.DocumentID, &d.Status, &d.Reason, &d.SchemaName, &d.SchemaVersion, &d.Provider, &d.Model,
				&d.Deliveries, &d.Attempts, &d.PromptTokens, &d.CompletionTokens, &d.FinishedAt, &d.Resubmitted)
			return d, err
		})
		return err
	})
	if err != nil {
		return DocPage{}, fmt.Errorf("fleetview: documents of run %q: %w", f.Run, err)
	}
	more := len(got) > limit
	if more {
		got = got[:limit]
	}
	if before != nil {
		slices.Reverse(got)
	}
	page := DocPage{Rows: got}
	if len(got) == 0 {
		return page, nil
	}
	first, last := got[0], got[len(got)-1]
	// Going forward there is a previous page when we came from one; going
	// back there is a next page by construction. Each side is checked by
	// the one extra row fetched in its direction, or known from the cursor.
	switch {
	case before != nil:
		page.Next = &DocCursor{last.DocumentID, last.JobID}
		if more {
			page.Prev = &DocCursor{first.DocumentID, first.JobID}
		}
	default:
		if more {
			page.Next = &DocCursor{last.DocumentID, last.JobID}
		}
		if after != nil {
			page.Prev = &DocCursor{first.DocumentID, first.JobID}
		}
	}
	return page, nil
}

// supersededJob: a later job of j's document and schema in its run
// started after j ended (j is left out of the latest-job list);
// resubmissionJob: an earlier one ended before j started (j is marked a
// resubmission). Each is asked only of the documents migration 10's
// trigger marked in run_resubmitted (few): one lookup there per row read
// (its primary key, or a hash of it built once), then jobs_run_doc_idx
// for those documents.
const (
	hasResubmission = `EXISTS (SELECT 1 FROM run_resubmitted r WHERE r.run = j.run AND r.document_id = j.document_id)`
	otherJob        = `SELECT 1 FROM jobs k WHERE k.run = j.run AND k.document_id COLLATE "C" = j.document_id COLLATE "C"
		AND k.schema_name = j.schema_name AND k.job_id <> j.job_id AND `
	supersededJob   = `(j.status <> 'retrying' AND ` + hasResubmission + ` AND EXISTS (` + otherJob + `k.started_at >= j.finished_at))`
	resubmissionJob = `(` + hasResubmission + ` AND EXISTS (` + otherJob + `k.status <> 'retrying' AND k.finished_at <= j.started_at))`
)

// documentsQuery is the keyset query of Documents, fetching limit+1 rows.
func documentsQuery(f DocFilter, after, before *DocCursor, limit int) (string, []any) {
	var w where
	w.add("run = ?", f.Run)
	if !f.EveryJob {
		w.add("NOT " + supersededJob)
	}
	switch f.Outcome {
	case "":
	case OutcomeFailed:
		w.add("status NOT IN ('ok', 'unextractable', 'retrying')")
	case OutcomeInProgress:
		w.add("status = ?", audit.StatusRetrying)
	default:
		w.add("status = ?", f.Outcome)
	}
	if f.SchemaVersion > 0 {
		w.add("schema_version = ?", f.SchemaVersion)
	}
	if f.Model != "" {
		w.add("model = ?", f.Model)
	}
	if f.IDPrefix != "" {
		w.add(`document_id COLLATE "C" >= ?`, f.IDPrefix)
		if hi, ok := prefixEnd(f.IDPrefix); ok {
			w.add(`document_id COLLATE "C" < ?`, hi)
		}
	}
	if f.IDContains != "" {
		w.add(`document_id ILIKE ? ESCAPE '\'`, "%"+likeEscaper.Replace(f.IDContains)+"%")
	}
	order := "ASC"
	switch {
	case before != nil:
		w.add(`(document_id COLLATE "C", job_id COLLATE "C") < (?, ?)`, before.DocumentID, before.JobID)
		order = "DESC"
	case after != nil:
		w.add(`(document_id COLLATE "C", job_id COLLATE "C") > (?, ?)`, after.DocumentID, after.JobID)
	}
	w.args = append(w.args, limit+1)
	sql := `SELECT job_id, document_id, status, reason, schema_name, schema_version, provider, model, deliveries, attempts,
		prompt_tokens, completion_tokens, finished_at, ` + resubmissionJob + ` FROM jobs j WHERE ` + w.sql() +
		` ORDER BY document_id COLLATE "C" ` + order + `, job_id COLLATE "C" ` + order + ` LIMIT $` + strconv.Itoa(len(w.args))
	return sql, w.args
}

// prefixEnd is the smallest string above every string starting with p in
// byte (code point) order: p with its last character incremented, the
// characters that cannot be incremented dropped. ok is false when there is
// none (p is all U+10FFFF).
func prefixEnd(p string) (string, bool) {
	r := []rune(p)
	for len(r) > 0 {
		last := r[len(r)-1]
		r = r[:len(r)-1]
		next := last + 1
		if next == 0xD800 { // surrogates are not characters
			next = 0xE000
		}
		if next <= unicode.MaxRune {
			return string(append(r, next)), true
		}
	}
	return "", false
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// where builds a conjunction with numbered parameters: each "?" in a
// condition becomes the next $n. Conditions are fixed text; values travel
// as parameters only.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	var b strings.Builder
	i := 0
	for _, r := range cond {
		if r == '?' {
			w.args = append(w.args, args[i])
			i++
			b.WriteString("$" + strconv.Itoa(len(w.args)))
			continue
		}
		b.WriteRune(r)
	}
	w.conds = append(w.conds, b.String())
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return "true"
	}
	return strings.Join(w.conds, " AND ")
}
