package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunDocument is a run's final word on one document, as `extractq eval`
// scores it: the latest job of the document in the run, its result if it
// made one, and what its calls cost.
type RunDocument struct {
	DocumentID  string
	ContentHash string
	JobID       string
	Status      string
	Reason      string
	Provider    string
	Model       string
	// Value is the result's value; nil when the job made no result.
	Value json.RawMessage
	// Calls counts the job's attempts (model calls), every delivery.
	Calls int
	// Usage sums the attempts' tokens.
	PromptTokens, CompletionTokens, CachedPromptTokens, CacheCreationTokens int64
	// Batch is set when the calls went through a batch API (half price).
	Batch   bool
	Elapsed time.Duration
}

// RunSchema is the schema a run's jobs were made with.
type RunSchema struct {
	Name        string
	Version     int
	Fingerprint string
}

// ErrNoSuchRun: no job of the run is in the audit.
var ErrNoSuchRun = errors.New("no such run")

// RunSchemas lists the schemas the jobs of run used (one for an ordinary
// run), most jobs first.
func (s *Store) RunSchemas(ctx context.Context, run string) ([]RunSchema, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT schema_name, schema_version, schema_fingerprint
		FROM jobs WHERE run = $1
		GROUP BY 1, 2, 3 ORDER BY count(*) DESC, 2 DESC`, run)
	if err != nil {
		return nil, fmt.Errorf("audit: schemas of run %q: %w", run, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RunSchema])
	if err != nil {
		return nil, fmt.Errorf("audit: schemas of run %q: %w", run, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %q in the audit (extractq status lists the runs)", ErrNoSuchRun, run)
	}
	return out, nil
}

// RunDocuments calls fn for each document of run made with the schema of
// this fingerprint ("": any): its latest final job, the result that job
// made (by job id), and its attempts summed. A job still open ("retrying")
// is skipped.
func (s *Store) RunDocuments(ctx context.Context, run, fingerprint string, fn func(RunDocument) error) error {
	rows, err := s.pool.Query(ctx, `
		WITH latest AS (
			SELECT DISTINCT ON (document_id) job_id, document_id, content_hash, status, reason, provider, model,
			       extract(epoch FROM finished_at - started_at)::float8 AS elapsed
			FROM jobs WHERE run = $1 AND status <> 'retrying' AND ($2 = '' OR schema_fingerprint = $2)
			ORDER BY document_id, finished_at DESC
		)
		SELECT l.document_id, l.content_hash, l.job_id, l.status, l.reason, l.provider, l.model, r.value,
		       coalesce(a.calls, 0), coalesce(a.prompt, 0), coalesce(a.completion, 0),
		       coalesce(a.cached, 0), coalesce(a.created, 0), coalesce(a.batch, false),
		       l.elapsed
		FROM latest l
		LEFT JOIN LATERAL (SELECT value FROM results WHERE job_id = l.job_id LIMIT 1) r ON true
		LEFT JOIN LATERAL (
			SELECT count(*) AS calls, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion,
			       sum(cached_prompt_tokens) AS cached, sum(cache_creation_tokens) AS created, bool_or(batch) AS batch
			FROM attempts WHERE job_id = l.job_id AND error_class NOT IN ('rate_limited', 'overloaded', 'server_error', 'timeout', 'network', 'truncated_body')
		) a ON true
		ORDER BY l.document_id`, run, fingerprint)
	if err != nil {
		return fmt.Errorf("audit: documents of run %q: %w", run, err)
	}
	defer rows.Close()
	for rows.Next() {
		var d RunDocument
		var value []byte
		var elapsed float64
		if err := rows.Scan(&d.DocumentID, &d.ContentHash, &d.JobID, &d.Status, &d.Reason, &d.Provider, &d.Model, &value,
			&d.Calls, &d.PromptTokens, &d.CompletionTokens, &d.CachedPromptTokens, &d.CacheCreationTokens, &d.Batch, &elapsed); err != nil {
			return fmt.Errorf("audit: documents of run %q: %w", run, err)
		}
		d.Elapsed = time.Duration(elapsed * float64(time.Second))
		if value != nil {
			d.Value = value
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return rows.Err()
}
