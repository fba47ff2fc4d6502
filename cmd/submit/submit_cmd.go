package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/ingest"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/settings"
	"github.com/extractq/extractq/internal/source/sourcecli"
	"github.com/extractq/extractq/internal/termsafe"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/internal/webhook"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// conn are the connection flags submit and resubmit share.
type conn struct {
	cli.Conn
	maxPending   int
	stallTimeout time.Duration
}

func (c *conn) register(cmd *cobra.Command) {
	c.AddNATSFlag(cmd, true)
	c.AddDatabaseFlag(cmd, true)
	cmd.PersistentFlags().IntVar(&c.maxPending, "max-pending", 256, "publishes awaiting the server's ack at once")
	cli.DurationVar(cmd.PersistentFlags(), &c.stallTimeout, "stall-timeout", submit.DefaultStallTimeout,
		"give up when NATS acks no publish for this long (a stall; slow acks never fail a submission): raise it against a heavily loaded server")
}

// clientOptions are the fleet client's options the shared flags set.
func (c *conn) clientOptions(more ...fleet.ClientOption) []fleet.ClientOption {
	return append([]fleet.ClientOption{fleet.WithStallTimeout(c.stallTimeout)}, more...)
}

// session is an open NATS connection and audit store.
type session struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	store *audit.Store
}

func (c *conn) open(ctx context.Context) (*session, error) {
	if c.maxPending < 1 {
		return nil, cli.Usage(fmt.Errorf("--max-pending %d: must be at least 1", c.maxPending))
	}
	if c.stallTimeout <= 0 {
		return nil, cli.Usage(fmt.Errorf("--stall-timeout %s: must be positive", c.stallTimeout))
	}
	nc, js, err := c.ConnectNATS(ctx, "extractq-submit", jetstream.WithPublishAsyncMaxPending(c.maxPending))
	if err != nil {
		return nil, err
	}
	// Only `worker migrate` creates or changes streams (creating them here
	// with other settings remapped replicated buckets to one replica).
	warnings, err := jobs.CheckStreams(ctx, js)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "submit: warning:", w)
	}
	if err != nil {
		nc.Close()
		return nil, cli.Failed(err)
	}
	store, err := c.OpenStore(ctx, cli.Migrated)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &session{nc: nc, js: js, store: store}, nil
}

func (s *session) close() {
	s.store.Close()
	_ = s.nc.Drain()
}

// submitFlags are submit's own flags.
type submitFlags struct {
	schemaArg, schemaName, provider, pool, variant string
	runName, mode, repair, chunk                   string
	wait, asJSON                                   bool
	timeout                                        time.Duration
	hook                                           webhookFlags
	maxReasks, maxTokens, tokenBudget              int
	temperature                                    float64
	inlineLimit                                    int
	in                                             cli.InputFlags
	remote                                         remoteFlags
}

