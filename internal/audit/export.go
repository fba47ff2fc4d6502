package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ExportFilter selects the results to export.
type ExportFilter struct {
	Schema string // required
	// Version selects one schema version; 0 exports each document's latest
	// result under any version of the schema (highest version, then newest).
	Version int
	Run     string // optional
}

// ExportFormat is an export file format.
type ExportFormat string

// Export formats.
const (
	FormatJSONL ExportFormat = "jsonl"
	FormatCSV   ExportFormat = "csv"
)

// CSV metadata columns come first; the underscore keeps them apart from
// the schema's own property names.
// _redacted is "true" when the value holds the redaction marker (see
// ResultInfo.Redacted), else empty. _sources is where each value was
// found, the JSON array of FieldSource that JSONL's "sources" holds; empty
// when the result has none.
var csvMetaColumns = []string{"_document_id", "_schema_version", "_model", "_run", "_created_at", "_redacted", "_sources"}

// wholeValueColumn is the one CSV column of a schema without properties.
const wholeValueColumn = "_value"

// ExportResults streams the selected results, ordered by document, to fn.
// A document whose text changed since a result was made exports only the
// results of its current text: the latest text wins.
// Rows are read one at a time from the server, so memory stays constant
// however many there are. fn must not keep r: it is reused for the next
// row. It returns how many rows fn received.
func (s *Store) ExportResults(ctx context.Context, f ExportFilter, fn func(*ResultInfo) error) (int64, error) {
	if f.Schema == "" {
		return 0, fmt.Errorf("audit: export: a schema name is required (--schema NAME)")
	}
	// Only results of the text each document has now (see
	// latest_valid_results); a document a format reader made keys its
	// results by its original's hash, so every one of its results counts
	// (the newest wins). For a whole schema PostgreSQL hash-joins
	// documents and sorts before the first row; rows still reach fn one at
	// a time, so memory here stays constant.
	const from = ` FROM results r LEFT JOIN documents d ON d.id = r.document_id
		WHERE r.schema_name = $1 AND ($2 = '' OR r.run = $2) AND ($3 = 0 OR r.schema_version = $3)
		  AND (d.id IS NULL OR r.content_hash = '' OR r.content_hash = d.content_hash OR d.metadata ? 'reader')`
	sql := "SELECT DISTINCT ON (r.document_id) " + resultCols + from + `
		ORDER BY r.document_id, (r.content_hash = d.content_hash) IS TRUE DESC, r.schema_version DESC, r.created_at DESC`
	if f.Version != 0 {
		sql = "SELECT " + resultCols + from + " ORDER BY r.document_id, r.model"
	}
	rows, err := s.pool.Query(ctx, sql, f.Schema, f.Run, f.Version)
	if err != nil {
		return 0, fmt.Errorf("audit: export %s: %w", f.Schema, err)
	}
	defer rows.Close()
	var n int64
	var r ResultInfo
	for rows.Next() {
		if r, err = scanResult(rows); err != nil {
			return n, fmt.Errorf("audit: export %s: %w", f.Schema, err)
		}
		if err := fn(&r); err != nil {
			return n, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("audit: export %s: %w", f.Schema, err)
	}
	return n, nil
}

// Export writes the selected results to w in format. JSONL writes one
// object per line: {"document_id", "schema", "schema_version",
// "schema_fingerprint", "model", "run", "created_at", "content_hash",
// "redacted" (only when true), "value", "sources" (only when stored: a list
// of FieldSource in document order)}. CSV writes
// a header of CSVColumns(schema body) and one row per result (see
// CSVColumns for how values are flattened).
func (s *Store) Export(ctx context.Context, f ExportFilter, format ExportFormat, w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var emit func(*ResultInfo) error
	finish := func() error { return nil } // flushes a format's own buffering into bw
	switch format {
	case FormatJSONL:
		enc := json.NewEncoder(bw)
		type line struct {
			DocumentID        string          `json:"document_id"`
			Schema            string          `json:"schema"`
			SchemaVersion     int             `json:"schema_version"`
			SchemaFingerprint string          `json:"schema_fingerprint"`
			Model             string          `json:"model"`
			Run               string          `json:"run"`
			CreatedAt         time.Time       `json:"created_at"`
			ContentHash       string          `json:"content_hash"`
			Redacted          bool            `json:"redacted,omitempty"`
			Value             json.RawMessage `json:"value"`
			Sources           []FieldSource   `json:"sources,omitempty"`
		}
		emit = func(r *ResultInfo) error {
			return enc.Encode(line{r.DocumentID, r.SchemaName, r.SchemaVersion, r.SchemaFingerprint, r.Model, r.Run, r.CreatedAt,
				r.ContentHash, r.Redacted, r.Value, SourceList(r.Sources)})
		}
	case FormatCSV:
		si, err := s.SchemaByName(ctx, f.Schema, f.Version)
		if err != nil {
			return 0, err
		}
		paths := CSVColumns(si.Body)
		cw := csv.NewWriter(bw)
		header := append(append([]string{}, csvMetaColumns...), paths...)
		if err := cw.Write(header); err != nil {
			return 0, err
		}
		rec := make([]string, len(header))
		emit = func(r *ResultInfo) error {
			rec[0], rec[1], rec[2], rec[3], rec[4] = r.DocumentID, strconv.Itoa(r.SchemaVersion), r.Model, r.Run, r.CreatedAt.UTC().Format(time.RFC3339Nano)
			rec[5], rec[6] = "", ""
			if r.Redacted {
				rec[5] = "true"
			}
			if l := SourceList(r.Sources); l != nil {
				b, err := json.Marshal(l)
				if err != nil {
					return fmt.Errorf("audit: export: sources of %s: %w", r.DocumentID, err)
				}
				rec[6] = string(b)
			}
			if err := flattenInto(rec[len(csvMetaColumns):], paths, r.Value); err != nil {
				return fmt.Errorf("audit: export: result of %s: %w", r.DocumentID, err)
			}
			cw.Write(rec) //nolint:errcheck // csv.Writer keeps the error for Flush/Error
			return cw.Error()
		}
		finish = func() error { cw.Flush(); return cw.Error() }
	default:
		return 0, fmt.Errorf("audit: export: unknown format %q (use jsonl or csv)", format)
	}
	n, err := s.ExportResults(ctx, f, emit)
	if err != nil {
		return n, err
	}
	if err = finish(); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return n, fmt.Errorf("audit: export %s: %w", f.Schema, err)
	}
	return n, nil
}

