package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
)

// RereadStore is the part of the audit store a re-read needs;
// *audit.Store implements it.
type RereadStore interface {
	ResubmitStore
	DocumentsForReread(ctx context.Context, f audit.RereadFilter) ([]audit.RereadCandidate, error)
	CountForReread(ctx context.Context, f audit.RereadFilter) (int64, error)
	SetDocumentReaders(ctx context.Context, ids, hashes, readers []string, inlined []bool) error
	KnownDocuments(ctx context.Context, ids []string) (map[string]bool, error)
	AttachmentsQueued(ctx context.Context, ids, runs []string) (map[string][]string, error)
}

// RereadCounts is what a re-read did, beyond ResubmitSummary's queued and
// duplicates (which count the changed documents).
type RereadCounts struct {
	Reread    int `json:"reread"`    // originals read again
	Changed   int `json:"changed"`   // whose text or pages changed: queued again
	Unchanged int `json:"unchanged"` // skipped
	Missing   int `json:"missing"`   // whose original is not in the object store
	// Changes say which pages of each changed document changed.
	Changes []PageChanges `json:"changes,omitempty"`
	// AttachmentsAdded counts the attachments (at any depth) of the
	// documents read again that the audit does not know as documents: the
	// reader that read their carrier before did not find them. Each was
	// stored and queued as submit would have (a dry run only counts them),
	// under its carrier's latest job's schema version, run and provider;
	// Added names them.
	AttachmentsAdded int      `json:"attachments_added"`
	Added            []string `json:"added,omitempty"`
	// AttachmentsGone counts the attachments queued with a document read
	// again (its attachments' jobs in its latest job's run) that it no
	// longer yields; Gone names them. Nothing is deleted.
	AttachmentsGone int      `json:"attachments_gone"`
	Gone            []string `json:"gone,omitempty"`
	// Inlined counts the documents read again with their attachments
	// inlined into their text, as they were submitted (recorded in their
	// metadata, or ResubmitRequest.Attachments inline for those that
	// record no policy).
	Inlined int `json:"inlined"`
	// Held counts the documents not queued because their stored text has
	// attachments inlined that nothing said to inline again (submitted
	// with --attachments inline before the policy was recorded): read
	// without them, they would be queued poorer. They stay selected;
	// HeldIDs names them.
	Held    int      `json:"held"`
	HeldIDs []string `json:"held_ids,omitempty"`
}

// PageChanges is what changed in one document read again.
type PageChanges struct {
	ID string `json:"id"`
	// Pages are the numbers of the pages whose text or range changed,
	// added pages and dropped ones included; nil when the stored text has
	// no recorded pages (stored before pages were kept, or a format
	// without pages): then only the whole text is known to have changed.
	Pages []int `json:"pages,omitempty"`
	// Before and After count the pages of the stored and the new text.
	Before int `json:"before"`
	After  int `json:"after"`
}

// CurrentReaders names the readers of this build ("pdf/4"). A format
// named (--reader) must be one of theirs: else the error lists them.
func CurrentReaders(format string) ([]string, error) {
	var out, names []string
	known := format == ""
	for _, f := range document.Formats() {
		names = append(names, f.Name)
		known = known || f.Name == format
		out = append(out, document.ReaderInfo{Name: f.Name, Version: f.Version}.String())
	}
	if !known {
		return nil, fmt.Errorf("unknown reader %q: want one of %v", format, names)
	}
	return out, nil
}

