package audit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StatusDeadLettered is the status JobStates reports for a job known only
// from its dead-letter reference (its jobs row was pruned).
const StatusDeadLettered = "dead_lettered"

// JobState is where a job stands in the audit store.
type JobState struct {
	Status       string // the last delivery's outcome, StatusRetrying while open
	Tokens       int64  // prompt + completion tokens spent so far
	DeadLettered bool   // the job was moved to the dead-letter stream
	// DeadLetterSeq is the dead letter's sequence on its stream; 0 while
	// the letter is recorded but not yet published (a worker died between
	// the two: its next delivery publishes it). DeadLetterReason is the
	// letter's reason.
	DeadLetterSeq    uint64
	DeadLetterReason string
	// HasResult is true when the job's document has a valid result for
	// the same text, schema fingerprint and model, possibly made by a
	// resubmission after this job was dead-lettered.
	HasResult bool
	// Run is the run of the job's audit record ("" without one: a job no
	// worker has recorded yet, or only a dead letter).
	Run string
}

// Final reports whether the job is settled: a result or a dead letter. It
// runs again only when resubmitted.
func (s JobState) Final() bool {
	return s.DeadLettered || (s.Status != "" && s.Status != StatusRetrying)
}

// OK reports whether the job's document has a valid result: the job ended
// ok, or it failed and a resubmission succeeded.
func (s JobState) OK() bool { return s.Status == "ok" || s.HasResult }

// jobStateChunk bounds the ids sent in one query.
const jobStateChunk = 5000

