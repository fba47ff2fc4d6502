package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/schema"
)

// maxInstanceLine bounds one --jsonl line.
const maxInstanceLine = 64 << 20

// validateLine is one output line of extractq validate.
type validateLine struct {
	Index      *int               `json:"index,omitempty"`
	File       string             `json:"file,omitempty"`
	Valid      bool               `json:"valid"`
	Violations []schema.Violation `json:"violations,omitempty"`
	Error      string             `json:"error,omitempty"`
}

func newValidateCmd() *cobra.Command {
	var (
		sf         schemaFlags
		schemaFile string
		jsonl      bool
	)
	cmd := &cobra.Command{
		Use:   "validate --schema FILE [INSTANCE...]",
		Short: "Validate JSON instances against a schema",
		Long: `validate checks each INSTANCE file ("-" for stdin) against the schema and
prints one JSON line per instance: {"file":…,"valid":true|false,"violations":[…]}.
With --jsonl it reads one instance per line from stdin and prints
{"index":N,…} instead (N counts instances from 0; blank lines are skipped).
A violation is {"pointer","keyword","message","value","want"}; an instance that
is not JSON gets "error".
Exit 0 if all are valid, 1 if some are invalid, 2 on bad usage or a bad schema.

Examples:
  extractq validate --schema book.yaml answer.json
  extractq validate --schema book.yaml --jsonl < answers.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if schemaFile == "" {
				return cli.Usage(errors.New("--schema FILE is required"))
			}
			if jsonl && len(args) > 0 {
				return cli.Usage(errors.New("--jsonl reads stdin: give no INSTANCE files with it"))
			}
			if !jsonl && len(args) == 0 {
				return cli.Usage(errors.New("give INSTANCE files (\"-\" for stdin), or --jsonl to read one instance per line from stdin"))
			}
			s, err := sf.compile(schemaFile)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			invalid := 0
			emit := func(l validateLine) error {
				if !l.Valid {
					invalid++
				}
				return writeJSONLine(out, l)
			}
			if jsonl {
				err = validateJSONL(s, cmd.InOrStdin(), emit)
			} else {
				err = validateFiles(s, args, cmd.InOrStdin(), emit)
			}
			if err != nil {
				return err
			}
			if invalid > 0 {
				return cli.Failed(nil)
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&schemaFile, "schema", "", "the schema file (JSON Schema or compact notation, JSON or YAML)")
	cmd.Flags().BoolVar(&jsonl, "jsonl", false, "read one JSON instance per line from stdin")
	return cmd
}

func check(s *schema.Schema, data []byte, l validateLine) validateLine {
	vs, err := s.ValidateJSON(data)
	switch {
	case err != nil:
		l.Error = err.Error()
	case len(vs) == 0:
		l.Valid = true
	default:
		l.Violations = vs
	}
	return l
}

func validateFiles(s *schema.Schema, files []string, stdin io.Reader, emit func(validateLine) error) error {
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		l := validateLine{File: f}
		if err != nil {
			l.Error = fmt.Sprintf("cannot read: %v", err)
		} else {
			l = check(s, data, l)
		}
		if err := emit(l); err != nil {
			return err
		}
	}
	return nil
}

func validateJSONL(s *schema.Schema, r io.Reader, emit func(validateLine) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxInstanceLine)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		idx := n
		n++
		if err := emit(check(s, line, validateLine{Index: &idx})); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return cli.Usage(fmt.Errorf("reading stdin: %w (a line may be longer than %d MiB)", err, maxInstanceLine>>20))
	}
	return nil
}
