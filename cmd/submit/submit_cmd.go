package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/schema"
)

// conn are the connection flags every subcommand shares.
type conn struct {
	natsURL, databaseURL string
	maxPending           int
}

func (c *conn) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.natsURL, "nats-url", devmode.NATSURL(), "NATS server (env EXTRACTQ_NATS_URL, else a running extractq dev)")
	f.StringVar(&c.databaseURL, "database-url", devmode.DatabaseURL(), "audit database (env EXTRACTQ_DATABASE_URL, else a running extractq dev)")
	f.IntVar(&c.maxPending, "max-pending", 256, "publishes awaiting the server's ack at once")
}

// session is an open NATS connection and audit store.
type session struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	store *audit.Store
}

func (c *conn) open(ctx context.Context) (*session, error) {
	if c.maxPending < 1 {
		return nil, usageErr(fmt.Errorf("--max-pending %d: must be at least 1", c.maxPending))
	}
	nc, err := nats.Connect(c.natsURL, nats.Name("extractq-submit"))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w (is nats-server running? set EXTRACTQ_NATS_URL)", c.natsURL, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(c.maxPending))
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		nc.Close()
		return nil, err
	}
	store, err := audit.Open(ctx, c.databaseURL)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := store.CheckSchema(ctx); err != nil {
		store.Close()
		nc.Close()
		return nil, fmt.Errorf("%w (run `worker migrate`)", err)
	}
	return &session{nc: nc, js: js, store: store}, nil
}

func (s *session) close() {
	s.store.Close()
	_ = s.nc.Drain()
}

