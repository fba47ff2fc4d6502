package fleet

import (
	"context"
	"fmt"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// Resubmission says what Resubmit queues again: dead letters (FromDLQ),
// documents whose latest result was made under an older schema version
// (Schema, ToVersion), or documents an older reader read (Reread). The
// documents come from the audit database and the object store: no
// original files are needed.
type Resubmission struct {
	// FromDLQ republishes the dead letters (of Run, when set) and deletes
	// each from the dead-letter stream once it is queued.
	FromDLQ bool
	// Run: with FromDLQ or Reread, only documents of this run; otherwise
	// the run name of the resubmitted jobs (default resubmit-SCHEMA-vN).
	Run string
	// Schema and ToVersion: without FromDLQ, select the documents whose
	// latest result was made under an older version of Schema (and, with
	// IncludeFailed, those that failed under any version); with FromDLQ,
	// republish the dead letters under that version instead of their own.
	Schema        string
	ToVersion     int
	IncludeFailed bool
	// Provider ("family:model") extracts the documents again: required
	// with ToVersion without FromDLQ; otherwise it overrides the dead
	// letters' or the documents' latest jobs' provider.
	Provider string
	// Options are the engine settings of the jobs queued by schema
	// version (a dead letter keeps its own).
	Options JobOptions
	// Reread reads again, with this build's readers, the originals of the
	// documents a different reader version read (only of Reader, a format
	// name such as "pdf", when set) and queues those whose text or pages
	// changed. Password opens encrypted originals; OCR reads the pages
	// without text of documents whose provider reads no images
	// (ReadsImages, by provider; nil: every one does), as Submit's caller
	// did.
	Reread           bool
	Reader, Password string
	OCR              document.OCR
	ReadsImages      func(provider string) bool
	// Attachments is how the re-read documents' attachments were
	// submitted: "separate" ("", the default: a carrier's attachments the
	// audit does not know are stored and queued, those it no longer
	// yields counted), "skip" (attachments left alone) or "inline" (read
	// into the carrier's text again, as Submit inlined them). A document
	// submitted inline by this build records it and is read inline
	// whatever Attachments says; the policy applies to those that record
	// none. One of those whose stored text has attachments inlined is held
	// (Reread.Held), not queued without them, unless Attachments is inline.
	Attachments string
	// DryRun only counts what would be queued.
	DryRun bool
}

// Resubmitted is what Resubmit did. It encodes to JSON as `submit
// resubmit --json` prints it.
type Resubmitted struct {
	Selected   int         `json:"selected"`
	Queued     int         `json:"queued"`
	Duplicates int         `json:"duplicates"`
	Removed    int         `json:"removed_from_dlq"` // dead letters deleted once queued
	Rejected   []Rejection `json:"rejected"`
	// Warnings are documents queued with a caveat (Reason): a dead letter
	// whose text neither it nor the audit had, its original read again
	// without OCR or attachments inlined, so text those made is missing.
	Warnings []Rejection `json:"warnings,omitempty"`
	DryRun   bool        `json:"dry_run"`
	// Reread counts what a re-read did (Reread only).
	Reread *Reread `json:"reread,omitempty"`
	// Runs are the runs jobs were queued into. Each counts them and, once
	// the whole resubmission was queued, is sealed again: its done event
	// (extractq.events.<run>.done, and its webhook) comes once more when
	// every job of the run, these included, is final. None after an error
	// or a dry run.
	Runs []SealedRun `json:"runs,omitempty"`
}

// SealedRun is a run a resubmission queued into: the jobs newly queued
// (duplicates not counted) and the done generation it sealed.
type SealedRun struct {
	Run        string `json:"run"`
	Queued     int    `json:"queued"`
	Generation int    `json:"generation"`
}

// Reread is what a re-read did, beyond Resubmitted's Queued and
// Duplicates (which count the changed documents).
type Reread struct {
	Reread    int `json:"reread"`    // originals read again
	Changed   int `json:"changed"`   // whose text or pages changed: queued again
	Unchanged int `json:"unchanged"` // skipped
	Missing   int `json:"missing"`   // whose original is not in the object store
	// Changes say which pages of each changed document changed.
	Changes []PageChanges `json:"changes,omitempty"`
	// AttachmentsAdded counts the attachments (any depth) of the documents
	// read again that the audit did not know as documents (their carrier's
	// older reader did not find them): stored and queued as submit would
	// have, under the carrier's latest job's schema version, run and
	// provider (a dry run only counts them). Added names them.
	AttachmentsAdded int      `json:"attachments_added"`
	Added            []string `json:"added,omitempty"`
	// AttachmentsGone counts the attachments queued with a document read
	// again that it no longer yields; Gone names them. Nothing is deleted.
	AttachmentsGone int      `json:"attachments_gone"`
	Gone            []string `json:"gone,omitempty"`
	// Inlined counts the documents read again with their attachments
	// inlined into their text, as they were submitted.
	Inlined int `json:"inlined"`
	// Held counts the documents not queued because their stored text has
	// attachments inlined and neither their record nor Attachments says
	// to inline them again: read without them they would be queued
	// poorer. They stay selected; HeldIDs names them.
	Held    int      `json:"held"`
	HeldIDs []string `json:"held_ids,omitempty"`
}

// PageChanges is what changed in one document read again.
type PageChanges struct {
	ID string `json:"id"`
	// Pages are the numbers of the pages whose text or range changed,
	// added and dropped pages included; nil when the stored text has no
	// recorded pages (stored before pages were kept, or a format without
	// pages): then only the whole text is known to have changed.
	Pages []int `json:"pages,omitempty"`
	// Before and After count the pages of the stored and the new text.
	Before int `json:"before"`
	After  int `json:"after"`
}

// Resubmit queues dead letters, outdated documents or documents an older
// reader read again. Running it twice queues nothing twice. The runs it
// queues into count its jobs and are sealed, as the submit command's are
// (Resubmitted.Runs). A document that could not be queued is a Rejection;
// the error stops the whole resubmission.
func (c *Client) Resubmit(ctx context.Context, r Resubmission) (Resubmitted, error) {
	if _, err := Readers(r.Reader); err != nil {
		return Resubmitted{}, &JobError{Field: "Reader", Err: err}
	}
	if !r.FromDLQ && !r.Reread && r.Run == "" {
		r.Run = fmt.Sprintf("resubmit-%s-v%d", r.Schema, r.ToVersion)
	}
	sum, err := c.sub.Resubmit(ctx, c.store, submit.ResubmitRequest{
		FromDLQ: r.FromDLQ, Run: r.Run, Schema: r.Schema, ToVersion: r.ToVersion, IncludeFailed: r.IncludeFailed,
		Provider: r.Provider, Options: r.Options.internal(), Reread: r.Reread, Reader: r.Reader, Password: r.Password,
		OCR: r.OCR, ReadsImages: r.ReadsImages, Attachments: intake.Attachments(r.Attachments), DryRun: r.DryRun,
	})
	out := Resubmitted{Selected: sum.Selected, Queued: sum.Queued, Duplicates: sum.Duplicates, Removed: sum.Removed, DryRun: sum.DryRun,
		Rejected: rejections(sum.Rejected), Warnings: rejections(sum.Warnings)}
	for _, r := range sum.Runs {
		out.Runs = append(out.Runs, SealedRun(r))
	}
	if sum.Reread != nil {
		r := sum.Reread
		out.Reread = &Reread{Reread: r.Reread, Changed: r.Changed, Unchanged: r.Unchanged, Missing: r.Missing,
			AttachmentsAdded: r.AttachmentsAdded, Added: r.Added, AttachmentsGone: r.AttachmentsGone, Gone: r.Gone,
			Inlined: r.Inlined, Held: r.Held, HeldIDs: r.HeldIDs}
		for _, c := range r.Changes {
			out.Reread.Changes = append(out.Reread.Changes, PageChanges(c))
		}
	}
	if err != nil {
		return out, fmt.Errorf("fleet: resubmit: %w", err)
	}
	return out, nil
}

// Readers names the document readers of this build with their versions
// ("pdf/4"), what Resubmission.Reread compares a document's reader with.
// A format named must be one of theirs: else the error lists them.
func Readers(format string) ([]string, error) {
	return submit.CurrentReaders(format)
}