// resubmitReread reads again, with this build's readers, the originals of
// the documents a different reader read, and queues a new job for each
// whose text or pages changed, with its latest job's schema, run and
// provider (req.Provider overrides it). An unchanged document is recorded
// as read by today's reader, so neither is selected again; a document whose
// original is missing or unreadable is rejected and stays selected. The
// attachments a document read again yields that the audit does not know
// (its older reader did not find them) are stored and queued as submit
// would have, changed or not (queueAttachments).
func (s *Submitter) resubmitReread(ctx context.Context, st ResubmitStore, req ResubmitRequest, rc *runCounts) (ResubmitSummary, error) {
	sum := ResubmitSummary{DryRun: req.DryRun, Reread: &RereadCounts{}}
	rst, ok := st.(RereadStore)
	if !ok {
		return sum, errors.New("resubmit --reread: the audit store cannot select documents to read again")
	}
	current, err := CurrentReaders(req.Reader)
	if err != nil {
		return sum, err
	}
	// Parsed once: "" becomes separate, which rereadMode then takes as is.
	if req.Attachments, err = intake.ParseAttachments(string(req.Attachments)); err != nil {
		return sum, fmt.Errorf("resubmit --reread: %w (the policy the documents that record none were submitted with)", err)
	}
	f := audit.RereadFilter{Current: current, Format: req.Reader, Schema: req.Schema, Run: req.Run, Limit: resubmitPage}
	var override *Job
	if req.Provider != "" {
		model, pool, err := ResolveProvider(req.Provider)
		if err != nil {
			return sum, err
		}
		override = &Job{Provider: req.Provider, Model: model, Pool: pool}
	}
	if req.DryRun {
		n, err := rst.CountForReread(ctx, f)
		sum.Selected = int(n)
		if err != nil {
			return sum, err
		}
		return sum, s.dryReread(ctx, rst, f, req, override, &sum)
	}
	type version struct {
		name string
		n    int
	}
	refs := map[version]jobs.SchemaRef{}
	docs := jobs.NewDocuments(s.js)
	seen := newAttachmentsSeen()
	for {
		cands, err := rst.DocumentsForReread(ctx, f)
		if err != nil || len(cands) == 0 {
			return sum, err
		}
		f.After = cands[len(cands)-1].ID
		var items []item
		var stored []audit.Document
		var same [3][]string      // ids, hashes, readers of the unchanged
		var sameInlined []bool    // and whether each was read inlined
		var changes []PageChanges // of the items, in order
		var carriers []carrier    // with the attachments they yield
		now := time.Now().UTC()
		for _, c := range cands {
			sum.Selected++
			reject := func(err error) {
				sum.Rejected = append(sum.Rejected, Rejection{ID: c.ID, Source: c.Source, Reason: err.Error()})
			}
			key := version{c.SchemaName, c.SchemaVersion}
			ref, ok := refs[key]
			if !ok {
				if ref, err = s.target(ctx, st, c.SchemaName, c.SchemaVersion); err != nil {
					reject(err)
					continue
				}
				refs[key] = ref
			}
			orig := &jobs.ObjectRef{Bucket: jobs.DocsBucket, Name: c.OriginalHash}
			b, err := docs.Original(ctx, &jobs.Envelope{Original: orig})
			if err != nil {
				if errors.Is(err, jobs.ErrEnvelope) {
					sum.Reread.Missing++
				}
				reject(fmt.Errorf("read the original again: %w", err))
				continue
			}
			orig.Size = int64(len(b))
			provider := c.Provider
			if override != nil {
				provider = override.Provider
			}
			r, err := readAgain(ctx, c, b, req, provider)
			if err != nil {
				reject(err)
				continue
			}
			if !r.count(sum.Reread, c) {
				if r.empty != nil {
					reject(r.empty)
				}
				continue
			}
			doc := r.doc
			if r.mode == intake.AttachSeparate {
				job := Job{Schema: ref, Run: c.Run, Provider: c.Provider, Model: c.Model, Pool: c.Pool, Options: req.Options}
				if override != nil {
					job.Provider, job.Model, job.Pool = override.Provider, override.Model, override.Pool
				}
				carriers = append(carriers, carrier{c: c, job: job, docs: attachmentDocs(ctx, c, doc, !r.textOnly, req.Password)})
			}
			if r.same {
				sum.Reread.Unchanged++
				same[0], same[1], same[2] = append(same[0], c.ID), append(same[1], c.Hash), append(same[2], doc.Reader.String())
				sameInlined = append(sameInlined, r.mode == intake.AttachInline)
				continue
			}
			meta, ranges, ch := r.meta, r.ranges, r.changes
			env := &jobs.Envelope{
				DocumentID: c.ID, Metadata: meta, Schema: ref, Run: c.Run,
				Provider: c.Provider, Model: c.Model, Pool: c.Pool, Options: req.Options, SubmittedAt: now,
				Resubmission: "reread:" + doc.Reader.String(),
			}
			if override != nil {
				env.Provider, env.Model, env.Pool = override.Provider, override.Model, override.Pool
			}
			describe(env, Doc{Document: doc, Original: b}, orig)
			if req.Password != "" && doc.Locked {
				// As submit: a PDF going whole must open without it, and
				// the pages' pictures of one that needed it go with the
				// job.
				if err := intake.LockedWhole(doc, req.Options.Input == string(extractq.InputNative)); err != nil {
					reject(err)
					continue
				}
				if pics := pagePictures(doc, req.Options.Input); pics != nil {
					if env.Pictures, err = s.pub.PutPictures(ctx, c.OriginalHash, pics); err != nil {
						return sum, err
					}
				}
			}
			items = append(items, item{env: env, text: doc.Text})
			stored = append(stored, audit.Document{ID: c.ID, Hash: c.OriginalHash, Source: c.Source, Metadata: meta, Text: doc.Text, Pages: ranges})
			changes = append(changes, ch)
		}
		if err := s.publishCounted(ctx, rc, items); err != nil {
			return sum, err
		}
		var put []audit.Document
		for i, it := range items {
			if it.err != nil {
				sum.Rejected = append(sum.Rejected, Rejection{ID: it.env.DocumentID, Source: stored[i].Source, Reason: it.err.Error()})
				continue
			}
			sum.Reread.Changed++
			sum.Reread.Changes = append(sum.Reread.Changes, changes[i])
			if it.dup {
				sum.Duplicates++
			} else {
				sum.Queued++
			}
			put = append(put, stored[i])
		}
		// Before the carriers' new readers are recorded: a carrier whose
		// attachments could not be queued is selected again.
		if err := s.queueAttachments(ctx, rst, rc, carriers, seen, &sum); err != nil {
			return sum, err
		}
		// Only once queued: the new text and reader are what makes the
		// document not selected again.
		if err := st.PutDocuments(ctx, put); err != nil {
			return sum, err
		}
		if err := rst.SetDocumentReaders(ctx, same[0], same[1], same[2], sameInlined); err != nil {
			return sum, err
		}
	}
}

