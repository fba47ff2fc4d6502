package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// tuple is rows in PostgreSQL's binary COPY format. Records are encoded on
// the writing goroutine, in parallel, so that a flush only concatenates
// bytes. The server checks every row's field count and each field's size
// against the column types, so a mismatch fails the flush rather than
// storing garbage.
type tuple []byte

// attemptFixedSize is an attempt row's size without its variable-length
// values: field count, 33 lengths, fixed-size values, jsonb versions.
const attemptFixedSize = 2 + 33*4 + 13*4 + 2*8 + 1 + 3

// row starts a row of n fields.
func (t tuple) row(n int) tuple { return binary.BigEndian.AppendUint16(t, uint16(n)) }

// null writes a NULL field.
func (t tuple) null() tuple { return binary.BigEndian.AppendUint32(t, math.MaxUint32) } // length -1

func (t tuple) text(s string) tuple {
	t = binary.BigEndian.AppendUint32(t, uint32(len(s)))
	return append(t, s...)
}

func (t tuple) bool(v bool) tuple {
	t = binary.BigEndian.AppendUint32(t, 1)
	if v {
		return append(t, 1)
	}
	return append(t, 0)
}

func (t tuple) int4(v int32) tuple {
	t = binary.BigEndian.AppendUint32(t, 4)
	return binary.BigEndian.AppendUint32(t, uint32(v))
}

func (t tuple) int8(v int64) tuple {
	t = binary.BigEndian.AppendUint32(t, 8)
	return binary.BigEndian.AppendUint64(t, uint64(v))
}

func (t tuple) float8(v float64) tuple {
	t = binary.BigEndian.AppendUint32(t, 8)
	return binary.BigEndian.AppendUint64(t, math.Float64bits(v))
}

// pgEpochMicros is 2000-01-01 UTC, PostgreSQL's timestamp epoch, in Unix microseconds.
const pgEpochMicros = 946684800 * 1000000

func (t tuple) timestamptz(v time.Time) tuple {
	t = binary.BigEndian.AppendUint32(t, 8)
	return binary.BigEndian.AppendUint64(t, uint64(v.UnixMicro()-pgEpochMicros))
}

// jsonb writes JSON text to a jsonb column, or NULL for none (JSON text
// is never empty).
func (t tuple) jsonb(b []byte) tuple {
	if len(b) == 0 {
		return t.null()
	}
	t = binary.BigEndian.AppendUint32(t, uint32(len(b)+1))
	t = append(t, 1) // jsonb binary format version
	return append(t, b...)
}

// json writes JSON text to a json column (its binary form is the text),
// or NULL for none.
func (t tuple) json(b []byte) tuple {
	if len(b) == 0 {
		return t.null()
	}
	t = binary.BigEndian.AppendUint32(t, uint32(len(b)))
	return append(t, b...)
}

var (
	copyHeader  = []byte("PGCOPY\n\377\r\n\000" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00") // signature, flags, extension length
	copyTrailer = []byte{0xff, 0xff}                                                       // field count -1
)

// copyPart is one table's rows in a flush: tuples from several records.
type copyPart struct {
	table
	rows []tuple
}

// copyIn writes parts in one transaction and one round trip: a single
// simple-protocol Query holding one COPY FROM STDIN per part, followed by
// each part's data. Postgres runs the statements of one Query as one
// implicit transaction and commits it (waiting for the WAL flush, as
// synchronous_commit requires) before it answers ReadyForQuery; after an
// error it rolls everything back, skips the remaining statements and
// ignores the copy data still arriving. pgx's CopyFrom inside a Tx would
// cost five round trips per flush (BEGIN, three COPYs, COMMIT), which
// bounds throughput when many small batches commit.
//
// staged COPYs each part into a temporary copy of its table instead and
// merges it with the table's conflict clause: the path for rows already
// stored.
//
// buf is the caller's request buffer, reused (grown as needed) from call
// to call.
func (s *Store) copyIn(ctx context.Context, parts []copyPart, staged bool, buf *[]byte) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	pc := c.Conn().PgConn()
	err = copyRoundTrip(ctx, pc, parts, staged, buf)
	var pe *pgconn.PgError
	if err != nil && !errors.As(err, &pe) {
		// The exchange stopped midway (network, timeout): the connection's
		// protocol state is unknown, so the pool must not reuse it.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = pc.Close(closeCtx)
		cancel()
	}
	return err
}