func newSubmitCmd() *cobra.Command {
	var (
		c                                     conn
		schemaArg, schemaName, provider, pool string
		runName, glob, mode, repair           string
		transcode, stdinText, wait, asJSON    bool
		maxReasks, maxTokens, tokenBudget     int
		inlineLimit                           int
		maxDocument                           int64
	)
	cmd := &cobra.Command{
		Use:   "submit --schema FILE|NAME --provider P [flags] PATH...|-",
		Short: "Queue documents for extraction by the fleet",
		Long: `submit reads documents from files, folders (recursively, filtered by --glob), JSONL files
(one {"id","text","metadata"} per line) or stdin ("-", JSONL unless --stdin-text), registers the schema,
stores the documents in the audit database and queues one job per document on NATS JetStream.
A document already queued within the duplicate window (same text, schema and model) is queued once;
one whose job already has a result or a dead letter in the audit is not queued again but counted as
already done (redo it with "submit resubmit"). --wait follows exactly the jobs this invocation queued
and the duplicates still on the queue.
Bad input (unreadable, empty, not UTF-8, too large) is rejected with a reason; the rest is still queued.

Example:
  submit --schema invoice.json --provider openai:gpt-4o-mini --run march --glob '*.txt' ./invoices
  cat docs.jsonl | submit --schema invoice --provider sim:clean --wait -`,
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, paths []string) error {
			if schemaArg == "" || provider == "" {
				return usageErr(errors.New("--schema and --provider are required, e.g. --schema invoice.json --provider openai:gpt-4o-mini"))
			}
			model, defPool, err := submit.ResolveProvider(provider)
			if err != nil {
				return usageErr(fmt.Errorf("--provider: %w", err))
			}
			if pool == "" {
				pool = defPool
			}
			if err := jobs.ValidatePool(pool); err != nil {
				return usageErr(fmt.Errorf("--pool: %w", err))
			}
			if runName == "" {
				runName = "run-" + time.Now().UTC().Format("20060102-150405")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			sess, err := c.open(ctx)
			if err != nil {
				return err
			}
			defer sess.close()
			sub := submit.New(sess.js, sess.store, submit.WithPublisher(jobs.WithInlineLimit(inlineLimit), jobs.WithMaxDocument(maxDocument)))
			ref, err := resolveSchema(ctx, sess.store, sub, schemaArg, schemaName)
			if err != nil {
				return usageErr(err)
			}
			job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: runName,
				Options: jobs.Options{MaxReasks: maxReasks, Mode: mode, MaxTokens: maxTokens, TokenBudget: tokenBudget, RepairPolicy: repair}}
			r := &submit.Reader{Glob: glob, Transcode: transcode, StdinText: stdinText, Stdin: cmd.InOrStdin()}
			bar := newProgress(cmd.ErrOrStderr())
			sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error { return r.Read(paths, fn) }, bar.submitted)
			bar.done()
			printSummary(cmd.OutOrStdout(), cmd.ErrOrStderr(), job, sum, asJSON)
			if err != nil {
				return failErr(err)
			}
			var failed error
			if len(sum.Rejected) > 0 {
				failed = fmt.Errorf("%d documents rejected", len(sum.Rejected))
			}
			if sum.Lost > 0 {
				failed = errors.Join(failed, fmt.Errorf("%d documents not queued: JetStream saw them within its duplicate window but no longer holds them, and this audit database has no result for them (do the workers use the same database? was the stream purged?); they can be queued again once the stream's duplicate window (24h by default) has passed", sum.Lost))
			}
			if wait {
				if err := follow(ctx, cmd.ErrOrStderr(), sess.store, runName, sum); err != nil {
					return failErr(errors.Join(failed, err))
				}
			}
			if failed != nil {
				return failErr(failed)
			}
			return nil
		},
	}
	c.register(cmd)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	f := cmd.Flags()
	f.StringVar(&schemaArg, "schema", "", "schema file (JSON/YAML, registered as a new version if changed) or a registered schema name")
	f.StringVar(&schemaName, "schema-name", "", "name to register a schema file under (default: the schema's own name, else the file name)")
	f.StringVar(&provider, "provider", "", "provider and model, e.g. openai:gpt-4o-mini, anthropic:claude-haiku-4-5, sim:clean")
	f.StringVar(&pool, "pool", "", "provider pool (budget group) the jobs go to (default: derived from --provider)")
	f.StringVar(&runName, "run", "", "run name to group and follow this submission (default run-<timestamp>)")
	f.StringVar(&glob, "glob", "", "in folders, only files whose name matches, e.g. '*.txt'")
	f.BoolVar(&transcode, "transcode", false, "read text that is not UTF-8 as Windows-1252 instead of rejecting it")
	f.BoolVar(&stdinText, "stdin-text", false, "read stdin (\"-\") as one document instead of JSONL")
	f.BoolVar(&wait, "wait", false, "follow the jobs queued by this invocation (and duplicates still queued) until each is done or dead-lettered; exit 1 if any document failed (including already-done ones that were dead-lettered)")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	f.IntVar(&maxReasks, "max-reasks", 0, "re-asks after an invalid answer (default: the engine's, 3)")
	f.StringVar(&mode, "mode", "", "structured-output mode: auto, text, json, strict, tools or prefill (default auto)")
	f.IntVar(&maxTokens, "max-tokens", 0, "cap on each answer's tokens")
	f.IntVar(&tokenBudget, "token-budget", 0, "cap on the tokens spent per document")
	f.StringVar(&repair, "repair", "", "local repair policy: off, syntax, coerce (default coerce)")
	f.IntVar(&inlineLimit, "inline-limit", jobs.DefaultInlineLimit, "documents larger than this many bytes go to the object store")
	f.Int64Var(&maxDocument, "max-document", jobs.DefaultMaxDocument, "documents larger than this many bytes are rejected")
	cmd.AddCommand(newResubmitCmd(&c))
	return cmd
}

// resolveSchema compiles and registers a schema file, or looks up a
// registered name (its latest version).
func resolveSchema(ctx context.Context, store *audit.Store, sub *submit.Submitter, arg, name string) (jobs.SchemaRef, error) {
	if _, err := os.Stat(arg); err == nil {
		sc, err := schema.CompileFile(arg)
		if err != nil {
			return jobs.SchemaRef{}, fmt.Errorf("--schema %s: %w", arg, err)
		}
		if name == "" {
			name = sc.Name()
		}
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(arg), filepath.Ext(arg))
		}
		return sub.RegisterSchema(ctx, name, sc)
	}
	info, err := store.SchemaByName(ctx, arg, 0)
	if err != nil {
		return jobs.SchemaRef{}, fmt.Errorf("--schema %q is neither a file nor a registered schema: %w", arg, err)
	}
	sc, err := schema.Compile(info.Body)
	if err != nil {
		return jobs.SchemaRef{}, fmt.Errorf("registered schema %s v%d: %w", info.Name, info.Version, err)
	}
	return sub.RegisterSchema(ctx, info.Name, sc)
}

