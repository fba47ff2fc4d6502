package audit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RereadFilter selects the documents to read again from their originals
// after a reader upgrade (DocumentsForReread).
type RereadFilter struct {
	// Current are the readers of this build ("pdf/4"): a document whose
	// stored text one of them made is not selected.
	Current []string
	// Format, Schema and Run, when set, keep only documents read as that
	// format, and whose latest job was under that schema or in that run.
	Format, Schema, Run string
	// After pages: only documents whose id sorts after it.
	After string
	// Limit bounds the answer (default 1000).
	Limit int
}

// RereadCandidate is a document a format reader made from an original, with
// its stored text and what its latest job was queued with.
type RereadCandidate struct {
	Document // its stored text, pages and metadata; Hash is the text's
	// OriginalHash is the sha256 of its original bytes: the job's document
	// hash and the original's name in the object store.
	OriginalHash string
	Reader       string // the reader that made the stored text ("pdf/3")
	// The latest job of the document.
	Run, SchemaName, SchemaFingerprint string
	SchemaVersion                      int
	Provider, Model, Pool              string
}

// rereadSelect: the documents whose metadata names a reader that is not
// one of $1, each with its latest job that was of an original (a job's
// content hash is its original's when a reader made the document, so it
// differs from the stored text's: body_hash, or content_hash for a row
// stored before migration 12). The reader is recorded per document in its
// metadata (intake.DocumentMetadata).
const rereadSelect = `
SELECT %s
FROM documents d
CROSS JOIN LATERAL (
    SELECT j.content_hash, j.run, j.schema_name, j.schema_version, j.schema_fingerprint, j.provider, j.model, j.pool
    FROM jobs j
    WHERE j.document_id = d.id AND j.content_hash <> '' AND j.content_hash <> coalesce(d.body_hash, d.content_hash)
      AND ($3 = '' OR j.schema_name = $3) AND ($4 = '' OR j.run = $4)
    ORDER BY j.finished_at DESC LIMIT 1
) j
WHERE d.metadata ? 'reader' AND NOT (d.metadata->>'reader' = ANY($1::text[]))
  AND ($2 = '' OR d.metadata->>'format' = $2) AND d.id > $5`

// DocumentsForReread selects, ordered by id, the documents whose stored
// text a reader other than today's made, with their latest job. Documents
// without a recorded job (never processed, or pruned) are not selected:
// nothing says under which schema to queue them.
func (s *Store) DocumentsForReread(ctx context.Context, f RereadFilter) ([]RereadCandidate, error) {
	if f.Limit < 1 {
		f.Limit = 1000
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(rereadSelect, `d.id, coalesce(d.body_hash, d.content_hash), d.source, d.metadata, d.body, d.pages, d.metadata->>'reader',
		j.content_hash, j.run, j.schema_name, j.schema_version, j.schema_fingerprint, j.provider, j.model, j.pool`)+
		" ORDER BY d.id LIMIT $6", f.Current, f.Format, f.Schema, f.Run, f.After, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("audit: select documents to read again: %w", err)
	}
	defer rows.Close()
	var out []RereadCandidate
	for rows.Next() {
		var c RereadCandidate
		var meta, pages []byte
		if err := rows.Scan(&c.ID, &c.Hash, &c.Source, &meta, &c.Text, &pages, &c.Reader,
			&c.OriginalHash, &c.Run, &c.SchemaName, &c.SchemaVersion, &c.SchemaFingerprint, &c.Provider, &c.Model, &c.Pool); err != nil {
			return nil, fmt.Errorf("audit: select documents to read again: %w", err)
		}
		c.Metadata = json.RawMessage(meta)
		if len(pages) > 0 {
			if err := json.Unmarshal(pages, &c.Pages); err != nil {
				return nil, fmt.Errorf("audit: pages of document %q: %w", c.ID, err)
			}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: select documents to read again: %w", err)
	}
	return out, nil
}

// CountForReread counts what DocumentsForReread would select, without
// limit or paging (for --dry-run).
func (s *Store) CountForReread(ctx context.Context, f RereadFilter) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, fmt.Sprintf(rereadSelect, "count(*)"), f.Current, f.Format, f.Schema, f.Run, "").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("audit: count documents to read again: %w", err)
	}
	return n, nil
}

// SetDocumentReaders records that a reader read document ids[i] again
// (readers[i], "pdf/4") and made the text it has (hashes[i], the text's
// hash): it is then not selected for a re-read with that reader again. A
// document whose text has changed since is left alone. inlined[i] (nil:
// none) records too that its attachments were inlined into that text
// ("attachments": "inline", as submit records it), for a document stored
// before submit recorded the policy: the next re-read then inlines them
// without being told.
func (s *Store) SetDocumentReaders(ctx context.Context, ids, hashes, readers []string, inlined []bool) error {
	if len(ids) == 0 {
		return nil
	}
	if inlined == nil {
		inlined = make([]bool, len(ids))
	}
	_, err := s.pool.Exec(ctx, `UPDATE documents d SET metadata = jsonb_set(d.metadata, '{reader}', to_jsonb(u.reader))
			|| CASE WHEN u.inlined THEN '{"attachments": "inline"}'::jsonb ELSE '{}'::jsonb END
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) AS u(id, hash, reader, inlined)
		WHERE d.id = u.id AND coalesce(d.body_hash, d.content_hash) = u.hash`, ids, hashes, readers, inlined)
	if err != nil {
		return fmt.Errorf("audit: record the reader of %d documents: %w", len(ids), err)
	}
	return nil
}

// KnownDocuments says which of ids are documents in the audit: a re-read
// carrier's attachments that are not are new (the reader that read the
// carrier before did not find them).
func (s *Store) KnownDocuments(ctx context.Context, ids []string) (map[string]bool, error) {
	known := map[string]bool{}
	if len(ids) == 0 {
		return known, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM documents WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return nil, fmt.Errorf("audit: look up %d documents: %w", len(ids), err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("audit: look up %d documents: %w", len(ids), err)
	}
	for _, id := range found {
		known[id] = true
	}
	return known, nil
}

// AttachmentsQueued returns, for each carrier ids[i], the ids of the
// documents under it (id ids[i]#NAME, at any depth) that had a job in run
// runs[i]: the attachments submitted with it, which submit queues into
// the carrier's run. Ids compare byte-wise (COLLATE "C") so that the
// prefix is a range of the jobs (run, document_id) index, whatever the
// database's collation.
func (s *Store) AttachmentsQueued(ctx context.Context, ids, runs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	// LATERAL: one probe of the index a carrier, never a hash of jobs.
	rows, err := s.pool.Query(ctx, `SELECT u.id, a.document_id
		FROM unnest($1::text[], $2::text[]) AS u(id, run)
		CROSS JOIN LATERAL (
		    SELECT DISTINCT j.document_id FROM jobs j
		    WHERE j.run = u.run
		      AND j.document_id COLLATE "C" >= (u.id || '#') COLLATE "C"
		      AND j.document_id COLLATE "C" < (u.id || '$') COLLATE "C"
		) a
		ORDER BY 1, 2`, ids, runs)
	if err != nil {
		return nil, fmt.Errorf("audit: look up the attachments of %d documents: %w", len(ids), err)
	}
	pairs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var p [2]string
		return p, r.Scan(&p[0], &p[1])
	})
	if err != nil {
		return nil, fmt.Errorf("audit: look up the attachments of %d documents: %w", len(ids), err)
	}
	for _, p := range pairs {
		out[p[0]] = append(out[p[0]], p[1])
	}
	return out, nil
}
