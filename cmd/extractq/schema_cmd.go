package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/schema"
)

// schemaFlags are the flags every schema-reading command shares.
type schemaFlags struct {
	refDirs []string
	draft   string
}

func (f *schemaFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.refDirs, "ref-dir", nil,
		"resolve $refs starting with PREFIX from files in DIR (PREFIX=DIR, repeatable); the network is never used")
	cmd.Flags().StringVar(&f.draft, "draft", "2020-12", "what a schema without $schema means: 7 or 2020-12")
}

// compile compiles a schema file with the flags' options; every error is
// a usage error naming the file.
func (f *schemaFlags) compile(file string) (*schema.Schema, error) {
	opts, err := f.options()
	if err != nil {
		return nil, cli.Usage(err)
	}
	s, err := schema.CompileFile(file, opts...)
	if err != nil {
		return nil, cli.Usage(errors.New(fileError(file, err)))
	}
	return s, nil
}

// options turns the flags into schema options; errors are usage errors.
func (f *schemaFlags) options() ([]schema.Option, error) {
	d, err := schema.ParseDraft(f.draft)
	if err != nil {
		return nil, fmt.Errorf("--draft: %w", err)
	}
	opts := []schema.Option{schema.WithDraft(d)}
	for _, rd := range f.refDirs {
		prefix, dir, ok := strings.Cut(rd, "=")
		if !ok || prefix == "" || dir == "" {
			return nil, fmt.Errorf("--ref-dir %q: write it as PREFIX=DIR, e.g. --ref-dir https://example.com/schemas/=./schemas", rd)
		}
		opts = append(opts, schema.WithRefDir(prefix, dir))
	}
	return opts, nil
}

func newSchemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Check, exemplify and convert schemas (JSON Schema or compact notation)",
		Long: `schema works on schema files: JSON Schema (draft 7 or 2020-12), OpenAI's
response_format wrapper, {name, schema, strict}, or extractq's compact notation,
written as JSON or YAML.

list and register work on the schemas the fleet knows (the audit database and the workers'
schema bucket): submit registers a schema file by itself; register does it without queueing
anything, e.g. a new version before "submit resubmit --to-version".

Exit codes: 0 ok, 1 some file has no example or cannot take the provider form, 2 bad usage or an
invalid schema, 3 NATS or Postgres unreachable.

Examples:
  extractq schema check book.yaml
  extractq schema example book.yaml invoice.json
  extractq schema convert --to openai book.yaml
  extractq schema register --name invoice invoice-v2.json
  extractq schema list`,
	}
	cmd.AddCommand(newSchemaCheckCmd(), newSchemaExampleCmd(), newSchemaConvertCmd(), newSchemaListCmd(), newSchemaRegisterCmd())
	return cmd
}

