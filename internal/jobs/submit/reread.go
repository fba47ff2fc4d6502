package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

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
	SetDocumentReaders(ctx context.Context, ids, hashes, readers []string) error
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
// original is missing or unreadable is rejected and stays selected.
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
	f := audit.RereadFilter{Current: current, Format: req.Reader, Schema: req.Schema, Run: req.Run, Limit: resubmitPage}
	if req.DryRun {
		n, err := rst.CountForReread(ctx, f)
		sum.Selected = int(n)
		return sum, err
	}
	var override *Job
	if req.Provider != "" {
		model, pool, err := ResolveProvider(req.Provider)
		if err != nil {
			return sum, err
		}
		override = &Job{Provider: req.Provider, Model: model, Pool: pool}
	}
	type version struct {
		name string
		n    int
	}
	refs := map[version]jobs.SchemaRef{}
	docs := jobs.NewDocuments(s.js)
	for {
		cands, err := rst.DocumentsForReread(ctx, f)
		if err != nil || len(cands) == 0 {
			return sum, err
		}
		f.After = cands[len(cands)-1].ID
		var items []item
		var stored []audit.Document
		var same [3][]string      // ids, hashes, readers of the unchanged
		var changes []PageChanges // of the items, in order
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
			opts := document.Options{Name: c.ID, Password: req.Password}
			if req.ReadsImages != nil && !req.ReadsImages(provider) || req.Options.Input == "text" {
				opts.OCR = req.OCR
			}
			doc, err := document.ReadBytes(ctx, b, opts)
			if err != nil {
				reject(fmt.Errorf("read the original again: %w", err))
				continue
			}
			sum.Reread.Reread++
			if strings.TrimSpace(doc.Text) == "" && len(intake.UnreadPages(doc)) == 0 && len(doc.Unreadable()) == 0 {
				reject(fmt.Errorf("read the original again: %w: read as %s, no text in it", ErrBadInput, doc.Format))
				continue
			}
			meta := rereadMetadata(c.Metadata, doc)
			ranges := pageRanges(doc)
			ch := changedPages(c.Document, doc, ranges)
			if doc.Text == c.Text && sameDescription(c.Metadata, meta) && len(ch.Pages) == 0 {
				sum.Reread.Unchanged++
				same[0], same[1], same[2] = append(same[0], c.ID), append(same[1], c.Hash), append(same[2], doc.Reader.String())
				continue
			}
			env := &jobs.Envelope{
				DocumentID: c.ID, Metadata: meta, Schema: ref, Run: c.Run,
				Provider: c.Provider, Model: c.Model, Pool: c.Pool, Options: req.Options, SubmittedAt: now,
				Resubmission: "reread:" + doc.Reader.String(),
			}
			if override != nil {
				env.Provider, env.Model, env.Pool = override.Provider, override.Model, override.Pool
			}
			describe(env, Doc{Document: doc, Original: b}, orig)
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
		// Only once queued: the new text and reader are what makes the
		// document not selected again.
		if err := st.PutDocuments(ctx, put); err != nil {
			return sum, err
		}
		if err := rst.SetDocumentReaders(ctx, same[0], same[1], same[2]); err != nil {
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

// rereadMetadata is the metadata of a document read again: what the reader
// says now, under the name it was stored with (the reader sees only its id).
func rereadMetadata(old json.RawMessage, doc *document.Document) json.RawMessage {
	meta := intake.DocumentMetadata(doc)
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
// the reader: the same format, page count, title, …
func sameDescription(a, b json.RawMessage) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	delete(x, "reader")
	delete(y, "reader")
	return maps.EqualFunc(x, y, func(u, v any) bool {
		ub, _ := json.Marshal(u)
		vb, _ := json.Marshal(v)
		return string(ub) == string(vb)
	})
}