func newSubmitCmd() *cobra.Command {
	var (
		c conn
		f submitFlags
	)
	cmd := &cobra.Command{
		Use:   "submit --schema FILE|NAME --provider P [flags] PATH...|-|s3://BUCKET/PREFIX",
		Short: "Queue documents for extraction by the fleet",
		Long: `submit reads documents from files, folders (recursively, hidden ones skipped, filtered by --glob),
JSONL files (*.jsonl, *.ndjson, also gzip- or bzip2-compressed: one {"id","text","metadata"} per line, local, in a
bucket or listed by URL; --max-document bounds each line, not the file) or stdin ("-": JSONL when its first
line is such an object, else one document; --stdin-text forces the latter), registers the schema, stores
the documents in the audit database and queues one job per document on NATS JetStream.
A document already queued within the duplicate window (same text, schema and model) is queued once;
one whose job already has a result or a dead letter in the audit is not queued again but counted as
already done (redo it with "submit resubmit"). The model is the provider's identity: family, model and
simulator profile (sim:clean and sim:realistic are different models), plus --variant if given.
A file's format is recognised by its content (--format overrides): PDFs, HTML, e-mails, office files and
images are read with their pages, a .gz or .bz2 file as the file it compresses, the files of a zip or tar
archive as documents of their own, an e-mail's attachments (and a PDF's attached files) become
documents of their own (--attachments).
Bad input (unreadable, encrypted without --password, empty, binary, not UTF-8, too large) is rejected
with a reason; the rest is still queued. These are the same input rules as "extractq extract".

` + sourcecli.Help + `
--incremental NAME keeps a watermark in the audit database (ETag and size, --watermark-column, else the
content's hash): only new or changed documents are read and queued, the summary counts new, changed,
unchanged and vanished ones, and a run that crashed mid-listing resumes after its last queued batch.
--full reads everything again and rebuilds the watermark. See doc/etl.md.

--wait follows exactly the jobs this invocation queued and the duplicates still on the queue, with
progress on stderr (done, failed, running and queued, rate, ETA, and why it waits); it warns at once when
no live worker serves the pool. --timeout gives up waiting (the jobs stay queued); Ctrl-C stops waiting
and prints how to re-attach. --webhook URL (or EXTRACTQ_WEBHOOK_URL) POSTs the run's done event there once
it is done, signed with EXTRACTQ_WEBHOOK_SECRET, retried for up to --webhook-timeout; each try is logged in
the audit database (webhook_deliveries). A failed delivery is a warning, not an exit code.
Without --wait, or when submit stops waiting, a worker announces the run: once every job of the run is
final it publishes the done event and delivers the --webhook registered with the run (the workers need
the same EXTRACTQ_WEBHOOK_SECRET). --webhook-events done,dead_letter also sends it each of the run's dead letters.

Exit codes: 0 all queued (and, with --wait, all succeeded); 1 some rejected or failed, or --timeout
passed; 2 bad usage, schema, provider, an empty input, a source that may not be read or a corrupt
watermark; 3 NATS, Postgres or the source's server unreachable; 130 interrupted.

Example:
  submit --schema invoice.json --provider openai:gpt-4o-mini --run march --glob '*.txt' ./invoices
  cat docs.jsonl | submit --schema invoice --provider sim:clean --wait --timeout 10m -
  submit --schema invoice --provider openai:gpt-4o-mini --incremental nightly --wait --json s3://invoices/2026/`,
		Args: cobra.ArbitraryArgs, // the reader checks them, with a better message than cobra's
		RunE: func(cmd *cobra.Command, paths []string) error {
			return runSubmit(cmd, &c, &f, paths)
		},
	}
	c.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.schemaArg, "schema", "", "schema file (JSON/YAML, registered as a new version if changed) or a registered schema name")
	fl.StringVar(&f.schemaName, "schema-name", "", "name to register a schema file under (default: the schema's own name, else the file name)")
	fl.StringVar(&f.provider, "provider", "", "provider and model, e.g. openai:gpt-4o-mini, anthropic:claude-haiku-4-5, sim:clean")
	fl.StringVar(&f.variant, "variant", "", "label added to the model identity, to keep results of the same provider:model apart (e.g. another server behind OPENAI_BASE_URL)")
	fl.StringVar(&f.pool, "pool", "", "provider pool (budget group) the jobs go to (default: derived from --provider)")
	fl.StringVar(&f.runName, "run", "", "run name to group and follow this submission (default run-<timestamp>)")
	fl.BoolVar(&f.wait, "wait", false, "follow the jobs queued by this invocation (and duplicates still queued) until each is done or dead-lettered; exit 1 if any document failed")
	cli.DurationVar(fl, &f.timeout, "timeout", 0, "with --wait: stop waiting after this long, e.g. 30m (the jobs stay queued; exit 1)")
	f.hook.register(fl)
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON (with --wait, once, with the outcome)")
	fl.IntVar(&f.maxReasks, "max-reasks", 3, "re-asks after an invalid answer (0: ask once; unset: the worker's default, 3)")
	fl.StringVar(&f.mode, "mode", "", "structured-output mode: auto, text, json, strict, tools or prefill (default auto)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "cap on each answer's tokens (unset or 0: the provider's)")
	fl.IntVar(&f.tokenBudget, "token-budget", 0, "cap on the tokens spent per document (unset or 0: no cap)")
	fl.Float64Var(&f.temperature, "temperature", 0, "sampling temperature (unset: the worker's default, 0)")
	fl.StringVar(&f.repair, "repair", "", "local repair policy: off, syntax, coerce (default coerce)")
	cli.ChunkVar(fl, &f.chunk)
	fl.IntVar(&f.inlineLimit, "inline-limit", jobs.DefaultInlineLimit, "documents larger than this many bytes go to the object store")
	f.in.Register(fl)
	f.remote.register(fl)
	cmd.AddCommand(newResubmitCmd(&c))
	return cli.Prepare(cmd)
}

