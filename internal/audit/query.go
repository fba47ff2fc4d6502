package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/llm"
)

// StatusFilter narrows Status. Zero fields match everything.
type StatusFilter struct {
	Run    string
	Schema string
	// Since limits the attempt figures (tokens, latency) to attempts started
	// at or after it, so that status stays cheap on a large attempts table.
	Since time.Time
}

// ModelUsage is token use of one model within a status group, for cost
// estimates.
type ModelUsage struct {
	Provider         string `json:"provider"`
	Model            string `json:"model"`
	Attempts         int64  `json:"attempts"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	// CachedPromptTokens and CacheCreationTokens are the parts of
	// PromptTokens the provider's prompt cache served and stored.
	CachedPromptTokens  int64 `json:"cached_prompt_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	// Batch marks the attempts answered through provider batches, billed
	// at the batch price; a model used both ways has one entry per way.
	Batch bool `json:"batch,omitempty"`
}

// StatusGroup is the state of one run under one schema version.
type StatusGroup struct {
	Run           string           `json:"run"`
	SchemaName    string           `json:"schema"`
	SchemaVersion int              `json:"schema_version"`
	Jobs          int64            `json:"jobs"`
	ByStatus      map[string]int64 `json:"by_status"` // job status ("ok", "exhausted", …, "retrying") → jobs
	// Results counts valid results. They are never pruned, so a group
	// whose jobs and attempts were pruned still shows them.
	Results int64 `json:"results"`
	// DeadLetters counts the dead letters still on the DLQ: those not
	// resubmitted since (what `extractq dlq list` shows).
	DeadLetters      int64 `json:"dead_letters"`
	Attempts         int64 `json:"attempts"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// Attempt latency percentiles (one model call each).
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP95 time.Duration `json:"latency_p95_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	Models     []ModelUsage  `json:"models"`
}

type groupKey struct {
	run, schema string
	version     int
}

