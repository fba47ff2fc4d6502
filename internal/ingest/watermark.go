package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// watermarkFormat is the layout of a watermark this binary writes and
// reads (source_watermarks.format).
const watermarkFormat = 1

// ErrCorruptWatermark is matched by a watermark that cannot be trusted:
// the run refuses it rather than re-queue or skip documents by mistake.
var ErrCorruptWatermark = errors.New("corrupt watermark")

// ErrWatermarkBusy: another run holds the same watermark name.
var ErrWatermarkBusy = errors.New("watermark in use")

// Watermarks keeps incremental runs' state in the audit database
// (migration 008: source_watermarks, source_items).
type Watermarks struct {
	pool *pgxpool.Pool
}

// NewWatermarks returns the store on pool (the audit database's).
func NewWatermarks(pool *pgxpool.Pool) *Watermarks { return &Watermarks{pool: pool} }

// stored is what a watermark remembers of one document.
type stored struct {
	version string
	size    int64
	seen    int64
}

// mark is one run's hold on a watermark: its name, the generation this
// listing writes, and where an interrupted listing stopped.
type mark struct {
	w        *Watermarks
	conn     *pgxpool.Conn // holds the advisory lock for the run
	name     string
	gen      int64
	position string
}

// resetHint says how to get past a watermark that is refused.
func resetHint(name string) string {
	return fmt.Sprintf("run once with --full to rebuild it (every document is read again; those with a result are not queued again), or delete it: psql -c \"DELETE FROM source_watermarks WHERE name = '%s'\"", name)
}