// pageRanges are doc's pages as the audit keeps them; nil for a document
// without pages.
func pageRanges(doc *document.Document) []audit.PageRange {
	if len(doc.Pages) == 0 {
		return nil
	}
	out := make([]audit.PageRange, len(doc.Pages))
	for i, p := range doc.Pages {
		out[i] = audit.PageRange{p.Start, p.End}
	}
	return out
}

// changedPages compares the stored text's pages with the new ones, page by
// page number: a page changed when its text did, or when only one of the
// two texts has it. Ranges are not compared: a page that moved because an
// earlier one grew is the same page.
func changedPages(old audit.Document, doc *document.Document, ranges []audit.PageRange) PageChanges {
	ch := PageChanges{ID: old.ID, Before: len(old.Pages), After: len(ranges)}
	if old.Pages == nil {
		return ch
	}
	pageText := func(text string, r audit.PageRange) (string, bool) {
		if r[0] < 0 || r[0] > r[1] || r[1] > len(text) {
			return "", false
		}
		return text[r[0]:r[1]], true
	}
	for i := range max(len(old.Pages), len(ranges)) {
		if i >= len(old.Pages) || i >= len(ranges) {
			ch.Pages = append(ch.Pages, i+1)
			continue
		}
		a, okA := pageText(old.Text, old.Pages[i])
		b, okB := pageText(doc.Text, ranges[i])
		if !okA || !okB || a != b {
			ch.Pages = append(ch.Pages, i+1)
		}
	}
	return ch
}

// readBack is a document's original read again as submit read it.
type readBack struct {
	doc      *document.Document // its attachments inlined under AttachInline
	mode     intake.Attachments // how its attachments were submitted
	textOnly bool               // read for a model that reads no images
	// held: its stored text has attachments inlined, and nothing says it
	// was submitted so (mode is not AttachInline): read without them it
	// would be queued poorer, so it is not queued (RereadCounts.Held).
	held bool
	// empty says why a document with no text in it is rejected.
	empty error
	// What was compared with the stored document: its new metadata,
	// pages and changed pages, and whether nothing changed.
	meta    json.RawMessage
	ranges  []audit.PageRange
	changes PageChanges
	same    bool
}

// readAgain reads b, the original of c, as submit read it: by OCR (req.OCR)
// for a model that reads no images (that of provider, c's latest job's or
// the one given), and with its attachments inlined when it was submitted
// so (rereadMode), through the same Arrange as submit; and compares it
// with the stored document. The error is the original's reader's.
func readAgain(ctx context.Context, c audit.RereadCandidate, b []byte, req ResubmitRequest, provider string) (*readBack, error) {
	r := &readBack{mode: rereadMode(c, req.Attachments)}
	opts := document.Options{Name: c.ID, Password: req.Password}
	r.textOnly = req.ReadsImages != nil && !req.ReadsImages(provider) || req.Options.Input == "text"
	if r.textOnly {
		opts.OCR = req.OCR
	}
	doc, err := document.ReadBytes(ctx, b, opts)
	if err != nil {
		return nil, fmt.Errorf("read the original again: %w", err)
	}
	if r.mode == intake.AttachInline {
		doc, _ = r.mode.Arrange(doc)
	} else if intake.LooksInlined(c.Text, doc.Text) {
		r.held = true
		return r, nil
	}
	r.doc = doc
	if strings.TrimSpace(doc.Text) == "" && len(intake.UnreadPages(doc)) == 0 && len(doc.Unreadable()) == 0 {
		r.empty = fmt.Errorf("read the original again: %w: read as %s, no text in it", ErrBadInput, doc.Format)
		return r, nil
	}
	r.meta = rereadMetadata(c.Metadata, doc, r.mode)
	r.ranges = pageRanges(doc)
	r.changes = changedPages(c.Document, doc, r.ranges)
	r.same = doc.Text == c.Text && sameDescription(c.Metadata, r.meta) && len(r.changes.Pages) == 0
	return r, nil
}

