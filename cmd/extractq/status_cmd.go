package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/llm"
)

// statusLine is one status group with its estimated cost.
type statusLine struct {
	audit.StatusGroup
	// CostUSD sums the list-price estimate of the models with a known price;
	// CostComplete is false when some model's price is unknown.
	CostUSD      float64 `json:"cost_usd"`
	CostComplete bool    `json:"cost_complete"`
}

func newStatusCmd() *cobra.Command {
	var (
		c        cli.Conn
		f        audit.StatusFilter
		since    time.Duration
		asJSON   bool
		watch    bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each pool's queue and each run's jobs by outcome, tokens, estimated cost and latency",
		Long: "Summarise the fleet: per pool (from NATS), jobs queued, in progress and redelivered, live workers\n" +
			"and their shares, pause state, dead letters and the oldest queued job's age; the provider batches in\n" +
			"flight of batch pools, if any (id, requests, round, age, provider status; see `extractq batch`); per\n" +
			"run and schema version (from the audit database), jobs by outcome, valid results, dead letters still\n" +
			"on the DLQ (as `extractq dlq list` counts them), attempts, tokens, estimated cost (list prices) and\n" +
			"attempt latency percentiles. Results are never pruned, so they still show after `extractq audit\n" +
			"prune` removed old jobs and attempts. --watch redraws it in place until Ctrl-C.\n\n" +
			"Example:\n  extractq status --run nightly-2026-11-21\n  extractq status --watch\n  extractq status --schema invoice --since 7d --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since > 0 {
				f.Since = time.Now().Add(-since)
			}
			if watch && asJSON {
				return cli.Usage(errors.New("--watch redraws a table: drop --json (or poll `status --json` yourself)"))
			}
			if interval < 100*time.Millisecond {
				return cli.Usage(fmt.Errorf("--interval %s: use at least 100ms", interval))
			}
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			// NATS holds the queues; without it status still shows the runs.
			var js jetstream.JetStream
			nc, natsJS, natsErr := c.ConnectNATS(ctx, "extractq status")
			if natsErr == nil {
				defer nc.Close()
				js = natsJS
			}
			st := &statusView{store: s, js: js, natsErr: natsErr, filter: f}
			if watch {
				return st.watch(ctx, cmd.OutOrStdout(), interval)
			}
			if err := st.print(ctx, cmd.OutOrStdout(), asJSON); err != nil {
				return cli.Failed(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.Run, "run", "", "only this run")
	cmd.Flags().StringVar(&f.Schema, "schema", "", "only this schema name")
	cli.DurationVar(cmd.Flags(), &since, "since", 0, "count attempts (tokens, cost, latency) of this recent period only, e.g. 24h or 7d")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {\"pools\": [...], \"batches\": [...], \"runs\": [...]} (batches only when some are in flight)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "redraw every --interval until Ctrl-C")
	cli.DurationVar(cmd.Flags(), &interval, "interval", 2*time.Second, "refresh period of --watch")
	c.AddDatabaseFlag(cmd, false)
	c.AddNATSFlag(cmd, false)
	return cmd
}

// statusLines reads the runs' status groups and prices them.
func statusLines(ctx context.Context, s *audit.Store, f audit.StatusFilter) ([]statusLine, error) {
	groups, err := s.Status(ctx, f)
	if err != nil {
		return nil, err
	}
	lines := make([]statusLine, len(groups))
	for i, g := range groups {
		lines[i] = statusLine{StatusGroup: g, CostComplete: true}
		for _, m := range g.Models {
			name := m.Provider
			if name == "" {
				name = m.Model
			}
			price := providers.EstimateCost
			if m.Batch {
				price = providers.EstimateBatchCost
			}
			usd, known := price(name, llm.Usage{PromptTokens: int(m.PromptTokens), CompletionTokens: int(m.CompletionTokens),
				CachedPromptTokens: int(m.CachedPromptTokens), CacheCreationTokens: int(m.CacheCreationTokens)})
			lines[i].CostUSD += usd
			lines[i].CostComplete = lines[i].CostComplete && known
		}
	}
	return lines, nil
}

// printRuns writes the runs' table.
func printRuns(out io.Writer, lines []statusLine) error {
	if len(lines) == 0 {
		fmt.Fprintln(out, "no jobs recorded yet")
		return nil
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	pruned := false
	fmt.Fprintln(tw, "RUN\tSCHEMA\tVER\tJOBS\tOK\tFAILED\tRETRYING\tRESULTS\tDLQ\tATTEMPTS\tIN TOK\tOUT TOK\tCOST $\tP50\tP95\tP99\t")
	for _, l := range lines {
		ok, retrying := l.ByStatus["ok"], l.ByStatus[audit.StatusRetrying]
		cost := fmt.Sprintf("%.4f", l.CostUSD)
		if !l.CostComplete {
			cost += "+?" // some model has no known price
		}
		pruned = pruned || l.Results > ok
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			orDash(l.Run), l.SchemaName, l.SchemaVersion, l.Jobs, ok, l.Jobs-ok-retrying, retrying, l.Results, l.DeadLetters,
			l.Attempts, l.PromptTokens, l.CompletionTokens, cost, roundDur(l.LatencyP50), roundDur(l.LatencyP95), roundDur(l.LatencyP99))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if pruned {
		fmt.Fprintln(out, "some results' jobs and attempts were pruned (extractq audit prune); the results are kept")
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func roundDur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", int64(math.Round(float64(d)/float64(time.Millisecond))))
	}
	return d.Round(10 * time.Millisecond).String()
}
