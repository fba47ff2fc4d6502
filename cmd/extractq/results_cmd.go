package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
)

func newResultsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Work with stored results",
		Long:  "Work with the valid results stored in the audit database (EXTRACTQ_DATABASE_URL).\n\nExample:\n  extractq results export --schema invoice --format csv --out invoices.csv",
	}
	cmd.AddCommand(newResultsExportCmd())
	return cmd
}

func newResultsExportCmd() *cobra.Command {
	var (
		c           cli.Conn
		f           audit.ExportFilter
		format, out string
		pq          parquetFlags
	)
	cmd := &cobra.Command{
		Use:   "export --schema NAME [--version V] [--run NAME] --format jsonl|csv|parquet [--out FILE | --to s3://…]",
		Short: "Stream results of a schema as JSON Lines, CSV or Parquet",
		Long: "Stream the results of one schema, ordered by document id, in constant memory.\n\n" +
			"Without --version each document's latest result under any version of the schema is exported;\n" +
			"with --version only results validated against that version.\n\n" +
			"jsonl: one object per line: document_id, schema, schema_version, schema_fingerprint, model, run,\n" +
			"created_at, value.\n" +
			"csv: columns _document_id, _schema_version, _model, _run, _created_at, then one column per\n" +
			"property of the schema (the latest, or --version), nested objects flattened with dots\n" +
			"(customer.address.city), sorted by name. Arrays and free-form objects are one column of compact\n" +
			"JSON (items → [{\"sku\":\"A\",\"qty\":2}]); absent or null values are empty; properties the schema\n" +
			"does not declare are left out (use jsonl for everything). A schema without properties exports\n" +
			"one column _value holding the JSON value.\n" +
			"parquet: columns _document_id, _run, _schema_version, _model, _created_at, _source_uri, _content_hash,\n" +
			"then the schema's properties: nested objects as groups, arrays as lists, unions as JSON; nullable\n" +
			"where optional (with --version; without it every property is nullable). Streamed in row groups\n" +
			"(--row-group-rows); --to s3://bucket/key uploads it in parts; --since-export NAME exports each\n" +
			"result once across runs. See doc/etl.md.\n\n" +
			"Example:\n  extractq results export --schema invoice --format jsonl > invoices.jsonl\n" +
			"  extractq results export --schema invoice --version 2 --run nightly --format csv --out invoices.csv",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fm := audit.ExportFormat(format)
			if fm != audit.FormatJSONL && fm != audit.FormatCSV && format != "parquet" {
				return cli.Usage(fmt.Errorf("--format %q: use jsonl, csv or parquet", format))
			}
			if format != "parquet" && pq.used() {
				return cli.Usage(fmt.Errorf("--to, --since-export and --s3-endpoint go with --format parquet"))
			}
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			if _, err := s.SchemaByName(ctx, f.Schema, f.Version); err != nil {
				if errors.Is(err, audit.ErrNotFound) {
					return cli.Usage(err)
				}
				return cli.Failed(err)
			}
			if format == "parquet" {
				return exportParquet(cmd, s, f, &pq, out)
			}
			if out == "" || out == "-" {
				if _, err := s.Export(ctx, f, fm, cmd.OutOrStdout()); err != nil {
					return cli.Failed(err)
				}
				return nil
			}
			file, err := os.Create(out)
			if err != nil {
				return cli.Usage(fmt.Errorf("--out: %w", err))
			}
			n, err := s.Export(ctx, f, fm, file)
			if cerr := file.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("write %s: %w", out, cerr)
			}
			if err != nil {
				return cli.Failed(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d results to %s\n", n, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.Schema, "schema", "", "schema name (required)")
	cmd.Flags().IntVar(&f.Version, "version", 0, "schema version (default: each document's latest result)")
	cmd.Flags().StringVar(&f.Run, "run", "", "only results of this run")
	cmd.Flags().StringVar(&format, "format", "jsonl", "jsonl, csv or parquet")
	pq.register(cmd)
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to FILE instead of standard output")
	_ = cmd.MarkFlagRequired("schema")
	c.AddDatabaseFlag(cmd, false)
	return cmd
}
