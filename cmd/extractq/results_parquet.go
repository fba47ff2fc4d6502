package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/sink"
	"github.com/extractq/extractq/internal/source"
)

// parquetFlags are the flags of a Parquet export.
type parquetFlags struct {
	to, sinceExport, s3Endpoint string
	rowGroupRows                int64
}

func (p *parquetFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.to, "to", "", "with --format parquet: upload to `s3://bucket/key.parquet` (a multipart upload; credentials and endpoint as for submit's s3:// inputs)")
	fl.StringVar(&p.sinceExport, "since-export", "", "with --format parquet: export only results that no earlier export under `NAME` wrote, and record these (each result exactly once across nightly runs)")
	fl.StringVar(&p.s3Endpoint, "s3-endpoint", "", "S3-compatible server `URL` for --to (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
	fl.Int64Var(&p.rowGroupRows, "row-group-rows", sink.DefaultRowGroupRows, "with --format parquet: rows per row group (what the export holds in memory at most)")
}

// used reports whether a Parquet-only flag was given.
func (p *parquetFlags) used() bool { return p.to != "" || p.sinceExport != "" || p.s3Endpoint != "" }

// exportParquet writes the results as Parquet to --to, --out or stdout,
// and records them under --since-export once they are stored.
func exportParquet(cmd *cobra.Command, s *audit.Store, f audit.ExportFilter, p *parquetFlags, out string) error {
	ctx := cmd.Context()
	if p.to != "" && out != "" {
		return cli.Usage(fmt.Errorf("--to and --out both name where the file goes: give one"))
	}
	si, err := s.SchemaByName(ctx, f.Schema, f.Version)
	if err != nil {
		return cli.Failed(err)
	}
	filter := sink.Filter{Schema: f.Schema, Version: f.Version, Run: f.Run, SinceExport: p.sinceExport, RowGroupRows: p.rowGroupRows}
	var e *sink.Export
	write := func(w io.Writer) error {
		var err error
		e, err = sink.ExportParquet(ctx, s.Pool(), filter, si.Body, w)
		return err
	}
	where := p.to
	switch {
	case p.to != "":
		_, err = sink.UploadS3(ctx, p.to, source.S3Options{Endpoint: p.s3Endpoint}, "application/vnd.apache.parquet", write)
	case out != "" && out != "-":
		err = writeFileAtomic(out, write)
		where = out
	default:
		err = write(cmd.OutOrStdout())
		where = "standard output"
	}
	if err != nil {
		if e != nil {
			e.Rollback(ctx)
		}
		if errors.Is(err, source.ErrUsage) {
			return cli.Usage(err)
		}
		return cli.Failed(fmt.Errorf("%w (nothing was recorded under --since-export: the next run exports the same results)", err))
	}
	if err := e.Commit(ctx); err != nil {
		return cli.Failed(err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "exported %d results to %s\n", e.Rows, where)
	return nil
}

// writeFileAtomic writes path through a temporary file renamed into place
// once complete: a failed export never leaves a truncated file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return cli.Usage(fmt.Errorf("--out: %w", err))
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing left to remove
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
