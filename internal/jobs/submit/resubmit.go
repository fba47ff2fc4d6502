package submit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// encrypted ones.
	Reread           bool
	Reader, Password string
	// OCR reads, in a Reread, the pages without a text layer of documents
	// whose job's model reads no images (ReadsImages, by provider; nil:
	// every model does), as submit did: else their text would differ from
	// what submit stored only for want of OCR.
	OCR         document.OCR
	ReadsImages func(provider string) bool
	// Attachments is the policy the re-read documents were submitted
	// under: separate (""; the default) stores and queues the attachments
	// a carrier read again yields that the audit does not know, skip
	// leaves attachments alone.
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
	DryRun     bool        `json:"dry_run"`
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
			if err := env.Validate(); err != nil {
				sum.Rejected = append(sum.Rejected, Rejection{ID: env.DocumentID, Source: fmt.Sprintf("dlq:%d", l.Seq), Reason: "cannot resubmit: " + err.Error()})
				continue
			}
			text, err := s.letterText(ctx, st, docs, &env)
			if err != nil {
				sum.Rejected = append(sum.Rejected, Rejection{ID: env.DocumentID, Source: fmt.Sprintf("dlq:%d", l.Seq), Reason: err.Error()})
				continue
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

// letterText finds a dead letter's document: inline, in the object store,
// or in the audit store, which keeps every text a document has had; it
// must hash to what was submitted. A letter of a text the document has
// since replaced is resubmitted with that text (the job is of that text);
// submit the document again to extract its new text.
func (s *Submitter) letterText(ctx context.Context, st ResubmitStore, docs *jobs.Documents, env *jobs.Envelope) (string, error) {
	text, err := docs.Text(ctx, env)
	if err == nil && text == "" && env.TextRef == nil {
		// A letter trimmed to fit the server's max payload left its
		// inline text out (jobs.DeadLetter.Trimmed).
		err = errors.New("the dead letter does not carry the text")
	}
	if err != nil && env.Original != nil {
		// A document a reader made is known by its original's hash, not its
		// text's: read the original again, with today's readers.
		return reread(ctx, docs, env)
	}
	matches := func(text string) bool { return env.OriginalHash != "" || jobs.HashText(text) == env.DocumentHash }
	if err != nil || !matches(text) {
		d, derr := st.DocumentVersion(ctx, env.DocumentID, env.DocumentHash)
		if derr != nil {
			if err == nil {
				err = errors.New("the letter's text does not match its hash")
			}
			return "", fmt.Errorf("document text not found (%v; %v)", err, derr)
		}
		text = d.Text
	}
	if !matches(text) {
		return "", fmt.Errorf("document %s: the text found does not match the hash it was submitted with (sha256 %.12s…): submit it again", env.DocumentID, env.DocumentHash)
	}
	env.Text, env.TextRef = "", nil
	return text, nil
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
	if len(c.Pages) > maxEnvelopePages {
		return
	}
	for i, p := range c.Pages {
		if p[0] < 0 || p[0] > p[1] || p[1] > len(c.Text) {
			env.Pages, env.Scanned = nil, nil // not this text's pages: none rather than wrong ones
			return
		}
		env.Pages = append(env.Pages, jobs.Page{N: i + 1, Start: p[0], End: p[1]})
		if strings.TrimSpace(c.Text[p[0]:p[1]]) == "" {
			env.Scanned = append(env.Scanned, i+1)
		}
	}
}
