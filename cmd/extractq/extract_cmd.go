package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/sourcegraph/conc/stream"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/schema"
)

// extractDeps is what the extract command takes from its surroundings;
// tests replace the provider factory with a fake provider.
type extractDeps struct {
	newProvider func(spec string) (llm.Provider, error)
	getenv      func(string) string
}

func newExtractCmd() *cobra.Command {
	return newExtractCmdWith(extractDeps{
		newProvider: func(spec string) (llm.Provider, error) { return extractq.NewProvider(spec) },
		getenv:      os.Getenv,
	})
}

type extractFlags struct {
	schema, provider, model, out                   string
	mode, feedback, history, schemaIn, repair      string
	concurrency, maxReasks, tokenBudget, maxTokens int
	callTimeout                                    time.Duration
	refDirs                                        []string
}

func newExtractCmdWith(deps extractDeps) *cobra.Command {
	var f extractFlags
	cmd := &cobra.Command{
		Use:   "extract --schema FILE [flags] PATH...|-",
		Short: "Extract schema-valid JSON from documents with an LLM",
		Long: `extract asks a model for the data a JSON Schema describes in each document, validates the
answer, repairs what it can locally and re-asks with precise feedback until the answer is valid
or the budget is spent. It never prints an invalid value.

Inputs: files (one document each), folders (every file below them, hidden ones skipped), JSONL
files (*.jsonl, *.ndjson: one {"id": …, "text": …} object per line) and - for stdin (JSONL when
its first line is such an object, else one document). Output: one JSON line per document, in
input order: {"id", "outcome", "value" or "error", "attempts", "repairs", "tokens"}. A summary
goes to stderr, with a progress line while stderr is a terminal.

The provider comes from --provider or EXTRACTQ_PROVIDER, e.g. openai:gpt-4o-mini,
anthropic:claude-haiku-4-5, ollama:llama3.1:8b, or sim:sloppy (the built-in simulator).

Exit status: 0 every document succeeded, 1 some failed, 2 bad usage or configuration.

Example:
  extractq extract --schema invoice.json --provider openai:gpt-4o-mini --concurrency 8 \
      --out invoices.jsonl invoices/`,
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
	fl.IntVar(&f.maxReasks, "max-reasks", 3, "re-asks of an invalid answer (at most max-reasks+1 calls per document)")
	fl.StringVar(&f.mode, "mode", string(llm.ModeAuto), "structured-output mode: auto, text, json, strict, tools or prefill (field by field, for small local models with a completion endpoint)")
	fl.StringVar(&f.feedback, "feedback", string(extractq.FeedbackReflect), "re-ask feedback: reflect, direct or polite")
	fl.StringVar(&f.history, "history", string(extractq.HistoryLast), "what a re-ask resends: last (last failed answer only) or full")
	fl.StringVar(&f.schemaIn, "schema-in", string(extractq.SchemaInAuto), "schema in the prompt: auto, example, schema or none")
	fl.StringVar(&f.repair, "repair", string(extractq.RepairCoerce), "local repairs before re-asking: off, syntax or coerce")
	fl.IntVar(&f.tokenBudget, "token-budget", 0, "tokens one document may cost over all calls (0: no cap)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "cap on each answer's tokens (0: the provider's)")
	fl.DurationVar(&f.callTimeout, "call-timeout", 0, "timeout of one HTTP call, retried as a transport failure (0: none)")
	fl.StringArrayVar(&f.refDirs, "ref-dir", nil, "resolve $refs starting with PREFIX from DIR: PREFIX=DIR (repeatable)")
	return cmd
}

func runExtract(cmd *cobra.Command, deps extractDeps, f *extractFlags, args []string) error {
	if len(args) == 0 {
		return usageErr(errors.New("no input: pass files, folders, JSONL files, or - to read stdin"))
	}
	if f.schema == "" {
		return usageErr(errors.New("no schema: pass --schema FILE (a JSON Schema, JSON or YAML)"))
	}
	if f.concurrency < 1 {
		return usageErr(fmt.Errorf("--concurrency %d: use 1 or more", f.concurrency))
	}
	var sopts []schema.Option
	for _, rd := range f.refDirs {
		prefix, dir, ok := strings.Cut(rd, "=")
		if !ok || prefix == "" || dir == "" {
			return usageErr(fmt.Errorf("--ref-dir %q: use PREFIX=DIR, e.g. https://example.com/schemas/=./schemas", rd))
		}
		sopts = append(sopts, schema.WithRefDir(prefix, dir))
	}
	s, err := schema.CompileFile(f.schema, sopts...)
	if err != nil {
		return usageErr(fmt.Errorf("schema %s: %w", f.schema, err))
	}
	spec := f.provider
	if spec == "" {
		spec = deps.getenv("EXTRACTQ_PROVIDER")
	}
	if spec == "" {
		return usageErr(errors.New("no provider: pass --provider (e.g. openai:gpt-4o-mini, or sim:sloppy for the simulator) or set EXTRACTQ_PROVIDER"))
	}
	if f.model != "" {
		family, _, _ := strings.Cut(spec, ":")
		spec = family + ":" + f.model
	}
	p, err := deps.newProvider(spec)
	if err != nil {
		return usageErr(err) // it names the provider and the fix
	}
	x, err := extractq.New(extractq.WithProvider(p),
		extractq.WithMaxReasks(f.maxReasks), extractq.WithMode(llm.Mode(f.mode)),
		extractq.WithFeedback(extractq.Feedback(f.feedback)), extractq.WithHistory(extractq.History(f.history)),
		extractq.WithSchemaIn(extractq.SchemaIn(f.schemaIn)), extractq.WithRepair(extractq.RepairPolicy(f.repair)),
		extractq.WithTokenBudget(f.tokenBudget), extractq.WithMaxTokens(f.maxTokens), extractq.WithCallTimeout(f.callTimeout))
	if err != nil {
		return usageErr(err)
	}

	out := cmd.OutOrStdout()
	var file *os.File
	if f.out != "" {
		if file, err = os.Create(f.out); err != nil {
			return usageErr(fmt.Errorf("--out: %w", err))
		}
		defer file.Close() // a second Close after the checked one is harmless
		out = file
	}
	w := bufio.NewWriter(out)
	ctx, cancel := context.WithCancelCause(cmd.Context())
	defer cancel(nil)

	sum := &summary{start: time.Now(), stderr: cmd.ErrOrStderr(), progress: isTerminal(cmd.ErrOrStderr())}
	st := stream.New().WithMaxGoroutines(f.concurrency)
	var abortOnce sync.Once
	inErr := readInputs(ctx, args, cmd.InOrStdin(), func(d document) {
		st.Go(func() stream.Callback {
			if ctx.Err() != nil {
				return func() {} // the run was stopped before this document started
			}
			line := extractOne(ctx, x, s, d)
			if fatal := stopsTheRun(line.res); fatal != nil {
				abortOnce.Do(func() { cancel(fatal) })
			}
			return func() {
				sum.add(line)
				if err := writeLine(w, line); err != nil {
					abortOnce.Do(func() { cancel(fmt.Errorf("writing the output: %w", err)) })
				}
			}
		})
	})
	st.Wait()
	werr := w.Flush()
	if file != nil {
		werr = cmp.Or(werr, file.Close())
	}
	sum.finish(p.Name())
	switch {
	case context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), context.Canceled):
		return usageErr(context.Cause(ctx))
	case inErr != nil:
		return usageErr(inErr)
	case werr != nil:
		return failErr(fmt.Errorf("writing the output: %w", werr))
	case sum.docs == 0:
		return usageErr(fmt.Errorf("no documents found in %s", strings.Join(args, ", ")))
	case sum.failed+sum.unextractable > 0:
		return failErr(fmt.Errorf("%d of %d documents got no valid value", sum.failed+sum.unextractable, sum.docs))
	}
	return nil
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

