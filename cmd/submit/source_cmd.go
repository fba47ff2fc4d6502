package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/ingest"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/source"
)

// remoteFlags choose a remote source: an s3:// argument, --from-sql or
// --from-urls, and how an incremental run treats it.
type remoteFlags struct {
	s3Endpoint, fromSQL, sqlURL, fromURLs string
	incremental, watermarkColumn          string
	full                                  bool
}

func (r *remoteFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&r.s3Endpoint, "s3-endpoint", "", "S3-compatible server `URL` for s3:// inputs (MinIO, Ceph, R2, GCS interop), addressed path-style: host:port or http(s)://host:port (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
	fl.StringVar(&r.fromSQL, "from-sql", "", "read documents from a PostgreSQL `QUERY` returning id, body and optionally metadata, e.g. 'SELECT id, body, metadata FROM docs WHERE …'")
	fl.StringVar(&r.sqlURL, "sql-url", "", "PostgreSQL `URL` --from-sql runs against (default: the audit database)")
	fl.StringVar(&r.fromURLs, "from-urls", "", "read documents from the URLs listed in `FILE`, one a line (http://, https://, s3://)")
	fl.StringVar(&r.incremental, "incremental", "", "keep a watermark under `NAME` and queue only documents that are new or changed since its last run; a crashed run resumes its listing")
	fl.StringVar(&r.watermarkColumn, "watermark-column", "", "with --from-sql and --incremental: the `column` whose value changes when a row does (e.g. updated_at); default: the body's hash")
	fl.BoolVar(&r.full, "full", false, "with --incremental: read and queue every document whatever the watermark says, and rebuild it")
}

// check validates the remote flags against the paths and reports whether
// the input is remote.
func (r *remoteFlags) check(paths []string) (bool, error) {
	var remote, local []string
	for _, p := range paths {
		if source.IsRemote(p) {
			remote = append(remote, p)
		} else {
			local = append(local, p)
		}
	}
	n := len(remote)
	if r.fromSQL != "" {
		n++
	}
	if r.fromURLs != "" {
		n++
	}
	switch {
	case n == 0:
		if r.incremental != "" || r.full || r.watermarkColumn != "" || r.sqlURL != "" {
			return false, errors.New("--incremental, --full, --watermark-column and --sql-url apply to a remote source: s3://bucket/prefix, --from-sql or --from-urls")
		}
		return false, nil
	case n > 1:
		return false, errors.New("give one remote source per submit (one s3:// URI, --from-sql or --from-urls): each keeps its own watermark")
	case len(local) > 0:
		return false, fmt.Errorf("local inputs (%s) and a remote source cannot be mixed: submit them separately", strings.Join(local, ", "))
	case r.full && r.incremental == "":
		return false, errors.New("--full rebuilds an --incremental watermark: add --incremental NAME")
	case r.watermarkColumn != "" && (r.fromSQL == "" || r.incremental == ""):
		return false, errors.New("--watermark-column needs --from-sql and --incremental")
	case r.sqlURL != "" && r.fromSQL == "":
		return false, errors.New("--sql-url needs --from-sql")
	}
	return true, nil
}

// open builds the source; close releases what it holds.
func (r *remoteFlags) open(ctx context.Context, paths []string, glob, auditURL string) (src source.Source, closeFn func(), err error) {
	s3opts := source.S3Options{Endpoint: r.s3Endpoint, Glob: glob}
	switch {
	case r.fromSQL != "":
		url := r.sqlURL
		if url == "" {
			url = auditURL
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return nil, nil, cli.Unavailable(fmt.Errorf("--from-sql: cannot reach the database (check --sql-url): %w", err))
		}
		s, err := source.NewSQL(conn, r.fromSQL, r.watermarkColumn)
		if err != nil {
			conn.Close(ctx)
			return nil, nil, err
		}
		return s, func() { conn.Close(context.WithoutCancel(ctx)) }, nil
	case r.fromURLs != "":
		return source.NewURLs(r.fromURLs, nil, s3opts), func() {}, nil
	}
	s, err := source.NewS3(paths[0], s3opts)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {}, nil
}

// sourceError gives a remote run's error its exit code.
func sourceError(err error) error {
	var le *source.ListError
	switch {
	case errors.Is(err, source.ErrUsage), errors.Is(err, source.ErrAccess),
		errors.Is(err, ingest.ErrCorruptWatermark), errors.Is(err, ingest.ErrWatermarkBusy):
		return cli.Usage(err)
	case errors.As(err, &le):
		return cli.Unavailable(fmt.Errorf("%w; run the same command again: with --incremental it resumes after the last batch queued, and nothing is queued twice", err))
	case errors.Is(err, source.ErrUnavailable):
		return cli.Unavailable(err)
	}
	return err
}

// submitRemote queues a remote source's documents.
func submitRemote(ctx context.Context, r *remoteFlags, rd *intake.Reader, sess *session, sub *submit.Submitter, job submit.Job, paths []string, f *submitFlags, auditURL string, progress func(submit.Summary)) (*ingest.Counts, submit.Summary, error) {
	start := time.Now()
	src, closeSrc, err := r.open(ctx, paths, f.in.Glob, auditURL)
	if err != nil {
		return nil, submit.Summary{}, sourceError(err)
	}
	defer closeSrc()
	opts := ingest.Options{Incremental: r.incremental, Full: r.full, MaxDocument: f.in.MaxDocument, Transcode: f.in.Transcode, Reader: rd, KeepJobIDs: f.wait}
	counts, sum, err := ingest.Run(ctx, src, ingest.NewWatermarks(sess.store.Pool()), sub, job, opts, func(_ ingest.Counts, s submit.Summary) {
		s.Elapsed = time.Since(start)
		progress(s)
	})
	sum.Elapsed = time.Since(start)
	return &counts, sum, sourceError(err)
}

// printCounts prints what an incremental or remote run found.
func printCounts(out io.Writer, c *ingest.Counts) {
	if c == nil {
		return
	}
	fmt.Fprintf(out, "source %s: listed %d: new %d, changed %d, unchanged %d (not read), vanished %d; read %d bytes\n",
		c.Source, c.Listed, c.New, c.Changed, c.Unchanged, c.Vanished, c.BytesRead)
	if c.ResumedAfter != "" {
		fmt.Fprintf(out, "resumed an interrupted listing after %s\n", c.ResumedAfter)
	}
}