// Status summarises jobs and attempts per run and schema version, ordered
// by run, schema and version.
func (s *Store) Status(ctx context.Context, f StatusFilter) ([]StatusGroup, error) {
	groups := map[groupKey]*StatusGroup{}
	get := func(k groupKey) *StatusGroup {
		g := groups[k]
		if g == nil {
			g = &StatusGroup{Run: k.run, SchemaName: k.schema, SchemaVersion: k.version, ByStatus: map[string]int64{}}
			groups[k] = g
		}
		return g
	}
	const where = "($1 = '' OR run = $1) AND ($2 = '' OR schema_name = $2)"
	scan := func(sql string, args []any, each func(r pgx.Rows) error) error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	args := []any{f.Run, f.Schema}
	err := scan(`SELECT run, schema_name, schema_version, status, count(*) FROM jobs WHERE `+where+`
		GROUP BY 1, 2, 3, 4`, args, func(r pgx.Rows) error {
		var k groupKey
		var st string
		var n int64
		if err := r.Scan(&k.run, &k.schema, &k.version, &st, &n); err != nil {
			return err
		}
		g := get(k)
		g.ByStatus[st] += n
		g.Jobs += n
		return nil
	})
	if err == nil {
		err = scan(`SELECT run, schema_name, schema_version, count(*) FROM results WHERE `+where+`
			GROUP BY 1, 2, 3`, args, func(r pgx.Rows) error {
			var k groupKey
			var n int64
			if err := r.Scan(&k.run, &k.schema, &k.version, &n); err != nil {
				return err
			}
			get(k).Results = n
			return nil
		})
	}
	if err == nil {
		err = scan(`SELECT run, schema_name, schema_version, count(*) FROM dead_letters WHERE `+where+`
			AND resubmitted_at IS NULL GROUP BY 1, 2, 3`, args, func(r pgx.Rows) error {
			var k groupKey
			var n int64
			if err := r.Scan(&k.run, &k.schema, &k.version, &n); err != nil {
				return err
			}
			get(k).DeadLetters = n
			return nil
		})
	}
	since := f.Since
	if since.IsZero() {
		since = time.Unix(0, 0)
	}
	aargs := []any{f.Run, f.Schema, since}
	if err == nil {
		err = scan(`SELECT run, schema_name, schema_version, provider, model, count(*), sum(prompt_tokens), sum(completion_tokens),
			sum(cached_prompt_tokens), sum(cache_creation_tokens), batch
			FROM attempts WHERE `+where+` AND started_at >= $3 GROUP BY 1, 2, 3, 4, 5, batch ORDER BY 4, 5, batch`, aargs,
			func(r pgx.Rows) error {
				var k groupKey
				var m ModelUsage
				if err := r.Scan(&k.run, &k.schema, &k.version, &m.Provider, &m.Model, &m.Attempts, &m.PromptTokens, &m.CompletionTokens,
					&m.CachedPromptTokens, &m.CacheCreationTokens, &m.Batch); err != nil {
					return err
				}
				g := get(k)
				g.Models = append(g.Models, m)
				g.Attempts += m.Attempts
				g.PromptTokens += m.PromptTokens
				g.CompletionTokens += m.CompletionTokens
				return nil
			})
	}
	if err == nil {
		err = scan(`SELECT run, schema_name, schema_version,
			percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY latency_ms)
			FROM attempts WHERE `+where+` AND started_at >= $3 GROUP BY 1, 2, 3`, aargs,
			func(r pgx.Rows) error {
				var k groupKey
				var p []float64
				if err := r.Scan(&k.run, &k.schema, &k.version, &p); err != nil {
					return err
				}
				g := get(k)
				g.LatencyP50, g.LatencyP95, g.LatencyP99 = ms(p[0]), ms(p[1]), ms(p[2])
				return nil
			})
	}
	if err != nil {
		return nil, fmt.Errorf("audit: status: %w", err)
	}
	out := make([]StatusGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.SchemaName != b.SchemaName {
			return a.SchemaName < b.SchemaName
		}
		return a.SchemaVersion < b.SchemaVersion
	})
	return out, nil
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// AttemptInfo is one stored attempt.
type AttemptInfo struct {
	JobID            string          `json:"job_id"`
	Delivery         int             `json:"delivery"`
	Seq              int             `json:"seq"`
	N                int             `json:"n"`
	StartedAt        time.Time       `json:"started_at"`
	Run              string          `json:"run"`
	SchemaName       string          `json:"schema"`
	SchemaVersion    int             `json:"schema_version"`
	Provider         string          `json:"provider"`
	Model            string          `json:"model"`
	Mode             string          `json:"mode"`
	PromptChars      int             `json:"prompt_chars"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	Latency          time.Duration   `json:"latency_ns"`
	FinishReason     string          `json:"finish_reason,omitempty"`
	Raw              string          `json:"raw_response"`
	Value            json.RawMessage `json:"value,omitempty"`
	Repairs          json.RawMessage `json:"repairs,omitempty"`
	Violations       json.RawMessage `json:"violations,omitempty"`
	ErrorClass       string          `json:"error_class,omitempty"`
	ErrorMessage     string          `json:"error_message,omitempty"`
	TransportRetries int             `json:"transport_retries,omitempty"`
	WorkerID         string          `json:"worker_id,omitempty"`
	// Chunk is the part of a long document the attempt was given: its
	// index and [start, end) character offsets in the document; nil for a
	// whole document (and for rows written before migration 6).
	Chunk *llm.Span `json:"chunk,omitempty"`
	// Pointer and Step are a prefill-mode attempt's: the JSON pointer of
	// the value it generated ("" for the root) and what it asked for; Step
	// is "" for an attempt of another mode.
	Pointer string `json:"pointer,omitempty"`
	Step    string `json:"step,omitempty"`
	// Adjustments lists what the provider adapter learned during the
	// attempt (llm.Adjustment strings: request parts the server refused,
	// changed and sent again), as a JSON array; nil when none.
	Adjustments json.RawMessage `json:"adjustments,omitempty"`
}

// JobInfo is one stored job.
type JobInfo struct {
	JobID             string    `json:"job_id"`
	DocumentID        string    `json:"document_id"`
	Run               string    `json:"run"`
	SchemaName        string    `json:"schema"`
	SchemaVersion     int       `json:"schema_version"`
	SchemaFingerprint string    `json:"schema_fingerprint"`
	ContentHash       string    `json:"content_hash"` // sha256 of the text the job ran on; "" if unknown (before schema version 2)
	Provider          string    `json:"provider"`
	Model             string    `json:"model"`
	Pool              string    `json:"pool"`
	Status            string    `json:"status"`
	Reason            string    `json:"reason,omitempty"`
	Deliveries        int       `json:"deliveries"`
	StartedAt         time.Time `json:"started_at"`
	FinishedAt        time.Time `json:"finished_at"`
}

// ResultInfo is one stored result.
type ResultInfo struct {
	DocumentID        string          `json:"document_id"`
	SchemaName        string          `json:"schema"`
	SchemaVersion     int             `json:"schema_version"`
	SchemaFingerprint string          `json:"schema_fingerprint"`
	ContentHash       string          `json:"content_hash"` // sha256 of the text it was extracted from; "" if unknown
	Provider          string          `json:"provider"`
	Model             string          `json:"model"`
	Run               string          `json:"run"`
	JobID             string          `json:"job_id"`
	Attempts          int             `json:"attempts"`
	PromptTokens      int64           `json:"prompt_tokens"`
	CompletionTokens  int64           `json:"completion_tokens"`
	Value             json.RawMessage `json:"value"`
	// Redacted: the value holds the redaction marker, so it may differ
	// from the model's answer (a provider replaced its own API key in it).
	Redacted  bool      `json:"redacted,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Sources say where each value was found, by JSON pointer (page,
	// range within the page, box, snippet); nil when none were stored.
	Sources map[string]llm.Source `json:"sources,omitempty"`
}

