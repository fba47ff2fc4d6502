package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/jsonx"
)

func newRepairCmd() *cobra.Command {
	var (
		pretty bool
		all    bool
		policy string
	)
	cmd := &cobra.Command{
		Use:   "repair [FILE|-]",
		Short: "Find and repair the JSON in a model's answer",
		Long: `repair finds the JSON in a text (a model's raw answer: prose, code fences,
<think> blocks, truncated output...), repairs its syntax locally as the engine
would, prints it on stdout and lists every repair on stderr, one per line.
It reads FILE, or stdin when FILE is "-" or absent. Exit 1 when no usable JSON
was found.

Examples:
  extractq repair answer.txt
  echo "Sure! {'name': 'Ada', 'ok': True,}" | extractq repair --pretty
  extractq repair --all --policy off answer.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pretty && all {
				return cli.Usage(errors.New("--pretty cannot be combined with --all, which prints one candidate per line"))
			}
			p, err := jsonx.ParsePolicy(policy)
			if err != nil {
				return cli.Usage(err)
			}
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			text, err := readRepairInput(cmd, name)
			if err != nil {
				return cli.Usage(err)
			}
			cands := jsonx.Find(string(text), p)
			if len(cands) == 0 {
				hint := "the text holds no JSON object or array"
				if p == jsonx.PolicyOff {
					hint = "none is strictly valid; try --policy syntax to repair it"
				}
				return cli.Failed(fmt.Errorf("no usable JSON found in %s: %s", repairInputName(name), hint))
			}
			if !all {
				cands = cands[:1]
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			for i, c := range cands {
				doc := c.JSON
				if pretty {
					var b bytes.Buffer
					if err := json.Indent(&b, c.JSON, "", "  "); err != nil {
						return fmt.Errorf("indent candidate: %w", err)
					}
					doc = b.Bytes()
				}
				if _, err := fmt.Fprintf(out, "%s\n", doc); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
				prefix := ""
				if all {
					prefix = fmt.Sprintf("candidate %d (bytes %d-%d): ", i+1, c.Start, c.End)
				}
				for _, r := range c.Repairs {
					fmt.Fprintf(errOut, "%srepair %s\n", prefix, r)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&pretty, "pretty", false, "indent the JSON (default: compact, one line)")
	cmd.Flags().BoolVar(&all, "all", false, "print every candidate found, one JSON per line")
	cmd.Flags().StringVar(&policy, "policy", string(jsonx.PolicySyntax), "repair policy: off (strictly valid JSON only) or syntax")
	return cmd
}

// readRepairInput reads a named file, or stdin for "-".
func readRepairInput(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (pass a readable file, or - for stdin)", name, err)
	}
	return b, nil
}

func repairInputName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}
