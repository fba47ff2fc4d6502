// Package sourcecli is the command-line face of package source, shared by
// `extractq extract` and `submit`: the remote-source flags, their help, and
// the exit codes of a source's errors. It is apart from package cli so that
// programs without remote sources (the worker) do not link the S3 client.
package sourcecli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/source"
)

// Help describes the remote sources in a command's --help, the same
// in `extractq extract` and `submit`.
const Help = `Remote sources (one per run): s3://bucket/prefix (objects under the prefix, --glob on their base name;
credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance role; --s3-endpoint or
AWS_ENDPOINT_URL for MinIO, Ceph, R2 or GCS), --from-sql QUERY (rows id, body[, metadata] through a cursor)
and --from-urls FILE (http, https and s3 URLs). A document's id is its s3:// URI, the row's id or the URL.
An object or URL named *.jsonl or *.ndjson (also .gz or .bz2, inflated as it is read) is JSON Lines, read
as a local JSONL file is: one document per line, its id the line's "id", else URI:LINE; it is streamed, so
--max-document bounds each line's text (and the line to twice that), not the object.`

// Flags choose a remote source: an s3:// argument, --from-sql or
// --from-urls. `extractq extract` and `submit` share them.
type Flags struct {
	S3Endpoint, FromSQL, SQLURL, FromURLs string
}

// Register defines the flags.
func (f *Flags) Register(fl *pflag.FlagSet) {
	fl.StringVar(&f.S3Endpoint, "s3-endpoint", "", "S3-compatible server `URL` for s3:// inputs (MinIO, Ceph, R2, GCS interop), addressed path-style: host:port or http(s)://host:port (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
	fl.StringVar(&f.FromSQL, "from-sql", "", "read documents from a PostgreSQL `QUERY` returning id, body and optionally metadata, e.g. 'SELECT id, body, metadata FROM docs WHERE …'")
	fl.StringVar(&f.SQLURL, "sql-url", "", "PostgreSQL `URL` --from-sql runs against (default: the audit database)")
	fl.StringVar(&f.FromURLs, "from-urls", "", "read documents from the URLs listed in `FILE`, one a line (http://, https://, s3://); a *.jsonl or *.ndjson URL (also .gz, .bz2) is one document per line")
}

// Check validates the flags against the command's inputs (paths) and
// reports whether the input is remote; command names the program in the
// message. Its errors are about usage (exit 2).
func (f *Flags) Check(paths []string, command string) (bool, error) {
	var remote, local []string
	for _, p := range paths {
		if source.IsRemote(p) {
			remote = append(remote, p)
		} else {
			local = append(local, p)
		}
	}
	n := len(remote)
	if f.FromSQL != "" {
		n++
	}
	if f.FromURLs != "" {
		n++
	}
	switch {
	case f.SQLURL != "" && f.FromSQL == "":
		return false, errors.New("--sql-url needs --from-sql")
	case n == 0:
		return false, nil
	case n > 1:
		return false, fmt.Errorf("give one remote source per %s (one s3:// URI, --from-sql or --from-urls)", command)
	case len(local) > 0:
		return false, fmt.Errorf("local inputs (%s) and a remote source cannot be mixed: give them to %s separately", strings.Join(local, ", "), command)
	}
	return true, nil
}

// Open builds the source named by the flags or the s3:// path; --from-sql
// runs against defaultSQLURL unless --sql-url names another database.
// closeFn releases what the source holds. A source's error comes with its
// exit code (Error).
func (f *Flags) Open(ctx context.Context, paths []string, glob, defaultSQLURL, watermarkColumn string) (src source.Source, closeFn func(), err error) {
	s3opts := source.S3Options{Endpoint: f.S3Endpoint, Glob: glob}
	switch {
	case f.FromSQL != "":
		url := f.SQLURL
		if url == "" {
			url = defaultSQLURL
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return nil, nil, cli.Unavailable(fmt.Errorf("--from-sql: cannot reach the database (check --sql-url): %w", err))
		}
		s, err := source.NewSQL(conn, f.FromSQL, watermarkColumn)
		if err != nil {
			conn.Close(ctx)
			return nil, nil, Error(err, "")
		}
		return s, func() { conn.Close(context.WithoutCancel(ctx)) }, nil
	case f.FromURLs != "":
		return source.NewURLs(f.FromURLs, nil, s3opts), func() {}, nil
	}
	s, err := source.NewS3(paths[0], s3opts)
	if err != nil {
		return nil, nil, Error(err, "")
	}
	return s, func() {}, nil
}

// Error gives a remote source's error its exit code: a source that
// may not be read or a malformed one is a usage error (2), a server that
// does not answer or a listing broken part way is Unavailable (3), the
// latter with again, what running the command again does. Other errors,
// and errors already coded, are returned as they are.
func Error(err error, again string) error {
	var (
		le    *source.ListError
		coded *cli.ExitError
	)
	switch {
	case err == nil || errors.As(err, &coded):
		return err
	case errors.Is(err, source.ErrUsage), errors.Is(err, source.ErrAccess):
		return cli.Usage(err)
	case errors.As(err, &le):
		if again != "" {
			err = fmt.Errorf("%w; run the same command again: %s", err, again)
		}
		return cli.Unavailable(err)
	case errors.Is(err, source.ErrUnavailable):
		return cli.Unavailable(err)
	}
	return err
}