// jobOptions are the engine options the jobs carry: only the flags given,
// zero included, so that "--max-reasks 0" asks once in the fleet as in
// "extractq extract", and an unset flag leaves the worker's default.
func jobOptions(fl *pflag.FlagSet, f *submitFlags) (fleet.JobOptions, error) {
	o := fleet.JobOptions{Mode: llm.Mode(f.mode), Repair: extractq.RepairPolicy(f.repair)}
	for _, n := range []struct {
		flag string
		v    int
		to   **int
	}{{"max-reasks", f.maxReasks, &o.MaxReasks}, {"max-tokens", f.maxTokens, &o.MaxTokens}, {"token-budget", f.tokenBudget, &o.TokenBudget}} {
		if !fl.Changed(n.flag) {
			continue
		}
		if n.v < 0 {
			return o, cli.Usage(fmt.Errorf("--%s %d: must be 0 or more", n.flag, n.v))
		}
		*n.to = new(n.v)
	}
	if fl.Changed("temperature") {
		if f.temperature < 0 {
			return o, cli.Usage(fmt.Errorf("--temperature %g: must be 0 or more", f.temperature))
		}
		o.Temperature = new(f.temperature)
	}
	chunking, err := cli.ParseChunk(f.chunk)
	if err != nil {
		return o, err
	}
	if chunking != extractq.ChunkAuto {
		o.Chunking = chunking // auto stays empty: such jobs are what they were before --chunk
	}
	// Auto stays empty too; text and native reach the worker, which sends
	// a PDF whole only when the job says native.
	if in, err := extractq.ParseInput(f.in.Input); err == nil && in != extractq.InputAuto {
		o.Input = in
	}
	return o, nil
}

// Phases of a submission, for what the first Ctrl-C says.
const (
	phaseQueueing int32 = iota
	phaseWaiting
)