// TextInfo is one text a document has had.
type TextInfo struct {
	ContentHash string     `json:"content_hash"`
	Bytes       int        `json:"bytes"`
	StoredAt    time.Time  `json:"stored_at"`
	ReplacedAt  *time.Time `json:"replaced_at,omitempty"` // nil for the current text
}

// DeadLetterInfo is one stored dead-letter reference.
type DeadLetterInfo struct {
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
}

// History is everything stored about one document, oldest first.
type History struct {
	DocumentID string    `json:"document_id"`
	Document   *Document `json:"-"` // nil when the text was not stored
	// Texts are the texts stored under the id, current first, then the
	// earlier ones newest first: jobs and results name theirs by hash.
	Texts       []TextInfo       `json:"texts"`
	Jobs        []JobInfo        `json:"jobs"`
	Attempts    []AttemptInfo    `json:"attempts"`
	Results     []ResultInfo     `json:"results"`
	DeadLetters []DeadLetterInfo `json:"dead_letters"`
}

// Empty reports whether nothing at all is stored about the document.
func (h *History) Empty() bool {
	return h.Document == nil && len(h.Texts) == 0 && len(h.Jobs) == 0 && len(h.Attempts) == 0 && len(h.Results) == 0 && len(h.DeadLetters) == 0
}

// resultCols are the columns scanResult reads, of results aliased r.
const resultCols = `r.document_id, r.schema_name, r.schema_version, r.schema_fingerprint, r.content_hash, r.provider, r.model,
	r.run, r.job_id, r.attempts, r.prompt_tokens, r.completion_tokens, r.value, r.redacted, r.created_at, r.sources`

func scanResult(r pgx.CollectableRow) (ResultInfo, error) {
	var x ResultInfo
	var v, sources []byte
	err := r.Scan(&x.DocumentID, &x.SchemaName, &x.SchemaVersion, &x.SchemaFingerprint, &x.ContentHash, &x.Provider, &x.Model,
		&x.Run, &x.JobID, &x.Attempts, &x.PromptTokens, &x.CompletionTokens, &v, &x.Redacted, &x.CreatedAt, &sources)
	x.Value = v
	if err == nil && len(sources) > 0 {
		if err = json.Unmarshal(sources, &x.Sources); err != nil {
			err = fmt.Errorf("sources of the result of %s: %w", x.DocumentID, err)
		}
	}
	return x, err
}

const deadCols = "stream, seq, job_id, document_id, run, schema_name, schema_version, reason, created_at, resubmitted_at"

func scanDead(r pgx.CollectableRow) (DeadLetterInfo, error) {
	var d DeadLetterInfo
	var seq int64
	err := r.Scan(&d.Stream, &seq, &d.JobID, &d.DocumentID, &d.Run, &d.SchemaName, &d.SchemaVersion, &d.Reason, &d.CreatedAt, &d.ResubmittedAt)
	d.Seq = uint64(seq)
	return d, err
}

