// Command extractq is the toolbox a person uses at a terminal: one-shot
// extraction, schema tools, validation, JSON repair, fleet status, dead
// letters, results and the LLM simulator.
//
// Exit codes: 0 success, 1 some input failed (invalid instance, failed
// document), 2 bad usage or bad configuration.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// exitError carries a process exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as bad usage (exit 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

// failErr marks a run where some input failed (exit 1); msg may be nil when
// the command already reported the failures.
func failErr(err error) error { return &exitError{code: 1, err: err} }

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "extractq:", ee.err)
		}
		return ee.code
	}
	// Errors cobra raises itself (unknown flag, wrong arg count) are usage errors.
	fmt.Fprintln(os.Stderr, "extractq:", err)
	return 2
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "extractq",
		Short:         "Self-correcting structured extraction with LLMs",
		Long:          "extractq asks an LLM to extract fields from documents, validates the answer against a JSON Schema,\nand re-asks with precise feedback until the answer is valid or the budget is spent.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Where the fleet commands (status, history, results, dlq, audit) find
	// NATS and Postgres; each falls back to its variable, then to a running
	// `extractq dev`, then to the local default.
	root.PersistentFlags().String("nats-url", "", "NATS server of the fleet (default $EXTRACTQ_NATS_URL, else a running `extractq dev`, else nats://127.0.0.1:4222)")
	root.PersistentFlags().String("database-url", "", "Postgres audit database (default $EXTRACTQ_DATABASE_URL, else a running `extractq dev`, else the local server)")
	// Each subcommand lives in its own file; add it here.
	root.AddCommand(
		newStatusCmd(), newHistoryCmd(), newResultsCmd(), newAuditCmd(),
		newExtractCmd(),
		newRepairCmd(),
		newSchemaCmd(), newValidateCmd(),
		newSimCmd(),
		newDLQCmd(),
		newDevCmd(),
		newUICmd(),
	)
	return root
}

// connFlag is the value of a connection flag when set, else the resolver's
// answer (environment, a running dev mode, the default).
func connFlag(cmd *cobra.Command, name string, resolve func() string) string {
	if f := cmd.Flag(name); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return resolve()
}
