// Command submit queues documents for extraction by the fleet: files,
// folders, JSONL or stdin, with a schema and a provider. It registers the
// schema, stores the documents in the audit database (so failed or
// outdated ones can be resubmitted without the original files), publishes
// one job per document to NATS JetStream and prints a summary.
//
//	submit --schema invoice.json --provider openai:gpt-4o-mini --run march ./invoices
//	submit resubmit --from-dlq --run march
//
// Exit codes: 0 all queued (and, with --wait, all succeeded); 1 some
// documents were rejected or failed; 2 bad usage, schema or provider.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func cli.Usage(err error) error { return &exitError{2, err} }
func cli.Failed(err error) error  { return &exitError{1, err} }

func run(args []string) int {
	root := newSubmitCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "submit:", err)
	}
	return exitCode(err)
}

// exitCode maps a command's error to the process exit code: flag errors
// and usageErr are 2, everything else 1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