// count counts a document read again in counts, and reports whether it
// goes on to be compared: not when it is held (named in counts) or has no
// text (r.empty).
func (r *readBack) count(counts *RereadCounts, c audit.RereadCandidate) bool {
	counts.Reread++
	if r.held {
		counts.Held++
		counts.HeldIDs = append(counts.HeldIDs, c.ID)
		return false
	}
	if r.empty != nil {
		return false
	}
	if r.mode == intake.AttachInline {
		counts.Inlined++
	}
	return true
}

// rereadMode is how the attachments of c were submitted: inline when its
// metadata records so (intake.Inlined, whatever req says), else as req says
// (the policy of the documents that record none, parsed by
// resubmitReread).
func rereadMode(c audit.RereadCandidate, req intake.Attachments) intake.Attachments {
	if intake.Inlined(c.Metadata) {
		return intake.AttachInline
	}
	return req
}

// rereadMetadata is the metadata of a document read again: what the reader
// says now, under the name it was stored with (the reader sees only its
// id), and the attachments policy it was read under (mode).
func rereadMetadata(old json.RawMessage, doc *document.Document, mode intake.Attachments) json.RawMessage {
	meta := intake.DocumentMetadata(doc, mode)
	var o, m map[string]any
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(meta, &m) != nil {
		return meta
	}
	delete(m, "name")
	if n, ok := o["name"]; ok {
		m["name"] = n
	}
	b, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return b
}

// sameDescription reports whether two documents' metadata agree but for
// the reader and the attachments policy (which a document stored before
// it was recorded lacks): the same format, page count, title, …
func sameDescription(a, b json.RawMessage) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, k := range []string{"reader", "attachments"} {
		delete(x, k)
		delete(y, k)
	}
	return maps.EqualFunc(x, y, func(u, v any) bool {
		ub, _ := json.Marshal(u)
		vb, _ := json.Marshal(v)
		return string(ub) == string(vb)
	})
}

// carrier is a document read again and the attachments it yields now.
type carrier struct {
	c    audit.RereadCandidate
	job  Job   // what its attachments are queued with: its latest job's
	docs []Doc // its attachments, as submit makes them
}

// attachmentDocs are the documents submit makes of the attachments of doc,
// the document c read again: ids C#NAME at any depth, sources SOURCE#NAME,
// each checked as submit checks it (native: pages without text may go to
// the model as pictures; password: doc was read with it, and so were its
// attachments, whose pages' pictures then go with their jobs).
func attachmentDocs(ctx context.Context, c audit.RereadCandidate, doc *document.Document, native bool, password string) []Doc {
	if len(doc.Attachments) == 0 {
		return nil
	}
	r := &intake.Reader{Attachments: intake.AttachSeparate, Native: native, Password: password}
	var out []Doc
	_ = r.Separate(ctx, c.ID, c.Source, doc, func(d Doc) error { // fn never fails
		out = append(out, d)
		return nil
	})
	return out
}

// attachmentsSeen are the attachments a re-read has counted, added or
// gone: an e-mail attached to an e-mail is read again by itself too, and
// yields the same attachments as its carrier.
type attachmentsSeen struct{ added, gone map[string]bool }

func newAttachmentsSeen() attachmentsSeen {
	return attachmentsSeen{added: map[string]bool{}, gone: map[string]bool{}}
}