// document is one input to extract.
type document struct {
	id   json.RawMessage // as given in JSONL, else the path as a JSON string
	text string
	err  error // the input could not be read or parsed
}

// outLine is one line of output.
type outLine struct {
	ID       json.RawMessage `json:"id"`
	Outcome  string          `json:"outcome"`
	Value    json.RawMessage `json:"value,omitempty"`
	Error    string          `json:"error,omitempty"`
	Attempts int             `json:"attempts"`
	Repairs  int             `json:"repairs"`
	Tokens   int             `json:"tokens"`

	res *llm.Result
}

// outcomeBadInput marks a document that could not be read.
const outcomeBadInput = "bad_input"

func extractOne(ctx context.Context, x *extractq.Extractor, s *schema.Schema, d document) *outLine {
	l := &outLine{ID: d.id}
	if d.err != nil {
		l.Outcome, l.Error = outcomeBadInput, d.err.Error()
		return l
	}
	res, err := x.Extract(ctx, d.text, s)
	if res == nil { // a configuration error: the same for every document
		l.Outcome, l.Error = string(llm.OutcomeFatal), err.Error()
		return l
	}
	l.res = res
	l.Outcome, l.Value, l.Attempts, l.Repairs, l.Tokens = string(res.Outcome), res.Value, len(res.Attempts), res.Repairs(), res.Usage.Total()
	if err != nil {
		l.Error = err.Error()
	}
	return l
}

