package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/parquet-go/parquet-go"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/source/s3test"
)

func TestResultsExportParquet(t *testing.T) {
	st, dbURL := audittest.Store(t)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	srv := s3test.Start(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Fill(t.Context(), "lake", nil))
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	ctx := t.Context()
	body := `{"type":"object","properties":{"total":{"type":"number"}}}`
	_, _, err := st.RegisterSchema(ctx, "invoice", []byte(body), "fp1")
	must(err)
	for _, id := range []string{"a", "b"} {
		_, err := st.Pool().Exec(ctx, `INSERT INTO results (document_id, schema_fingerprint, model, schema_name, schema_version, value, run)
			VALUES ($1, 'fp1', 'm', 'invoice', 1, '{"total": 1.5}', 'nightly')`, id)
		must(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "out.parquet")
	rowsIn := func(b []byte) int64 {
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		must(err)
		return f.NumRows()
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		rows   int64
		stderr string
		read   func() []byte
	}{
		{name: "to a file", args: []string{"--out", file, "--since-export", "wh"}, rows: 2, read: func() []byte { b, _ := os.ReadFile(file); return b }},
		{name: "again: nothing new", args: []string{"--out", file, "--since-export", "wh"}, rows: 0, read: func() []byte { b, _ := os.ReadFile(file); return b }},
		{name: "to S3", args: []string{"--to", "s3://lake/x/results.parquet"}, rows: 2, read: func() []byte {
			c, err := srv.Client()
			must(err)
			o, err := c.GetObject(ctx, "lake", "x/results.parquet", minio.GetObjectOptions{})
			must(err)
			var b bytes.Buffer
			_, err = b.ReadFrom(o)
			must(err)
			return b.Bytes()
		}},
		{name: "--to with csv", args: []string{"--format", "csv", "--to", "s3://lake/x.csv"}, code: 2, stderr: "--format parquet"},
		{name: "--to and --out", args: []string{"--to", "s3://lake/x.parquet", "--out", file}, code: 2, stderr: "give one"},
		{name: "--to a prefix", args: []string{"--to", "s3://lake/x/"}, code: 2, stderr: "names no object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := cli.Prepare(newRootCmd())
			args := []string{"results", "export", "--schema", "invoice"}
			if !strings.Contains(strings.Join(tc.args, " "), "--format") {
				args = append(args, "--format", "parquet")
			}
			cmd.SetArgs(append(args, tc.args...))
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			err := cmd.Execute()
			if got := cli.Code(err); got != tc.code {
				t.Fatalf("exit %d (%v), want %d\nstderr: %s", got, err, tc.code, errb.String())
			}
			if tc.stderr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.stderr) {
					t.Fatalf("error %v, want one saying %q", err, tc.stderr)
				}
				return
			}
			if n := rowsIn(tc.read()); n != tc.rows {
				t.Errorf("%d rows exported, want %d", n, tc.rows)
			}
		})
	}
}
