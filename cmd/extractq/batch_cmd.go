package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/internal/termsafe"
	"github.com/extractq/extractq/llm"
)

// cancelMeaning is what canceling a batch does to its jobs, said by
// `batch cancel --help`, its prompt and its output alike.
const cancelMeaning = "Requests the provider has not run yet come back as canceled lines: the worker that holds the batch\n" +
	"sends them again in a later batch (retryable class batch_canceled; no re-ask is spent), so canceling\n" +
	"does not drop any job. Answers the provider already has are kept and handled as usual."

func newBatchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "List, inspect and cancel the provider batches of batch pools",
		Long: "A batch pool sends its requests through the provider's batch API (OpenAI Batch API, Anthropic\n" +
			"Message Batches) at half price. Each provider batch is recorded in the audit database (table\n" +
			"batches) with the jobs it carries, its re-ask round, the provider's last status and the worker\n" +
			"polling it. These commands read that table; cancel also asks the provider.\n\n" +
			"Example:\n  extractq batch list\n  extractq batch show batch_6721a0c9\n  extractq batch cancel 12",
	}
	cmd.AddCommand(newBatchListCmd(), newBatchShowCmd(), newBatchCancelCmd())
	return cmd
}

func newBatchListCmd() *cobra.Command {
	var (
		c      cli.Conn
		f      audit.BatchFilter
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the batches in flight (with --all, every batch, newest first)",
		Long: "List the provider batches in flight, oldest first: row id, pool, the provider's batch id, re-ask\n" +
			"round, requests, the provider's status and counts (succeeded/errored/expired/canceled) as last\n" +
			"polled, age, the worker polling it and how long it still holds the batch (after that, the next\n" +
			"worker of the pool takes it over). --all adds the closed batches, newest first.\n\n" +
			"Example:\n  extractq batch list\n  extractq batch list --pool openai_gpt-4o-mini --all --limit 20\n  extractq batch list --json | jq .provider_batch_id",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Limit < 0 {
				return cli.Usage(fmt.Errorf("--limit %d: use 0 for all, or a positive number", f.Limit))
			}
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			found, err := s.Batches(ctx, f)
			if err != nil {
				return cli.Failed(err)
			}
			batches := make([]fleetview.Batch, len(found))
			for i, b := range found {
				batches[i] = fleetview.NewBatch(b)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				for _, b := range batches {
					if err := enc.Encode(b); err != nil {
						return err
					}
				}
				return nil
			}
			return printBatchList(out, batches, f, time.Now())
		},
	}
	cmd.Flags().StringVar(&f.Pool, "pool", "", "only this pool (openai_gpt-4o-mini, as status names it, or openai:gpt-4o-mini)")
	cmd.Flags().BoolVar(&f.All, "all", false, "closed batches too, newest first")
	cmd.Flags().IntVar(&f.Limit, "limit", 0, "show at most this many (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

// printBatchList writes the batches' table; provider ids and worker ids
// pass through termsafe (a provider or a worker's configuration wrote them).
func printBatchList(w io.Writer, batches []fleetview.Batch, f audit.BatchFilter, now time.Time) error {
	what := "batches in flight"
	if f.All {
		what = "batches"
	}
	if len(batches) == 0 {
		if f.All {
			fmt.Fprintln(w, "no batches recorded")
		} else {
			fmt.Fprintln(w, "no batches in flight (--all shows the closed ones)")
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPOOL\tPROVIDER BATCH\tROUND\tREQUESTS\tSTATUS\tSUCC/ERR/EXP/CANC\tAGE\tWORKER\tLEASE\tCLOSED")
	for _, b := range batches {
		closed := "-"
		if !b.Open() {
			closed = b.ClosedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%d/%d/%d/%d\t%s\t%s\t%s\t%s\n", b.ID, termsafe.String(b.Pool), termsafe.String(b.ProviderBatchID),
			b.Round, b.Requests, termsafe.String(orDash(b.Status)), b.Succeeded, b.Errored, b.Expired, b.Canceled,
			roundAge(b.Age(now)), termsafe.String(orDash(b.Worker)), leaseText(b, now), closed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d %s", len(batches), what)
	if f.Limit > 0 && len(batches) == f.Limit {
		fmt.Fprintf(w, " (--limit %d: there may be more)", f.Limit)
	}
	fmt.Fprintln(w)
	return nil
}

// leaseText says how long the worker still holds an open batch.
func leaseText(b fleetview.Batch, now time.Time) string {
	switch left := b.LeaseLeft(now); {
	case !b.Open():
		return "-"
	case left > 0:
		return roundAge(left) + " left"
	default:
		return "ran out " + roundAge(-left) + " ago"
	}
}

// Where a batch's job stands in the audit, as `batch show` counts them.
const (
	jobResult     = "result"      // a valid result (this job's or a resubmission's)
	jobDeadLetter = "dead letter" // dead-lettered, no result since
	jobFailed     = "failed"      // a final outcome without a result or a dead letter
	jobPending    = "pending"     // nothing final recorded yet: its answer is not durable
)

var jobStandings = []string{jobResult, jobDeadLetter, jobFailed, jobPending}

// batchJob is one job of a batch and where it stands.
type batchJob struct {
	JobID string `json:"job_id"`
	// State is result, dead letter, failed or pending.
	State string `json:"state"`
	// Status is the job's last outcome in the audit ("" when unknown).
	Status string `json:"status,omitempty"`
}

// batchShow is `batch show --json`.
type batchShow struct {
	Batch  fleetview.Batch `json:"batch"`
	Pool   string          `json:"recorded_pool"`
	Counts map[string]int  `json:"job_counts"`
	// Jobs are the first defaultShownJobs of the batch, or every one with
	// --jobs; JobsTotal counts them all.
	Jobs      []batchJob `json:"jobs"`
	JobsTotal int        `json:"jobs_total"`
}

func jobStanding(st audit.JobState, known bool) string {
	switch {
	case !known:
		return jobPending
	case st.OK():
		return jobResult
	case st.DeadLettered:
		return jobDeadLetter
	case st.Final():
		return jobFailed
	default:
		return jobPending
	}
}

// defaultShownJobs is how many job ids `batch show` prints without --jobs.
const defaultShownJobs = 20

func newBatchShowCmd() *cobra.Command {
	var (
		c       cli.Conn
		allJobs bool
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one batch and where each of its jobs stands",
		Long: "Show the batch whose row id or provider batch id is ID: what the provider last said about it, the\n" +
			"worker polling it, and its jobs by where they stand in the audit: result (a valid value is\n" +
			"recorded), dead letter, failed, or pending (no final outcome recorded yet). The first 20 job ids\n" +
			"are listed; --jobs lists all. Exits 1 when no batch has that id.\n\n" +
			"Example:\n  extractq batch show 12\n  extractq batch show batch_6721a0c9 --jobs\n  extractq batch show 12 --json | jq .job_counts",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			b, err := s.BatchByRef(ctx, args[0])
			if err != nil {
				return cli.Failed(err)
			}
			states, err := s.JobStates(ctx, b.JobIDs)
			if err != nil {
				return cli.Failed(err)
			}
			show := batchShow{Batch: fleetview.NewBatch(b), Pool: b.Pool, Counts: map[string]int{}, JobsTotal: len(b.JobIDs)}
			for _, k := range jobStandings {
				show.Counts[k] = 0
			}
			for _, id := range b.JobIDs {
				st, known := states[id]
				j := batchJob{JobID: id, State: jobStanding(st, known), Status: st.Status}
				show.Counts[j.State]++
				if allJobs || len(show.Jobs) < defaultShownJobs {
					show.Jobs = append(show.Jobs, j)
				}
			}
			if show.Jobs == nil {
				show.Jobs = []batchJob{}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(show)
			}
			printBatch(out, show, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVar(&allJobs, "jobs", false, fmt.Sprintf("list every job (default: the first %d)", defaultShownJobs))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

// printBatch prints `batch show` for people; ids and words a provider or
// a configuration wrote pass through termsafe.
func printBatch(w io.Writer, s batchShow, now time.Time) {
	b, q := s.Batch, termsafe.String
	fmt.Fprintf(w, "batch %d (provider batch %s)\n", b.ID, q(b.ProviderBatchID))
	fmt.Fprintf(w, "  provider   %s\n", q(b.Provider))
	if s.Pool != b.Pool {
		fmt.Fprintf(w, "  pool       %s (recorded as %s)\n", q(b.Pool), q(s.Pool))
	} else {
		fmt.Fprintf(w, "  pool       %s\n", q(b.Pool))
	}
	fmt.Fprintf(w, "  round      %d\n", b.Round)
	fmt.Fprintf(w, "  requests   %d\n", b.Requests)
	fmt.Fprintf(w, "  status     %s: succeeded %d, errored %d, expired %d, canceled %d (as last polled, %s ago)\n",
		q(orDash(b.Status)), b.Succeeded, b.Errored, b.Expired, b.Canceled, roundAge(max(0, now.Sub(b.UpdatedAt))))
	fmt.Fprintf(w, "  submitted  %s (%s ago)\n", b.SubmittedAt.Local().Format(time.DateTime), roundAge(b.Age(now)))
	switch left := b.LeaseLeft(now); {
	case !b.Open():
		fmt.Fprintf(w, "  closed     %s (every answer recorded; last polled by %s)\n", b.ClosedAt.Local().Format(time.DateTime), q(orDash(b.Worker)))
	case left > 0:
		fmt.Fprintf(w, "  worker     %s, holds it %s more\n", q(b.Worker), roundAge(left))
	default:
		fmt.Fprintf(w, "  worker     %s, lease ran out %s ago: the next worker of the pool that asks takes it over\n", q(orDash(b.Worker)), roundAge(-left))
	}
	var counts []string
	for _, k := range jobStandings {
		if n := s.Counts[k]; n > 0 || k != jobFailed {
			counts = append(counts, fmt.Sprintf("%d %s", n, k))
		}
	}
	fmt.Fprintf(w, "\njobs %d: %s\n", s.JobsTotal, strings.Join(counts, ", "))
	if len(s.Jobs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tSTATUS")
	for _, j := range s.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", q(j.JobID), j.State, q(orDash(j.Status)))
	}
	tw.Flush()
	if len(s.Jobs) < s.JobsTotal {
		fmt.Fprintf(w, "first %d of %d jobs; --jobs lists all\n", len(s.Jobs), s.JobsTotal)
	}
}

// cancelTimeout bounds the provider's answer to a cancel.
const cancelTimeout = time.Minute

func newBatchCancelCmd() *cobra.Command {
	var (
		c   cli.Conn
		yes bool
	)
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Ask the provider to cancel a batch",
		Long: "Ask the provider to cancel the batch whose row id or provider batch id is ID, and print what the\n" +
			"provider says (OpenAI: cancelling, then cancelled; Anthropic: canceling, then ended).\n\n" +
			cancelMeaning + "\n\n" +
			"The provider is built from the batch's provider string with the API-key environment the worker\n" +
			"uses (OPENAI_API_KEY, ANTHROPIC_API_KEY, their *_BASE_URL). A simulator batch (sim:…) is reached\n" +
			"through the running `extractq dev` (./.extractq/dev.json). The audit row is left to the worker\n" +
			"holding the batch: it records the new status at its next poll. Asks for confirmation unless --yes\n" +
			"(without a terminal to ask on, --yes is required). Exits 1 when no batch has that id, the batch is\n" +
			"closed, or the provider refuses.\n\n" +
			"Example:\n  extractq batch cancel 12\n  extractq batch cancel batch_6721a0c9 --yes",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			b, err := s.BatchByRef(ctx, args[0])
			if err != nil {
				return cli.Failed(err)
			}
			q := termsafe.String
			name := fmt.Sprintf("batch %d (%s %s)", b.ID, q(b.Provider), q(b.ProviderBatchID))
			if !b.ClosedAt.IsZero() {
				return cli.Failed(fmt.Errorf("%s was closed at %s: every answer is recorded, there is nothing to cancel", name, b.ClosedAt.Local().Format(time.DateTime)))
			}
			batcher, err := batchProvider(b.Provider)
			if err != nil {
				return err
			}
			if !yes {
				ok, err := confirm(cmd, fmt.Sprintf("%s: %d requests, round %d, provider status %s as last polled.\n%s\nCancel it?",
					name, b.Requests, b.Round, q(orDash(b.Status)), cancelMeaning))
				if err != nil {
					return err
				}
				if !ok {
					return cli.Failed(fmt.Errorf("%s not canceled: not confirmed", name))
				}
			}
			cctx, cancel := context.WithTimeout(ctx, cancelTimeout)
			defer cancel()
			st, err := batcher.CancelBatch(cctx, llm.BatchID(b.ProviderBatchID))
			if err != nil {
				return cli.Failed(fmt.Errorf("cancel %s: %w", name, err))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: cancel requested; the provider says %s (%s): succeeded %d, errored %d, expired %d, canceled %d so far\n",
				name, q(orDash(st.ProviderStatus)), st.State, st.Counts.Succeeded, st.Counts.Errored, st.Counts.Expired, st.Counts.Canceled)
			fmt.Fprintln(out, cancelMeaning)
			fmt.Fprintln(out, "The worker holding the batch records its new status at its next poll (extractq batch show "+fmt.Sprint(b.ID)+").")
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "cancel without asking")
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

// batchProvider builds the provider a batch was submitted to, as the
// worker does (extractq.NewProvider from the environment), and checks it
// has a batch API. A "sim:" provider is a simulator inside the process
// that submitted the batch; a fresh one would not know the batch, so the
// running dev mode's simulator is reached over HTTP instead.
func batchProvider(spec string) (llm.Batcher, error) {
	var (
		p   llm.Provider
		err error
	)
	if fam, _, _ := strings.Cut(spec, ":"); fam == simprovider.Family {
		e, ok := devmode.Discover(devmode.DefaultDir)
		if !ok || e.SimURL == "" {
			return nil, cli.Usage(fmt.Errorf("provider %s is a simulator inside the process that submitted the batch: run this command where that `extractq dev --sim …` runs (it is found through %s/%s)",
				termsafe.String(spec), devmode.DefaultDir, devmode.FileName))
		}
		p, err = simprovider.Remote(spec, e.SimURL)
	} else {
		p, err = extractq.NewProvider(spec)
	}
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("build provider %s: %w (batch cancel needs the API key environment the worker uses)", termsafe.String(spec), err))
	}
	batcher, ok := p.(llm.Batcher)
	if !ok || !p.Capabilities().Batch.Supported() {
		return nil, cli.Usage(fmt.Errorf("provider %s has no batch API: its batches cannot be canceled from here", termsafe.String(spec)))
	}
	return batcher, nil
}

// confirm asks question on stderr and reads the answer from stdin: yes
// only for "y" or "yes". A stdin that is not a terminal (a pipe, a job
// runner) cannot be asked: the caller must pass --yes.
func confirm(cmd *cobra.Command, question string) (bool, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && !term.IsTerminal(int(f.Fd())) {
		return false, cli.Usage(errors.New("stdin is not a terminal, so there is nobody to confirm: pass --yes"))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, cli.Failed(fmt.Errorf("read the answer: %w", err))
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}