func writeLine(w io.Writer, l *outLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// readInputs walks the arguments in order and hands each document to emit,
// reading one at a time so that memory stays bounded by the concurrency.
func readInputs(ctx context.Context, args []string, stdin io.Reader, emit func(document)) error {
	for _, arg := range args {
		if ctx.Err() != nil {
			return nil
		}
		if arg == "-" {
			if err := readStdin(ctx, stdin, emit); err != nil {
				return fmt.Errorf("stdin: %w", err)
			}
			continue
		}
		info, err := os.Stat(arg)
		if err != nil {
			return fmt.Errorf("input %s: %w", arg, err)
		}
		if !info.IsDir() {
			readFile(ctx, arg, emit)
			continue
		}
		err = filepath.WalkDir(arg, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return filepath.SkipAll
			}
			if strings.HasPrefix(e.Name(), ".") && path != arg {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if e.Type().IsRegular() {
				readFile(ctx, path, emit)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("input %s: %w", arg, err)
		}
	}
	return nil
}

func isJSONL(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".jsonl" || ext == ".ndjson"
}

func readFile(ctx context.Context, path string, emit func(document)) {
	if isJSONL(path) {
		fh, err := os.Open(path)
		if err != nil {
			emit(document{id: jsonString(path), err: err})
			return
		}
		defer fh.Close()
		if err := readJSONL(ctx, path, bufio.NewReader(fh), emit); err != nil {
			emit(document{id: jsonString(path), err: err})
		}
		return
	}
	b, err := os.ReadFile(path)
	emit(document{id: jsonString(path), text: string(b), err: err})
}

// readStdin reads JSONL when the first line is a {"text": …} object, else
// all of stdin as one document named "-".
func readStdin(ctx context.Context, stdin io.Reader, emit func(document)) error {
	r := bufio.NewReader(stdin)
	first, err := r.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return err
	}
	if _, ok := parseRecord(first); ok {
		return readJSONL(ctx, "stdin", io.MultiReader(bytes.NewReader(first), r), emit)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	emit(document{id: jsonString("-"), text: string(first) + string(rest)})
	return nil
}

type record struct {
	ID   json.RawMessage `json:"id"`
	Text *string         `json:"text"`
}

func parseRecord(line []byte) (record, bool) {
	var rec record
	if json.Unmarshal(line, &rec) != nil || rec.Text == nil {
		return rec, false
	}
	return rec, true
}

// readJSONL emits one document per non-blank line; a line that is not a
// {"id", "text"} object becomes a bad_input document named name:LINE.
func readJSONL(ctx context.Context, name string, r io.Reader, emit func(document)) error {
	br := bufio.NewReader(r)
	for n := 1; ctx.Err() == nil; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			where := fmt.Sprintf("%s:%d", name, n)
			rec, ok := parseRecord(line)
			switch {
			case !ok:
				emit(document{id: jsonString(where), err: fmt.Errorf("%s: not a {\"id\": …, \"text\": \"…\"} object", where)})
			case len(rec.ID) == 0 || string(rec.ID) == "null":
				emit(document{id: jsonString(where), text: *rec.Text})
			default:
				emit(document{id: rec.ID, text: *rec.Text})
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// summary counts outcomes; it is only touched by the stream's callbacks,
// which run one at a time.
type summary struct {
	start    time.Time
	stderr   io.Writer
	progress bool
	shown    time.Time

	docs, ok, failed, unextractable int
	attempts, repairs               int
	usage                           llm.Usage
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
	}
	if s.progress && time.Since(s.shown) > 100*time.Millisecond {
		s.shown = time.Now()
		fmt.Fprintf(s.stderr, "\r\033[K%d done: %d ok, %d failed, %d unextractable · %.1f docs/s",
			s.docs, s.ok, s.failed, s.unextractable, float64(s.docs)/time.Since(s.start).Seconds())
	}
}

// finish prints the summary; provider is the provider string, which prices
// every "sim:…" model at the simulator's notional price.
func (s *summary) finish(provider string) {
	if s.progress {
		fmt.Fprint(s.stderr, "\r\033[K")
	}
	cost := "unknown for " + provider
	if usd, known := providers.EstimateCost(provider, s.usage); known {
		cost = fmt.Sprintf("$%.4f", usd)
	}
	fmt.Fprintf(s.stderr, "%d documents in %s: %d ok, %d failed, %d unextractable; %d attempts, %d repairs; %d tokens (%d prompt + %d completion); estimated cost %s\n",
		s.docs, time.Since(s.start).Round(time.Millisecond), s.ok, s.failed, s.unextractable, s.attempts, s.repairs,
		s.usage.Total(), s.usage.PromptTokens, s.usage.CompletionTokens, cost)
}