// CSVColumns derives CSV column names from a JSON Schema body: every
// property path of nested objects joined with dots ("customer.address.city"),
// sorted. Arrays, and objects without declared properties, are one column
// holding compact JSON text ("items" → `[{"sku":"A","qty":2}]`). A schema
// whose root is not an object with properties yields the single column
// "_value" holding the whole value as JSON. Properties that a value carries but the schema does not declare
// are not exported to CSV; use JSONL for full fidelity.
func CSVColumns(schemaBody []byte) []string {
	var root map[string]any
	if json.Unmarshal(schemaBody, &root) != nil {
		return []string{wholeValueColumn}
	}
	var paths []string
	var walk func(prefix string, node map[string]any)
	walk = func(prefix string, node map[string]any) {
		props, _ := node["properties"].(map[string]any)
		for name, sub := range props {
			p := prefix + name
			if m, ok := sub.(map[string]any); ok {
				if _, has := m["properties"].(map[string]any); has {
					walk(p+".", m)
					continue
				}
			}
			paths = append(paths, p)
		}
	}
	walk("", root)
	if len(paths) == 0 {
		return []string{wholeValueColumn}
	}
	sort.Strings(paths)
	return paths
}

// flattenInto fills cells with the values at paths in value: strings as
// is, numbers as written, booleans as true/false, null or absent as empty,
// objects and arrays as compact JSON.
func flattenInto(cells, paths []string, value []byte) error {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	for i, p := range paths {
		cur := v
		if p != wholeValueColumn {
			for _, key := range strings.Split(p, ".") {
				m, ok := cur.(map[string]any)
				if !ok {
					cur = nil
					break
				}
				cur = m[key]
			}
		}
		switch x := cur.(type) {
		case nil:
			cells[i] = ""
		case string:
			cells[i] = x
		case json.Number:
			cells[i] = x.String()
		case bool:
			cells[i] = strconv.FormatBool(x)
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return err
			}
			cells[i] = string(b)
		}
	}
	return nil
}
