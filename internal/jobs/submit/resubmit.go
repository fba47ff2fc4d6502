package submit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
)

// ResubmitStore is the part of the audit store resubmission needs;
// *audit.Store implements it.
type ResubmitStore interface {
	Store
	RunCounter
	SchemaByName(ctx context.Context, name string, version int) (*audit.SchemaInfo, error)
	DocumentVersion(ctx context.Context, id, hash string) (*audit.Document, error)
	DocumentsForResubmit(ctx context.Context, schemaName string, toVersion int, includeFailed bool, opts ...audit.ResubmitOption) ([]audit.ResubmitCandidate, error)
	CountForResubmit(ctx context.Context, schemaName string, toVersion int, includeFailed bool) (int64, error)
	MarkResubmitted(ctx context.Context, schemaName string, toVersion int, documentIDs []string) error
	DeadLetters(ctx context.Context, f audit.DeadLetterFilter) ([]audit.DeadLetterInfo, error)
}

// ResubmitRequest says what to queue again.
type ResubmitRequest struct {
	// FromDLQ republishes the dead letters on EXTRACTQ_DLQ (filtered by Run
	// and Schema) and deletes each from the stream once it is queued.
	FromDLQ bool
	Run     string // only dead letters of this run
	// Schema and ToVersion: without FromDLQ, select the documents whose
	// latest result was made under an older version of Schema (and, with
	// IncludeFailed, those that failed under any version); with FromDLQ,
	// republish the dead letters under that version instead of their own.
	Schema        string
	ToVersion     int
	IncludeFailed bool
	// Provider overrides the dead letters' provider; without FromDLQ it is
	// required.
	Provider string
	Options  jobs.Options
	// Seqs, when set, limits FromDLQ to these dead letters.
	Seqs []uint64
	// Reread reads the originals of documents a reader other than this
	// build's made again and queues those whose text or pages changed
	// (filtered by Schema, Run and Reader, a format name); Password opens
	// encrypted ones, also the original of a dead letter read again
	// because the audit has none of its text (FromDLQ).
	Reread           bool
	Reader, Password string
	// OCR reads, in a Reread, the pages without a text layer of documents
	// whose job's model reads no images (ReadsImages, by provider; nil:
	// every model does), as submit did: else their text would differ from
	// what submit stored only for want of OCR.
	OCR         document.OCR
	ReadsImages func(provider string) bool
	// Attachments is the policy the re-read documents that record none
	// were submitted under: separate (""; the default) stores and queues
	// the attachments a carrier read again yields that the audit does not
	// know, skip leaves attachments alone, inline reads them into the
	// carrier's text again. A document submitted inline records it in its
	// metadata (intake.Inlined) and is read inline whatever this says.
	Attachments intake.Attachments
	DryRun      bool
}

// ResubmitSummary counts what a resubmission did.
type ResubmitSummary struct {
	Selected   int         `json:"selected"`
	Queued     int         `json:"queued"`
	Duplicates int         `json:"duplicates"`
	Removed    int         `json:"removed_from_dlq"`
	Rejected   []Rejection `json:"rejected"`
	// Warnings are documents queued with a caveat, and what it is: a dead
	// letter whose text neither it nor the audit had, queued with its
	// original read again (ID, Source "dlq:SEQ", Reason).
	Warnings []Rejection `json:"warnings,omitempty"`
	DryRun   bool        `json:"dry_run"`
	// Reread counts what a re-read did (Reread requests only).
	Reread *RereadCounts `json:"reread,omitempty"`
	// Runs are the runs jobs were queued into, each sealed once the whole
	// resubmission was queued (none after an error or a dry run).
	Runs []SealedRun `json:"runs,omitempty"`
}

// resubmitPage bounds one round of selection and publishing.
const resubmitPage = 1000