// newAttachments sorts the attachments of carriers: those the audit does
// not know as documents (by id, as submit assigns them) are returned by
// their carrier's job, the ones queued with a carrier that it no longer
// yields counted as gone, and the new ones that cannot be read rejected,
// as submit rejects them (unless dry).
func (s *Submitter) newAttachments(ctx context.Context, rst RereadStore, carriers []carrier, seen attachmentsSeen, sum *ResubmitSummary, dry bool) (map[Job][]Doc, []Job, error) {
	var ids, cids, runs []string
	for _, k := range carriers {
		cids, runs = append(cids, k.c.ID), append(runs, k.c.Run)
		for _, d := range k.docs {
			ids = append(ids, d.ID)
		}
	}
	known, err := rst.KnownDocuments(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	queued, err := rst.AttachmentsQueued(ctx, cids, runs)
	if err != nil {
		return nil, nil, err
	}
	r := sum.Reread
	byJob := map[Job][]Doc{}
	var order []Job
	for _, k := range carriers {
		yields := map[string]bool{}
		for _, d := range k.docs {
			yields[d.ID] = true
			if known[d.ID] || seen.added[d.ID] {
				continue
			}
			seen.added[d.ID] = true
			if d.Err == nil {
				d.Err = checkDoc(&d)
			}
			if d.Err == nil {
				d.Err = s.pub.CheckSize(d.Text)
			}
			if d.Err != nil {
				if !dry {
					sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: d.Err.Error()})
				}
				continue
			}
			if dry {
				r.AttachmentsAdded++
				r.Added = append(r.Added, d.ID)
				continue
			}
			if _, ok := byJob[k.job]; !ok {
				order = append(order, k.job)
			}
			byJob[k.job] = append(byJob[k.job], d)
		}
		for _, id := range queued[k.c.ID] {
			if !yields[id] && !seen.gone[id] {
				seen.gone[id] = true
				r.AttachmentsGone++
				r.Gone = append(r.Gone, id)
			}
		}
	}
	return byJob, order, nil
}

// queueAttachments stores and queues the attachments of carriers the
// audit does not know, as submit would have: their originals in the
// object store, the documents in the audit, a job each under its
// carrier's latest job's schema version, run and provider, with the job
// id submit gives it (a job already final is not queued again).
func (s *Submitter) queueAttachments(ctx context.Context, rst RereadStore, rc *runCounts, carriers []carrier, seen attachmentsSeen, sum *ResubmitSummary) error {
	if len(carriers) == 0 {
		return nil
	}
	byJob, order, err := s.newAttachments(ctx, rst, carriers, seen, sum, false)
	if err != nil {
		return err
	}
	for _, job := range order {
		b := &batch{docs: byJob[job]}
		if err := s.stage(ctx, job, b); err != nil {
			return err
		}
		sum.Rejected = append(sum.Rejected, b.rejected...)
		if err := s.publishCounted(ctx, rc, b.items); err != nil {
			return err
		}
		for i, it := range b.items {
			if it.err != nil {
				d := b.docs[b.idx[i]]
				sum.Rejected = append(sum.Rejected, Rejection{ID: printableID(d.ID), Source: d.Source, Reason: it.err.Error()})
				continue
			}
			sum.Reread.AttachmentsAdded++
			sum.Reread.Added = append(sum.Reread.Added, it.env.DocumentID)
		}
	}
	return nil
}

// dryReread is a dry run's look: it reads the selected originals again
// as the real run would, and counts the documents that would be queued
// (Changed, with their pages), unchanged, held and read with their
// attachments inlined, and the attachments that would be added and gone.
// An original that cannot be read is left out: the real run says why.
func (s *Submitter) dryReread(ctx context.Context, rst RereadStore, f audit.RereadFilter, req ResubmitRequest, override *Job, sum *ResubmitSummary) error {
	docs := jobs.NewDocuments(s.js)
	seen := newAttachmentsSeen()
	for {
		cands, err := rst.DocumentsForReread(ctx, f)
		if err != nil || len(cands) == 0 {
			return err
		}
		f.After = cands[len(cands)-1].ID
		var carriers []carrier
		for _, c := range cands {
			b, err := docs.Original(ctx, &jobs.Envelope{Original: &jobs.ObjectRef{Bucket: jobs.DocsBucket, Name: c.OriginalHash}})
			if err != nil {
				continue
			}
			provider := c.Provider
			if override != nil {
				provider = override.Provider
			}
			r, err := readAgain(ctx, c, b, req, provider)
			if err != nil || !r.count(sum.Reread, c) {
				continue
			}
			if r.mode == intake.AttachSeparate {
				carriers = append(carriers, carrier{c: c, docs: attachmentDocs(ctx, c, r.doc, !r.textOnly, req.Password)})
			}
			if r.same {
				sum.Reread.Unchanged++
				continue
			}
			sum.Reread.Changed++
			sum.Reread.Changes = append(sum.Reread.Changes, r.changes)
		}
		if _, _, err := s.newAttachments(ctx, rst, carriers, seen, sum, true); err != nil {
			return err
		}
	}
}