func runSubmit(cmd *cobra.Command, c *conn, f *submitFlags, paths []string) error {
	if f.schemaArg == "" || f.provider == "" {
		return cli.Usage(errors.New("--schema and --provider are required, e.g. --schema invoice.json --provider openai:gpt-4o-mini"))
	}
	r, input, err := f.in.Reader(cmd.InOrStdin(), os.Getenv)
	if err != nil {
		return err
	}
	// The workers hold the keys; a provider made here without one still
	// says whether its model reads images and PDFs. When it cannot be made,
	// scans and PDFs go to the workers as they are: one whose model reads
	// neither dead-letters them naming the remedies.
	caps := llm.Capabilities{Images: true, PDF: true}
	if p, err := extractq.NewProvider(f.provider); err == nil {
		caps = p.Capabilities()
	}
	f.in.ForModel(r, input, caps)
	remote, err := f.remote.check(paths)
	if err != nil {
		return cli.Usage(err)
	}
	if !remote {
		if err := r.Check(paths); err != nil {
			return cli.Usage(err)
		}
	}
	if f.timeout != 0 && !f.wait {
		return cli.Usage(errors.New("--timeout bounds --wait: add --wait, or leave --timeout out"))
	}
	if f.timeout < 0 {
		return cli.Usage(fmt.Errorf("--timeout %s: must be positive", f.timeout))
	}
	opts, err := jobOptions(cmd.Flags(), f)
	if err != nil {
		return err
	}
	hook, err := webhookSender(cmd.Flags(), &f.hook, f.wait, os.Getenv)
	if err != nil {
		return err
	}
	if f.runName == "" {
		f.runName = "run-" + time.Now().UTC().Format("20060102-150405")
	}
	job := fleet.Job{Provider: f.provider, Variant: f.variant, Pool: f.pool, Run: f.runName, Options: opts}
	model, pool, err := job.Target()
	if err != nil {
		return cli.Usage(flagError(err))
	}
	errw := cmd.ErrOrStderr()
	shutdownTraces, err := tracing.Setup(cmd.Context(), "extractq-submit")
	if err != nil {
		return cli.Usage(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTraces(sctx)
	}()
	var phase atomic.Int32
	ctx, stop := cli.Interruptible(cmd.Context(), func() {
		if phase.Load() == phaseWaiting {
			fmt.Fprintln(errw, "\nsubmit: interrupted: no longer waiting; the jobs stay queued and run")
		} else {
			fmt.Fprintln(errw, "\nsubmit: interrupted: stopping the submission; what was queued stays queued")
		}
	}, func() { os.Exit(cli.ExitInterrupted) })
	defer stop()
	sess, err := c.open(ctx)
	if cli.WasInterrupted(ctx) {
		return cli.Interrupted(errors.New("interrupted before anything was queued"))
	}
	if err != nil {
		return err
	}
	defer sess.close()
	client := fleet.NewClient(sess.js, sess.store.Pool(), c.clientOptions(fleet.WithInlineLimit(f.inlineLimit), fleet.WithMaxDocumentSize(f.in.MaxDocument),
		fleet.WithWarnings(func(err error) { fmt.Fprintln(errw, "submit: warning:", err) }))...)
	// The audit connections are readied while the schema is resolved and
	// the input opened. A failure only costs time: Submit reports what
	// matters of a database that fails.
	warmed := make(chan struct{})
	go func() { defer close(warmed); _ = client.Warm(ctx) }()
	defer func() { <-warmed }() // before sess.close
	var version int
	job.Schema, job.SchemaName, version, err = resolveSchema(ctx, client, f.schemaArg, f.schemaName)
	if cli.WasInterrupted(ctx) {
		return cli.Interrupted(errors.New("interrupted before anything was queued"))
	}
	if err != nil {
		return cli.Usage(err)
	}
	bar := newQueueProgress(errw)
	var (
		sum    fleet.Submission
		counts *ingest.Counts
	)
	if remote {
		counts, sum, err = submitRemote(ctx, &f.remote, r, sess, client, job, paths, f, c.DatabaseURL(), bar.submitted)
	} else {
		sum, err = submitLocal(ctx, client, job, r, paths, bar.submitted)
	}
	bar.done()
	// What it queued to, shown even when nothing was queued (a remote
	// source's unchanged documents).
	sum.Run, sum.Schema, sum.SchemaVersion, sum.Provider, sum.Model, sum.Pool = f.runName, job.SchemaName, version, f.provider, model, pool
	var notSealed error // everything is queued, but the run has no done event to come
	switch {
	case errors.Is(err, fleet.ErrRunNotSealed):
		notSealed, err = err, nil
	case err == nil:
		sum.Generation, notSealed = sealRun(ctx, client, sess.store, job.Run, hook, f.hook.events)
	}
	if notSealed != nil {
		fmt.Fprintf(errw, "submit: warning: the run is not sealed, so no worker announces it done nor delivers its webhook (run this command again to seal it): %v\n", notSealed)
	}
	gen := sum.Generation // the run's generation this submission sealed, 0 if none
	var coded *cli.ExitError
	switch {
	case errors.Is(err, intake.ErrNoDocuments), errors.Is(err, fleet.ErrNoDocuments), errors.Is(err, fleet.ErrBadJob):
		return cli.Usage(err)
	case errors.As(err, &coded) && !cli.WasInterrupted(ctx):
		printSummary(cmd.OutOrStdout(), errw, sum, f.asJSON, nil, counts)
		return err
	case cli.WasInterrupted(ctx):
		printSummary(cmd.OutOrStdout(), errw, sum, f.asJSON, nil, counts)
		return cli.Interrupted(fmt.Errorf("interrupted after queueing %d documents; run the same command again to queue the rest (nothing is queued twice)", sum.Queued))
	case err != nil:
		printSummary(cmd.OutOrStdout(), errw, sum, f.asJSON, nil, counts)
		return cli.Failed(err)
	}
	var failed error
	if len(sum.Rejected) > 0 {
		failed = fmt.Errorf("%d documents rejected", len(sum.Rejected))
	}
	if sum.Lost > 0 {
		failed = errors.Join(failed, fmt.Errorf("%d documents not queued: JetStream saw them within its duplicate window but no longer holds them, and this audit database has no result for them (do the workers use the same database? was the stream purged?); they can be queued again once the stream's duplicate window (24h by default) has passed", sum.Lost))
	}
	if !f.wait {
		printSummary(cmd.OutOrStdout(), errw, sum, f.asJSON, nil, counts)
		if failed != nil {
			return cli.Failed(failed)
		}
		return nil
	}
	if !f.asJSON {
		printSummary(cmd.OutOrStdout(), errw, sum, false, nil, counts)
	}
	phase.Store(phaseWaiting)
	w := &waiter{js: sess.js, client: client, pool: pool, provider: f.provider, out: errw, every: time.Second, membersEvery: 5 * time.Second}
	res, werr := w.follow(ctx, sum, f.timeout)
	res.Webhook = announceDone(ctx, sess, job.Run, gen, res, f.hook.forDone(hook), errw)
	if f.asJSON {
		printSummary(cmd.OutOrStdout(), errw, sum, true, &res, counts)
	}
	switch {
	case res.Interrupted:
		return cli.Interrupted(fmt.Errorf("%d jobs unfinished; they stay queued. Re-attach with the same command (nothing is queued twice within the stream's duplicate window):\n  %s\nor watch the run with: extractq status --run %s", res.Unfinished, reattach(cmd, paths), f.runName))
	case res.TimedOut:
		return cli.Failed(errors.Join(failed, fmt.Errorf("--timeout %s passed with %d of %d jobs unfinished; they stay queued. Re-attach with:\n  %s", settings.FormatDuration(f.timeout), res.Unfinished, res.Total, reattach(cmd, paths))))
	case werr != nil:
		return cli.Failed(errors.Join(failed, werr))
	case res.Failed > 0:
		return cli.Failed(errors.Join(failed, fmt.Errorf("%d of %d documents failed: see `extractq dlq list --run %s`, redo them with `submit resubmit --from-dlq`", res.Failed, res.Total, f.runName)))
	case failed != nil:
		return cli.Failed(failed)
	}
	return nil
}

// reattach is the command line that follows the same jobs again: this
// one, as typed (its flags and paths), which queues nothing twice.
func reattach(cmd *cobra.Command, paths []string) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" {
			parts = append(parts, "--"+fl.Name)
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				parts = append(parts, "--"+fl.Name, shellQuote(v))
			}
			return
		}
		v := shellQuote(fl.Value.String())
		if fl.Name == "webhook" && webhook.Redact(fl.Value.String()) != fl.Value.String() {
			v = `"$EXTRACTQ_WEBHOOK_URL"` // its credentials or token are not printed
		}
		parts = append(parts, "--"+fl.Name, v)
	})
	if !cmd.Flags().Changed("wait") {
		parts = append(parts, "--wait")
	}
	for _, p := range paths {
		parts = append(parts, shellQuote(p))
	}
	line := strings.Join(parts, " ")
	for _, p := range paths {
		if p == "-" {
			return line + "   (with the same documents on stdin)"
		}
	}
	return line
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// resolveSchema compiles and registers a schema file, or looks up a
// registered name (its latest version); it returns the schema, its name
// and version.
func resolveSchema(ctx context.Context, client *fleet.Client, arg, name string) (*schema.Schema, string, int, error) {
	if _, err := os.Stat(arg); err == nil {
		sc, err := schema.CompileFile(arg)
		if err != nil {
			return nil, "", 0, fmt.Errorf("--schema %s: %w", arg, err)
		}
		name = cli.SchemaName(arg, sc, name)
		v, err := client.RegisterSchema(ctx, name, sc)
		return sc, name, v, err
	}
	sc, v, err := client.Schema(ctx, arg, 0)
	if errors.Is(err, fleet.ErrNotFound) {
		return nil, "", 0, fmt.Errorf("--schema %q is neither a file nor a registered schema (see extractq schema list): %w", arg, err)
	}
	return sc, arg, v, err
}

