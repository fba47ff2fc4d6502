package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
)

func newHistoryCmd() *cobra.Command {
	var (
		c      cli.Conn
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "history DOC",
		Short: "Show every job, attempt, result and dead letter of one document",
		Long: "Print one document's audit trail from EXTRACTQ_DATABASE_URL: its jobs, every attempt with the\n" +
			"raw model response, the local repairs and the schema violations, its results and dead letters.\n" +
			"Exits 1 when nothing is recorded for DOC.\n\n" +
			"Example:\n  extractq history invoices/2024-117.pdf\n  extractq history invoices/2024-117.pdf --json | jq '.attempts[].violations'",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			h, err := s.History(ctx, args[0])
			if err != nil {
				return cli.Failed(err)
			}
			if h.Empty() {
				return cli.Failed(fmt.Errorf("no record of document %q: check the id (it is the id given at submit time)", args[0]))
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(h)
			}
			printHistory(out, h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

func printHistory(w io.Writer, h *audit.History) {
	fmt.Fprintf(w, "document %s", h.DocumentID)
	if h.Document != nil {
		fmt.Fprintf(w, " (%d bytes stored, sha256 %.12s…, source %s)", len(h.Document.Text), h.Document.Hash, orDash(h.Document.Source))
	}
	fmt.Fprintln(w)
	for _, j := range h.Jobs {
		fmt.Fprintf(w, "\njob %s  run %s  schema %s v%d  %s  status %s  deliveries %d  %s\n",
			j.JobID, orDash(j.Run), j.SchemaName, j.SchemaVersion, j.Provider, j.Status, j.Deliveries, j.FinishedAt.UTC().Format(time.RFC3339))
		if j.Reason != "" {
			fmt.Fprintf(w, "  reason: %s\n", j.Reason)
		}
		for _, a := range h.Attempts {
			if a.JobID != j.JobID {
				continue
			}
			printAttempt(w, &a)
		}
	}
	for _, r := range h.Results {
		fmt.Fprintf(w, "\nresult  schema %s v%d (%.12s…)  %s  %d attempts  %d+%d tokens\n  %s\n",
			r.SchemaName, r.SchemaVersion, r.SchemaFingerprint, r.Model, r.Attempts, r.PromptTokens, r.CompletionTokens, r.Value)
	}
	for _, d := range h.DeadLetters {
		fmt.Fprintf(w, "\ndead letter %s #%d  job %s  %s\n  reason: %s\n", d.Stream, d.Seq, d.JobID, d.CreatedAt.UTC().Format(time.RFC3339), d.Reason)
	}
}

func printAttempt(w io.Writer, a *audit.AttemptInfo) {
	fmt.Fprintf(w, "  delivery %d attempt %d  %s %s mode=%s  %s  %d+%d tokens", a.Delivery, a.N, a.Provider, a.Model, a.Mode,
		roundDur(a.Latency), a.PromptTokens, a.CompletionTokens)
	if a.FinishReason != "" {
		fmt.Fprintf(w, "  finish=%s", a.FinishReason)
	}
	if a.ErrorClass != "" {
		fmt.Fprintf(w, "  FAILED %s", a.ErrorClass)
	}
	fmt.Fprintln(w)
	if a.ErrorMessage != "" {
		fmt.Fprintf(w, "    error: %s\n", a.ErrorMessage)
	}
	if a.Raw != "" {
		fmt.Fprintf(w, "    raw: %s\n", indentMore(a.Raw))
	}
	if len(a.Repairs) > 0 {
		fmt.Fprintf(w, "    repairs: %s\n", a.Repairs)
	}
	if len(a.Violations) > 0 {
		fmt.Fprintf(w, "    violations: %s\n", a.Violations)
	}
}

func indentMore(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n         ")
}
