package main

import (
	"encoding/json"
	"fmt"
	"math"
	"text/tabwriter"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/providers"
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
		c      cli.Conn
		f      audit.StatusFilter
		since  time.Duration
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show jobs by outcome, tokens, estimated cost and latency per run and schema version",
		Long: "Summarise the fleet's audit database (EXTRACTQ_DATABASE_URL): jobs by outcome, valid results,\n" +
			"dead letters still on the DLQ (as `extractq dlq list` counts them), attempts, tokens, estimated\n" +
			"cost (list prices) and attempt latency percentiles, per run and per schema version. Results are\n" +
			"never pruned, so they still show after `extractq audit prune` removed old jobs and attempts.\n\n" +
			"Example:\n  extractq status --run nightly-2026-11-21\n  extractq status --schema invoice --since 7d --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since > 0 {
				f.Since = time.Now().Add(-since)
			}
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			groups, err := s.Status(ctx, f)
			if err != nil {
				return cli.Failed(err)
			}
			lines := make([]statusLine, len(groups))
			for i, g := range groups {
				lines[i] = statusLine{StatusGroup: g, CostComplete: true}
				for _, m := range g.Models {
					name := m.Provider
					if name == "" {
						name = m.Model
					}
					usd, known := providers.EstimateCost(name, llm.Usage{PromptTokens: int(m.PromptTokens), CompletionTokens: int(m.CompletionTokens),
						CachedPromptTokens: int(m.CachedPromptTokens), CacheCreationTokens: int(m.CacheCreationTokens)})
					lines[i].CostUSD += usd
					lines[i].CostComplete = lines[i].CostComplete && known
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(lines)
			}
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
		},
	}
	cmd.Flags().StringVar(&f.Run, "run", "", "only this run")
	cmd.Flags().StringVar(&f.Schema, "schema", "", "only this schema name")
	cli.DurationVar(cmd.Flags(), &since, "since", 0, "count attempts (tokens, cost, latency) of this recent period only, e.g. 24h or 7d")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddDatabaseFlag(cmd, false)
	return cmd
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