// Resubmit queues dead letters, outdated documents, or (Reread) documents
// an older reader read, again. Running it twice queues nothing twice:
// republished dead letters are deleted from the DLQ, resubmitted and
// re-read documents are marked in the audit store, and a crash
// in between republishes under the same message id, which the stream
// deduplicates. Each run jobs were queued into counts them and, once all
// were queued, is sealed: its done event comes once more when they are
// final (ResubmitSummary.Runs).
func (s *Submitter) Resubmit(ctx context.Context, st ResubmitStore, req ResubmitRequest) (ResubmitSummary, error) {
	rc := newRunCounts(st)
	sum, err := s.resubmit(ctx, st, req, rc)
	if err != nil || req.DryRun {
		return sum, err
	}
	sum.Runs, err = rc.seal(ctx)
	return sum, err
}

func (s *Submitter) resubmit(ctx context.Context, st ResubmitStore, req ResubmitRequest, rc *runCounts) (ResubmitSummary, error) {
	if req.FromDLQ && req.Reread {
		return ResubmitSummary{}, errors.New("resubmit: give --from-dlq or --reread, not both")
	}
	if req.FromDLQ {
		return s.resubmitDLQ(ctx, st, req, rc)
	}
	if req.Reread {
		return s.resubmitReread(ctx, st, req, rc)
	}
	if req.Schema == "" || req.ToVersion < 1 {
		return ResubmitSummary{}, errors.New("resubmit: give --from-dlq, or --schema NAME --to-version V")
	}
	if req.Provider == "" {
		return ResubmitSummary{}, errors.New("resubmit --schema: --provider is required (which model should extract the documents again?)")
	}
	return s.resubmitVersion(ctx, st, req, rc)
}

// target resolves the schema version to resubmit under and stores its body
// where the workers read it.
func (s *Submitter) target(ctx context.Context, st ResubmitStore, name string, version int) (jobs.SchemaRef, error) {
	info, err := st.SchemaByName(ctx, name, version)
	if err != nil {
		return jobs.SchemaRef{}, fmt.Errorf("schema %s version %d: %w (list versions with `extractq schema list`)", name, version, err)
	}
	ref := jobs.SchemaRef{Name: info.Name, Version: info.Version, Fingerprint: info.Fingerprint}
	if err := s.schemas.Put(ctx, jobs.SchemaBody{Name: ref.Name, Version: ref.Version, Fingerprint: ref.Fingerprint, Body: info.Body}); err != nil {
		return jobs.SchemaRef{}, err
	}
	return ref, nil
}

