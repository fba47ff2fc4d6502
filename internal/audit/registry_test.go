package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestRegisterSchema(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	steps := []struct {
		name, fp    string
		wantVersion int
		wantCreated bool
	}{
		{"invoice", "fp-a", 1, true},
		{"invoice", "fp-a", 1, false},
		{"invoice", "fp-b", 2, true},
		{"invoice", "fp-a", 1, false}, // an old version is found again, not re-created
		{"receipt", "fp-a", 1, true},  // same body under another name is its own schema
		{"invoice", "fp-c", 3, true},
	}
	for i, st := range steps {
		v, created, err := s.RegisterSchema(ctx, st.name, []byte(fmt.Sprintf(`{"type":"object","$comment":%q}`, st.fp)), st.fp)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if v != st.wantVersion || created != st.wantCreated {
			t.Errorf("step %d (%s %s): version %d created %v, want %d %v", i, st.name, st.fp, v, created, st.wantVersion, st.wantCreated)
		}
	}
	lookups := []struct {
		version int
		wantFP  string
	}{{0, "fp-c"}, {1, "fp-a"}, {2, "fp-b"}, {3, "fp-c"}}
	for _, l := range lookups {
		si, err := s.SchemaByName(ctx, "invoice", l.version)
		if err != nil {
			t.Fatal(err)
		}
		if si.Fingerprint != l.wantFP || !strings.Contains(string(si.Body), l.wantFP) {
			t.Errorf("SchemaByName(invoice, %d) = %s %s, want %s", l.version, si.Fingerprint, si.Body, l.wantFP)
		}
	}
	if si, err := s.SchemaByFingerprint(ctx, "fp-b"); err != nil || si.Name != "invoice" || si.Version != 2 {
		t.Errorf("SchemaByFingerprint(fp-b) = %+v, %v", si, err)
	}
	for _, f := range []func() error{
		func() error { _, err := s.SchemaByName(ctx, "invoice", 9); return err },
		func() error { _, err := s.SchemaByName(ctx, "nope", 0); return err },
		func() error { _, err := s.SchemaByFingerprint(ctx, "fp-z"); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	}
	if _, _, err := s.RegisterSchema(ctx, "invoice", []byte("type: object"), "fp-y"); err == nil {
		t.Error("a non-JSON body was accepted")
	}
}

func TestRegisterSchemaConcurrentVersionsAreDistinct(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	const n = 12
	var wg sync.WaitGroup
	versions := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := s.RegisterSchema(ctx, "invoice", []byte(`{}`), fmt.Sprint("fp-", i))
			if err != nil {
				t.Error(err)
			}
			versions[i] = v
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, v := range versions {
		if v < 1 || v > n || seen[v] {
			t.Fatalf("versions %v: want a permutation of 1..%d", versions, n)
		}
		seen[v] = true
	}
}

func TestPutDocuments(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	docs := make([]Document, 2500) // more than one chunk
	for i := range docs {
		docs[i] = Document{ID: fmt.Sprint("doc-", i), Source: "test", Text: strings.Repeat(fmt.Sprintf("line %d of an invoice. ", i), 400)}
	}
	docs[0].Metadata = []byte(`{"customer":"acme"}`)
	if err := s.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// Same id and text: nothing changes; new text: replaced.
	if err := s.PutDocuments(ctx, []Document{docs[0], {ID: "doc-1", Text: "new text"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, wantText, wantMeta string
	}{
		{"doc-0", docs[0].Text, `{"customer": "acme"}`},
		{"doc-1", "new text", `{}`},
		{"doc-2499", docs[2499].Text, `{}`},
	}
	for _, tt := range tests {
		d, err := s.Document(ctx, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Text != tt.wantText || d.Hash != HashText(tt.wantText) || string(d.Metadata) != tt.wantMeta {
			t.Errorf("%s: text %.20q hash %s meta %s", tt.id, d.Text, d.Hash, d.Metadata)
		}
	}
	if _, err := s.Document(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing document: got %v, want ErrNotFound", err)
	}
	var n int
	var compression *string
	err := s.pool.QueryRow(ctx, `SELECT count(*), min(pg_column_compression(body)) FROM documents`).Scan(&n, &compression)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2500 || compression == nil {
		t.Fatalf("%d documents, compression %v: want 2500 compressed", n, compression)
	}
	t.Logf("documents.body compression: %s", *compression)
}

// TestPutDocumentsHashIdentity checks which caller hashes PutDocuments
// keeps as a document's identity: exactly those the pattern
// '^[0-9a-f]{64}$' matches (the test migration 17 replaced with a cheaper
// one), the text's own hash for any other.
func TestPutDocumentsHashIdentity(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	valid := HashText("some other original")
	cases := []string{
		valid,
		strings.ToUpper(valid),
		valid[:63],
		valid + "0",
		valid[:63] + "\n",
		valid + "\n",
		valid[:63] + "g",
		valid[:63] + "-",
		valid[:62] + "é",
		strings.Repeat("é", 64),
		strings.Repeat("0", 64),
		strings.Repeat("f", 64),
		" " + valid[:63],
		"",
	}
	docs := make([]Document, len(cases))
	for i, h := range cases {
		docs[i] = Document{ID: fmt.Sprint("doc-", i), Hash: h, Text: fmt.Sprint("text ", i)}
	}
	if err := s.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for i, h := range cases {
		var old bool
		if err := s.pool.QueryRow(ctx, `SELECT $1::text ~ '^[0-9a-f]{64}$'`, h).Scan(&old); err != nil {
			t.Fatal(err)
		}
		want := docs[i].Text
		want = HashText(want)
		if old {
			want = h
		}
		d, err := s.Document(ctx, docs[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Hash != want {
			t.Errorf("caller's hash %q: stored %q, want %q (kept: %v)", h, d.Hash, want, old)
		}
	}
}

// TestPutDocumentsKnownLate stores a batch whose known documents come
// after new ones: the plain insert migration 17 tries first fails on them
// and the batch is stored by the upsert, as any batch was before.
func TestPutDocumentsKnownLate(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if err := s.PutDocuments(ctx, []Document{{ID: "a", Text: "text a"}, {ID: "b", Text: "text b"}}); err != nil {
		t.Fatal(err)
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT extractq_put_documents($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::jsonb[])`,
		[]string{"c", "a", "b", "d"}, []string{"", "", "", ""}, []string{"{}", "{}", "{}", "{}"},
		[]string{"text c", "text a", "text b, changed", "text d"}, []string{"", "", "", ""}, []*string{nil, nil, nil, nil}).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("stored %d rows, want 3 (c and d inserted, b replaced, a unchanged)", n)
	}
	for id, want := range map[string]string{"a": "text a", "b": "text b, changed", "c": "text c", "d": "text d"} {
		d, err := s.Document(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Text != want || d.Hash != HashText(want) {
			t.Errorf("%s: text %q hash %s, want %q", id, d.Text, d.Hash, want)
		}
	}
	var versions []string
	rows, err := s.pool.Query(ctx, `SELECT document_id || ':' || body FROM document_versions ORDER BY 1`)
	if err == nil {
		versions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 1 || versions[0] != "b:text b" {
		t.Errorf("versions kept %q, want the replaced text of b only", versions)
	}
	var touched bool
	if err := s.pool.QueryRow(ctx, `SELECT updated_at <> created_at FROM documents WHERE id = 'a'`).Scan(&touched); err != nil {
		t.Fatal(err)
	}
	if touched {
		t.Error("a was rewritten with the same text")
	}
}