// begin takes the watermark name for a run over uri: it creates it, or
// checks it (refusing a corrupt one unless full, which starts it afresh),
// and locks it against a concurrent run of the same name.
func (w *Watermarks) begin(ctx context.Context, name, uri string, full bool, validPosition func(string) bool) (*mark, error) {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("watermark %s: %w", name, err)
	}
	m := &mark{w: w, conn: conn, name: name}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('extractq.watermark.' || $1, 0))`, name).Scan(&locked); err != nil {
		conn.Release()
		return nil, fmt.Errorf("watermark %s: lock: %w", name, err)
	}
	if !locked {
		conn.Release()
		return nil, fmt.Errorf("%w: another `submit --incremental %s` is running; wait for it to end", ErrWatermarkBusy, name)
	}
	if err := m.load(ctx, uri, full, validPosition); err != nil {
		m.release(ctx)
		return nil, err
	}
	return m, nil
}

func (m *mark) load(ctx context.Context, uri string, full bool, validPosition func(string) bool) error {
	var (
		source   string
		format   int
		gen      int64
		position *string
	)
	err := m.conn.QueryRow(ctx, `SELECT source, format, generation, position FROM source_watermarks WHERE name = $1`, m.name).Scan(&source, &format, &gen, &position)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = m.conn.Exec(ctx, `INSERT INTO source_watermarks (name, source, format) VALUES ($1, $2, $3)`, m.name, uri, watermarkFormat)
		m.gen = 1
		return wrapDB(m.name, err)
	}
	if err != nil {
		return wrapDB(m.name, err)
	}
	problem := ""
	switch {
	case source != uri:
		if !full {
			return fmt.Errorf("watermark %s tracks %s, not %s: give this source its own --incremental name, or %s", m.name, source, uri, resetHint(m.name))
		}
	case format != watermarkFormat:
		problem = fmt.Sprintf("format %d, this binary reads %d", format, watermarkFormat)
	case position != nil && (*position == "" || validPosition == nil || !validPosition(*position)):
		problem = fmt.Sprintf("its listing position %q is not a key of %s", *position, uri)
	default:
		var bad int64
		err := m.conn.QueryRow(ctx, `SELECT count(*) FROM source_items WHERE name = $1 AND (version = '' OR size < -1 OR seen < 0 OR seen > $2)`, m.name, gen+1).Scan(&bad)
		if err != nil {
			return wrapDB(m.name, err)
		}
		if bad > 0 {
			problem = fmt.Sprintf("%d of its documents have an empty version, a negative size or a generation after the watermark's", bad)
		}
	}
	if problem != "" && !full {
		return fmt.Errorf("%w: watermark %s: %s; %s", ErrCorruptWatermark, m.name, problem, resetHint(m.name))
	}
	if full && (problem != "" || source != uri) {
		// Start afresh: what it held cannot be trusted.
		if _, err := m.conn.Exec(ctx, `DELETE FROM source_items WHERE name = $1`, m.name); err != nil {
			return wrapDB(m.name, err)
		}
		_, err := m.conn.Exec(ctx, `UPDATE source_watermarks SET source = $2, format = $3, generation = 0, position = NULL, updated_at = now() WHERE name = $1`, m.name, uri, watermarkFormat)
		m.gen = 1
		return wrapDB(m.name, err)
	}
	m.gen = gen + 1
	if position != nil && !full {
		m.position = *position
	}
	return nil
}

func wrapDB(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("watermark %s in the audit database: %w", name, err)
}

// lookup returns what the watermark holds for ids.
func (m *mark) lookup(ctx context.Context, ids []string) (map[string]stored, error) {
	rows, err := m.conn.Query(ctx, `SELECT item_id, version, size, seen FROM source_items WHERE name = $1 AND item_id = ANY($2)`, m.name, ids)
	if err != nil {
		return nil, wrapDB(m.name, err)
	}
	defer rows.Close()
	out := make(map[string]stored, len(ids))
	for rows.Next() {
		var id string
		var s stored
		if err := rows.Scan(&id, &s.version, &s.size, &s.seen); err != nil {
			return nil, wrapDB(m.name, err)
		}
		out[id] = s
	}
	return out, wrapDB(m.name, rows.Err())
}

// entry is a document seen by this listing, to remember.
type entry struct {
	id, version string
	size        int64
}

// commit remembers entries as seen by this listing and, for a resumable
// listing, moves its position, in one transaction: a crash after it
// resumes after position, a crash before it lists the batch again.
func (m *mark) commit(ctx context.Context, entries []entry, position string) error {
	ids := make([]string, len(entries))
	versions := make([]string, len(entries))
	sizes := make([]int64, len(entries))
	for i, e := range entries {
		ids[i], versions[i], sizes[i] = e.id, e.version, e.size
	}
	err := pgx.BeginFunc(ctx, m.conn, func(tx pgx.Tx) error {
		if len(entries) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO source_items (name, item_id, version, size, seen)
				SELECT $1, i, v, s, $5 FROM unnest($2::text[], $3::text[], $4::bigint[]) AS t(i, v, s)
				ON CONFLICT (name, item_id) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, seen = EXCLUDED.seen`,
				m.name, ids, versions, sizes, m.gen); err != nil {
				return err
			}
		}
		if position == "" {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE source_watermarks SET position = $2, updated_at = now() WHERE name = $1`, m.name, position)
		return err
	})
	return wrapDB(m.name, err)
}

// finish ends a complete listing: documents it did not see are forgotten
// and counted as vanished, and the generation moves on.
func (m *mark) finish(ctx context.Context) (vanished int, err error) {
	err = pgx.BeginFunc(ctx, m.conn, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM source_items WHERE name = $1 AND seen < $2`, m.name, m.gen)
		if err != nil {
			return err
		}
		vanished = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, `UPDATE source_watermarks SET generation = $2, position = NULL, updated_at = now() WHERE name = $1`, m.name, m.gen)
		return err
	})
	return vanished, wrapDB(m.name, err)
}

// release gives the lock back, even when ctx has ended (Ctrl-C).
func (m *mark) release(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_, _ = m.conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('extractq.watermark.' || $1, 0))`, m.name)
	m.conn.Release()
}
