package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/eval"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/evalrun"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

type evalFlags struct {
	schemaFile, labels, schemaName string
	providers, modes, runs         []string
	fleet, resume, asJSON          bool
	simAnswers                     bool
	html, state, baseline, maxDrop string
	maxReasks, concurrency         int
	tolerance                      float64
	fleetTimeout                   time.Duration
}

// evalReport is what --json prints and --baseline reads back.
type evalReport struct {
	Schema       string          `json:"schema"`
	Labels       int             `json:"labels"`
	Unlabelled   []string        `json:"unlabelled,omitempty"`
	Orphans      []string        `json:"orphans,omitempty"`
	Combinations []eval.Summary  `json:"combinations"`
	Baseline     string          `json:"baseline,omitempty"`
	Regressions  []evalRegressed `json:"regressions,omitempty"`
}

type evalRegressed struct {
	Combination string `json:"combination"`
	eval.Regression
	Text string `json:"text"`
}

func newEvalCmd() *cobra.Command {
	var (
		c cli.Conn
		f evalFlags
	)
	cmd := &cobra.Command{
		Use:   "eval --schema FILE --labels PATH (--provider P... [--mode M...] | --run NAME...)",
		Short: "Measure how often each field comes back right, and what a correct document costs",
		Long: `eval scores extracted values against labels: documents with the values they should give.

Labels are a folder with NAME.expected.json beside each document NAME.* (the label files are never
read as documents), or a JSONL file of {"id", "text" | "path", "expected"}. Every label must validate
against the schema; a label that does not, two labels for one id, and malformed lines are reported
together. Documents without a label and labels without a document are listed, not dropped silently.

With --provider (repeatable) and --mode (repeatable) every combination extracts every labelled
document one-shot through the library (with --fleet: submitted to the fleet as a run named
eval-PROVIDER-MODE, then scored from the audit). With --run (repeatable) runs already in the audit are
scored and no model is called; a run made with another schema version than --schema is refused.

Per combination: the share of valid and of fully correct documents, field accuracy (exact and
normalised: numbers by value within x-eval tolerance or --tolerance, dates as dates, strings with case
and white space folded, enums exact), precision and recall of arrays of objects (items aligned by
x-merge-key or best match), re-asks per document, cost per valid and per correct document, p50/p95
latency; then the worst fields with example mismatches. A schema node may carry
"x-eval": {"tolerance": 0.01} | {"unordered": true} | {"ignore": true}.

The simulator (sim:PROFILE providers) answers labelled documents from the labels, its faults on top,
so its figures show repairs and re-asks on the way to correct values; --sim-answers=false restores
values drawn from the text's words.

A combination whose provider fails (outage past the retries, refused key, unknown model) is reported
incomplete and the others still run; what finished is kept in --state, and --resume continues.

Regression guard for CI: --baseline RUN (or a report saved with --json) and --max-drop 2% exit 1
when overall accuracy, the share of correct documents or any field falls by more than that.

Exit codes: 0 done (and no regression), 1 a regression or an incomplete combination, 2 bad usage or
bad labels, 3 Postgres or NATS unreachable.

Examples:
  extractq eval --schema examples/invoice.schema.json --labels examples/invoices \
      --provider sim:clean --provider sim:sloppy --mode json --mode tools
  extractq eval --schema examples/invoice.schema.json --labels examples/invoices --run demo
  extractq eval --schema s.json --labels labels.jsonl --provider openai:gpt-4o-mini \
      --baseline last-good.json --max-drop 2% --json > report.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, &c, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schemaFile, "schema", "", "the JSON Schema (or YAML, or compact notation) the labels follow (required)")
	fl.StringVar(&f.labels, "labels", "", "labels: a folder with NAME.expected.json beside each document, or a JSONL file (required)")
	fl.StringArrayVar(&f.providers, "provider", nil, "a provider to evaluate (repeatable), e.g. openai:gpt-4o-mini or sim:sloppy")
	fl.StringArrayVar(&f.modes, "mode", nil, "a structured-output mode to evaluate (repeatable): auto, text, json, strict, tools, prefill (default auto)")
	fl.StringArrayVar(&f.runs, "run", nil, "score a run already in the audit (repeatable); calls no model")
	fl.BoolVar(&f.fleet, "fleet", false, "submit each combination to the fleet as run eval-PROVIDER-MODE instead of extracting one-shot")
	fl.StringVar(&f.schemaName, "schema-name", "", "with --fleet: the name the schema is registered under (default: its title or file name)")
	cli.DurationVar(fl, &f.fleetTimeout, "fleet-timeout", time.Hour, "with --fleet: how long to wait for a combination's documents to be final")
	fl.IntVar(&f.maxReasks, "max-reasks", -1, "re-asks of an invalid answer (default: the library's, 3)")
	fl.IntVar(&f.concurrency, "concurrency", 4, "documents extracted at once per combination (one-shot)")
	fl.Float64Var(&f.tolerance, "tolerance", 0, "numbers within this absolute difference match (x-eval tolerance overrides it per field)")
	fl.BoolVar(&f.simAnswers, "sim-answers", true, "sim: providers answer labelled documents from the labels")
	fl.StringVar(&f.state, "state", ".extractq/eval", "folder keeping each combination's finished documents, for --resume")
	fl.BoolVar(&f.resume, "resume", false, "continue the combinations from --state instead of starting afresh")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fl.StringVar(&f.html, "html", "", "also write an HTML report to this file (worst fields, example mismatches beside the document)")
	fl.StringVar(&f.baseline, "baseline", "", "a run in the audit, or a report saved with --json, to compare against")
	fl.StringVar(&f.maxDrop, "max-drop", "2%", "with --baseline: the largest allowed fall of accuracy, correct documents or any field (2% or 0.02)")
	c.AddDatabaseFlag(cmd, false)
	c.AddNATSFlag(cmd, false)
	return cmd
}

func runEval(cmd *cobra.Command, c *cli.Conn, f *evalFlags) error {
	ctx := cmd.Context()
	if f.schemaFile == "" || f.labels == "" {
		return cli.Usage(errors.New("eval needs --schema FILE and --labels PATH"))
	}
	if len(f.providers) == 0 && len(f.runs) == 0 {
		return cli.Usage(errors.New("nothing to evaluate: give --provider (and --mode) to extract, or --run NAME to score a run in the audit"))
	}
	if len(f.modes) > 0 && len(f.providers) == 0 {
		return cli.Usage(errors.New("--mode needs --provider: modes of a run already in the audit are fixed"))
	}
	maxDrop, err := parseShare(f.maxDrop)
	if err != nil {
		return cli.Usage(fmt.Errorf("--max-drop %q: %w", f.maxDrop, err))
	}
	var modes []llm.Mode
	for _, m := range f.modes {
		switch mode := llm.Mode(m); mode {
		case llm.ModeAuto, llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools, llm.ModePrefill:
			modes = append(modes, mode)
		default:
			return cli.Usage(fmt.Errorf("--mode %q: use auto, text, json, strict, tools or prefill", m))
		}
	}
	s, err := schema.CompileFile(f.schemaFile)
	if err != nil {
		return cli.Usage(fmt.Errorf("schema %s: %w", f.schemaFile, err))
	}
	// Labelled documents are read as extract reads them: a PDF or an
	// e-mail is scored against the text its reader makes.
	set, err := eval.Load(f.labels, s, eval.LoadOptions{ReadDocument: func(path string) (string, error) {
		d, err := document.ReadFile(ctx, path, document.Options{})
		if err != nil {
			return "", err
		}
		return d.Text, nil
	}})
	if err != nil {
		return cli.Usage(err)
	}
	rep := evalReport{Schema: f.schemaFile, Labels: len(set.Labels), Unlabelled: set.Unlabelled, Orphans: set.Orphans}
	stderr := cmd.ErrOrStderr()
	for _, u := range set.Unlabelled {
		fmt.Fprintf(stderr, "eval: %s has no label (%s beside it): not scored\n", u, eval.LabelSuffix)
	}
	for _, o := range set.Orphans {
		fmt.Fprintf(stderr, "eval: label %s has no document: not run\n", o)
	}

	st := evalrun.Settings{
		Schema: s, Labels: set.Labels, Score: eval.Options{Tolerance: f.tolerance},
		MaxReasks: f.maxReasks, Concurrency: f.concurrency, StateDir: f.state, Resume: f.resume,
	}
	var key *sim.AnswerKey
	if f.simAnswers {
		key = sim.NewAnswerKey()
		for _, l := range set.Labels {
			key.Add(l.Text, l.Expected)
		}
	}
	st.NewProvider = func(spec string) (llm.Provider, error) {
		if strings.HasPrefix(spec, simprovider.Family+":") && key != nil {
			return simprovider.NewWith(spec, sim.WithAnswers(key))
		}
		return extractq.NewProvider(spec)
	}
	// One progress display per combination, stopped before the next.
	var bar *cli.Progress
	startBar := func(cb evalrun.Combination) {
		bar = cli.NewProgress(stderr, "eval "+cb.Name())
		bar.SetTotal(len(set.Labels), true)
		bar.Start(ctx)
	}
	st.Progress = func(_ evalrun.Combination, done, _ int) { bar.SetDone(done, 0) }

	var store *audit.Store
	needStore := len(f.runs) > 0 || f.fleet || (f.baseline != "" && !strings.HasSuffix(f.baseline, ".json"))
	if needStore {
		if store, err = c.OpenStore(ctx, cli.Migrated); err != nil {
			return err
		}
		defer store.Close()
	}
	incomplete := false
	combos := evalrun.Combinations(f.providers, modes)
	if f.fleet && len(combos) > 0 {
		nc, js, err := c.ConnectNATS(ctx, "extractq-eval")
		if err != nil {
			return err
		}
		defer nc.Drain()
		if _, err := jobs.CheckStreams(ctx, js); err != nil {
			return cli.Failed(err)
		}
		fleet := &evalrun.Fleet{
			Submitter: submit.New(js, store), Store: store, Timeout: f.fleetTimeout,
			SchemaName: cli.SchemaName(f.schemaFile, s, f.schemaName), Progress: st.Progress,
		}
		for _, cb := range combos {
			startBar(cb)
			sum, _, err := fleet.Run(ctx, st, cb)
			bar.Stop()
			if err != nil {
				return cli.Failed(err)
			}
			incomplete = incomplete || sum.Incomplete
			rep.Combinations = append(rep.Combinations, sum)
		}
	} else {
		for _, cb := range combos {
			startBar(cb)
			sum, _, err := evalrun.Run(ctx, st, cb)
			bar.Stop()
			var pe *evalrun.ProviderError
			switch {
			case errors.As(err, &pe):
				fmt.Fprintf(stderr, "eval: %v\n", err)
			case err != nil && ctx.Err() != nil:
				return cli.Interrupted(err)
			case err != nil:
				return cli.Usage(err)
			}
			incomplete = incomplete || sum.Incomplete
			rep.Combinations = append(rep.Combinations, sum)
		}
	}
	for _, run := range f.runs {
		sum, _, err := evalrun.FromRun(ctx, store, run, s, set.Labels, st.Score)
		if err != nil {
			if errors.Is(err, audit.ErrNoSuchRun) {
				return cli.Usage(err)
			}
			return cli.Failed(err)
		}
		incomplete = incomplete || sum.Incomplete
		rep.Combinations = append(rep.Combinations, sum)
	}

	if f.baseline != "" {
		base, err := loadBaseline(ctx, store, f.baseline, s, set.Labels, st.Score)
		if err != nil {
			return err
		}
		rep.Baseline = f.baseline
		for _, cur := range rep.Combinations {
			b := base[0]
			for _, cand := range base {
				if cand.Name == cur.Name {
					b = cand
				}
			}
			for _, r := range eval.Compare(b, cur, maxDrop) {
				rep.Regressions = append(rep.Regressions, evalRegressed{Combination: cur.Name, Regression: r, Text: r.String()})
			}
		}
	}

	out := cmd.OutOrStdout()
	if f.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return cli.Failed(err)
		}
	} else {
		printEval(out, &rep)
	}
	if f.html != "" {
		if err := writeEvalHTML(f.html, &rep, set.Labels); err != nil {
			return cli.Failed(fmt.Errorf("--html %s: %w", f.html, err))
		}
		fmt.Fprintf(stderr, "eval: HTML report written to %s\n", f.html)
	}
	switch {
	case len(rep.Regressions) > 0:
		return cli.Failed(fmt.Errorf("%d regression(s) beyond --max-drop %s against %s", len(rep.Regressions), f.maxDrop, f.baseline))
	case incomplete:
		return cli.Failed(errors.New("some combinations are incomplete (see above); fix the cause and run again with --resume"))
	}
	return nil
}

// parseShare reads "2%" or "0.02".
func parseShare(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 {
		return 0, errors.New("want a share such as 2% or 0.02")
	}
	if pct {
		v /= 100
	}
	if v > 1 {
		return 0, errors.New("a share above 100%")
	}
	return v, nil
}

// loadBaseline reads a report saved with --json, or scores a run.
func loadBaseline(ctx context.Context, store *audit.Store, baseline string, s *schema.Schema, labels []eval.Label, opts eval.Options) ([]eval.Summary, error) {
	if strings.HasSuffix(baseline, ".json") {
		b, err := os.ReadFile(baseline)
		if err != nil {
			return nil, cli.Usage(fmt.Errorf("--baseline: %w", err))
		}
		var rep evalReport
		if err := json.Unmarshal(b, &rep); err != nil || len(rep.Combinations) == 0 {
			return nil, cli.Usage(fmt.Errorf("--baseline %s: not a report saved by extractq eval --json", baseline))
		}
		return rep.Combinations, nil
	}
	sum, _, err := evalrun.FromRun(ctx, store, baseline, s, labels, opts)
	if err != nil {
		if errors.Is(err, audit.ErrNoSuchRun) {
			return nil, cli.Usage(fmt.Errorf("--baseline: %w", err))
		}
		return nil, cli.Failed(fmt.Errorf("--baseline: %w", err))
	}
	return []eval.Summary{sum}, nil
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func usd(s eval.Summary, v float64) string {
	if !s.CostKnown {
		return "?"
	}
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.4f", v*1000)
}

// worstShown is how many fields the table lists per combination.
const worstShown = 5

func printEval(w io.Writer, rep *evalReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "combination\tdocs\tvalid\tcorrect\taccuracy\texact\tre-asks/doc\t$/1k valid\t$/1k correct\tp50\tp95\t")
	for _, s := range rep.Combinations {
		name := s.Name
		if s.Incomplete {
			name += " (incomplete)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t\n", name, s.Docs, pct(s.ValidRate()), pct(s.CorrectRate()),
			pct(s.Accuracy), pct(s.ExactAccuracy), s.ReaskRate(), usd(s, s.CostPerValid), usd(s, s.CostPerCorrect),
			s.P50.Round(time.Millisecond), s.P95.Round(time.Millisecond))
	}
	tw.Flush()
	for _, s := range rep.Combinations {
		if s.Error != "" {
			fmt.Fprintf(w, "\n%s: %s\n", s.Name, s.Error)
		}
		var bad []eval.FieldStats
		for _, fs := range s.Fields {
			if fs.Matched < fs.Compared || (fs.IsItems() && (fs.ItemsMatched < fs.ItemsExpected || fs.ItemsMatched < fs.ItemsGot)) {
				bad = append(bad, fs)
			}
		}
		if len(bad) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s — worst fields:\n", s.Name)
		for i, fs := range bad {
			if i == worstShown {
				fmt.Fprintf(w, "  … %d more (--json or --html lists all)\n", len(bad)-worstShown)
				break
			}
			line := fmt.Sprintf("  %-28s", fs.Field)
			if fs.Compared > 0 {
				line += fmt.Sprintf(" %6s of %d (exact %s)", pct(fs.Accuracy()), fs.Compared, pct(fs.ExactRate()))
			}
			if fs.IsItems() {
				line += fmt.Sprintf(" items: precision %s, recall %s (%d expected, %d got)", pct(fs.Precision()), pct(fs.Recall()), fs.ItemsExpected, fs.ItemsGot)
			}
			fmt.Fprintln(w, line)
			for _, ex := range fs.Examples[:min(1, len(fs.Examples))] {
				fmt.Fprintf(w, "      %s%s: want %s, got %s\n", ex.ID, ex.Pointer, orNone(ex.Expected), orNone(ex.Got))
			}
		}
	}
	if len(rep.Regressions) > 0 {
		fmt.Fprintf(w, "\nregressions against %s:\n", rep.Baseline)
		for _, r := range rep.Regressions {
			fmt.Fprintf(w, "  %s: %s\n", r.Combination, r.Text)
		}
	}
}

func orNone(b json.RawMessage) string {
	if len(b) == 0 {
		return "(nothing)"
	}
	if len(b) > 80 {
		return string(b[:77]) + "…"
	}
	return string(b)
}
