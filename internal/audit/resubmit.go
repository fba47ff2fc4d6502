package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Why a document is selected for resubmission.
const (
	ResubmitOutdated   = "outdated"    // its latest result was made under an older schema version
	ResubmitDeadLetter = "dead_letter" // it was dead-lettered (includeFailed)
	ResubmitFailed     = "failed"      // its job ended without a result (includeFailed)
)

// ResubmitCandidate is a document to queue again under a newer schema
// version.
type ResubmitCandidate struct {
	Document
	// Stored is false when the document's text was never stored
	// (PutDocuments): it cannot be resubmitted from the database.
	Stored      bool
	Reason      string // ResubmitOutdated, ResubmitDeadLetter or ResubmitFailed
	FromVersion int    // the highest schema version it was processed under
	// Original says a reader made the text from an original stored under
	// Hash (its identity is not its text's hash), Reader which one.
	Original bool
	Reader   string
}

// ResubmitOption configures DocumentsForResubmit.
type ResubmitOption func(*resubmitConfig)

type resubmitConfig struct{ limit int }

// WithResubmitLimit returns at most n candidates (default 10000). Callers
// page by marking each page resubmitted before asking for the next.
func WithResubmitLimit(n int) ResubmitOption {
	return func(c *resubmitConfig) { c.limit = max(1, n) }
}

// resubmitSelect picks, for schemaName, the documents without a result at
// toVersion or later for their current text that either have a result
// under an older version, or
// (when $3) failed or were dead-lettered under any version; minus those in
// flight at toVersion or later and those already resubmitted to toVersion.
const resubmitSelect = `
WITH cand AS (
    SELECT document_id, 1 AS prio, max(schema_version) AS from_version
    FROM results WHERE schema_name = $1 GROUP BY document_id
    UNION ALL
    SELECT document_id, 2, max(schema_version) FROM dead_letters
    WHERE $3 AND schema_name = $1 GROUP BY document_id
    UNION ALL
    SELECT document_id, 3, max(schema_version) FROM jobs
    WHERE $3 AND schema_name = $1 AND status NOT IN ('ok', 'retrying') GROUP BY document_id
), pick AS (
    SELECT DISTINCT ON (document_id) document_id, prio, from_version
    FROM cand ORDER BY document_id, prio
)
SELECT %s
FROM pick p LEFT JOIN documents d ON d.id = p.document_id
WHERE NOT EXISTS (SELECT 1 FROM results r
                  WHERE r.schema_name = $1 AND r.document_id = p.document_id AND r.schema_version >= $2
                    AND (d.id IS NULL OR r.content_hash = '' OR r.content_hash = d.content_hash))
  AND NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.schema_name = $1 AND j.document_id = p.document_id AND j.schema_version >= $2
                    AND j.status = 'retrying')
  AND NOT EXISTS (SELECT 1 FROM resubmissions x
                  WHERE x.schema_name = $1 AND x.to_version = $2 AND x.document_id = p.document_id)`

// DocumentsForResubmit selects the documents to queue again with version
// toVersion of schemaName: those whose latest result was produced under an
// older version and, with includeFailed, those that failed or were
// dead-lettered under any version and have no result at toVersion. A
// document marked with MarkResubmitted for toVersion is never selected
// again, so a second resubmission queues nothing twice. Ordered by id.
func (s *Store) DocumentsForResubmit(ctx context.Context, schemaName string, toVersion int, includeFailed bool, opts ...ResubmitOption) ([]ResubmitCandidate, error) {
	cfg := resubmitConfig{limit: 10000}
	for _, o := range opts {
		o(&cfg)
	}
	if err := s.checkVersion(ctx, schemaName, toVersion); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(resubmitSelect, `p.document_id, p.prio, p.from_version, d.id IS NOT NULL,
		coalesce(d.content_hash, ''), coalesce(d.source, ''), coalesce(d.metadata, '{}'), coalesce(d.body, ''),
		coalesce(d.body_hash <> d.content_hash, false), coalesce(d.metadata->>'reader', ''), d.pages`)+
		" ORDER BY p.document_id LIMIT $4", schemaName, toVersion, includeFailed, cfg.limit)
	if err != nil {
		return nil, fmt.Errorf("audit: select documents to resubmit: %w", err)
	}
	defer rows.Close()
	var out []ResubmitCandidate
	for rows.Next() {
		var c ResubmitCandidate
		var prio int
		var meta, pages []byte
		if err := rows.Scan(&c.ID, &prio, &c.FromVersion, &c.Stored, &c.Hash, &c.Source, &meta, &c.Text, &c.Original, &c.Reader, &pages); err != nil {
			return nil, fmt.Errorf("audit: select documents to resubmit: %w", err)
		}
		c.Metadata = json.RawMessage(meta)
		if len(pages) > 0 {
			if err := json.Unmarshal(pages, &c.Pages); err != nil {
				return nil, fmt.Errorf("audit: pages of document %q: %w", c.ID, err)
			}
		}
		c.Reason = [...]string{1: ResubmitOutdated, 2: ResubmitDeadLetter, 3: ResubmitFailed}[prio]
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: select documents to resubmit: %w", err)
	}
	return out, nil
}

// CountForResubmit counts what DocumentsForResubmit would select, without
// limit (for --dry-run).
func (s *Store) CountForResubmit(ctx context.Context, schemaName string, toVersion int, includeFailed bool) (int64, error) {
	if err := s.checkVersion(ctx, schemaName, toVersion); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, fmt.Sprintf(resubmitSelect, "count(*)"), schemaName, toVersion, includeFailed).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("audit: count documents to resubmit: %w", err)
	}
	return n, nil
}

func (s *Store) checkVersion(ctx context.Context, schemaName string, version int) error {
	if version < 1 {
		return errors.New("audit: resubmit: the target version must be 1 or more (--to-version V)")
	}
	_, err := s.SchemaByName(ctx, schemaName, version)
	return err
}

// MarkResubmitted records that documentIDs were queued again with version
// toVersion of schemaName (call it after publishing them), and marks their
// dead letters under that schema as resubmitted. Marking twice is harmless.
func (s *Store) MarkResubmitted(ctx context.Context, schemaName string, toVersion int, documentIDs []string) error {
	if len(documentIDs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO resubmissions (schema_name, to_version, document_id)
		SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING`, schemaName, toVersion, documentIDs)
	b.Queue(`UPDATE dead_letters SET resubmitted_at = now()
		WHERE schema_name = $1 AND document_id = ANY($2) AND resubmitted_at IS NULL`, schemaName, documentIDs)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("audit: mark %d documents resubmitted: %w", len(documentIDs), err)
	}
	return nil
}
