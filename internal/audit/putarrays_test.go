package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// putTestDocuments are documents of every shape PutDocuments stores: with
// and without metadata (none is stored as {}) and pages,
// empty and long strings, text outside ASCII.
func putTestDocuments() []Document {
	return []Document{
		{ID: "a", Source: "s", Text: "plain", Hash: "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},
		{ID: "b", Source: "", Text: "", Metadata: json.RawMessage(`{"k": ["v", 1]}`), Pages: []PageRange{{0, 3}, {3, 9}}},
		{ID: "c ü€", Source: "dir/f.pdf", Text: strings.Repeat("long ", 20000), Pages: []PageRange{}},
		{ID: "d", Source: "x", Text: "\U0001F600 tabs\tand\nlines", Hash: "not a hash"},
	}
}

// TestPutArraysEncodeLikePgx compares putArrays' parameters with pgx's
// encoding of the same columns, which putDocumentsPgx sends, for every
// subset order of the test documents.
func TestPutArraysEncodeLikePgx(t *testing.T) {
	t.Parallel()
	docs := putTestDocuments()
	cases := map[string][]int{"all": {0, 1, 2, 3}, "reversed": {3, 2, 1, 0}, "one": {1}, "none with pages": {0, 3}, "all with pages": {1, 2}}
	var a putArrays // reused on purpose: a later encode must not keep an earlier one's bytes
	m := pgtype.NewMap()
	for name, idx := range cases {
		t.Run(name, func(t *testing.T) {
			ids, sources, metas, texts, hashes, pages := putColumns(docs, idx)
			values := []struct {
				oid uint32
				v   any
			}{
				{pgtype.TextArrayOID, ids}, {pgtype.TextArrayOID, sources}, {pgtype.JSONBArrayOID, metas},
				{pgtype.TextArrayOID, texts}, {pgtype.TextArrayOID, hashes}, {pgtype.JSONBArrayOID, pages},
			}
			got := a.encode(docs, idx)
			for k, v := range values {
				want, err := m.Encode(v.oid, pgtype.BinaryFormatCode, v.v, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[k], want) {
					t.Fatalf("parameter %d: %.300q, pgx sends %.300q", k+1, got[k], want)
				}
			}
		})
	}
}

// TestPutDocumentsStoresEveryShape stores the test documents and reads
// them back: what the binary parameters said is what was stored.
func TestPutDocumentsStoresEveryShape(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	docs := putTestDocuments()
	for i := range docs {
		docs[i].ID = fmt.Sprintf("%s-%s", t.Name(), docs[i].ID)
	}
	if err := s.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		got, err := s.Document(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantMeta := documentMetadata(&d)
		var g, w any
		if err := json.Unmarshal(got.Metadata, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(wantMeta), &w); err != nil {
			t.Fatal(err)
		}
		wantHash := d.Hash
		if len(wantHash) != 64 {
			wantHash = HashText(d.Text)
		}
		if got.Text != d.Text || got.Source != d.Source || !reflect.DeepEqual(g, w) || !reflect.DeepEqual(got.Pages, d.Pages) || got.Hash != wantHash {
			t.Fatalf("%s: stored %q %q %s %v %s, want %q %q %s %v %s", d.ID, got.Text[:min(20, len(got.Text))], got.Source, got.Metadata, got.Pages, got.Hash,
				d.Text[:min(20, len(d.Text))], d.Source, wantMeta, d.Pages, wantHash)
		}
	}
}

// TestWireStatementsPrepare checks that the statements whose arguments
// are encoded here prepare with the parameter types encoded: otherwise
// pgx encodes them, correctly but without the saving.
func TestWireStatementsPrepare(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	for _, st := range []struct {
		name, sql string
		oids      []uint32
	}{
		{putDocumentsStmt, putDocumentsSQL, putDocumentsOIDs},
		{lookUpJobsStmt, jobStatesSQL, textArrayOIDs[:1]},
		{lookUpResultsStmt, haveResultsSQL, textArrayOIDs[:]},
	} {
		if !preparedAs(ctx, c.Conn(), st.name, st.sql, st.oids) {
			sd, err := c.Conn().Prepare(ctx, st.name, st.sql)
			t.Errorf("%s: not prepared with parameters %v: %v, %v", st.name, st.oids, sd, err)
		}
	}
	// A statement whose types differ is not taken for one of them.
	if preparedAs(ctx, c.Conn(), "extractq_test_other", "SELECT $1::int[]", textArrayOIDs[:1]) {
		t.Error("an int[] parameter was taken for text[]")
	}
}

// TestWireFallsBackToPgx stores and looks up through a pool told not to
// keep prepared statements: pgx encodes the arguments, with the same
// result.
func TestWireFallsBackToPgx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	cfg := s.pool.Config()
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	exec := FromPool(pool)
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if preparedAs(ctx, c.Conn(), putDocumentsStmt, putDocumentsSQL, putDocumentsOIDs) {
		t.Error("a connection in exec mode prepared a statement")
	}
	c.Release()
	docs := putTestDocuments()
	for i := range docs {
		docs[i].ID = t.Name() + docs[i].ID
	}
	if err := exec.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	keys := []TextKey{{docs[0].ID, docs[0].Hash}}
	_, done, err := exec.LookUpSubmitted(ctx, "fp", "m", []string{"j-none"}, keys)
	if err != nil || len(done) != 0 {
		t.Fatalf("LookUpSubmitted: %v, %v", done, err)
	}
	for _, d := range docs {
		if got, err := s.Document(ctx, d.ID); err != nil || got.Text != d.Text {
			t.Fatalf("%s: %v", d.ID, err)
		}
	}
}

// TestPutArraysTrimDropsLargeBuffers: a chunk of large documents does
// not leave its buffer in the pool; a usual one is kept for the next.
func TestPutArraysTrimDropsLargeBuffers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size int
		kept bool
	}{{64 << 10, true}, {putArraysMaxKept + 1, false}} {
		a := &putArrays{buf: make([]byte, 0, tc.size)}
		a.encode(putTestDocuments(), []int{0, 1})
		a.trim() // what release does before it puts a back
		if kept := a.buf != nil; kept != tc.kept || a.params[0] != nil {
			t.Errorf("%d-byte buffer: kept %v, want %v; parameters still held: %v", tc.size, kept, tc.kept, a.params[0] != nil)
		}
	}
}