// History returns every job, attempt (with raw response, repairs and
// violations), result and dead letter of one document.
func (s *Store) History(ctx context.Context, documentID string) (*History, error) {
	h := &History{DocumentID: documentID}
	fail := func(err error) (*History, error) {
		return nil, fmt.Errorf("audit: history of %q: %w", documentID, err)
	}
	doc, err := s.Document(ctx, documentID)
	switch {
	case err == nil:
		h.Document = doc
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT content_hash, octet_length(body), updated_at, NULL::timestamptz AS replaced_at FROM documents WHERE id = $1
		UNION ALL
		SELECT content_hash, octet_length(body), created_at, replaced_at FROM document_versions WHERE document_id = $1
		ORDER BY replaced_at DESC NULLS FIRST`, documentID)
	if h.Texts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TextInfo, error) {
		var x TextInfo
		err := r.Scan(&x.ContentHash, &x.Bytes, &x.StoredAt, &x.ReplacedAt)
		return x, err
	}); err != nil {
		return fail(err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT job_id, document_id, run, schema_name, schema_version, schema_fingerprint, content_hash,
		provider, model, pool, status, reason, deliveries, started_at, finished_at FROM jobs WHERE document_id = $1 ORDER BY started_at, job_id`, documentID)
	if h.Jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (JobInfo, error) {
		var j JobInfo
		err := r.Scan(&j.JobID, &j.DocumentID, &j.Run, &j.SchemaName, &j.SchemaVersion, &j.SchemaFingerprint, &j.ContentHash,
			&j.Provider, &j.Model, &j.Pool, &j.Status, &j.Reason, &j.Deliveries, &j.StartedAt, &j.FinishedAt)
		return j, err
	}); err != nil {
		return fail(err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT job_id, delivery, seq, n, started_at, run, schema_name, schema_version, provider, model,
		mode, prompt_chars, prompt_tokens, completion_tokens, latency_ms, finish_reason, raw_response, value, repairs, violations,
		error_class, error_message, transport_retries, worker_id, chunk_index, chunk_start, chunk_end,
		coalesce(prefill_pointer, ''), coalesce(prefill_step, ''), adjustments
		FROM attempts WHERE document_id = $1 ORDER BY started_at, job_id, delivery, seq`, documentID)
	if h.Attempts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (AttemptInfo, error) {
		var a AttemptInfo
		var lat float64
		var value, repairs, violations []byte
		var chunk, start, end *int
		err := r.Scan(&a.JobID, &a.Delivery, &a.Seq, &a.N, &a.StartedAt, &a.Run, &a.SchemaName, &a.SchemaVersion, &a.Provider,
			&a.Model, &a.Mode, &a.PromptChars, &a.PromptTokens, &a.CompletionTokens, &lat, &a.FinishReason, &a.Raw,
			&value, &repairs, &violations, &a.ErrorClass, &a.ErrorMessage, &a.TransportRetries, &a.WorkerID,
			&chunk, &start, &end, &a.Pointer, &a.Step, &a.Adjustments)
		a.Latency, a.Value, a.Repairs, a.Violations = ms(lat), value, repairs, violations
		if chunk != nil && start != nil && end != nil {
			a.Chunk = &llm.Span{Index: *chunk, Start: *start, End: *end}
		}
		return a, err
	}); err != nil {
		return fail(err)
	}
	rows, _ = s.pool.Query(ctx, "SELECT "+resultCols+" FROM results r WHERE r.document_id = $1 ORDER BY r.created_at", documentID)
	if h.Results, err = pgx.CollectRows(rows, scanResult); err != nil {
		return fail(err)
	}
	rows, _ = s.pool.Query(ctx, "SELECT "+deadCols+" FROM dead_letters WHERE document_id = $1 ORDER BY created_at", documentID)
	if h.DeadLetters, err = pgx.CollectRows(rows, scanDead); err != nil {
		return fail(err)
	}
	return h, nil
}

// DeadLetterFilter narrows DeadLetters. Zero fields match everything.
type DeadLetterFilter struct {
	Schema string
	Run    string
	// Pending keeps only dead letters not yet resubmitted.
	Pending bool
	// Limit caps the rows returned (newest first); 0 means 1000.
	Limit int
}

// DeadLetters lists dead-letter references, newest first.
func (s *Store) DeadLetters(ctx context.Context, f DeadLetterFilter) ([]DeadLetterInfo, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	rows, _ := s.pool.Query(ctx, "SELECT "+deadCols+` FROM dead_letters
		WHERE ($1 = '' OR schema_name = $1) AND ($2 = '' OR run = $2) AND (NOT $3 OR resubmitted_at IS NULL)
		ORDER BY created_at DESC, job_id LIMIT $4`, f.Schema, f.Run, f.Pending, f.Limit)
	out, err := pgx.CollectRows(rows, scanDead)
	if err != nil {
		return nil, fmt.Errorf("audit: list dead letters: %w", err)
	}
	return out, nil
}