func (s *Submitter) resubmitDLQ(ctx context.Context, st ResubmitStore, req ResubmitRequest, rc *runCounts) (ResubmitSummary, error) {
	sum := ResubmitSummary{DryRun: req.DryRun}
	dlq := jobs.NewDLQ(s.js)
	want := map[uint64]bool{}
	for _, q := range req.Seqs {
		want[q] = true
	}
	var letters []*jobs.Letter
	err := dlq.List(ctx, jobs.ListFilter{Run: req.Run}, func(l *jobs.Letter) error {
		if (len(want) == 0 || want[l.Seq]) && (req.Schema == "" || l.Job.Schema.Name == req.Schema) {
			letters = append(letters, l)
		}
		return nil
	})
	if err != nil {
		return sum, err
	}
	sum.Selected = len(letters)
	if req.DryRun || len(letters) == 0 {
		return sum, nil
	}
	var override *jobs.SchemaRef
	if req.ToVersion > 0 {
		if req.Schema == "" {
			return sum, errors.New("resubmit --from-dlq --to-version: name the schema with --schema")
		}
		ref, err := s.target(ctx, st, req.Schema, req.ToVersion)
		if err != nil {
			return sum, err
		}
		override = &ref
	}
	var prov *Job
	if req.Provider != "" {
		model, pool, err := ResolveProvider(req.Provider)
		if err != nil {
			return sum, err
		}
		prov = &Job{Provider: req.Provider, Model: model, Pool: pool}
	}
	docs := jobs.NewDocuments(s.js)
	for len(letters) > 0 {
		page := letters[:min(resubmitPage, len(letters))]
		letters = letters[len(page):]
		var items []item
		var seqs []uint64
		for _, l := range page {
			env := l.Job
			if err := letterJobErr(l); err != nil {
				sum.Rejected = append(sum.Rejected, Rejection{ID: env.DocumentID, Source: fmt.Sprintf("dlq:%d", l.Seq), Reason: "cannot resubmit: " + err.Error()})
				continue
			}
			text, warn, err := s.letterText(ctx, st, docs, &env, req.Password)
			if err != nil {
				sum.Rejected = append(sum.Rejected, Rejection{ID: env.DocumentID, Source: fmt.Sprintf("dlq:%d", l.Seq), Reason: err.Error()})
				continue
			}
			if warn != "" {
				sum.Warnings = append(sum.Warnings, Rejection{ID: env.DocumentID, Source: fmt.Sprintf("dlq:%d", l.Seq), Reason: warn})
			}
			if override != nil {
				env.Schema = *override
			}
			if prov != nil {
				env.Provider, env.Model, env.Pool = prov.Provider, prov.Model, prov.Pool
			}
			env.Resubmission = fmt.Sprintf("dlq:%d", l.Seq)
			env.SubmittedAt = time.Now().UTC()
			items = append(items, item{env: &env, text: text})
			seqs = append(seqs, l.Seq)
		}
		if err := s.publishCounted(ctx, rc, items); err != nil {
			return sum, err
		}
		marks := map[jobs.SchemaRef][]string{}
		for i, it := range items {
			if it.err != nil {
				sum.Rejected = append(sum.Rejected, Rejection{ID: it.env.DocumentID, Source: fmt.Sprintf("dlq:%d", seqs[i]), Reason: it.err.Error()})
				continue
			}
			if it.dup {
				sum.Duplicates++
			} else {
				sum.Queued++
			}
			if err := dlq.Delete(ctx, seqs[i]); err != nil {
				return sum, err
			}
			sum.Removed++
			marks[it.env.Schema] = append(marks[it.env.Schema], it.env.DocumentID)
		}
		for ref, ids := range marks {
			if err := st.MarkResubmitted(ctx, ref.Name, ref.Version, ids); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

// letterJobErr is Validate of a dead letter's job. A letter trimmed to fit
// the server's max payload (DeadLetter.Trimmed) may carry no text, inline
// or by reference: letterText takes it from the audit, so its absence is
// no fault there.
func letterJobErr(l *jobs.Letter) error {
	err := l.Job.Validate()
	if l.Trimmed != "" && errors.Is(err, jobs.ErrNoDocumentText) {
		return nil
	}
	return err
}

// letterText finds a dead letter's document: inline, in the object store,
// or in the audit store, which keeps every text a document has had; it
// must hash to what was submitted. A letter of a text the document has
// since replaced is resubmitted with that text (the job is of that text);
// submit the document again to extract its new text.
//
// A document a reader made is known by its original's hash: the audit
// keeps, under that hash, the text submit made of it (OCR text,
// attachments inlined, what its reading options made), and that text is
// resubmitted (storedDocument). Only when the audit has none is the
// original read again, with this build's readers and without OCR
// (password opens an encrypted one), its attachments inlined only when
// the letter's metadata records that submit inlined them (reread); warn
// then says so, since text OCR made is missing from the job. (The audit
// keeps no document of that original, so the letter's metadata is the
// only record of how it was read.)
func (s *Submitter) letterText(ctx context.Context, st ResubmitStore, docs *jobs.Documents, env *jobs.Envelope, password string) (text, warn string, err error) {
	text, err = docs.Text(ctx, env)
	if err == nil && text == "" && env.TextRef == nil {
		// A letter trimmed to fit the server's max payload left its
		// inline text out (jobs.DeadLetter.Trimmed).
		err = errors.New("the dead letter does not carry the text")
	}
	if err != nil && env.Original != nil {
		d, derr := st.DocumentVersion(ctx, env.DocumentID, env.DocumentHash)
		if derr == nil {
			storedDocument(env, d)
			letterMetadata(env, d)
			return d.Text, "", nil
		}
		if !errors.Is(derr, audit.ErrNotFound) {
			return "", "", fmt.Errorf("document text not found (%v; %w): resubmit again once the audit database answers", err, derr)
		}
		text, inlined, err := reread(ctx, docs, env, password)
		if err != nil {
			return "", "", err
		}
		how := "without OCR or attachments inlined, so text those made"
		if inlined {
			how = "without OCR (its attachments inlined, as its metadata records), so text OCR made"
		}
		return text, fmt.Sprintf("the audit stores no text of document %s (sha256 %.12s…): its original was read again with this build's readers, %s at submit is missing from the job; submit the file again to have it", env.DocumentID, env.DocumentHash, how), nil
	}
	matches := func(text string) bool { return env.OriginalHash != "" || jobs.HashText(text) == env.DocumentHash }
	if err != nil || !matches(text) {
		d, derr := st.DocumentVersion(ctx, env.DocumentID, env.DocumentHash)
		if derr != nil {
			if err == nil {
				err = errors.New("the letter's text does not match its hash")
			}
			return "", "", fmt.Errorf("document text not found (%v; %v)", err, derr)
		}
		text = d.Text
		letterMetadata(env, d)
	}
	if !matches(text) {
		return "", "", fmt.Errorf("document %s: the text found does not match the hash it was submitted with (sha256 %.12s…): submit it again", env.DocumentID, env.DocumentHash)
	}
	env.Text, env.TextRef = "", nil
	return text, "", nil
}

// letterMetadata gives env, a dead letter trimmed to fit the server's max
// payload (jobs.DeadLetter.Trimmed), back the metadata the letter left
// out, from d, the document the audit stored for it: the same metadata,
// recorded at submit. A letter's own metadata is kept.
func letterMetadata(env *jobs.Envelope, d *audit.Document) {
	if len(env.Metadata) == 0 && len(d.Metadata) > 0 && string(d.Metadata) != "{}" {
		env.Metadata = d.Metadata
	}
}

// storedDocument makes env, a dead letter of a document a reader made, the
// job of d, its text as the audit stores it. The letter's pages (with
// their labels) and scans stay when they are the pages the audit recorded
// for that text, or, when it recorded none (an earlier text, or one stored
// before pages were kept), when they lie within it; else the audit's
// pages go, a blank one as a scan, or none rather than pages of another
// text.
func storedDocument(env *jobs.Envelope, d *audit.Document) {
	env.Text, env.TextRef = "", nil
	if d.Pages == nil && pagesWithin(env.Pages, len(d.Text)) || samePages(env.Pages, d.Pages) {
		return
	}
	env.Pages, env.Scanned = nil, nil
	pagesOf(env, d.Text, d.Pages)
}

// pagesWithin reports whether pages are in order, each a range of a text
// of n bytes.
func pagesWithin(pages []jobs.Page, n int) bool {
	end := 0
	for _, p := range pages {
		if p.Start < end || p.End < p.Start || p.End > n {
			return false
		}
		end = p.End
	}
	return true
}

// samePages reports whether a job's pages are the ranges recorded.
func samePages(pages []jobs.Page, ranges []audit.PageRange) bool {
	if len(pages) != len(ranges) || ranges == nil {
		return false
	}
	for i, p := range pages {
		if p.Start != ranges[i][0] || p.End != ranges[i][1] {
			return false
		}
	}
	return true
}

func (s *Submitter) resubmitVersion(ctx context.Context, st ResubmitStore, req ResubmitRequest, rc *runCounts) (ResubmitSummary, error) {
	sum := ResubmitSummary{DryRun: req.DryRun}
	if req.DryRun {
		n, err := st.CountForResubmit(ctx, req.Schema, req.ToVersion, req.IncludeFailed)
		sum.Selected = int(n)
		return sum, err
	}
	ref, err := s.target(ctx, st, req.Schema, req.ToVersion)
	if err != nil {
		return sum, err
	}
	model, pool, err := ResolveProvider(req.Provider)
	if err != nil {
		return sum, err
	}
	// Dead letters of these documents leave the DLQ once they are queued.
	dead, err := st.DeadLetters(ctx, audit.DeadLetterFilter{Schema: req.Schema, Pending: true, Limit: 1 << 30})
	if err != nil {
		return sum, err
	}
	letters := map[string][]uint64{}
	for _, d := range dead {
		if d.Stream == jobs.DLQStream {
			letters[d.DocumentID] = append(letters[d.DocumentID], d.Seq)
		}
	}
	dlq := jobs.NewDLQ(s.js)
	docs := jobs.NewDocuments(s.js)
	skipped := map[string]bool{} // selected but not resubmittable: not selected again
	for {
		cands, err := st.DocumentsForResubmit(ctx, req.Schema, req.ToVersion, req.IncludeFailed, audit.WithResubmitLimit(resubmitPage+len(skipped)))
		if err != nil {
			return sum, err
		}
		var items []item
		now := time.Now().UTC()
		for _, c := range cands {
			if skipped[c.ID] {
				continue
			}
			sum.Selected++
			if !c.Stored {
				skipped[c.ID] = true
				sum.Rejected = append(sum.Rejected, Rejection{ID: c.ID, Source: c.Source, Reason: "its text was never stored: submit the file again"})
				continue
			}
			env := &jobs.Envelope{
				DocumentID: c.ID, Metadata: c.Metadata, Schema: ref, Run: req.Run,
				Provider: req.Provider, Model: model, Pool: pool, Options: req.Options, SubmittedAt: now,
				Resubmission: fmt.Sprintf("schema:%s:%d", ref.Name, ref.Version),
			}
			if c.Original {
				withOriginal(env, c)
				// The pictures stored for an original read with a password
				// go with the job: a worker cannot read it again.
				if len(env.Scanned) > 0 || req.Options.Input == string(extractq.InputNative) {
					if env.Pictures, err = docs.PicturesOf(ctx, c.Hash); err != nil {
						return sum, err
					}
				}
			}
			items = append(items, item{text: c.Text, env: env})
		}
		if len(items) == 0 {
			return sum, nil
		}
		if err := s.publishCounted(ctx, rc, items); err != nil {
			return sum, err
		}
		var ids []string
		for _, it := range items {
			if it.err != nil {
				skipped[it.env.DocumentID] = true
				sum.Rejected = append(sum.Rejected, Rejection{ID: it.env.DocumentID, Reason: it.err.Error()})
				continue
			}
			if it.dup {
				sum.Duplicates++
			} else {
				sum.Queued++
			}
			ids = append(ids, it.env.DocumentID)
			for _, seq := range letters[it.env.DocumentID] {
				if err := dlq.Delete(ctx, seq); err != nil {
					return sum, err
				}
				sum.Removed++
			}
		}
		if err := st.MarkResubmitted(ctx, req.Schema, req.ToVersion, ids); err != nil {
			return sum, err
		}
	}
}

// withOriginal gives a resubmitted job of a document a reader made its
// identity, original, reader and pages as the audit keeps them, so that its
// result is keyed as the document is and its sources carry pages. A page
// whose stored text is blank goes as a scan: the worker reads the original
// again for it (a picture, or the whole PDF).
func withOriginal(env *jobs.Envelope, c audit.ResubmitCandidate) {
	env.Original = &jobs.ObjectRef{Bucket: jobs.DocsBucket, Name: c.Hash}
	env.OriginalHash, env.Reader = c.Hash, c.Reader
	pagesOf(env, c.Text, c.Pages)
}

// pagesOf gives env the pages ranges records of text, numbered from 1, a
// blank one as a scan (the worker reads the original again for it: a
// picture, or the whole PDF); none when there are more than an envelope
// carries or one is not a range of text.
func pagesOf(env *jobs.Envelope, text string, ranges []audit.PageRange) {
	if len(ranges) > maxEnvelopePages {
		return
	}
	for i, p := range ranges {
		if p[0] < 0 || p[0] > p[1] || p[1] > len(text) {
			env.Pages, env.Scanned = nil, nil // not this text's pages: none rather than wrong ones
			return
		}
		env.Pages = append(env.Pages, jobs.Page{N: i + 1, Start: p[0], End: p[1]})
		if strings.TrimSpace(text[p[0]:p[1]]) == "" {
			env.Scanned = append(env.Scanned, i+1)
		}
	}
}
