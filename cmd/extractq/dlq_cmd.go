package main

import (
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

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/termsafe"
)

func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Browse and resubmit dead letters (jobs that could not succeed)",
		Long: "The fleet moves a job that cannot succeed to the EXTRACTQ_DLQ stream with full diagnostics:\n" +
			"every attempt with its raw answer, repairs, violations, error class, latency and tokens.\n\n" +
			"Example:\n  extractq dlq list --run march\n  extractq dlq show 42\n  extractq dlq resubmit --run march --dry-run",
	}
	cmd.AddCommand(newDLQListCmd(), newDLQShowCmd(), newDLQResubmitCmd())
	return cmd
}

func newDLQListCmd() *cobra.Command {
	var (
		c      cli.Conn
		f      jobs.ListFilter
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead letters, oldest first",
		Long:  "List the dead letters on EXTRACTQ_DLQ: sequence, time, run, document, schema, outcome, attempts, the failed part\nof a long document (\"3/7\": its third of seven chunks) and the reason.\n\nExample:\n  extractq dlq list --run march --limit 20\n  extractq dlq list --json | jq .reason",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nc, js, err := c.ConnectNATS(cmd.Context(), "extractq-dlq")
			if err != nil {
				return err
			}
			defer nc.Close()
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			enc := json.NewEncoder(out)
			if !asJSON {
				fmt.Fprintln(tw, "SEQ\tTIME\tRUN\tDOCUMENT\tSCHEMA\tOUTCOME\tATTEMPTS\tCHUNK\tREASON")
			}
			n := 0
			errStop := errors.New("limit reached")
			err = jobs.NewDLQ(js).List(cmd.Context(), f, func(l *jobs.Letter) error {
				if limit > 0 && n >= limit {
					return errStop
				}
				n++
				if asJSON {
					return enc.Encode(letterSummary(l))
				}
				fmt.Fprintln(tw, letterRow(l))
				return nil
			})
			if err != nil && !errors.Is(err, errStop) {
				return cli.Failed(err)
			}
			if !asJSON {
				tw.Flush()
				fmt.Fprintf(out, "%d dead letters\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.Run, "run", "", "only this run")
	cmd.Flags().StringVar(&f.Pool, "pool", "", "only this pool")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	c.AddNATSFlag(cmd, false)
	return cmd
}

// letterRow is a dead letter's line in `dlq list` (tab-separated): a
// long document's failed part shows as "3/7" (its third of seven chunks).
func letterRow(l *jobs.Letter) string {
	chunk := "-"
	if cf := l.ChunkFailure; cf != nil {
		chunk = fmt.Sprintf("%d/%d", cf.Index+1, cf.Of)
	}
	return fmt.Sprintf("%d\t%s\t%s\t%s\t%s v%d\t%s\t%d\t%s\t%s", l.Seq, l.Time.Local().Format(time.DateTime), termsafe.String(l.Job.Run),
		termsafe.String(l.Job.DocumentID), termsafe.String(l.Job.Schema.Name), l.Job.Schema.Version, l.Outcome, len(l.Attempts),
		chunk, termsafe.String(oneLine(l.Reason, 80)))
}

// letterSummary is a dead letter without its attempts' bodies, for lists.
func letterSummary(l *jobs.Letter) any {
	return struct {
		Seq        uint64    `json:"seq"`
		Time       time.Time `json:"time"`
		JobID      string    `json:"job_id"`
		Run        string    `json:"run"`
		DocumentID string    `json:"document_id"`
		Schema     string    `json:"schema"`
		Version    int       `json:"schema_version"`
		Provider   string    `json:"provider"`
		Outcome    string    `json:"outcome"`
		Attempts   int       `json:"attempts"`
		Deliveries int       `json:"deliveries"`
		Reason     string    `json:"reason"`
		// ChunkFailure is the failed part of a long document, if one failed.
		ChunkFailure *jobs.ChunkFailure `json:"chunk_failure,omitempty"`
	}{l.Seq, l.Time, l.Job.JobID, l.Job.Run, l.Job.DocumentID, l.Job.Schema.Name, l.Job.Schema.Version, l.Job.Provider,
		string(l.Outcome), len(l.Attempts), l.Deliveries, l.Reason, l.ChunkFailure}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

func newDLQShowCmd() *cobra.Command {
	var (
		c      cli.Conn
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show SEQ",
		Short: "Show one dead letter with every attempt",
		Long:  "Show the dead letter at stream sequence SEQ: the job, the final reason, and every attempt with its raw\nanswer, repairs, violations, error class, latency and tokens. For a document with pages, the page (or\npages) of the part that failed, and each violating value's page and snippet (the text the model\nmisread); --json gives these as \"places\".\n\nExample:\n  extractq dlq show 42\n  extractq dlq show 42 --json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return cli.Usage(fmt.Errorf("SEQ %q: want the dead letter's sequence number from `extractq dlq list`", args[0]))
			}
			nc, js, err := c.ConnectNATS(cmd.Context(), "extractq-dlq")
			if err != nil {
				return err
			}
			defer nc.Close()
			l, err := jobs.NewDLQ(js).Get(cmd.Context(), seq)
			if err != nil {
				return cli.Failed(err)
			}
			// A large document's text is in the object store; a letter
			// trimmed to fit NATS has none (the pages of a part are then
			// not placed).
			text, _ := jobs.NewDocuments(js).Text(cmd.Context(), &l.Job)
			places := fleetview.PlaceLetter(&l.DeadLetter, text)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(letterJSON(l, &places))
			}
			printLetter(cmd.OutOrStdout(), l, &places)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole dead letter as JSON")
	c.AddNATSFlag(cmd, false)
	return cmd
}

// printLetter prints a dead letter for people; text from documents and
// models passes through termsafe (see printHistory).
func printLetter(w io.Writer, l *jobs.Letter, places *fleetview.LetterPlaces) {
	j := l.Job
	q := termsafe.String
	fmt.Fprintf(w, "dead letter %d (%s)\n", l.Seq, l.Time.Local().Format(time.DateTime))
	fmt.Fprintf(w, "  job        %s (stream seq %d, %d deliveries)\n", q(j.JobID), l.JobSeq, l.Deliveries)
	fmt.Fprintf(w, "  document   %s  sha256:%s\n", q(j.DocumentID), q(j.DocumentHash))
	fmt.Fprintf(w, "  run        %s\n", q(j.Run))
	fmt.Fprintf(w, "  schema     %s v%d (%s)\n", q(j.Schema.Name), j.Schema.Version, q(j.Schema.Fingerprint))
	fmt.Fprintf(w, "  provider   %s (pool %s)\n", q(j.Provider), q(j.Pool))
	fmt.Fprintf(w, "  worker     %s (%s)\n", q(l.WorkerID), q(l.Source))
	fmt.Fprintf(w, "  outcome    %s\n", q(string(l.Outcome)))
	fmt.Fprintf(w, "  reason     %s\n", q(l.Reason))
	if cf := l.ChunkFailure; cf != nil {
		fmt.Fprintf(w, "  failed     %s\n", q(cf.String()))
	}
	fmt.Fprintf(w, "  tokens     %d prompt + %d completion\n", l.Usage.PromptTokens, l.Usage.CompletionTokens)
	if pages := places.Pages(); pages != "" {
		fmt.Fprintf(w, "  pages      %s\n", pages)
	}
	for _, f := range places.Violations {
		fmt.Fprintf(w, "  misread    %s\n", sourceLine(f))
	}
	for _, a := range l.Attempts {
		fmt.Fprintf(w, "\nattempt %d  %s %s  %s  %d+%d tokens  finish %s", a.N, q(a.Provider), q(string(a.Mode)), a.Latency.Round(time.Millisecond),
			a.Usage.PromptTokens, a.Usage.CompletionTokens, q(string(a.FinishReason)))
		if a.Class != "" {
			fmt.Fprintf(w, "  class %s", q(string(a.Class)))
		}
		if a.TransportRetries > 0 {
			fmt.Fprintf(w, "  transport retries %d", a.TransportRetries)
		}
		fmt.Fprintln(w)
		if where := attemptWhere(a.Chunk, a.Pointer, a.Step); where != "" {
			fmt.Fprintf(w, "  %s\n", where)
		}
		if a.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", q(a.Error))
		}
		if a.Raw != "" {
			fmt.Fprintf(w, "  raw: %s\n", q(oneLine(a.Raw, 400)))
		}
		for _, r := range a.Repairs {
			fmt.Fprintf(w, "  repair %s at %s: %s\n", q(string(r.Kind)), q(r.Where), q(r.Detail))
		}
		for _, v := range a.Violations {
			fmt.Fprintf(w, "  violation %s (%s): %s\n", q(orRoot(v.Pointer)), q(v.Keyword), q(v.Message))
		}
	}
}

// letterJSON is what `dlq show --json` prints: the letter with its
// places, "places" left out when nothing was placed.
func letterJSON(l *jobs.Letter, places *fleetview.LetterPlaces) any {
	if places.Empty() {
		places = nil
	}
	return struct {
		*jobs.Letter
		Places *fleetview.LetterPlaces `json:"places,omitempty"`
	}{l, places}
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func newDLQResubmitCmd() *cobra.Command {
	var (
		c      cli.Conn
		req    submit.ResubmitRequest
		asJSON bool
		pw     cli.PasswordFlags
	)
	cmd := &cobra.Command{
		Use:   "resubmit [SEQ...]",
		Short: "Queue dead letters again and remove them from the DLQ",
		Long: "Republish the given dead letters (or all, or those of --run) as jobs, optionally under a newer schema\n" +
			"version (--schema NAME --to-version V) or another provider, and delete each from EXTRACTQ_DLQ once it is\n" +
			"queued. Running it twice queues nothing twice. Same as `submit resubmit --from-dlq`.\n\n" +
			"A letter is queued with the text the audit stores for its document; when it stores none, the original\n" +
			"(in the EXTRACTQ_DOCS object store) is read again: an encrypted one needs --password or --password-file\n" +
			"(or $" + cli.PasswordEnv + "), as submit did, and its pages' pictures go with the job as submit's did.\n\n" +
			"Example:\n  extractq dlq resubmit 42 43\n  extractq dlq resubmit --run march --schema invoice --to-version 2 --dry-run",
		RunE: func(cmd *cobra.Command, args []string) error {
			req.FromDLQ = true
			for _, a := range args {
				seq, err := strconv.ParseUint(a, 10, 64)
				if err != nil {
					return cli.Usage(fmt.Errorf("SEQ %q: want a dead letter's sequence number from `extractq dlq list`", a))
				}
				req.Seqs = append(req.Seqs, seq)
			}
			if req.ToVersion > 0 && req.Schema == "" {
				return cli.Usage(errors.New("--to-version needs --schema NAME"))
			}
			var err error
			if req.Password, err = pw.Value(os.Getenv); err != nil {
				return err
			}
			ctx := cmd.Context()
			nc, js, err := c.ConnectNATS(ctx, "extractq-dlq")
			if err != nil {
				return err
			}
			defer nc.Close()
			store, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer store.Close()
			sum, err := submit.New(js, store).Resubmit(ctx, store, req)
			printDLQResubmit(cmd.OutOrStdout(), sum, asJSON)
			if err != nil {
				return cli.Failed(err)
			}
			if len(sum.Rejected) > 0 {
				return cli.Failed(fmt.Errorf("%d dead letters could not be resubmitted", len(sum.Rejected)))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Run, "run", "", "only dead letters of this run")
	f.StringVar(&req.Schema, "schema", "", "only dead letters of this schema")
	f.IntVar(&req.ToVersion, "to-version", 0, "extract them with this version of --schema")
	f.StringVar(&req.Provider, "provider", "", "extract them with this provider instead of their own")
	pw.Register(f, "encrypted originals read again (letters whose text the audit does not store)")
	f.BoolVar(&req.DryRun, "dry-run", false, "only count")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	c.AddNATSFlag(cmd, false)
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

func printDLQResubmit(w io.Writer, sum submit.ResubmitSummary, asJSON bool) {
	if asJSON {
		_ = json.NewEncoder(w).Encode(sum)
		return
	}
	for _, r := range sum.Rejected {
		fmt.Fprintf(w, "not resubmitted %s (%s): %s\n", r.ID, r.Source, r.Reason)
	}
	for _, r := range sum.Warnings {
		fmt.Fprintf(w, "warning: resubmitted %s (%s): %s\n", r.ID, r.Source, r.Reason)
	}
	if sum.DryRun {
		fmt.Fprintf(w, "dry run: %d dead letters would be queued again\n", sum.Selected)
		return
	}
	fmt.Fprintf(w, "selected %d, queued %d, duplicates skipped %d, removed from the DLQ %d\n", sum.Selected, sum.Queued, sum.Duplicates, sum.Removed)
	for _, r := range sum.Runs { // reopened: announced done again once these are final
		fmt.Fprintf(w, "run %s: %d queued, done generation %d (announced once they are final)\n", termsafe.String(r.Run), r.Queued, r.Generation)
	}
}
