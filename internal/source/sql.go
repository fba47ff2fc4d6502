package source

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQL is the rows of a PostgreSQL query: columns id and body, optionally
// metadata (a JSON object) and the watermark column. The rows are read
// through a cursor in a read-only transaction, FetchSize at a time, so
// memory stays flat however many rows the query returns.
type SQL struct {
	conn      *pgx.Conn
	query     string
	watermark string
	// FetchSize is how many rows one FETCH reads (default 500).
	FetchSize int
}

// NewSQL returns the source for query on conn (the caller owns conn).
// watermark, if set, names the column whose value changes when the row
// does (e.g. updated_at); without it a row's version is its body's hash.
func NewSQL(conn *pgx.Conn, query, watermark string) (*SQL, error) {
	q := strings.TrimRight(strings.TrimSpace(query), ";")
	if q == "" {
		return nil, fmt.Errorf(`%w: --from-sql is empty: give a query such as "SELECT id, body, metadata FROM docs WHERE …"`, ErrUsage)
	}
	return &SQL{conn: conn, query: q, watermark: watermark, FetchSize: 500}, nil
}

// URI is "sql:" and the query.
func (s *SQL) URI() string { return "sql:" + s.query }

// Resumable is false: a query's rows have no key to continue after, and
// its ids need not be unique.
func (s *SQL) Resumable() bool { return false }

// columns are where the source's columns are in a row.
type columns struct{ id, body, meta, mark int }

func (s *SQL) columns(fields []pgconn.FieldDescription) (columns, error) {
	c := columns{-1, -1, -1, -1}
	for i, f := range fields {
		switch f.Name {
		case "id":
			c.id = i
		case "body":
			c.body = i
		case "metadata":
			c.meta = i
		}
		if s.watermark != "" && f.Name == s.watermark {
			c.mark = i
		}
	}
	switch {
	case c.id < 0 || c.body < 0:
		return c, fmt.Errorf("%w: --from-sql must return columns named id and body (and optionally metadata): alias them, e.g. SELECT doc_no AS id, content AS body FROM …", ErrUsage)
	case s.watermark != "" && c.mark < 0:
		return c, fmt.Errorf("%w: --watermark-column %s is not a column of the --from-sql query: add it to the SELECT list", ErrUsage, s.watermark)
	}
	return c, nil
}

// Check plans the query without running it and checks its columns.
func (s *SQL) Check(ctx context.Context) error {
	sd, err := s.conn.PgConn().Prepare(ctx, "", s.query, nil) // unnamed, not cached
	if err != nil {
		return fmt.Errorf("%w: --from-sql: %w", ErrAccess, err)
	}
	_, err = s.columns(sd.Fields)
	return err
}

// List reads the rows through a cursor. A row whose id or body is NULL, or
// whose body is not text, is an item with Err set: the rest go on.
func (s *SQL) List(ctx context.Context, _ string, fn func(Item) error) error {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return fmt.Errorf("%w: --from-sql: begin: %w", ErrAccess, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only
	if _, err := tx.Exec(ctx, "DECLARE extractq_source NO SCROLL CURSOR FOR "+s.query); err != nil {
		return fmt.Errorf("%w: --from-sql: %w", ErrAccess, err)
	}
	fetch := fmt.Sprintf("FETCH %d FROM extractq_source", max(1, s.FetchSize))
	var cols *columns
	for n := 0; ; {
		rows, err := tx.Query(ctx, fetch, pgx.QueryExecModeDescribeExec) // the same FETCH text returns other columns per cursor: never from the statement cache
		if err != nil {
			return fmt.Errorf("--from-sql: fetch: %w", err)
		}
		if cols == nil {
			c, err := s.columns(rows.FieldDescriptions())
			if err != nil {
				rows.Close()
				return err
			}
			cols = &c
		}
		got := 0
		for rows.Next() {
			got++
			n++
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return fmt.Errorf("--from-sql: row %d: %w", n, err)
			}
			if err := fn(s.item(n, *cols, vals)); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("--from-sql: fetch: %w", err)
		}
		if got == 0 {
			return nil
		}
	}
}

func (s *SQL) item(n int, c columns, vals []any) Item {
	uri := fmt.Sprintf("sql row %d", n)
	it := Item{Size: -1}
	bad := func(format string, a ...any) Item {
		it.Err = fmt.Errorf("%w: %s", ErrItem, fmt.Sprintf(format, a...))
		return it
	}
	id, ok := scalar(vals[c.id])
	if !ok || id == "" {
		it.ID, it.URI = uri, uri
		return bad("%s: id is NULL, empty or not a scalar: give every row an id", uri)
	}
	it.ID, it.URI = id, fmt.Sprintf("sql row %d (id %s)", n, id)
	if c.meta >= 0 && vals[c.meta] != nil {
		m, err := json.Marshal(vals[c.meta])
		if err != nil || len(m) == 0 || m[0] != '{' {
			return bad("%s: metadata must be a JSON object", it.URI)
		}
		if s, ok := vals[c.meta].(string); ok {
			m = []byte(s) // a text column holding JSON
			if !json.Valid(m) || m[0] != '{' {
				return bad("%s: metadata must be a JSON object", it.URI)
			}
		}
		it.Metadata = m
	}
	var body []byte
	switch v := vals[c.body].(type) {
	case nil:
		return bad("%s: body is NULL: filter such rows out (WHERE body IS NOT NULL) or fill them", it.URI)
	case string:
		body = []byte(v)
	case []byte:
		body = v // bytea: the reader's rules decide (UTF-8, --transcode)
	default:
		return bad("%s: body is a %T, not text or bytea: cast it (body::text)", it.URI, v)
	}
	if c.mark >= 0 {
		v, ok := scalar(vals[c.mark])
		if !ok {
			return bad("%s: watermark column %s is NULL", it.URI, s.watermark)
		}
		it.Version = v
	}
	it.Size = int64(len(body))
	it.fetch = func(context.Context, int64) ([]byte, error) { return body, nil }
	return it
}

// scalar formats an id or watermark value; false for NULL and composites.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	case [16]byte: // uuid
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]), true
	case []byte, map[string]any, []any:
		return "", false
	case fmt.Stringer:
		return x.String(), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return strings.Trim(string(b), `"`), true
}
