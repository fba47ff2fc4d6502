package audit

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// putArrays encodes putDocumentsSQL's six parameters, one-dimensional
// arrays in PostgreSQL's binary format, into one reused buffer.
type putArrays struct {
	buf    []byte
	params [6][]byte
	pages  []byte // one document's pages as JSON, reused
}

var putArraysPool = sync.Pool{New: func() any { return new(putArrays) }}

// getPutArrays takes a putArrays from the pool; release puts it back.
func getPutArrays() *putArrays { return putArraysPool.Get().(*putArrays) }

// release puts a back in the pool (trimmed).
func (a *putArrays) release() {
	a.trim()
	putArraysPool.Put(a)
}

// trim drops a buffer above putArraysMaxKept and the parameters.
func (a *putArrays) trim() {
	if cap(a.buf) > putArraysMaxKept {
		a.buf = nil
	}
	if cap(a.pages) > putArraysMaxKept {
		a.pages = nil
	}
	a.params = [6][]byte{}
}

// putArraysFormats: every parameter in the binary format.
var putArraysFormats = [6]int16{1, 1, 1, 1, 1, 1}

// putArraysMaxKept is the largest buffer put back in the pool: a chunk of
// large documents must not stay in memory after it.
const putArraysMaxKept = 4 << 20

// encode returns the parameters for docs[idx...]: ids, sources, metadata
// (jsonb), texts, hashes, pages (jsonb, NULL for none). They are valid
// until the next encode.
func (a *putArrays) encode(docs []Document, idx []int) [][]byte {
	n := len(idx)
	doc := func(k int) *Document { return &docs[idx[k]] }
	buf := a.buf[:0]
	var ends [6]int
	buf = appendTextArray(buf, n, func(k int) string { return doc(k).ID })
	ends[0] = len(buf)
	buf = appendTextArray(buf, n, func(k int) string { return doc(k).Source })
	ends[1] = len(buf)
	// Not through appendTextArray: returned from a closure, the metadata's
	// string(bytes) would be copied; appended here it is not.
	buf = appendArrayHeader(buf, pgtype.JSONBOID, n, false)
	for k := range n {
		buf = appendElem(buf, documentMetadata(doc(k)), true)
	}
	ends[2] = len(buf)
	buf = appendTextArray(buf, n, func(k int) string { return doc(k).Text })
	ends[3] = len(buf)
	buf = appendTextArray(buf, n, func(k int) string { return doc(k).Hash })
	ends[4] = len(buf)
	nulls := false
	for k := range n {
		nulls = nulls || doc(k).Pages == nil
	}
	buf = appendArrayHeader(buf, pgtype.JSONBOID, n, nulls)
	for k := range n {
		if doc(k).Pages == nil {
			buf = binary.BigEndian.AppendUint32(buf, ^uint32(0)) // -1: NULL
			continue
		}
		a.pages, _ = json.Marshal(doc(k).Pages) // integers only: never fails
		buf = appendElem(buf, string(a.pages), true)
	}
	ends[5] = len(buf)
	a.buf = buf
	start := 0
	for k, end := range ends {
		a.params[k] = buf[start:end:end]
		start = end
	}
	return a.params[:]
}

// appendTextArray appends a one-dimensional text array of n elements, none
// NULL, element k being elem(k).
func appendTextArray(buf []byte, n int, elem func(k int) string) []byte {
	buf = appendArrayHeader(buf, pgtype.TextOID, n, false)
	for k := range n {
		buf = appendElem(buf, elem(k), false)
	}
	return buf
}

// appendArrayHeader appends the header of a one-dimensional array of n
// elements of type oid (none: no dimension, as pgx sends an empty slice).
func appendArrayHeader(buf []byte, oid uint32, n int, nulls bool) []byte {
	dims, hasNull := uint32(1), uint32(0)
	if n == 0 {
		dims = 0
	}
	if nulls {
		hasNull = 1
	}
	buf = binary.BigEndian.AppendUint32(buf, dims)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, oid)
	if n > 0 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	}
	return buf
}