// copyQueries are the Query texts of copyRoundTrip, built once each: by
// staged, then by the set of the writer's four tables present (bit i for
// copyTables[i]), for parts in that order.
var copyQueries [2][16]atomic.Pointer[string]

// copyTables are the writer's tables in the order flush passes them.
var copyTables = [...]*table{&attemptsTable, &jobsTable, &resultsTable, &deadLettersTable}

// copyQuery is the Query text that COPYs parts (staged or not).
func copyQuery(parts []copyPart, staged bool) string {
	key, next := 0, 0
	for _, p := range parts {
		for next < len(copyTables) && copyTables[next].name != p.name {
			next++
		}
		if next == len(copyTables) { // not the writer's tables in its order
			return buildCopyQuery(parts, staged)
		}
		key |= 1 << next
		next++
	}
	st := 0
	if staged {
		st = 1
	}
	if q := copyQueries[st][key].Load(); q != nil {
		return *q
	}
	q := buildCopyQuery(parts, staged)
	copyQueries[st][key].Store(&q)
	return q
}

func buildCopyQuery(parts []copyPart, staged bool) string {
	var sql strings.Builder
	for i, p := range parts {
		if i > 0 {
			sql.WriteString("; ")
		}
		cols := strings.Join(p.columns, ", ")
		if !staged {
			fmt.Fprintf(&sql, "COPY %s (%s) FROM STDIN BINARY", p.name, cols)
			continue
		}
		stage := p.name + "_stage"
		fmt.Fprintf(&sql, "CREATE TEMP TABLE %s (LIKE %s INCLUDING DEFAULTS) ON COMMIT DROP; ", stage, p.name)
		fmt.Fprintf(&sql, "COPY %s (%s) FROM STDIN BINARY; ", stage, cols)
		if p.merge != "" {
			sql.WriteString(p.merge)
			continue
		}
		fmt.Fprintf(&sql, "INSERT INTO %s (%s) SELECT %s FROM %s %s", p.name, cols, cols, stage, p.conflict)
	}
	return sql.String()
}

func copyRoundTrip(ctx context.Context, pc *pgconn.PgConn, parts []copyPart, staged bool, reuse *[]byte) error {
	sql := copyQuery(parts, staged)
	// The whole request in one buffer and one write: a Query message, then
	// per part one CopyData message (header, rows, trailer) and CopyDone.
	size := 1 + 4 + len(sql) + 1
	for _, p := range parts {
		size += 1 + 4 + len(copyHeader) + len(copyTrailer) + 1 + 4
		for _, r := range p.rows {
			size += len(r)
		}
	}
	buf := (*reuse)[:0]
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	buf = append(buf, 'Q')
	buf = binary.BigEndian.AppendUint32(buf, uint32(4+len(sql)+1))
	buf = append(append(buf, sql...), 0)
	for _, p := range parts {
		n := len(copyHeader) + len(copyTrailer)
		for _, r := range p.rows {
			n += len(r)
		}
		buf = append(buf, 'd')
		buf = binary.BigEndian.AppendUint32(buf, uint32(4+n))
		buf = append(buf, copyHeader...)
		for _, r := range p.rows {
			buf = append(buf, r...)
		}
		buf = append(buf, copyTrailer...)
		buf = append(buf, 'c', 0, 0, 0, 4) // CopyDone
	}
	// pgconn is idle (no message of ours is buffered), so the request may
	// go straight to the socket; the write is bounded by ctx here since
	// pgconn does not watch it.
	nc := pc.Conn()
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetWriteDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetWriteDeadline(time.Now()) })
	_, err := nc.Write(buf)
	*reuse = buf
	stop()
	_ = nc.SetWriteDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("send batch: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var first error
	for {
		msg, err := pc.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("read reply: %w", err)
		}
		switch msg := msg.(type) {
		case *pgproto3.ErrorResponse:
			if first == nil {
				first = pgconn.ErrorResponseToPgError(msg)
			}
		case *pgproto3.ReadyForQuery:
			if first == nil && msg.TxStatus != 'I' {
				return fmt.Errorf("batch left transaction status %q, want committed", msg.TxStatus)
			}
			return first
		}
	}
}
