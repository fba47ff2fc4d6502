package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/termsafe"
)

func newResubmitCmd(c *conn) *cobra.Command {
	var (
		req    fleet.Resubmission
		asJSON bool
		ocr    string
		pw     cli.PasswordFlags
	)
	cmd := &cobra.Command{
		Use:   "resubmit (--from-dlq [--run NAME] | --schema NAME --to-version V --provider P | --reread [--schema NAME] [--run NAME] [--reader FORMAT] [--attachments separate|skip|inline]) [--dry-run]",
		Short: "Queue dead letters, documents extracted under an older schema version, or documents an older reader read, again",
		Long: `resubmit republishes the dead letters on EXTRACTQ_DLQ (--from-dlq, optionally of one run, optionally
under a newer schema version with --schema NAME --to-version V) and deletes each from the DLQ once it is
queued; or (without --from-dlq) it selects from the audit database the documents whose latest result was
made under an older version of --schema and queues them with --to-version (--include-failed adds those that
failed under any version). The documents come from the audit database: no original files are needed.
--reread reads again, with the readers of this build, the originals (in the EXTRACTQ_DOCS object store) of
the documents a different reader version read (a PDF read by pdf/3 when this build has pdf/4), optionally
only of one --schema, --run or --reader format, and queues a job, under its latest job's schema, run and
provider (or --provider), for each whose text or description changed; unchanged ones are skipped, and a
missing original is that document's error. Running it twice queues nothing twice.
A carrier submitted with --attachments inline (an e-mail, a zip, a PDF with files attached, an office
file with embedded objects) is read again with its attachments inlined into its text, as submit read
it: the audit records the policy with each document submitted inline. For documents that record none
(submitted by a build before this one) --attachments says how they were submitted (separate, the
default; skip; inline); one whose stored text has attachments inlined while --attachments is not
inline is held: not queued (it would lose its attachments' text), named on stderr, counted (exit 1),
and selected again next time. --dry-run reads the originals again and counts what would be queued
(changed), unchanged, held and read with attachments inlined, without queueing or storing anything.

Example:
  submit resubmit --from-dlq --run march --dry-run
  submit resubmit --schema invoice --to-version 3 --provider openai:gpt-4o-mini --include-failed
  submit resubmit --reread --reader pdf --schema invoice
  submit resubmit --reread --reader eml --attachments inline --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Reread {
				if ocr != "auto" && ocr != "off" {
					return cli.Usage(fmt.Errorf("--ocr %q: want auto or off", ocr))
				}
				if err := checkReread(req); err != nil {
					return cli.Usage(err)
				}
				rereadOCR(&req, ocr)
			} else if req.Reader != "" {
				return cli.Usage(errors.New("--reader needs --reread"))
			} else if req.Attachments != "" {
				return cli.Usage(errors.New("--attachments needs --reread"))
			}
			if req.FromDLQ || req.Reread {
				// Only an original read again needs it: --reread's, and a
				// dead letter's whose text the audit does not store.
				var err error
				if req.Password, err = pw.Value(os.Getenv); err != nil {
					return err
				}
			}
			if !req.FromDLQ && !req.Reread && (req.Schema == "" || req.ToVersion < 1) {
				return cli.Usage(errors.New("give --from-dlq, or --schema NAME --to-version V --provider P"))
			}
			if !req.FromDLQ && !req.Reread && req.Provider == "" {
				return cli.Usage(errors.New("--provider is required with --schema/--to-version (which model extracts the documents again?)"))
			}
			if req.ToVersion > 0 && req.Schema == "" {
				return cli.Usage(errors.New("--to-version needs --schema NAME"))
			}
			sess, err := c.open(cmd.Context())
			if err != nil {
				return err
			}
			defer sess.close()
			sum, err := fleet.NewClient(sess.js, sess.store.Pool(), c.clientOptions()...).Resubmit(cmd.Context(), req)
			printResubmit(cmd.OutOrStdout(), cmd.ErrOrStderr(), sum, asJSON)
			if err != nil {
				return cli.Failed(err)
			}
			if len(sum.Rejected) > 0 {
				return cli.Failed(fmt.Errorf("%d documents could not be resubmitted", len(sum.Rejected)))
			}
			if r := sum.Reread; r != nil && r.Held > 0 && !sum.DryRun {
				return cli.Failed(fmt.Errorf("%d documents held: their stored text has attachments inlined; read them again with --attachments inline", r.Held))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&req.FromDLQ, "from-dlq", false, "republish the dead letters on EXTRACTQ_DLQ")
	f.StringVar(&req.Run, "run", "", "only dead letters (--from-dlq) or documents (--reread) of this run; the run name of resubmitted documents otherwise")
	f.StringVar(&req.Schema, "schema", "", "schema name")
	f.IntVar(&req.ToVersion, "to-version", 0, "schema version to extract with")
	f.BoolVar(&req.IncludeFailed, "include-failed", false, "also documents that failed or were dead-lettered under any version (without --from-dlq)")
	f.StringVar(&req.Provider, "provider", "", "provider and model (required with --to-version; overrides the dead letters' or the documents' latest jobs' with --from-dlq or --reread)")
	f.BoolVar(&req.Reread, "reread", false, "read the originals of documents an older reader read again; queue those whose text changed")
	f.StringVar(&req.Reader, "reader", "", "only documents read as this format (--reread): pdf, html, eml, docx, …")
	pw.Register(f, "encrypted originals read again (--reread, and --from-dlq letters whose text the audit does not store)")
	f.StringVar(&ocr, "ocr", "auto", "read pages without text by OCR (tesseract) for models that read no images, as submit did (--reread): auto or off")
	f.StringVar(&req.Attachments, "attachments", "", "how the attachments of documents that record no policy were submitted (--reread): separate (default: queue those a carrier yields now that were never submitted), skip, or inline (read into the carrier's text again; documents submitted inline by this build record it)")
	f.BoolVar(&req.DryRun, "dry-run", false, "only count what would be queued")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

func printResubmit(out, errw io.Writer, sum fleet.Resubmitted, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
		return
	}
	for _, r := range sum.Rejected {
		fmt.Fprintf(errw, "not resubmitted %s: %s\n", r.ID, r.Reason)
	}
	for _, r := range sum.Warnings {
		fmt.Fprintf(errw, "warning: resubmitted %s: %s\n", r.ID, r.Reason)
	}
	if r := sum.Reread; r != nil {
		for _, id := range r.HeldIDs {
			fmt.Fprintf(errw, "warning: held %s: its stored text has attachments inlined, and read again without them it would lose their text: not queued; if it was submitted with --attachments inline, read it again with --attachments inline\n", termsafe.String(id))
		}
	}
	if sum.DryRun {
		verb := "queued"
		if sum.Reread != nil {
			verb = "read"
		}
		fmt.Fprintf(out, "dry run: %d would be %s again", sum.Selected, verb)
		if r := sum.Reread; r != nil {
			fmt.Fprintf(out, ": %d would be queued, %d unchanged", r.Changed, r.Unchanged)
			if r.Inlined > 0 {
				fmt.Fprintf(out, ", %d with attachments inlined", r.Inlined)
			}
			if r.Held > 0 {
				fmt.Fprintf(out, ", %d held", r.Held)
			}
		}
		if r := sum.Reread; r != nil && r.AttachmentsAdded+r.AttachmentsGone > 0 {
			fmt.Fprintf(out, "; attachments: %d would be added, %d gone", r.AttachmentsAdded, r.AttachmentsGone)
		}
		fmt.Fprintln(out)
		return
	}
	defer printSealed(out, sum.Runs)
	if r := sum.Reread; r != nil {
		for _, c := range r.Changes {
			switch {
			case c.Pages == nil:
				fmt.Fprintf(out, "changed %s: its text (%d pages; the pages it had were not recorded)\n", c.ID, c.After)
			case c.Before != c.After:
				fmt.Fprintf(out, "changed %s: pages %s (%d pages, was %d)\n", c.ID, joinInts(c.Pages), c.After, c.Before)
			default:
				fmt.Fprintf(out, "changed %s: pages %s of %d\n", c.ID, joinInts(c.Pages), c.After)
			}
		}
		for _, id := range r.Added {
			fmt.Fprintf(out, "added %s: an attachment its carrier's older reader did not find\n", termsafe.String(id))
		}
		for _, id := range r.Gone {
			fmt.Fprintf(out, "gone %s: its carrier no longer yields it (kept)\n", termsafe.String(id))
		}
		fmt.Fprintf(out, "selected %d, re-read %d, changed %d (queued %d, duplicates skipped %d), unchanged %d, missing %d, not resubmitted %d",
			sum.Selected, r.Reread, r.Changed, sum.Queued, sum.Duplicates, r.Unchanged, r.Missing, len(sum.Rejected))
		if r.AttachmentsAdded+r.AttachmentsGone > 0 {
			fmt.Fprintf(out, ", attachments added %d, gone %d", r.AttachmentsAdded, r.AttachmentsGone)
		}
		if r.Inlined > 0 {
			fmt.Fprintf(out, ", with attachments inlined %d", r.Inlined)
		}
		if r.Held > 0 {
			fmt.Fprintf(out, ", held %d", r.Held)
		}
		fmt.Fprintln(out)
		return
	}
	fmt.Fprintf(out, "selected %d, queued %d, duplicates skipped %d, removed from the DLQ %d, not resubmitted %d\n",
		sum.Selected, sum.Queued, sum.Duplicates, sum.Removed, len(sum.Rejected))
}

// printSealed says which runs were reopened: each announces its done event
// once more when the jobs queued into it are final.
func printSealed(out io.Writer, runs []fleet.SealedRun) {
	for _, r := range runs {
		fmt.Fprintf(out, "run %s: %d queued, done generation %d (announced once they are final)\n", termsafe.String(r.Run), r.Queued, r.Generation)
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// checkReread checks the flags of a re-read, before anything is opened.
func checkReread(req fleet.Resubmission) error {
	switch {
	case req.FromDLQ:
		return errors.New("give --from-dlq or --reread, not both")
	case req.ToVersion > 0:
		return errors.New("--reread queues under each document's latest schema version: drop --to-version")
	case req.IncludeFailed:
		return errors.New("--include-failed does not go with --reread (every document an older reader read is selected)")
	}
	if _, err := intake.ParseAttachments(req.Attachments); err != nil {
		return fmt.Errorf("%w (the policy the documents that record none were submitted with)", err)
	}
	_, err := fleet.Readers(req.Reader)
	return err
}

// rereadOCR reads scans again as submit read them: by OCR (when --ocr is
// auto and tesseract is installed) for a model that reads no images, as
// pictures for one that does or whose provider cannot be made here.
func rereadOCR(req *fleet.Resubmission, ocr string) {
	if ocr != "auto" {
		return
	}
	t, err := document.NewTesseract()
	if err != nil {
		return
	}
	req.OCR = t
	seen := map[string]bool{} // one provider made per name, not per document
	req.ReadsImages = func(provider string) bool {
		reads, ok := seen[provider]
		if !ok {
			p, err := extractq.NewProvider(provider)
			reads = err != nil || p.Capabilities().Images
			seen[provider] = reads
		}
		return reads
	}
}