// appendElem appends one element: text as it is, jsonb after its format
// version (1).
func appendElem(buf []byte, s string, jsonb bool) []byte {
	n := len(s)
	if jsonb {
		n++
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	if jsonb {
		buf = append(buf, 1)
	}
	return append(buf, s...)
}

// Statements prepared on a connection by name, with parameters sent
// pre-encoded (putDocuments, LookUpSubmitted).
const (
	lookUpJobsStmt    = "extractq_lookup_jobs"
	lookUpResultsStmt = "extractq_lookup_results"
)

// textArrayOIDs are haveResultsSQL's parameter types (jobStatesSQL's is
// the first).
var textArrayOIDs = [4]uint32{pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextOID, pgtype.TextOID}

// putDocumentsOIDs are putDocumentsSQL's parameter types.
var putDocumentsOIDs = []uint32{pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.JSONBArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.JSONBArrayOID}

// preparedAs prepares sql as name on c (once per connection: pgx keeps
// it) and reports whether its parameters are of the types oids, the ones
// the caller encodes. Otherwise, or if it cannot be prepared, the caller
// lets pgx encode the arguments, which then says what is wrong. A
// connection told not to keep prepared statements (default_query_exec_mode
// other than pgx's default, as behind a pooler in transaction mode) is
// left to pgx too.
func preparedAs(ctx context.Context, c *pgx.Conn, name, sql string, oids []uint32) bool {
	if c.Config().DefaultQueryExecMode != pgx.QueryExecModeCacheStatement {
		return false
	}
	sd, err := c.Prepare(ctx, name, sql)
	return err == nil && slices.Equal(sd.ParamOIDs, oids)
}

// lookUpSubmittedWire runs jobStatesSQL and haveResultsSQL, prepared as
// lookUpJobsStmt and lookUpResultsStmt, in one round trip, with the
// arrays encoded here, and reads their rows in the text format.
func lookUpSubmittedWire(ctx context.Context, c *pgconn.PgConn, fingerprint, model string, ids []string, keys []TextKey, states map[string]JobState, done map[TextKey]bool) error {
	a := getPutArrays()
	defer a.release()
	idsArr, docsArr, hashesArr := a.encodeLookUp(ids, keys)
	var b pgconn.Batch
	b.ExecPrepared(lookUpJobsStmt, [][]byte{idsArr}, putArraysFormats[:1], nil)
	b.ExecPrepared(lookUpResultsStmt, [][]byte{docsArr, hashesArr, []byte(fingerprint), []byte(model)}, putArraysFormats[:4], nil)
	mrr := c.ExecBatch(ctx, &b)
	err := readJobStates(mrr, states)
	if err == nil {
		err = readHaveResults(mrr, done)
	}
	if cerr := mrr.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("audit: look up submitted jobs: %w", cerr)
	}
	return err
}

// encodeLookUp returns lookUpSubmittedWire's arrays: the job ids, and the
// keys' document ids and hashes (nil for a nil slice: NULL, as pgx sends
// it). They are valid until the next encode.
func (a *putArrays) encodeLookUp(ids []string, keys []TextKey) (idsArr, docsArr, hashesArr []byte) {
	buf := a.buf[:0]
	if ids != nil {
		buf = appendTextArray(buf, len(ids), func(k int) string { return ids[k] })
		idsArr = buf[:len(buf):len(buf)]
	}
	if keys != nil {
		start := len(buf)
		buf = appendTextArray(buf, len(keys), func(k int) string { return keys[k].DocumentID })
		mid := len(buf)
		buf = appendTextArray(buf, len(keys), func(k int) string { return keys[k].ContentHash })
		docsArr, hashesArr = buf[start:mid:mid], buf[mid:]
	}
	a.buf = buf
	return idsArr, docsArr, hashesArr
}

// readJobStates reads jobStatesSQL's rows, as scanJobStates does.
func readJobStates(mrr *pgconn.MultiResultReader, out map[string]JobState) error {
	if !mrr.NextResult() {
		return fmt.Errorf("audit: job states: %w", mrr.Close())
	}
	rr := mrr.ResultReader()
	var bad error
	for rr.NextRow() {
		v := rr.Values()
		if len(v) != 8 {
			bad = fmt.Errorf("%d columns, want 8", len(v))
			continue
		}
		tokens, err1 := strconv.ParseInt(string(v[2]), 10, 64)
		seq, err2 := strconv.ParseUint(string(v[4]), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			bad = err
			continue
		}
		state := JobState{Status: string(v[1]), Tokens: tokens, DeadLettered: string(v[3]) == "t",
			DeadLetterSeq: seq, DeadLetterReason: string(v[5]), HasResult: string(v[6]) == "t", Run: string(v[7])}
		if state.Status == "" {
			state.Status = StatusDeadLettered
		}
		out[string(v[0])] = state
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("audit: job states: %w", err)
	}
	if bad != nil {
		return fmt.Errorf("audit: job states: %w", bad)
	}
	return nil
}

// readHaveResults reads haveResultsSQL's rows, as scanHaveResults does.
func readHaveResults(mrr *pgconn.MultiResultReader, out map[TextKey]bool) error {
	if !mrr.NextResult() {
		return fmt.Errorf("audit: look up results: %w", mrr.Close())
	}
	rr := mrr.ResultReader()
	for rr.NextRow() {
		if v := rr.Values(); len(v) == 2 {
			out[TextKey{DocumentID: string(v[0]), ContentHash: string(v[1])}] = true
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("audit: look up results: %w", err)
	}
	return nil
}
