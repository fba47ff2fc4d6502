package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/sourcegraph/conc/stream"
	"github.com/spf13/cobra"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/source"
	"github.com/extractq/extractq/internal/source/sourcecli"
	"github.com/extractq/extractq/schema"
)

// extractDeps is what the extract command takes from its surroundings;
// tests replace the provider factory with a fake provider.
type extractDeps struct {
	newProvider func(spec string) (llm.Provider, error)
	getenv      func(string) string
	// exit ends the process at a second Ctrl-C.
	exit func(code int)
}

func newExtractCmd() *cobra.Command {
	return newExtractCmdWith(extractDeps{
		newProvider: func(spec string) (llm.Provider, error) { return extractq.NewProvider(spec) },
		getenv:      os.Getenv,
		exit:        os.Exit,
	})
}

type extractFlags struct {
	schema, provider, model, out                   string
	mode, feedback, history, schemaIn, repair      string
	concurrency, maxReasks, tokenBudget, maxTokens int
	chunk                                          string
	callTimeout                                    time.Duration
	refDirs                                        []string
	resume                                         bool
	in                                             cli.InputFlags
	src                                            sourcecli.Flags
}

func newExtractCmdWith(deps extractDeps) *cobra.Command {
	var f extractFlags
	cmd := &cobra.Command{
		Use:   "extract --schema FILE [flags] PATH...|-|s3://BUCKET/PREFIX",
		Short: "Extract schema-valid JSON from documents with an LLM",
		Long: `extract asks a model for the data a JSON Schema describes in each document, validates the
answer, repairs what it can locally and re-asks with precise feedback until the answer is valid
or the budget is spent. It never prints an invalid value.

Inputs: files (one document each), folders (every file below them, hidden ones skipped, --glob
filters), JSONL files (*.jsonl, *.ndjson, also .gz or .bz2: one {"id": …, "text": …} object per line, local, in a
bucket or listed by URL; --max-document bounds each line, not the file) and - for
stdin (JSONL when its first line is such an object, else one document; --stdin-text forces the
latter). A file's format is recognised by its content (--format overrides): PDFs, HTML, e-mails,
office files and images are read with their pages, a .gz or .bz2 file as the file it compresses;
the files of a zip or tar archive, an e-mail's attachments (and a PDF's attached files) become
documents of their own (id FILE#NAME; --attachments). Pages without text (scans) go to a model that reads
images (--input), else the document is rejected naming the remedies. Empty, unreadable,
encrypted (without --password), non-UTF-8 text (unless --transcode) and oversized
(--max-document) documents are never sent to the model: they get a bad_input line. These are
the same rules as submit's.

` + sourcecli.Help + `
Each document is fetched when its turn comes (--concurrency at once) and read like a local file;
one that cannot be fetched (deleted since the listing, a URL answering 404, a NULL body) gets a
bad_input line and the rest go on. --resume skips by that id. extract has no --incremental
(nor --full, --watermark-column): for nightly runs that read only new or changed documents, use
submit --incremental. --from-sql runs against the audit database ($EXTRACTQ_DATABASE_URL) unless
--sql-url names another. See doc/etl.md.

Output: one JSON line per document, in input order: {"id", "outcome", "value" or "error",
"attempts", "repairs", "tokens"}, and for a document with pages "sources": each value's page,
range within the page and box. Progress (total, done, failed, rate, ETA, and why it waits)
and a summary go to stderr.

Ctrl-C stops taking documents, lets the running ones finish, writes only complete lines, prints
the summary and exits 130; a second Ctrl-C quits at once. --resume (with --out) skips the
documents whose id already has a final line in the file, so an interrupted run continues where
it stopped without paying twice.

The provider comes from --provider or EXTRACTQ_PROVIDER, e.g. openai:gpt-4o-mini,
anthropic:claude-haiku-4-5, ollama:llama3.1:8b, or sim:sloppy (the built-in simulator).

Exit status: 0 every document succeeded, 1 some failed, 2 bad usage or configuration (including
an input with no document, a bucket or query that may not be read), 3 the source's server
unreachable, 130 interrupted.

Example:
  extractq extract --schema invoice.json --provider openai:gpt-4o-mini --concurrency 8 \
      --out invoices.jsonl invoices/
  extractq extract --schema invoice.json --provider openai:gpt-4o-mini --out invoices.jsonl --resume invoices/
  extractq extract --schema invoice.json --provider openai:gpt-4o-mini --glob '*.pdf' --out march.jsonl s3://invoices/2026/03/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExtract(cmd, deps, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schema, "schema", "", "JSON Schema file (JSON or YAML; also the compact notation) (required)")
	fl.StringVar(&f.provider, "provider", "", "provider spec, e.g. openai:gpt-4o-mini or sim:sloppy (default $EXTRACTQ_PROVIDER)")
	fl.StringVar(&f.model, "model", "", "model, replacing the one in the provider spec")
	fl.IntVar(&f.concurrency, "concurrency", 4, "documents extracted at once")
	fl.StringVar(&f.out, "out", "", "write the JSON lines to this file instead of stdout")
	fl.BoolVar(&f.resume, "resume", false, "with --out: skip documents whose id already has a final line in the file, append the rest")
	fl.IntVar(&f.maxReasks, "max-reasks", 3, "re-asks of an invalid answer (at most max-reasks+1 calls per document)")
	fl.StringVar(&f.mode, "mode", string(llm.ModeAuto), "structured-output mode: auto, text, json, strict, tools or prefill (field by field, for small local models with a completion endpoint)")
	fl.StringVar(&f.feedback, "feedback", string(extractq.FeedbackReflect), "re-ask feedback: reflect, direct or polite")
	fl.StringVar(&f.history, "history", string(extractq.HistoryLast), "what a re-ask resends: last (last failed answer only) or full")
	fl.StringVar(&f.schemaIn, "schema-in", string(extractq.SchemaInAuto), "schema in the prompt: auto, example, schema or none")
	fl.StringVar(&f.repair, "repair", string(extractq.RepairCoerce), "local repairs before re-asking: off, syntax or coerce")
	cli.ChunkVar(fl, &f.chunk)
	fl.IntVar(&f.tokenBudget, "token-budget", 0, "tokens one document may cost over all calls (0: no cap)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "cap on each answer's tokens (0: the provider's)")
	cli.DurationVar(fl, &f.callTimeout, "call-timeout", 0, "timeout of one HTTP call, retried as a transport failure (0: none)")
	fl.StringArrayVar(&f.refDirs, "ref-dir", nil, "resolve $refs starting with PREFIX from DIR: PREFIX=DIR (repeatable)")
	f.in.Register(cmd.Flags())
	f.src.Register(cmd.Flags())
	return cmd
}

func runExtract(cmd *cobra.Command, deps extractDeps, f *extractFlags, args []string) error {
	if f.schema == "" {
		return cli.Usage(errors.New("no schema: pass --schema FILE (a JSON Schema, JSON or YAML)"))
	}
	if f.concurrency < 1 {
		return cli.Usage(fmt.Errorf("--concurrency %d: use 1 or more", f.concurrency))
	}
	if f.resume && f.out == "" {
		return cli.Usage(errors.New("--resume needs --out FILE: the file whose complete lines say what is done"))
	}
	r, input, err := f.in.Reader(cmd.InOrStdin(), deps.getenv)
	if err != nil {
		return err
	}
	remote, err := f.src.Check(args, "extract")
	if err != nil {
		return cli.Usage(err)
	}
	if !remote {
		if err := r.Check(args); err != nil {
			return cli.Usage(err)
		}
	}
	var sopts []schema.Option
	for _, rd := range f.refDirs {
		prefix, dir, ok := strings.Cut(rd, "=")
		if !ok || prefix == "" || dir == "" {
			return cli.Usage(fmt.Errorf("--ref-dir %q: use PREFIX=DIR, e.g. https://example.com/schemas/=./schemas", rd))
		}
		sopts = append(sopts, schema.WithRefDir(prefix, dir))
	}
	s, err := schema.CompileFile(f.schema, sopts...)
	if err != nil {
		return cli.Usage(fmt.Errorf("schema %s: %w", f.schema, err))
	}
	spec := f.provider
	if spec == "" {
		spec = deps.getenv("EXTRACTQ_PROVIDER")
	}
	if spec == "" {
		return cli.Usage(errors.New("no provider: pass --provider (e.g. openai:gpt-4o-mini, or sim:sloppy for the simulator) or set EXTRACTQ_PROVIDER"))
	}
	if f.model != "" {
		family, _, _ := strings.Cut(spec, ":")
		spec = family + ":" + f.model
	}
	p, err := deps.newProvider(spec)
	if err != nil {
		return cli.Usage(err) // it names the provider and the fix
	}
	bar := cli.NewProgress(cmd.ErrOrStderr(), "extract")
	waits := &backoffs{bar: bar}
	chunking, err := cli.ParseChunk(f.chunk)
	if err != nil {
		return err
	}
	x, err := extractq.New(extractq.WithProvider(p), extractq.WithChunking(chunking),
		extractq.WithMaxReasks(f.maxReasks), extractq.WithMode(llm.Mode(f.mode)),
		extractq.WithFeedback(extractq.Feedback(f.feedback)), extractq.WithHistory(extractq.History(f.history)),
		extractq.WithSchemaIn(extractq.SchemaIn(f.schemaIn)), extractq.WithRepair(extractq.RepairPolicy(f.repair)),
		extractq.WithTokenBudget(f.tokenBudget), extractq.WithMaxTokens(f.maxTokens), extractq.WithCallTimeout(f.callTimeout),
		extractq.WithSleeper(waits.sleep), extractq.WithInput(input))
	if err != nil {
		return cli.Usage(err)
	}
	f.in.ForModel(r, input, p.Capabilities())
	var src source.Source
	if remote {
		opened, closeSrc, err := f.src.Open(cmd.Context(), args, f.in.Glob, devmode.DatabaseURL(), "")
		if err != nil {
			return err
		}
		defer closeSrc()
		if err := opened.Check(cmd.Context()); err != nil { // before anything is sent
			return sourceError(err)
		}
		src = opened
	}

	out := &lineWriter{w: cmd.OutOrStdout()}
	var done map[string]bool // --resume: ids with a final line already
	if f.out != "" {
		file, ids, err := openOut(f.out, f.resume)
		if err != nil {
			return cli.Usage(err)
		}
		defer file.Close() // a second Close after the checked one is harmless
		out.w, done = file, ids
	}

	sum := &summary{start: time.Now(), stderr: cmd.ErrOrStderr()}
	// The run's context stops the documents at a fatal provider error; the
	// taking context also stops taking new ones at the first Ctrl-C.
	runCtx, stopRun := context.WithCancelCause(cmd.Context())
	defer stopRun(nil)
	var running sync.WaitGroup
	var inFlight int
	var inFlightMu sync.Mutex
	taking, stopSignals := cli.Interruptible(runCtx, func() {
		inFlightMu.Lock()
		n := inFlight
		inFlightMu.Unlock()
		fmt.Fprintf(cmd.ErrOrStderr(), "\nextract: interrupted: taking no more documents, finishing the %d running; Ctrl-C again to quit at once\n", n)
	}, func() {
		// Nothing half-written: take the output before leaving.
		out.mu.Lock()
		fmt.Fprintln(cmd.ErrOrStderr(), "extract: quit; the output holds complete lines only (continue with --resume)")
		deps.exit(cli.ExitInterrupted)
	})
	defer stopSignals()

	bar.Start(runCtx)
	st := stream.New().WithMaxGoroutines(f.concurrency)
	var abortOnce sync.Once
	skipped := 0 // by the reading goroutine; the stream's callbacks add to sum.skipped
	// take extracts the documents one input yields (one, or an e-mail with
	// its attachments), in order, on one of the stream's goroutines: a
	// remote document is fetched there, so fetching is bounded too.
	take := func(load func(context.Context) []intake.Doc) {
		running.Add(1)
		st.Go(func() stream.Callback {
			defer running.Done()
			inFlightMu.Lock()
			inFlight++
			bar.SetActive(inFlight, -1)
			inFlightMu.Unlock()
			var lines []*outLine
			skip := 0
			for _, d := range load(runCtx) {
				if done[d.ID] {
					skip++
					continue
				}
				line := extractOne(runCtx, x, s, d)
				if d.Err != nil && runCtx.Err() != nil { // a fetch stopped with the run
					line = &outLine{ID: d.ID, Outcome: string(llm.OutcomeCanceled)}
				}
				if fatal := stopsTheRun(line.res); fatal != nil {
					abortOnce.Do(func() { stopRun(fatal) })
				}
				lines = append(lines, line)
			}
			inFlightMu.Lock()
			inFlight--
			bar.SetActive(inFlight, -1)
			inFlightMu.Unlock()
			return func() {
				sum.skipped += skip
				for _, line := range lines {
					if line.Outcome == string(llm.OutcomeCanceled) && runCtx.Err() != nil {
						sum.notWritten++ // stopped by a fatal error: done again with --resume
						continue
					}
					sum.add(line)
					if line.Outcome == string(llm.OutcomeOK) {
						bar.Add(1, 0)
					} else {
						bar.Add(0, 1)
					}
					if err := out.writeLine(line); err != nil {
						abortOnce.Do(func() { stopRun(fmt.Errorf("writing the output: %w", err)) })
					}
				}
			}
		})
	}
	var readErr error
	var counted <-chan struct{}
	if remote {
		readErr = listRemote(taking, src, r, done, bar, func() { skipped++ }, take)
	} else {
		counted = countInputs(taking, r, args, done, bar) // stops counting at Ctrl-C too
		readErr = r.Read(taking, args, func(d intake.Doc) error {
			if done[d.ID] {
				skipped++
				return nil
			}
			take(func(context.Context) []intake.Doc { return []intake.Doc{d} })
			return nil
		})
	}
	st.Wait()
	if counted != nil { // remote listings count as they go
		<-counted
	}
	bar.Stop()
	werr := out.close()
	sum.skipped += skipped
	sum.finish(p.Name())
	switch {
	case context.Cause(runCtx) != nil && !errors.Is(context.Cause(runCtx), context.Canceled):
		return cli.Usage(context.Cause(runCtx))
	case cli.WasInterrupted(taking):
		msg := "interrupted after every document was taken: the running ones finished"
		if errors.Is(readErr, cli.ErrInterrupted) {
			msg = "interrupted: the documents not started were not written"
		}
		if f.out != "" {
			msg += fmt.Sprintf("; continue with the same command and --resume (it skips the %d ids already in %s)", sum.docs+sum.skipped, f.out)
		}
		return cli.Interrupted(errors.New(msg))
	case readErr != nil && errors.Is(readErr, intake.ErrNoDocuments) && sum.skipped > 0:
		// Everything was done already.
	case readErr != nil && remote:
		return sourceError(readErr)
	case readErr != nil:
		return cli.Usage(readErr)
	case werr != nil:
		return cli.Failed(fmt.Errorf("writing the output: %w", werr))
	case sum.docs == 0 && sum.skipped == 0 && remote:
		return cli.Usage(fmt.Errorf("no documents found in %s", src.URI()))
	case sum.docs == 0 && sum.skipped == 0:
		return cli.Usage(fmt.Errorf("no documents found in %s", strings.Join(args, ", ")))
	case sum.failed+sum.unextractable > 0:
		return cli.Failed(fmt.Errorf("%d of %d documents got no valid value", sum.failed+sum.unextractable, sum.docs))
	}
	return nil
}

// countInputs counts the documents under args (not stdin, which cannot be
// read twice) in the background and gives the total to the progress
// display; until then the display shows how many were read so far. The
// returned channel closes when it is done or ctx ends.
func countInputs(ctx context.Context, r *intake.Reader, args []string, skip map[string]bool, bar *cli.Progress) <-chan struct{} {
	done := make(chan struct{})
	for _, a := range args {
		if a == "-" {
			close(done)
			return done
		}
	}
	go func() {
		defer close(done)
		n := 0
		counter := *r
		err := counter.Read(ctx, args, func(d intake.Doc) error {
			if skip[d.ID] {
				return nil
			}
			n++
			if n%1000 == 0 {
				bar.SetTotal(n, false)
			}
			return nil
		})
		if err == nil {
			bar.SetTotal(n, true)
		}
	}()
	return done
}

// backoffs tracks documents waiting out a transport backoff (429, 5xx,
// timeouts), so that the progress display can say why nothing moves.
type backoffs struct {
	bar   *cli.Progress
	mu    sync.Mutex
	until map[*time.Time]struct{}
}

func (b *backoffs) sleep(ctx context.Context, d time.Duration) error {
	wake := time.Now().Add(d)
	b.mu.Lock()
	if b.until == nil {
		b.until = map[*time.Time]struct{}{}
	}
	b.until[&wake] = struct{}{}
	b.show()
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.until, &wake)
		b.show()
		b.mu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// show sets the reason; b.mu is held.
func (b *backoffs) show() {
	if len(b.until) == 0 {
		b.bar.SetReason("")
		return
	}
	var next time.Time
	for w := range b.until {
		if next.IsZero() || w.Before(next) {
			next = *w
		}
	}
	b.bar.SetReason(fmt.Sprintf("%d backing off after a rate limit or server error (next retry in %s)",
		len(b.until), time.Until(next).Round(time.Second)))
}

// lineWriter writes whole lines, each with one Write, under a lock that a
// second Ctrl-C takes before the process exits: the output never ends
// with half a line.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) writeLine(line *outLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

func (l *lineWriter) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.w.(*os.File); ok && f != os.Stdout {
		return f.Close()
	}
	return nil
}

// finalOutcomes are the outcomes a rerun would not change: --resume skips
// their documents. Documents that failed for a passing reason (transport,
// fatal, canceled) are tried again.
var finalOutcomes = map[string]bool{
	string(llm.OutcomeOK): true, string(llm.OutcomeUnextractable): true,
	string(llm.OutcomeExhausted): true, string(llm.OutcomeBudgetExceeded): true,
	outcomeBadInput: true,
}

// openOut opens --out. Without resume it is created afresh. With resume,
// the complete lines with a final outcome are kept (a torn last line, and
// lines of documents to try again, are dropped) and their ids returned;
// new lines are appended after them.
func openOut(path string, resume bool) (*os.File, map[string]bool, error) {
	if !resume {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--out: %w", err)
		}
		return f, nil, nil
	}
	old, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--out: %w", err)
		}
		return f, map[string]bool{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	defer old.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".resume-*")
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing left to remove
	ids := map[string]bool{}
	br := bufio.NewReaderSize(old, 64<<10)
	w := bufio.NewWriter(tmp)
	for {
		line, err := br.ReadBytes('\n')
		if err == nil { // a line without its newline is torn: drop it
			var l struct {
				ID      json.RawMessage `json:"id"`
				Outcome string          `json:"outcome"`
			}
			if json.Unmarshal(line, &l) == nil && finalOutcomes[l.Outcome] {
				ids[idText(l.ID)] = true
				if _, err := w.Write(line); err != nil {
					tmp.Close()
					return nil, nil, fmt.Errorf("--out: %w", err)
				}
			}
			continue
		}
		if err == io.EOF {
			break
		}
		tmp.Close()
		return nil, nil, fmt.Errorf("--out %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		tmp.Close()
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	return tmp, ids, nil // tmp is now path, positioned at its end
}

// idText is an output line's id as the reader gives it: a JSON string's
// text, a number's digits.
func idText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// stopsTheRun returns why the remaining documents are not worth trying: the
// provider rejected the credentials, the model or the account, which would
// fail every document the same way.
func stopsTheRun(res *llm.Result) error {
	if res == nil || res.Outcome != llm.OutcomeFatal {
		return nil
	}
	var pe *llm.Error
	if errors.As(res.Cause, &pe) {
		switch pe.Class {
		case llm.ClassAuth, llm.ClassPermission, llm.ClassNotFound, llm.ClassQuota:
			return fmt.Errorf("stopped: %w; check the API key, the model name and the account", pe)
		}
	}
	return nil
}

// outLine is one line of output.
type outLine struct {
	ID       string          `json:"id"`
	Outcome  string          `json:"outcome"`
	Value    json.RawMessage `json:"value,omitempty"`
	Error    string          `json:"error,omitempty"`
	Attempts int             `json:"attempts"`
	Repairs  int             `json:"repairs"`
	Tokens   int             `json:"tokens"`
	// Sources say where each value was found (page, range, box) in a
	// document with pages.
	Sources map[string]llm.Source `json:"sources,omitempty"`

	res *llm.Result
}

// outcomeBadInput marks a document that was not sent to the model: it
// could not be read, or the input rules rejected it.
const outcomeBadInput = "bad_input"

func extractOne(ctx context.Context, x *extractq.Extractor, s *schema.Schema, d intake.Doc) *outLine {
	l := &outLine{ID: d.ID}
	if d.Err != nil {
		l.Outcome, l.Error = outcomeBadInput, d.Err.Error()
		if d.Source != d.ID {
			l.Error = d.Source + ": " + l.Error
		}
		return l
	}
	res, err := x.ExtractOriginal(ctx, d.Document, d.Original, s)
	if res == nil && (errors.Is(err, document.ErrNoText) || errors.Is(err, extractq.ErrNoNative)) { // this document's pages, not the run
		l.Outcome, l.Error = outcomeBadInput, d.Source+": "+err.Error()
		return l
	}
	if res == nil { // a configuration error: the same for every document
		l.Outcome, l.Error = string(llm.OutcomeFatal), err.Error()
		return l
	}
	l.res = res
	if len(d.Document.Pages) > 0 {
		l.Sources = res.Sources
	}
	l.Outcome, l.Value, l.Attempts, l.Repairs, l.Tokens = string(res.Outcome), res.Value, len(res.Attempts), res.Repairs(), res.Usage.Total()
	if err != nil {
		l.Error = err.Error()
	}
	return l
}

// summary counts outcomes; it is only touched by the stream's callbacks,
// which run one at a time.
type summary struct {
	start  time.Time
	stderr io.Writer

	docs, ok, failed, unextractable int
	skipped, notWritten             int
	attempts, repairs               int
	usage                           llm.Usage
	// byMode is the spend of each mode the calls used, for the cost per
	// valid document; modes lists them in the order first seen.
	byMode map[llm.Mode]*modeSpend
	modes  []llm.Mode
}

// modeSpend is what the calls of one mode used, and how many documents
// ended valid with an answer in that mode.
type modeSpend struct {
	requests, valid int
	usage           llm.Usage
}

func (s *summary) mode(m llm.Mode) *modeSpend {
	if s.byMode == nil {
		s.byMode = map[llm.Mode]*modeSpend{}
	}
	ms := s.byMode[m]
	if ms == nil {
		ms = &modeSpend{}
		s.byMode[m] = ms
		s.modes = append(s.modes, m)
	}
	return ms
}

func (s *summary) add(l *outLine) {
	s.docs++
	switch l.Outcome {
	case string(llm.OutcomeOK):
		s.ok++
	case string(llm.OutcomeUnextractable):
		s.unextractable++
	default:
		s.failed++
	}
	s.attempts += l.Attempts
	s.repairs += l.Repairs
	if l.res != nil {
		s.usage = s.usage.Add(l.res.Usage)
		for i := range l.res.Attempts {
			a := &l.res.Attempts[i]
			ms := s.mode(a.Mode)
			ms.requests++
			ms.usage = ms.usage.Add(a.Usage)
		}
		if n := len(l.res.Attempts); n > 0 && l.res.Outcome == llm.OutcomeOK {
			s.mode(l.res.Attempts[n-1].Mode).valid++
		}
	}
}

// finish prints the summary; provider is the provider string, which prices
// every "sim:…" model at the simulator's notional price.
func (s *summary) finish(provider string) {
	cost := "unknown for " + provider
	if usd, known := providers.EstimateCost(provider, s.usage); known {
		cost = fmt.Sprintf("$%.4f", usd)
	}
	fmt.Fprintf(s.stderr, "%d documents in %s: %d ok, %d failed, %d unextractable; %d attempts, %d repairs; %d tokens (%d prompt, %d of them cached, + %d completion); estimated cost %s\n",
		s.docs, time.Since(s.start).Round(time.Millisecond), s.ok, s.failed, s.unextractable, s.attempts, s.repairs,
		s.usage.Total(), s.usage.PromptTokens, s.usage.CachedPromptTokens, s.usage.CompletionTokens, cost)
	for _, m := range s.modes {
		fmt.Fprintf(s.stderr, "  %s\n", s.byMode[m].line(m, provider))
	}
	if s.skipped > 0 {
		fmt.Fprintf(s.stderr, "%d documents skipped: already done in the output (--resume)\n", s.skipped)
	}
	if s.notWritten > 0 {
		fmt.Fprintf(s.stderr, "%d documents stopped before an answer were not written: run again with --resume once the cause is fixed\n", s.notWritten)
	}
}

// line reports one mode's tokens per request and per valid document: what
// a valid document costs in that mode.
func (ms *modeSpend) line(m llm.Mode, provider string) string {
	u := ms.usage
	per := func(n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f in (%.1f cached) + %.1f out", float64(u.PromptTokens)/float64(n),
			float64(u.CachedPromptTokens)/float64(n), float64(u.CompletionTokens)/float64(n))
	}
	name := string(m)
	if name == "" {
		name = "unknown"
	}
	out := fmt.Sprintf("mode %s: %d requests, %d valid documents; tokens per request %s; per valid document %s",
		name, ms.requests, ms.valid, per(ms.requests), per(ms.valid))
	if usd, known := providers.EstimateCost(provider, u); known && ms.valid > 0 {
		out += fmt.Sprintf("; estimated cost per valid document $%.6f", usd/float64(ms.valid))
	}
	return out
}
