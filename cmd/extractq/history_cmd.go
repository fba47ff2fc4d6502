package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/termsafe"
	"github.com/extractq/extractq/llm"
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
			"raw model response, the local repairs and the schema violations, its results (each value's page and\n" +
			"snippet where the result has sources) and dead letters.\n" +
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

// printHistory prints h for people: everything that came from a document
// or a model passes through termsafe, so control characters in ids and
// answers are shown escaped instead of acting on the terminal.
func printHistory(w io.Writer, h *audit.History) {
	fmt.Fprintf(w, "document %s", termsafe.String(h.DocumentID))
	if h.Document != nil {
		fmt.Fprintf(w, " (%d bytes stored, sha256 %.12s…, source %s)", len(h.Document.Text), h.Document.Hash, termsafe.String(orDash(h.Document.Source)))
	}
	fmt.Fprintln(w)
	current := ""
	for _, x := range h.Texts {
		if x.ReplacedAt == nil {
			current = x.ContentHash
			continue
		}
		fmt.Fprintf(w, "  earlier text sha256 %.12s…  %d bytes  stored %s  replaced %s\n", x.ContentHash, x.Bytes,
			x.StoredAt.UTC().Format(time.RFC3339), x.ReplacedAt.UTC().Format(time.RFC3339))
	}
	for _, j := range h.Jobs {
		fmt.Fprintf(w, "\njob %s  run %s  schema %s v%d  %s  text %s  status %s  deliveries %d  %s\n",
			j.JobID, termsafe.String(orDash(j.Run)), termsafe.String(j.SchemaName), j.SchemaVersion, termsafe.String(j.Provider),
			textLabel(j.ContentHash, current), j.Status, j.Deliveries, j.FinishedAt.UTC().Format(time.RFC3339))
		if j.Reason != "" {
			fmt.Fprintf(w, "  reason: %s\n", termsafe.String(j.Reason))
		}
		for _, a := range h.Attempts {
			if a.JobID != j.JobID {
				continue
			}
			printAttempt(w, &a)
		}
	}
	for _, r := range h.Results {
		mark := ""
		if r.Redacted {
			mark = "  REDACTED (the value holds the redaction marker)"
		}
		fmt.Fprintf(w, "\nresult  schema %s v%d (%.12s…)  %s  text %s  %d attempts  %d+%d tokens%s\n  %s\n",
			termsafe.String(r.SchemaName), r.SchemaVersion, r.SchemaFingerprint, termsafe.String(r.Model), textLabel(r.ContentHash, current),
			r.Attempts, r.PromptTokens, r.CompletionTokens, mark, termsafe.String(string(r.Value)))
		for _, f := range audit.SourceList(r.Sources) {
			fmt.Fprintf(w, "  source %s\n", sourceLine(f))
		}
	}
	for _, d := range h.DeadLetters {
		fmt.Fprintf(w, "\ndead letter %s #%d  job %s  %s\n  reason: %s\n", termsafe.String(d.Stream), d.Seq, d.JobID,
			d.CreatedAt.UTC().Format(time.RFC3339), termsafe.String(d.Reason))
	}
}

// textLabel names the text a job or result is of: its hash, and whether it
// is the document's current text.
func textLabel(hash, current string) string {
	switch {
	case hash == "":
		return "unknown"
	case hash == current:
		return fmt.Sprintf("%.12s… (current)", hash)
	case current == "":
		return fmt.Sprintf("%.12s…", hash)
	}
	return fmt.Sprintf("%.12s… (earlier)", hash)
}

func printAttempt(w io.Writer, a *audit.AttemptInfo) {
	fmt.Fprintf(w, "  delivery %d attempt %d  %s %s mode=%s  %s  %d+%d tokens", a.Delivery, a.N, termsafe.String(a.Provider),
		termsafe.String(a.Model), termsafe.String(a.Mode), roundDur(a.Latency), a.PromptTokens, a.CompletionTokens)
	if a.FinishReason != "" {
		fmt.Fprintf(w, "  finish=%s", termsafe.String(a.FinishReason))
	}
	if a.ErrorClass != "" {
		fmt.Fprintf(w, "  FAILED %s", termsafe.String(a.ErrorClass))
	}
	fmt.Fprintln(w)
	if where := attemptWhere(a.Chunk, a.Pointer, a.Step); where != "" {
		fmt.Fprintf(w, "    %s\n", where)
	}
	if a.ErrorMessage != "" {
		fmt.Fprintf(w, "    error: %s\n", termsafe.String(a.ErrorMessage))
	}
	if a.Raw != "" {
		fmt.Fprintf(w, "    raw: %s\n", indentMore(termsafe.Text(a.Raw)))
	}
	if len(a.Repairs) > 0 {
		fmt.Fprintf(w, "    repairs: %s\n", termsafe.String(string(a.Repairs)))
	}
	if len(a.Violations) > 0 {
		fmt.Fprintf(w, "    violations: %s\n", termsafe.String(string(a.Violations)))
	}
}

// attemptWhere says where in the document and the value an attempt
// worked: the part of a long document (1-based, and its character
// offsets) and a prefill step with its pointer; "" for neither.
func attemptWhere(chunk *llm.Span, pointer, step string) string {
	var parts []string
	if chunk != nil {
		parts = append(parts, fmt.Sprintf("chunk %d (characters %d-%d)", chunk.Index+1, chunk.Start, chunk.End))
	}
	if step != "" {
		parts = append(parts, fmt.Sprintf("prefill %s at %s", termsafe.String(step), termsafe.String(orRoot(pointer))))
	}
	return strings.Join(parts, ", ")
}

func indentMore(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n         ")
}

// sourceLine is one value's place for people: its field, page (and the
// page's own label), characters within the page, and snippet, e.g.
// `/total  page 2  chars 95-103  "Total due: 1,234.50 EUR"`.
func sourceLine(f audit.FieldSource) string {
	page := "no page"
	if f.Page > 0 {
		page = fmt.Sprintf("page %d", f.Page)
		if f.PageLabel != "" && f.PageLabel != strconv.Itoa(f.Page) {
			page += " (" + termsafe.String(f.PageLabel) + ")"
		}
	}
	return fmt.Sprintf("%s  %s  chars %d-%d  %s", termsafe.String(f.Field), page, f.Start, f.End, strconv.Quote(f.Snippet))
}
