package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/minio/minio-go/v7"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/source/s3test"
)

const schemaV2 = `{"type":"object","required":["total"],"properties":{"total":{"type":"number"},"vendor":{"type":"string"}}}`

// putResult stores a document and its result as the fleet would.
func putResult(t *testing.T, pool *pgxpool.Pool, id, text string, version int, value string) {
	t.Helper()
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `SELECT extractq_put_documents($1, $2, $3, $4)`,
		[]string{id}, []string{"s3://docs/" + id}, []string{"{}"}, []string{text}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO results (document_id, schema_fingerprint, model, schema_name, schema_version, value, run, content_hash)
		VALUES ($1, $2, 'm', 'invoice', $3, $4, 'nightly', encode(sha256(convert_to($5::text, 'UTF8')), 'hex'))`,
		id, fmt.Sprintf("fp%d", version), version, value, text); err != nil {
		t.Fatal(err)
	}
}

func export(t *testing.T, pool *pgxpool.Pool, f Filter, commit bool) ([]string, error) {
	t.Helper()
	var buf bytes.Buffer
	e, err := ExportParquet(t.Context(), pool, f, []byte(schemaV2), &buf)
	if err != nil {
		return nil, err
	}
	if commit {
		if err := e.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	} else {
		e.Rollback(t.Context())
	}
	return docIDs(t, buf.Bytes()), nil
}

func docIDs(t *testing.T, b []byte) []string {
	t.Helper()
	var ids []string
	for _, row := range readBack(t, b) {
		ids = append(ids, fmt.Sprintf("%v@%v", row["_document_id"], row["_source_uri"]))
	}
	return ids
}

func TestSinceExportWritesEachResultOnce(t *testing.T) {
	t.Parallel()
	st, _ := audittest.Store(t)
	pool := st.Pool()
	putResult(t, pool, "a", "text a", 2, `{"total":1,"vendor":"A"}`)
	putResult(t, pool, "b", "text b", 2, `{"total":2}`)
	f := Filter{Schema: "invoice", SinceExport: "warehouse"}

	got, err := export(t, pool, f, false)
	if err != nil || strings.Join(got, ",") != "a@s3://docs/a,b@s3://docs/b" {
		t.Fatalf("first export: %v, %v", got, err)
	}
	// Rolled back (the upload failed): the same results come again.
	got, err = export(t, pool, f, true)
	if err != nil || len(got) != 2 {
		t.Fatalf("export after a rollback: %v, %v; want both again", got, err)
	}
	got, err = export(t, pool, f, true)
	if err != nil || len(got) != 0 {
		t.Fatalf("export after a commit: %v, %v; want nothing", got, err)
	}
	// Overnight: a new document, and b's text changed and got a new result.
	putResult(t, pool, "c", "text c", 2, `{"total":3}`)
	putResult(t, pool, "b", "text b, amended", 2, `{"total":4}`)
	got, err = export(t, pool, f, true)
	if err != nil || strings.Join(got, ",") != "b@s3://docs/b,c@s3://docs/c" {
		t.Fatalf("next night: %v, %v; want the new and the changed one", got, err)
	}
	// Another export name has its own ledger.
	if got, err := export(t, pool, Filter{Schema: "invoice", SinceExport: "lake"}, true); err != nil || len(got) != 3 {
		t.Fatalf("another name: %v, %v; want all 3 current results", got, err)
	}
}

func TestExportRefusesAMisfitWithTheFix(t *testing.T) {
	t.Parallel()
	st, _ := audittest.Store(t)
	putResult(t, st.Pool(), "a", "text a", 1, `{"total":"twelve"}`)
	_, err := export(t, st.Pool(), Filter{Schema: "invoice"}, false)
	if !errors.Is(err, ErrMisfit) || !strings.Contains(err.Error(), "--version") {
		t.Fatalf("export of a result that does not fit: %v, want ErrMisfit naming --version", err)
	}
}

func TestUploadS3StreamsInParts(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "lake", nil); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (UploadPartSize+1<<20)/16) // more than one part
	n, err := UploadS3(t.Context(), "s3://lake/out/results.parquet", srv.Options(), "application/octet-stream", func(w io.Writer) error {
		_, err := w.Write(big)
		return err
	})
	if err != nil || n != int64(len(big)) {
		t.Fatalf("upload: %d bytes, %v; want %d", n, err, len(big))
	}
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(t.Context(), "lake", "out/results.parquet", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("stored object: %d bytes, %v", len(got), err)
	}
	// A failed write leaves no object.
	boom := errors.New("boom")
	_, err = UploadS3(context.Background(), "s3://lake/out/failed.parquet", srv.Options(), "", func(w io.Writer) error {
		_, _ = w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed upload: %v, want the writer's error", err)
	}
	if _, err := c.StatObject(t.Context(), "lake", "out/failed.parquet", minio.StatObjectOptions{}); err == nil {
		t.Error("a failed upload left an object")
	}
	if _, err := UploadS3(t.Context(), "s3://lake/out/", srv.Options(), "", func(io.Writer) error { return nil }); err == nil {
		t.Error("an upload to a prefix is accepted")
	}
}
