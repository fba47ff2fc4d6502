package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/ingest"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/source/sourcecli"
)

// remoteFlags choose a remote source (the flags extract shares, in
// sourcecli.Flags) and how an incremental run treats it.
type remoteFlags struct {
	sourcecli.Flags
	incremental, watermarkColumn string
	full                         bool
}

func (r *remoteFlags) register(fl *pflag.FlagSet) {
	r.Flags.Register(fl)
	fl.StringVar(&r.incremental, "incremental", "", "keep a watermark under `NAME` and queue only documents that are new or changed since its last run; a crashed run resumes its listing")
	fl.StringVar(&r.watermarkColumn, "watermark-column", "", "with --from-sql and --incremental: the `column` whose value changes when a row does (e.g. updated_at); default: the body's hash")
	fl.BoolVar(&r.full, "full", false, "with --incremental: read and queue every document whatever the watermark says, and rebuild it")
}

// check validates the remote flags against the paths and reports whether
// the input is remote.
func (r *remoteFlags) check(paths []string) (bool, error) {
	remote, err := r.Flags.Check(paths, "submit")
	switch {
	case err != nil:
		return false, err
	case !remote && (r.incremental != "" || r.full || r.watermarkColumn != ""):
		return false, errors.New("--incremental, --full and --watermark-column apply to a remote source: s3://bucket/prefix, --from-sql or --from-urls")
	case r.full && r.incremental == "":
		return false, errors.New("--full rebuilds an --incremental watermark: add --incremental NAME")
	case r.watermarkColumn != "" && (r.FromSQL == "" || r.incremental == ""):
		return false, errors.New("--watermark-column needs --from-sql and --incremental")
	}
	return remote, nil
}

// sourceError gives a remote run's error its exit code.
func sourceError(err error) error {
	if errors.Is(err, ingest.ErrCorruptWatermark) || errors.Is(err, ingest.ErrWatermarkBusy) {
		return cli.Usage(err)
	}
	return sourcecli.Error(err, "with --incremental it resumes after the last batch queued, and nothing is queued twice")
}

// submitRemote queues a remote source's documents.
func submitRemote(ctx context.Context, r *remoteFlags, rd *intake.Reader, sess *session, client *fleet.Client, job fleet.Job, paths []string, f *submitFlags, auditURL string, progress func(fleet.Submission)) (*ingest.Counts, fleet.Submission, error) {
	start := time.Now()
	src, closeSrc, err := r.Open(ctx, paths, f.in.Glob, auditURL, r.watermarkColumn)
	if err != nil {
		return nil, fleet.Submission{}, sourceError(err)
	}
	defer closeSrc()
	opts := ingest.Options{Incremental: r.incremental, Full: r.full, MaxDocument: f.in.MaxDocument, Transcode: f.in.Transcode, Reader: rd, KeepJobIDs: f.wait}
	counts, sum, err := ingest.Run(ctx, src, ingest.NewWatermarks(sess.store.Pool()), client, job, opts, func(_ ingest.Counts, s fleet.Submission) {
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
	if c.JSONL > 0 {
		// The counts above are of objects; the summary's queued and
		// rejected, of documents: here, of lines.
		fmt.Fprintf(out, "read %d JSON Lines objects: %d records (one document each)\n", c.JSONL, c.Records)
	}
	if c.ResumedAfter != "" {
		fmt.Fprintf(out, "resumed an interrupted listing after %s\n", c.ResumedAfter)
	}
}