// JobStates returns the state of each of the given jobs the audit store
// knows; ids it has never seen are absent from the map.
func (s *Store) JobStates(ctx context.Context, ids []string) (map[string]JobState, error) {
	out := make(map[string]JobState, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), jobStateChunk)]
		ids = ids[len(chunk):]
		rows, err := s.pool.Query(ctx, jobStatesSQL, strArray(chunk))
		if err := scanJobStates(rows, err, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

const jobStatesSQL = `
SELECT job_id, coalesce(j.status, ''), coalesce(j.prompt_tokens + j.completion_tokens, 0), d.job_id IS NOT NULL,
       coalesce(d.seq, 0), coalesce(d.reason, ''),
       EXISTS (SELECT 1 FROM results r WHERE r.document_id = j.document_id
               AND (r.content_hash = j.content_hash OR j.content_hash = '')
               AND r.schema_fingerprint = j.schema_fingerprint AND r.model = j.model),
       coalesce(j.run, '')
FROM (SELECT job_id, status, prompt_tokens, completion_tokens, document_id, content_hash, schema_fingerprint, model, run
      FROM jobs WHERE job_id = ANY($1)) j
FULL JOIN (SELECT job_id, seq, reason FROM dead_letters WHERE job_id = ANY($1)) d USING (job_id)`

func scanJobStates(rows pgx.Rows, err error, out map[string]JobState) error {
	if err != nil {
		return fmt.Errorf("audit: job states: %w", err)
	}
	var (
		id    string
		state JobState
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &state.Status, &state.Tokens, &state.DeadLettered, &state.DeadLetterSeq, &state.DeadLetterReason, &state.HasResult, &state.Run}, func() error {
		if state.Status == "" {
			state.Status = StatusDeadLettered
		}
		out[id] = state
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: job states: %w", err)
	}
	return nil
}

// SetDeadLetterSeq records where the dead letter of jobID landed on its
// stream, for a letter recorded with sequence 0 (recorded before it was
// published). A letter whose sequence is set already keeps it: the call
// changes nothing and is not an error.
func (s *Store) SetDeadLetterSeq(ctx context.Context, jobID string, seq uint64) error {
	if seq == 0 {
		return fmt.Errorf("audit: dead letter of job %s: sequence 0 is no stream sequence", jobID)
	}
	if _, err := s.pool.Exec(ctx, "SELECT extractq_set_dead_letter_seq($1, $2)", jobID, int64(seq)); err != nil {
		return fmt.Errorf("audit: set the dead letter sequence of job %s: %w", jobID, err)
	}
	return nil
}

// TextKey names one text of one document.
type TextKey struct {
	DocumentID  string
	ContentHash string // sha256 of the text, hex
}

// HaveResults reports which of keys have a valid result for the schema
// fingerprint and model: the documents that are done whatever job made
// their result. A result written before schema version 2 counts when
// migration 2 could give it its text's hash (its document never changed).
func (s *Store) HaveResults(ctx context.Context, fingerprint, model string, keys []TextKey) (map[TextKey]bool, error) {
	out := make(map[TextKey]bool)
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), jobStateChunk)]
		keys = keys[len(chunk):]
		ids, hashes := splitKeys(chunk)
		rows, err := s.pool.Query(ctx, haveResultsSQL, strArray(ids), strArray(hashes), fingerprint, model)
		if err := scanHaveResults(rows, err, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LookUpSubmitted is JobStates of jobIDs and HaveResults of keys in one
// round trip per chunk (the two queries sent as one pipelined batch):
// what submission asks of every batch before storing it. The arrays are
// encoded as putDocuments' are (lookUpSubmittedWire), and by pgx when the
// statements cannot be prepared as expected.
func (s *Store) LookUpSubmitted(ctx context.Context, fingerprint, model string, jobIDs []string, keys []TextKey) (map[string]JobState, map[TextKey]bool, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: look up submitted jobs: %w", err)
	}
	defer c.Release()
	wire := preparedLookUps(ctx, c)
	states, done := make(map[string]JobState), make(map[TextKey]bool) // a new submission's jobs are mostly unknown: no table sized for all of them
	for len(jobIDs) > 0 || len(keys) > 0 {
		ids := jobIDs[:min(len(jobIDs), jobStateChunk)]
		kc := keys[:min(len(keys), jobStateChunk)]
		jobIDs, keys = jobIDs[len(ids):], keys[len(kc):]
		if wire {
			err = lookUpSubmittedWire(ctx, c.Conn().PgConn(), fingerprint, model, ids, kc, states, done)
		} else {
			err = lookUpSubmittedPgx(ctx, c, fingerprint, model, ids, kc, states, done)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return states, done, nil
}

// preparedLookUps prepares LookUpSubmitted's two statements on c and
// reports whether their arrays may be sent as encoded here (preparedAs).
func preparedLookUps(ctx context.Context, c *pgxpool.Conn) bool {
	return preparedAs(ctx, c.Conn(), lookUpJobsStmt, jobStatesSQL, textArrayOIDs[:1]) &&
		preparedAs(ctx, c.Conn(), lookUpResultsStmt, haveResultsSQL, textArrayOIDs[:])
}

func lookUpSubmittedPgx(ctx context.Context, c *pgxpool.Conn, fingerprint, model string, ids []string, keys []TextKey, states map[string]JobState, done map[TextKey]bool) error {
	docs, hashes := splitKeys(keys)
	var b pgx.Batch
	b.Queue(jobStatesSQL, strArray(ids))
	b.Queue(haveResultsSQL, strArray(docs), strArray(hashes), fingerprint, model)
	br := c.SendBatch(ctx, &b)
	rows, err := br.Query()
	err = scanJobStates(rows, err, states)
	if err == nil {
		rows, err = br.Query()
		err = scanHaveResults(rows, err, done)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("audit: look up submitted jobs: %w", cerr)
	}
	return err
}

const haveResultsSQL = `SELECT k.id, k.hash FROM unnest($1::text[], $2::text[]) AS k(id, hash)
	WHERE EXISTS (SELECT 1 FROM results r WHERE r.document_id = k.id AND r.content_hash = k.hash
	              AND r.schema_fingerprint = $3 AND r.model = $4)`

func splitKeys(keys []TextKey) (ids, hashes []string) {
	ids, hashes = make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ids[i], hashes[i] = k.DocumentID, k.ContentHash
	}
	return ids, hashes
}

func scanHaveResults(rows pgx.Rows, err error, out map[TextKey]bool) error {
	if err != nil {
		return fmt.Errorf("audit: look up results: %w", err)
	}
	var k TextKey
	if _, err := pgx.ForEachRow(rows, []any{&k.DocumentID, &k.ContentHash}, func() error {
		out[k] = true
		return nil
	}); err != nil {
		return fmt.Errorf("audit: look up results: %w", err)
	}
	return nil
}
