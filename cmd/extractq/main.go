// Command extractq is the toolbox a person uses at a terminal: one-shot
// extraction, schema tools, validation, JSON repair, fleet status, dead
// letters, provider batches, results, the audit database, dev mode and the
// LLM simulator.
//
// Exit codes (the same in submit and worker, see package internal/cli):
// 0 success; 1 some input failed (an invalid instance, a failed document);
// 2 bad usage or configuration; 3 NATS or Postgres unreachable; 130
// interrupted.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/cli"
)

func main() {
	os.Exit(cli.Run(newRootCmd(), os.Args[1:], os.Stderr))
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "extractq",
		Short: "Self-correcting structured extraction with LLMs",
		Long: "extractq asks an LLM to extract fields from documents, validates the answer against a JSON Schema,\n" +
			"and re-asks with precise feedback until the answer is valid or the budget is spent.\n\n" +
			"Exit codes: 0 success, 1 some input failed, 2 bad usage or configuration, 3 NATS or Postgres\n" +
			"unreachable, 130 interrupted.",
	}
	// Each subcommand lives in its own file and registers the connection
	// flags it uses (internal/cli.Conn); add it here.
	root.AddCommand(
		newStatusCmd(), newHistoryCmd(), newResultsCmd(), newAuditCmd(),
		newExtractCmd(),
		newRepairCmd(),
		newSchemaCmd(), newValidateCmd(),
		newSimCmd(),
		newDLQCmd(),
		newBatchCmd(),
		newDevCmd(),
		newUICmd(),
		newEvalCmd(),
	)
	return cli.Prepare(root)
}