// flagError names the flag of a job field fleet refused.
func flagError(err error) error {
	var je *fleet.JobError
	if errors.As(err, &je) {
		return fmt.Errorf("--%s: %w", strings.ToLower(je.Field), je.Err)
	}
	return err
}

// errStopped ends reading when the submission stopped taking documents.
var errStopped = errors.New("submission stopped")

// submitLocal queues the documents of files, folders or stdin.
func submitLocal(ctx context.Context, client *fleet.Client, job fleet.Job, r *intake.Reader, paths []string, progress func(fleet.Submission)) (fleet.Submission, error) {
	var readErr error
	docs := func(yield func(fleet.Document) bool) {
		readErr = r.Read(ctx, paths, func(d intake.Doc) error {
			if !yield(fleet.Document(d)) {
				return errStopped
			}
			return nil
		})
	}
	sum, err := client.Submit(ctx, job, docs, fleet.OnProgress(progress), fleet.KeepRunOpen()) // sealed after the webhook is registered
	if readErr != nil && !errors.Is(readErr, errStopped) {
		err = readErr // reading failed: its error, with its exit code, is the submission's
	}
	if sum == nil {
		return fleet.Submission{}, err
	}
	return *sum, err
}

// waitResult is how --wait ended.
type waitResult struct {
	Total       int   `json:"total"`
	Done        int   `json:"done"`
	Failed      int   `json:"failed"`
	Unfinished  int   `json:"unfinished"`
	Tokens      int64 `json:"tokens"`
	TimedOut    bool  `json:"timed_out"`
	Interrupted bool  `json:"interrupted"`
	// NoWorker is set when no live worker served the pool at the end.
	NoWorker bool `json:"no_worker"`
	// Paused says why the pool was paused at the end ("key: openai: 401
	// …"), empty when it was not.
	Paused  string        `json:"paused,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Webhook is how the done event's delivery ended (--webhook).
	Webhook *webhook.Result `json:"-"`
}

func printSummary(out, errw io.Writer, sum fleet.Submission, asJSON bool, wait *waitResult, src *ingest.Counts) {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			fleet.Submission
			Wait    *waitResult     `json:"wait,omitempty"`
			Source  *ingest.Counts  `json:"source,omitempty"`
			Webhook *webhook.Result `json:"webhook,omitempty"`
		}{sum, wait, src, hookResult(wait)})
		return
	}
	for _, r := range sum.Rejected {
		fmt.Fprintf(errw, "rejected %s: %s\n", r.Source, r.Reason)
	}
	printCounts(out, src)
	fmt.Fprintf(out, "run %s: schema %s v%d, %s (model %s) → pool %s\n", sum.Run, sum.Schema, sum.SchemaVersion, sum.Provider, sum.Model, sum.Pool)
	fmt.Fprintf(out, "queued %d, already done %d, duplicates skipped %d, lost %d, rejected %d in %s\n",
		sum.Queued, sum.AlreadyDone, sum.Duplicates, sum.Lost, len(sum.Rejected), sum.Elapsed.Round(time.Millisecond))
	if sum.AlreadyDone > 0 {
		fmt.Fprintf(out, "already done: %d documents have a result or a dead letter for this schema version and model (%d dead-lettered); redo them with `submit resubmit`\n",
			sum.AlreadyDone, sum.AlreadyFailed)
	}
	if sum.Duplicates > 0 {
		fmt.Fprintf(out, "duplicates: %d documents are still queued by an earlier submit; --wait follows them\n", sum.Duplicates)
	}
}

// queueProgress draws a one-line count while documents are queued, on a
// terminal only: queueing is fast, and its summary follows at once.
type queueProgress struct {
	w    io.Writer
	tty  bool
	last time.Time
}

func newQueueProgress(w io.Writer) *queueProgress {
	return &queueProgress{w: w, tty: settings.IsTerminal(w)}
}

func (p *queueProgress) submitted(s fleet.Submission) {
	if !p.tty || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\033[Kqueueing: %d queued, %d duplicates, %d rejected", s.Queued, s.Duplicates, len(s.Rejected))
}

func (p *queueProgress) done() {
	if p.tty && !p.last.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// waiter follows a submission's jobs to the end (--wait).
type waiter struct {
	js             jetstream.JetStream
	client         *fleet.Client
	pool, provider string
	out            io.Writer
	every          time.Duration // poll of the audit
	membersEvery   time.Duration // check of the live workers
}

// follow waits until every job the submission queued is final, ctx ends
// (Ctrl-C) or timeout passes, showing progress: done, failed, and of this
// submission's other jobs those running and those queued, rate, ETA, and
// why it waits (no live worker, a paused pool and its reason). Documents
// found already done count as done (or failed) from the start. It warns at
// once when no live worker serves the pool, since the jobs would wait
// forever, and whenever the pool is paused for a new reason.
func (w *waiter) follow(ctx context.Context, sum fleet.Submission, timeout time.Duration) (waitResult, error) {
	res := waitResult{Total: len(sum.JobIDs) + sum.AlreadyDone}
	baseDone, baseFailed := sum.AlreadyDone-sum.AlreadyFailed, sum.AlreadyFailed
	seqs := make(map[string]uint64, len(sum.JobIDs))
	for i, id := range sum.JobIDs {
		if i < len(sum.JobSeqs) {
			seqs[id] = sum.JobSeqs[i]
		}
	}
	bar := cli.NewProgress(w.out, "submit")
	bar.SetTotal(res.Total, true)
	bar.SetDone(baseDone, baseFailed)
	fctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	start := time.Now()
	var lastMembers time.Time
	finishedAtLook := -1 // jobs final at the last look at the workers
	warnedNoWorker, warnedPause := false, ""
	var last fleet.Progress
	show := func(p fleet.Progress) {
		last = p
		bar.SetDone(baseDone+p.Done, baseFailed+p.Failed)
		if p.Pending == 0 {
			bar.SetActive(0, 0)
			return
		}
		q := w.poolQueue(fctx, p.Open, seqs)
		bar.SetActive(q.running, q.queued)
		if time.Since(lastMembers) < w.membersEvery {
			return
		}
		lastMembers = time.Now()
		// Jobs that became final since the last look prove a live worker
		// even where none heartbeats (a worker built without membership).
		moved := finishedAtLook >= 0 && p.Done+p.Failed > finishedAtLook
		finishedAtLook = p.Done + p.Failed
		fl, err := w.fleet(fctx)
		switch {
		case err != nil:
			bar.SetReason("")
		case fl.live == 0 && !q.asking && !moved:
			// Jobs in progress do not make a worker live: those of a
			// worker that died stay in progress until their ack wait ends.
			res.NoWorker, res.Paused = true, ""
			reason := fmt.Sprintf("no live worker serves pool %s", w.pool)
			bar.SetReason(reason)
			if !warnedNoWorker {
				warnedNoWorker = true
				held := ""
				if q.poolInProgress > 0 {
					held = fmt.Sprintf("; %d jobs of the pool are still in progress on a worker that stopped, and return to the queue when their ack wait ends", q.poolInProgress)
				}
				bar.Printf("submit: warning: %s (none heartbeats in %s%s): the jobs wait until one starts: `worker run --pool %s` or `extractq dev` with that pool; --timeout gives up\n",
					reason, ratelimit.DefaultMembersBucket, held, poolSpecHint(w.provider, w.pool))
			}
		case fl.paused != "":
			res.NoWorker, res.Paused = false, fl.paused
			bar.SetReason("pool " + w.pool + " paused: " + termsafe.String(fl.pausedShort))
			// A 429's pause is short and common: the progress line says it;
			// a refused key, a missing model or an outage gets a warning.
			if warnedPause != fl.pausedShort && !onlyThrottled(fl.pausedShort) {
				warnedPause = fl.pausedShort
				bar.Printf("submit: warning: pool %s is paused: %s; the jobs wait and run when it resumes (see `extractq status`)\n", w.pool, termsafe.String(fl.paused))
			}
		default:
			res.NoWorker, res.Paused = false, ""
			bar.SetReason("")
		}
	}
	bar.Start(ctx)
	var err error
	if len(sum.JobIDs) > 0 {
		_, err = w.client.Follow(fctx, sum.JobIDs, w.every, show)
	} else {
		bar.SetActive(0, 0)
	}
	res.Done, res.Failed = baseDone+last.Done, baseFailed+last.Failed
	res.Unfinished, res.Tokens, res.Elapsed = res.Total-res.Done-res.Failed, last.Tokens, time.Since(start)
	switch {
	case cli.WasInterrupted(ctx):
		res.Interrupted, err = true, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		res.TimedOut, err = true, nil
	}
	bar.Finish()
	return res, err
}

// poolState is where this submission's unfinished jobs stand on the pool's
// consumer: running (delivered: in progress or waiting out a delay) and
// queued (not delivered yet), -1 when unknown; whether a worker asks for
// jobs (a pull request waits, so it is live), and the pool's jobs in
// progress, this submission's or not.
type poolState struct {
	running, queued int
	asking          bool
	poolInProgress  int
}

// poolQueue reads the pool's consumer. A job whose stream sequence is at
// or below the consumer's last delivered one has been delivered; the rest
// are queued. Without a consumer (no worker ever served the pool) every
// unfinished job is queued.
func (w *waiter) poolQueue(ctx context.Context, open []string, seqs map[string]uint64) poolState {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := w.js.Consumer(qctx, jobs.JobsStream, jobs.ConsumerName(w.pool))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return poolState{queued: len(open)}
	}
	if err != nil {
		return poolState{running: -1, queued: -1}
	}
	info, err := c.Info(qctx)
	if err != nil {
		return poolState{running: -1, queued: -1}
	}
	q := poolState{asking: info.NumWaiting > 0, poolInProgress: info.NumAckPending}
	for _, id := range open {
		if seqs[id] > info.Delivered.Stream {
			q.queued++
		} else {
			q.running++
		}
	}
	return q
}

// fleetState is what the heartbeats say of the job's pool: live workers,
// and why it is paused ("" when no live worker pauses it), in full (with
// the cause) and short (the reasons).
type fleetState struct {
	live                int
	paused, pausedShort string
}

// fleet reads the heartbeats of the workers serving the job's pool.
func (w *waiter) fleet(ctx context.Context) (fleetState, error) {
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	beats, err := ratelimit.LiveHeartbeats(mctx, w.js, "")
	if err != nil {
		return fleetState{}, err
	}
	var fs fleetState
	var short, full []string
	for _, hb := range beats {
		if jobs.PoolFor(hb.Pool) != w.pool {
			continue
		}
		fs.live++
		if !hb.Paused || slices.Contains(short, hb.PauseReason) {
			continue
		}
		short = append(short, hb.PauseReason)
		f := hb.PauseReason
		if hb.PauseCause != "" {
			f += " (" + hb.PauseCause + ")"
		}
		full = append(full, f)
	}
	// Every live worker paused is the pool paused; one of several is
	// that worker's business (its share waits, the others run).
	if len(short) > 0 && pausedAll(beats, w.pool) {
		fs.pausedShort, fs.paused = strings.Join(short, ", "), strings.Join(full, "; ")
	}
	return fs, nil
}

// onlyThrottled reports whether the pause reasons are only the provider's
// rate limit or overload, which end by themselves within a minute.
func onlyThrottled(reasons string) bool {
	for r := range strings.SplitSeq(reasons, ", ") {
		if r != ratelimit.PauseRateLimited && r != ratelimit.PauseOverloaded {
			return false
		}
	}
	return true
}

// pausedAll reports whether every live worker of pool is paused.
func pausedAll(beats []ratelimit.Heartbeat, pool string) bool {
	for _, hb := range beats {
		if jobs.PoolFor(hb.Pool) == pool && !hb.Paused {
			return false
		}
	}
	return true
}

// poolSpecHint is the --pool value a worker serving pool takes.
func poolSpecHint(provider, pool string) string {
	if jobs.PoolFor(provider) == pool {
		return provider
	}
	return pool
}
