package sink

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/llm"
)

// Filter selects the results to export.
type Filter struct {
	Schema string // required
	// Version selects one schema version (its required properties stay
	// required columns); 0 exports each document's latest result under any
	// version, with the latest version's columns, all nullable.
	Version int
	Run     string
	// SinceExport names an export whose earlier runs' results are left
	// out; this run's are recorded under it by Commit.
	SinceExport string
	// RowGroupRows bounds a row group (0: DefaultRowGroupRows).
	RowGroupRows int64
}

// exportQuery selects each document's result of its current text (as
// latest_valid_results does, and `results export` for JSONL and CSV), with
// the document's source, minus what the export name already wrote.
const exportQuery = `
SELECT * FROM (
  SELECT DISTINCT ON (r.document_id)
         r.document_id, r.run, r.schema_version, r.model, r.created_at, r.content_hash, r.schema_fingerprint,
         coalesce(d.source, '') AS source, r.value, r.sources
  FROM results r LEFT JOIN documents d ON d.id = r.document_id
  WHERE r.schema_name = $1 AND ($2::text = '' OR r.run = $2) AND ($3::int = 0 OR r.schema_version = $3)
    AND (d.id IS NULL OR r.content_hash = '' OR r.content_hash = d.content_hash OR d.metadata ? 'reader')
  ORDER BY r.document_id, (r.content_hash = d.content_hash) IS TRUE DESC, r.schema_version DESC, r.created_at DESC
) q
WHERE $4::text = '' OR NOT EXISTS (
  SELECT 1 FROM export_ledger x
  WHERE x.name = $4 AND x.document_id = q.document_id AND x.content_hash = q.content_hash
    AND x.schema_fingerprint = q.schema_fingerprint AND x.model = q.model)
ORDER BY q.document_id`

// Export is a Parquet export whose file is written, waiting for Commit
// (record it under its export name) or Rollback.
type Export struct {
	// Rows is how many results were written.
	Rows int64
	tx   pgx.Tx
	f    Filter
}

// ExportParquet writes the selected results to out as Parquet. The rows
// are read in one repeatable-read snapshot, a row at a time, and written
// in row groups, so memory stays flat however many there are. Call Commit
// once out is safely stored (the file closed, the upload complete), or
// Rollback. A result whose value does not fit the columns (made under
// another schema version) stops the export with ErrMisfit: export that
// version with --version.
func ExportParquet(ctx context.Context, pool *pgxpool.Pool, f Filter, schemaBody []byte, out io.Writer) (*Export, error) {
	if f.Schema == "" {
		return nil, errors.New("sink: export: a schema name is required (--schema NAME)")
	}
	l, err := NewLayout(schemaBody, f.Version != 0)
	if err != nil {
		return nil, err
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("sink: export %s: %w", f.Schema, err)
	}
	e := &Export{tx: tx, f: f}
	if err := e.write(ctx, l, out); err != nil {
		e.Rollback(ctx)
		return nil, err
	}
	return e, nil
}

func (e *Export) write(ctx context.Context, l *Layout, out io.Writer) error {
	rows, err := e.tx.Query(ctx, exportQuery, e.f.Schema, e.f.Run, e.f.Version, e.f.SinceExport)
	if err != nil {
		return fmt.Errorf("sink: export %s: %w", e.f.Schema, err)
	}
	defer rows.Close()
	w := NewParquetWriter(out, l, e.f.RowGroupRows)
	var r Row
	var fingerprint string
	var sources map[string]llm.Source
	for rows.Next() {
		clear(sources)
		if err := rows.Scan(&r.DocumentID, &r.Run, &r.SchemaVersion, &r.Model, &r.CreatedAt, &r.ContentHash, &fingerprint, &r.SourceURI, &r.Value, &sources); err != nil {
			return fmt.Errorf("sink: export %s: %w", e.f.Schema, err)
		}
		r.Sources = audit.SourceList(sources)
		if err := w.Write(&r); err != nil {
			if errors.Is(err, ErrMisfit) {
				return fmt.Errorf("%w: it was made under another version than the columns': export one version at a time with --version", err)
			}
			return err
		}
		e.Rows++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sink: export %s: %w", e.f.Schema, err)
	}
	return w.Close()
}

// Commit records the exported results under the export name, in the
// snapshot they were read in (results made since are left for the next
// run), and ends the export.
func (e *Export) Commit(ctx context.Context) error {
	if e.f.SinceExport != "" {
		if _, err := e.tx.Exec(ctx, `INSERT INTO export_ledger (name, document_id, content_hash, schema_fingerprint, model)
			SELECT $4, document_id, content_hash, schema_fingerprint, model FROM (`+exportQuery+`) e
			ON CONFLICT DO NOTHING`, e.f.Schema, e.f.Run, e.f.Version, e.f.SinceExport); err != nil {
			e.Rollback(ctx)
			return fmt.Errorf("sink: record export %s: %w (the file is complete; the next run exports its results again)", e.f.SinceExport, err)
		}
	}
	if err := e.tx.Commit(ctx); err != nil {
		return fmt.Errorf("sink: record export %s: %w (the file is complete; the next run exports its results again)", e.f.SinceExport, err)
	}
	return nil
}

// Rollback ends the export without recording it.
func (e *Export) Rollback(ctx context.Context) {
	_ = e.tx.Rollback(context.WithoutCancel(ctx))
}
