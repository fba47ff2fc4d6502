package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/llm"
)

func newRepairCmd() *cobra.Command {
	var (
		pretty     bool
		all        bool
		policy     string
		schemaFile string
		document   string
		mode       string
		sf         schemaFlags
	)
	cmd := &cobra.Command{
		Use:   "repair [FILE|-]",
		Short: "Find and repair the JSON in a model's answer",
		Long: `repair finds the JSON in a text (a model's raw answer: prose, code fences,
<think> blocks, truncated output...), repairs its syntax locally as the engine
would, prints it on stdout and lists every repair on stderr, one per line.
It reads FILE, or stdin when FILE is "-" or absent. Exit 1 when no usable JSON
was found.

With --schema the answer is judged exactly as the engine judges a model's
answer (the same finding, repairs, schema-guided coercions, candidate choice
and refusals, scalar roots included; policy coerce unless --policy says
otherwise): the value it would accept is printed, or exit 1 with the reason
and the violations the engine would send back as feedback. --mode says which
structured-output mode the answer came from (strict and tools undo their wire
forms), --document gives the text it was extracted from (a value the
document holds is never taken for a placeholder or the prompt's example).

Exit codes: 0 a value was printed, 1 none usable (or none valid with
--schema), 2 bad usage, an unreadable file or an invalid schema.

Examples:
  extractq repair answer.txt
  echo "Sure! {'name': 'Ada', 'ok': True,}" | extractq repair --pretty
  extractq repair --all --policy off answer.txt
  echo "The answer is One" | extractq repair --schema level.json
  extractq repair --schema invoice.json --mode strict --document invoice.txt answer.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pretty && all {
				return cli.Usage(errors.New("--pretty cannot be combined with --all, which prints one candidate per line"))
			}
			if schemaFile == "" && !cmd.Flags().Changed("policy") {
				policy = string(jsonx.PolicySyntax)
			}
			p, err := jsonx.ParsePolicy(policy)
			if err != nil {
				return cli.Usage(err)
			}
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			if schemaFile != "" {
				if all {
					return cli.Usage(errors.New("--all lists every candidate found; with --schema the engine chooses one: drop one of them"))
				}
				return repairToSchema(cmd, name, schemaFile, document, llm.Mode(mode), p, sf, pretty)
			}
			if cmd.Flags().Changed("mode") || document != "" {
				return cli.Usage(errors.New("--mode and --document only apply with --schema"))
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
	cmd.Flags().StringVar(&policy, "policy", string(jsonx.PolicyCoerce), "repair policy: off (strictly valid JSON only), syntax, or coerce (schema-guided, with --schema); default syntax, coerce with --schema")
	cmd.Flags().StringVar(&schemaFile, "schema", "", "judge the answer against this schema file as the engine does (JSON Schema or compact notation)")
	cmd.Flags().StringVar(&document, "document", "", "with --schema: the file of the document the answer was extracted from")
	cmd.Flags().StringVar(&mode, "mode", string(llm.ModeText), "with --schema: the mode the answer came from: text, json, strict or tools")
	sf.register(cmd)
	return cmd
}

// repairToSchema judges the answer in name as the engine judges a model's
// answer: one scripted call through the library, no re-ask.
func repairToSchema(cmd *cobra.Command, name, schemaFile, documentFile string, mode llm.Mode, p jsonx.Policy, sf schemaFlags, pretty bool) error {
	switch mode {
	case llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools:
	default:
		return cli.Usage(fmt.Errorf("--mode %q: want text, json, strict or tools", mode))
	}
	s, err := sf.compile(schemaFile)
	if err != nil {
		return err
	}
	text, err := readRepairInput(cmd, name)
	if err != nil {
		return cli.Usage(err)
	}
	// The document only informs the judgement (placeholders it holds, the
	// prompt's example): without one, a neutral text stands in.
	doc := "(no document given)"
	if documentFile != "" {
		b, err := os.ReadFile(documentFile)
		if err != nil {
			return cli.Usage(fmt.Errorf("--document: %w (pass a readable file)", err))
		}
		doc = string(b)
	}
	res, err := extractq.Extract(cmd.Context(), doc, s, extractq.WithProvider(answerProvider{text: string(text), mode: mode}),
		extractq.WithMode(mode), extractq.WithRepair(extractq.RepairPolicy(p)), extractq.WithMaxReasks(0),
		extractq.WithChunking(extractq.ChunkOff))
	if res == nil {
		return fmt.Errorf("judge the answer: %w", err)
	}
	errOut := cmd.ErrOrStderr()
	if len(res.Attempts) > 0 {
		for _, r := range res.Attempts[0].Repairs {
			fmt.Fprintf(errOut, "repair %s\n", r)
		}
	}
	if err != nil {
		if len(res.Attempts) > 0 {
			for _, v := range res.Attempts[0].Violations {
				fmt.Fprintf(errOut, "violation %s: %s\n", pointerText(v.Pointer), v.Message)
			}
		}
		return cli.Failed(fmt.Errorf("no valid value in %s: %s", repairInputName(name), res.Reason))
	}
	doc2 := []byte(res.Value)
	if pretty {
		var b bytes.Buffer
		if err := json.Indent(&b, res.Value, "", "  "); err != nil {
			return fmt.Errorf("indent the value: %w", err)
		}
		doc2 = b.Bytes()
	}
	if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", doc2); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// pointerText names a JSON pointer for people: "the root" for "".
func pointerText(ptr string) string {
	if ptr == "" {
		return "the root"
	}
	return ptr
}

// answerProvider answers every call with one text: the answer being
// judged, as if a model had just written it.
type answerProvider struct {
	text string
	mode llm.Mode
}

func (answerProvider) Name() string  { return "repair:answer" }
func (answerProvider) Model() string { return "answer" }
func (a answerProvider) Capabilities() llm.Capabilities {
	return llm.Capabilities{Modes: []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools}}
}
func (a answerProvider) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{Text: a.text, FinishReason: llm.FinishStop}, nil
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