func printSummary(out, errw io.Writer, job submit.Job, sum submit.Summary, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Run     string `json:"run"`
			Schema  string `json:"schema"`
			Version int    `json:"schema_version"`
			submit.Summary
		}{job.Run, job.Schema.Name, job.Schema.Version, sum})
		return
	}
	for _, r := range sum.Rejected {
		fmt.Fprintf(errw, "rejected %s: %s\n", r.Source, r.Reason)
	}
	rate := float64(sum.Queued+sum.Duplicates+sum.AlreadyDone) / max(sum.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(out, "run %s: schema %s v%d, %s → pool %s\n", job.Run, job.Schema.Name, job.Schema.Version, job.Provider, job.Pool)
	fmt.Fprintf(out, "queued %d, already done %d, duplicates skipped %d, lost %d, rejected %d in %s (%.0f docs/s)\n",
		sum.Queued, sum.AlreadyDone, sum.Duplicates, sum.Lost, len(sum.Rejected), sum.Elapsed.Round(time.Millisecond), rate)
	if sum.AlreadyDone > 0 {
		fmt.Fprintf(out, "already done: %d documents have a result or a dead letter for this schema version and model (%d dead-lettered); redo them with `submit resubmit`\n",
			sum.AlreadyDone, sum.AlreadyFailed)
	}
	if sum.Duplicates > 0 {
		fmt.Fprintf(out, "duplicates: %d documents are still queued by an earlier submit; --wait follows them\n", sum.Duplicates)
	}
}

// progress draws a one-line progress display on a terminal, nothing
// otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd())), start: time.Now()}
}

func (p *progress) submitted(s submit.Summary) {
	if !p.tty || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	n := s.Queued + s.Duplicates
	fmt.Fprintf(p.w, "\r\033[Kqueued %d  duplicates %d  rejected %d  %.0f docs/s", s.Queued, s.Duplicates, len(s.Rejected), float64(n)/max(time.Since(p.start).Seconds(), 1e-9))
}

func (p *progress) done() {
	if p.tty && !p.last.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// follow waits until every job this submission queued is final, showing
// done / failed / in flight / rate / ETA / tokens. Documents skipped as
// already done count as done (or failed) from the start. It fails if any
// document failed.
func follow(ctx context.Context, w io.Writer, store submit.JobStater, run string, sum submit.Summary) error {
	var last submit.Progress
	show := func(p submit.Progress) {
		last = p
		finished := p.Done + p.Failed
		rate := float64(finished) / max(p.Elapsed.Seconds(), 1e-9)
		eta := "?"
		if p.InFlight == 0 {
			eta = "0s"
		} else if rate > 0 {
			eta = (time.Duration(float64(p.InFlight)/rate) * time.Second).Round(time.Second).String()
		}
		fmt.Fprintf(w, "done %d  failed %d  in flight %d  %.1f docs/s  ETA %s  tokens %d\n",
			p.Done+sum.AlreadyDone-sum.AlreadyFailed, p.Failed+sum.AlreadyFailed, p.InFlight, rate, eta, p.Tokens)
	}
	if _, err := submit.Follow(ctx, store, sum.JobIDs, time.Second, show); err != nil {
		return err
	}
	failed := last.Failed + sum.AlreadyFailed
	if total := len(sum.JobIDs) + sum.AlreadyDone; failed > 0 {
		return fmt.Errorf("%d of %d documents failed: see `extractq dlq list --run %s`, redo them with `submit resubmit --from-dlq`", failed, total, run)
	}
	return nil
}
