package audit

import (
	"encoding/binary"
	"encoding/json"
	"sync"

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

// putArraysFormats: every parameter in the binary format.
var putArraysFormats = [6]int16{1, 1, 1, 1, 1, 1}

// putArraysMaxKept is the largest buffer put back in the pool: a chunk of
// large documents must not stay in memory after it.
const putArraysMaxKept = 4 << 20

// encode returns the parameters for docs[idx...]: ids, sources, metadata
// (jsonb), texts, hashes, pages (jsonb, NULL for none). They are valid
// until the next encode.
func (a *putArrays) encode(docs []Document, idx []int) [][]byte {
	if cap(a.buf) > putArraysMaxKept {
		a.buf = nil
	}
	buf := a.buf[:0]
	var start [6]int
	start[0] = len(buf)
	buf = appendArrayHeader(buf, pgtype.TextOID, len(idx), false)
	for _, i := range idx {
		buf = appendElem(buf, docs[i].ID, false)
	}
	start[1] = len(buf)
	buf = appendArrayHeader(buf, pgtype.TextOID, len(idx), false)
	for _, i := range idx {
		buf = appendElem(buf, docs[i].Source, false)
	}
	start[2] = len(buf)
	buf = appendArrayHeader(buf, pgtype.JSONBOID, len(idx), false)
	for _, i := range idx {
		buf = appendElem(buf, documentMetadata(&docs[i]), true)
	}
	start[3] = len(buf)
	buf = appendArrayHeader(buf, pgtype.TextOID, len(idx), false)
	for _, i := range idx {
		buf = appendElem(buf, docs[i].Text, false)
	}
	start[4] = len(buf)
	buf = appendArrayHeader(buf, pgtype.TextOID, len(idx), false)
	for _, i := range idx {
		buf = appendElem(buf, docs[i].Hash, false)
	}
	start[5] = len(buf)
	nulls := false
	for _, i := range idx {
		nulls = nulls || docs[i].Pages == nil
	}
	buf = appendArrayHeader(buf, pgtype.JSONBOID, len(idx), nulls)
	for _, i := range idx {
		if docs[i].Pages == nil {
			buf = binary.BigEndian.AppendUint32(buf, ^uint32(0)) // -1: NULL
			continue
		}
		a.pages, _ = json.Marshal(docs[i].Pages) // integers only: never fails
		buf = appendElem(buf, string(a.pages), true)
	}
	a.buf = buf
	for k := range start {
		end := len(buf)
		if k+1 < len(start) {
			end = start[k+1]
		}
		a.params[k] = buf[start[k]:end:end]
	}
	return a.params[:]
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
