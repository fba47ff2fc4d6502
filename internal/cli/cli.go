// Package cli is the command plumbing every extractq program (extractq,
// submit, worker) shares, after cli/cli's cmdutil: exit codes and how
// errors become them, the connection flags and how NATS and the audit
// database are found (flag, environment, a running `extractq dev`, the
// default) and opened, --version, Ctrl-C handling, durations with days
// and the one progress display. Documents are read by its subpackage
// input, the one reader `extract` and `submit` share.
//
// Exit codes, the same in every program:
//
//	0    success
//	1    some input failed: a document got no valid value or was rejected, an
//	     instance is invalid, or --wait/--timeout ended with jobs unfinished
//	2    bad usage or configuration: flags, arguments, a bad schema or
//	     provider, a missing API key, an empty input, an audit database that
//	     is missing or not migrated
//	3    a server is unreachable: NATS or PostgreSQL (try again once it runs)
//	130  interrupted (Ctrl-C) after the work in progress was wound down
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes (see the package documentation).
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitUnavailable = 3
	ExitInterrupted = 130
)

// ExitError carries a process exit code through cobra's error return.
type ExitError struct {
	Code int
	// Err is printed as "PROGRAM: Err"; nil when the command has already
	// reported what went wrong.
	Err error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usage marks err as bad usage or configuration (exit 2).
func Usage(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Failed marks a run in which some input failed (exit 1); err may be nil
// when the command already reported the failures.
func Failed(err error) error { return &ExitError{Code: ExitFailed, Err: err} }

// Unavailable marks a server that could not be reached (exit 3).
func Unavailable(err error) error { return &ExitError{Code: ExitUnavailable, Err: err} }

// Interrupted marks a run stopped by Ctrl-C (exit 130).
func Interrupted(err error) error { return &ExitError{Code: ExitInterrupted, Err: err} }

// Code is the exit code for a command's error: an ExitError's code, 0 for
// nil, and 2 for anything else, which reaches here only from cobra itself
// (an unknown flag or command, a wrong number of arguments, a missing
// required flag): Prepare classifies every error a command returns.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitUsage
}

// Prepare makes root and every command below it follow the plumbing's
// rules: errors are printed once (by Run), not with the usage text; flag
// errors are usage errors; an error a command returns without a code is a
// failure (exit 1), so that Code can tell cobra's own usage errors apart;
// and --version prints Version(). Call it on the finished tree.
func Prepare(root *cobra.Command) *cobra.Command {
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return Usage(fmt.Errorf("%w (see %s --help)", err, c.CommandPath()))
	})
	root.Version = Version()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if run := c.RunE; run != nil && c.Annotations[preparedKey] == "" {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				err := run(cmd, args)
				var ee *ExitError
				if err != nil && !errors.As(err, &ee) {
					return Failed(err)
				}
				return err
			}
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[preparedKey] = "yes"
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// preparedKey marks a command whose RunE Prepare wrapped already.
const preparedKey = "extractq.cli.prepared"

// Run executes root with args and returns the exit code, printing the
// error, if any, as "NAME: error" on stderr.
func Run(root *cobra.Command, args []string, stderr io.Writer) int {
	Prepare(root)
	root.SetArgs(args)
	err := root.Execute()
	code := Code(err)
	var ee *ExitError
	if err != nil && (!errors.As(err, &ee) || ee.Err != nil) {
		fmt.Fprintf(stderr, "%s: %s\n", root.Name(), oneParagraph(err.Error()))
	}
	return code
}

// oneParagraph keeps a message on as few lines as it was written with but
// drops trailing newlines, so "NAME: error" ends with exactly one.
func oneParagraph(s string) string { return strings.TrimRight(s, "\n") }