func newSchemaCheckCmd() *cobra.Command {
	var sf schemaFlags
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Compile schemas and print their normalised JSON Schema",
		Long: `check compiles each FILE and prints its normalised JSON Schema (compact
notation converted, wrappers removed) on stdout, preceded by a "# FILE" line
when there are several, and "FILE: ok (fingerprint)" on stderr. An invalid
schema is reported on stderr with its location inside the file.
Exit 2 if any file is invalid (or cannot be read).

Examples:
  extractq schema check book.yaml
  extractq schema check --ref-dir https://example.com/schemas/=./schemas order.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := sf.options()
			if err != nil {
				return cli.Usage(err)
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			bad := 0
			for _, file := range args {
				s, err := schema.CompileFile(file, opts...)
				if err != nil {
					bad++
					fmt.Fprintf(errOut, "%s\n", fileError(file, err))
					continue
				}
				if len(args) > 1 {
					fmt.Fprintf(out, "# %s\n", file)
				}
				if err := writeIndented(out, s.JSON()); err != nil {
					return err
				}
				fmt.Fprintf(errOut, "%s: ok (%s)\n", file, s.Fingerprint())
			}
			if bad > 0 {
				return cli.Usage(fmt.Errorf("%d of %d schemas are invalid", bad, len(args)))
			}
			return nil
		},
	}
	sf.register(cmd)
	return cmd
}

func newSchemaExampleCmd() *cobra.Command {
	var (
		sf   schemaFlags
		seed uint64
	)
	cmd := &cobra.Command{
		Use:   "example FILE...",
		Short: "Print a valid example instance of each schema",
		Long: `example prints one JSON line per FILE: {"file":…,"example":…} with an instance
that validates against the schema, or {"file":…,"error":…} saying why none
can be built (an invalid schema, contradictory constraints). With --seed N > 0
the values vary with N (the instance the simulator would answer).
Exit 2 if any schema is invalid, else 1 if any has no example.

Examples:
  extractq schema example book.yaml
  extractq schema example --seed 7 book.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := sf.options()
			if err != nil {
				return cli.Usage(err)
			}
			bad, invalid := 0, 0
			for _, file := range args {
				line := struct {
					File    string          `json:"file"`
					Example json.RawMessage `json:"example,omitempty"`
					Error   string          `json:"error,omitempty"`
				}{File: file}
				s, err := schema.CompileFile(file, opts...)
				if err != nil {
					invalid++
				} else {
					if seed > 0 {
						line.Example, err = s.Instance(seed)
					} else {
						line.Example, err = s.Example()
					}
				}
				if err != nil {
					bad++
					line.Example, line.Error = nil, fileError(file, err)
				}
				if err := writeJSONLine(cmd.OutOrStdout(), line); err != nil {
					return err
				}
			}
			if invalid > 0 {
				return cli.Usage(nil)
			}
			if bad > 0 {
				return cli.Failed(nil)
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().Uint64Var(&seed, "seed", 0, "vary the values with this seed (0: the typical example)")
	return cmd
}

func newSchemaConvertCmd() *cobra.Command {
	var (
		sf schemaFlags
		to string
	)
	cmd := &cobra.Command{
		Use:   "convert --to FORM FILE",
		Short: "Print a schema in a provider's form",
		Long: `convert prints the schema in FILE as an API family accepts it:
  jsonschema  the normalised JSON Schema 2020-12 (compact notation converted)
  openai      strict structured outputs: objects closed, all properties required,
              optional ones nullable, unsupported keywords in descriptions,
              OpenAI's documented size limits checked
  anthropic   structured outputs: objects closed, unsupported limits described
  gemini      responseSchema (OpenAPI 3.0 subset, upper-case types, nullable)
  ollama      the "format" field: references inlined
Exit 2 if the schema is invalid, 1 if it cannot be expressed in that form. A
form that would forbid what the schema allows (a free-form object,
additionalProperties, patternProperties...) is not printed: the reasons are, and
extraction uses JSON mode with the schema in the prompt instead (mode auto does
so by itself).

Examples:
  extractq schema convert --to openai book.yaml
  extractq schema convert --to gemini --ref-dir https://example.com/s/=./s order.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := sf.options()
			if err != nil {
				return cli.Usage(err)
			}
			form, err := schema.ParseForm(to)
			if err != nil {
				return cli.Usage(fmt.Errorf("--to: %w", err))
			}
			s, err := schema.CompileFile(args[0], opts...)
			if err != nil {
				return cli.Usage(errors.New(fileError(args[0], err)))
			}
			out, err := s.ProviderForm(form)
			var ue *schema.UnfaithfulError
			if errors.As(err, &ue) {
				return cli.Failed(unfaithfulMessage(args[0], ue))
			}
			if err != nil {
				return cli.Failed(fmt.Errorf("%s: %w", args[0], err))
			}
			return writeIndented(cmd.OutOrStdout(), out)
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&to, "to", "jsonschema", "target form: jsonschema, openai, anthropic, gemini or ollama")
	return cmd
}

// unfaithfulMessage explains a form that would narrow the schema, one
// reason a line, and what extraction does instead.
func unfaithfulMessage(file string, ue *schema.UnfaithfulError) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the %s form would forbid values this schema allows, so it is not printed:", file, ue.Form)
	for _, r := range ue.Reasons {
		b.WriteString("\n  - ")
		b.WriteString(r)
	}
	fmt.Fprintf(&b, "\nextractq never sends such a form: --mode auto extracts in JSON mode with the schema in the prompt, --mode strict and tools refuse. Close the objects in the schema (list their properties, additionalProperties: false) to use %s's native mode.", ue.Form)
	return errors.New(b.String())
}

// fileError names the file once: schema errors from CompileFile already
// start with it.
func fileError(file string, err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, file+":") {
		return msg
	}
	return file + ": " + msg
}

func writeIndented(w io.Writer, doc []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return fmt.Errorf("indent output: %w", err)
	}
	b.WriteByte('\n')
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// writeJSONLine writes v as one line of JSON, without HTML escaping.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func newSchemaListCmd() *cobra.Command {
	var (
		c      cli.Conn
		asJSON bool
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the registered schemas and their versions",
		Long: `list prints the schemas registered in the audit database (by submit or schema register): name,
latest version, how many versions, fingerprint and when the latest was registered. --all lists
every version; --json prints one object per version with its body.

Example:
  extractq schema list
  extractq schema list --all --json | jq -r '.name + " v" + (.version|tostring)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer st.Close()
			infos, err := st.Schemas(ctx)
			if err != nil {
				return cli.Failed(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				for _, si := range infos {
					if err := writeJSONLine(out, struct {
						Name        string          `json:"name"`
						Version     int             `json:"version"`
						Fingerprint string          `json:"fingerprint"`
						CreatedAt   time.Time       `json:"created_at"`
						Schema      json.RawMessage `json:"schema"`
					}{si.Name, si.Version, si.Fingerprint, si.CreatedAt, si.Body}); err != nil {
						return err
					}
				}
				return nil
			}
			if len(infos) == 0 {
				fmt.Fprintln(out, "no schemas registered yet: submit registers one, or extractq schema register FILE")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tVERSIONS\tFINGERPRINT\tREGISTERED")
			versions := map[string]int{}
			for _, si := range infos {
				versions[si.Name]++
			}
			for i, si := range infos {
				latest := i == len(infos)-1 || infos[i+1].Name != si.Name
				if !all && !latest {
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", si.Name, si.Version, versions[si.Name], si.Fingerprint, si.CreatedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every version, not only the latest of each schema")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per version, with the schema")
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

func newSchemaRegisterCmd() *cobra.Command {
	var (
		c    cli.Conn
		sf   schemaFlags
		name string
	)
	cmd := &cobra.Command{
		Use:   "register [--name NAME] FILE",
		Short: "Register a schema (a new version when it changed) without queueing anything",
		Long: `register compiles FILE and registers it under NAME (default: the schema's own name, else the file
name) in the audit database and the workers' schema bucket, as submit does: the same schema again
keeps its version, a changed one becomes the next version. Use it to add a version before
"submit resubmit --schema NAME --to-version V".

Example:
  extractq schema register --name invoice invoice-v2.json
  submit resubmit --schema invoice --to-version 2 --provider sim:clean --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := sf.options()
			if err != nil {
				return cli.Usage(err)
			}
			sc, err := schema.CompileFile(args[0], opts...)
			if err != nil {
				return cli.Usage(errors.New(fileError(args[0], err)))
			}
			name = cli.SchemaName(args[0], sc, name)
			ctx := cmd.Context()
			nc, js, err := c.ConnectNATS(ctx, "extractq-schema")
			if err != nil {
				return err
			}
			defer nc.Close()
			if err := jobs.EnsureStreams(ctx, js); err != nil {
				return cli.Failed(err)
			}
			st, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer st.Close()
			before := 0
			if prev, err := st.SchemaByName(ctx, name, 0); err == nil {
				before = prev.Version
			} else if !errors.Is(err, audit.ErrNotFound) {
				return cli.Failed(err)
			}
			ref, err := submit.New(js, st).RegisterSchema(ctx, name, sc)
			if err != nil {
				return cli.Failed(err)
			}
			what := "unchanged: this schema is already version"
			if ref.Version > before {
				what = "registered as version"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %d (%s)\n", name, what, ref.Version, ref.Fingerprint)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "name to register under (default: the schema's own name, else the file name)")
	c.AddNATSFlag(cmd, false)
	c.AddDatabaseFlag(cmd, false)
	return cmd
}
