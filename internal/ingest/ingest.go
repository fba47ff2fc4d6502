// Package ingest queues the documents of a remote source (package source)
// as extraction jobs: it lists the source, compares each item with the
// watermark of an incremental run, fetches only what is new or changed,
// turns the bytes into documents and hands them to the submitter in
// batches, moving the watermark and the listing position after each batch
// is queued. A crash mid-listing resumes after the last batch queued; the
// jobs' ids (Nats-Msg-Id) and the audit keep anything from being queued
// twice.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/source"
)

// Submitter queues documents; *fleet.Client implements it.
type Submitter interface {
	Submit(ctx context.Context, job fleet.Job, docs iter.Seq[fleet.Document], opts ...fleet.SubmitOption) (*fleet.Submission, error)
}

// Options configure a run.
type Options struct {
	// Incremental names the watermark (submit --incremental NAME); empty
	// runs without one: everything is read, and an interrupted listing
	// starts again from the beginning.
	Incremental string
	// Full reads and queues every document whatever the watermark says
	// (and rebuilds the watermark).
	Full bool
	// Batch is how many documents are fetched, queued and committed to
	// the watermark at a time (default 500).
	Batch int
	// Fetchers is how many documents are fetched at once (default 16).
	Fetchers int
	// MaxDocument and Transcode are the reader's rules (see package
	// intake) when Reader is nil.
	MaxDocument int64
	Transcode   bool
	// Reader reads fetched bytes as the command's local files are read
	// (format, password, OCR, --input); nil uses MaxDocument and Transcode.
	Reader *intake.Reader
	// ListRetries is how many times a listing that fails part way (a
	// timeout, a dropped connection) resumes after its last key before the
	// run fails (default 5); ListBackoff is the first wait (default 1s,
	// doubled each time).
	ListRetries int
	ListBackoff time.Duration
	// KeepJobIDs keeps the queued jobs' ids in the summary (what `submit
	// --wait` follows: 32 bytes each); without it memory stays flat
	// however many documents are queued.
	KeepJobIDs bool
}

func (o *Options) defaults() {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.Fetchers <= 0 {
		o.Fetchers = 16
	}
	if o.MaxDocument <= 0 {
		o.MaxDocument = intake.DefaultMaxDocument
	}
	if o.ListRetries == 0 {
		o.ListRetries = 5
	}
	if o.ListBackoff <= 0 {
		o.ListBackoff = time.Second
	}
}

// Counts say what a run found in the source.
type Counts struct {
	Source string `json:"source"`
	Listed int    `json:"listed"`
	// New documents had no watermark entry, Changed ones had another
	// version; both were read and queued. Unchanged ones were skipped
	// (an object's bytes were not read). Vanished ones were in the
	// watermark but not in this listing (counted at its end).
	New       int `json:"new"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	Vanished  int `json:"vanished"`
	// BytesRead is what was fetched from the source.
	BytesRead int64 `json:"bytes_read"`
	// JSONL counts the objects read as JSON Lines (by name: *.jsonl,
	// *.ndjson, also .gz or .bz2), each many documents; Records the lines
	// read out of them, each one document (queued, or rejected with its
	// line). The counts above are of objects.
	JSONL   int `json:"jsonl_objects"`
	Records int `json:"records"`
	// ResumedAfter is the key an interrupted listing continued after.
	ResumedAfter string `json:"resumed_after,omitempty"`
	// ListRetries counts listings resumed after a failure part way.
	ListRetries int `json:"list_retries"`
}

// Run queues src's documents with job. marks may be nil when
// opts.Incremental is empty. progress, if set, is called after each batch.
// Rejected documents (unreadable, deleted since the listing, bad text,
// duplicate ids) are in the summary; the error is for what stops the run:
// the source cannot be read (source.ErrAccess), a corrupt watermark
// (ErrCorruptWatermark), the audit database, ctx.
func Run(ctx context.Context, src source.Source, marks *Watermarks, sub Submitter, job fleet.Job, opts Options, progress func(Counts, fleet.Submission)) (Counts, fleet.Submission, error) {
	opts.defaults()
	r := &run{src: src, sub: sub, job: job, opts: opts, progress: progress, counts: Counts{Source: src.URI()}}
	if !src.Resumable() {
		r.seen = map[string]string{}
	}
	if err := src.Check(ctx); err != nil {
		return r.counts, r.sum, err
	}
	if opts.Incremental != "" {
		if marks == nil {
			return r.counts, r.sum, errors.New("ingest: an incremental run needs the watermark store")
		}
		var valid func(string) bool
		if v, ok := src.(interface{ ValidPosition(string) bool }); ok {
			valid = v.ValidPosition
		}
		m, err := marks.begin(ctx, opts.Incremental, src.URI(), opts.Full, valid)
		if err != nil {
			return r.counts, r.sum, err
		}
		defer m.release(ctx)
		r.mark = m
		r.counts.ResumedAfter = m.position
	}
	err := r.list(ctx)
	if err == nil {
		err = r.flush(ctx)
	}
	if err == nil && r.mark != nil {
		r.counts.Vanished, err = r.mark.finish(ctx)
	}
	if err == nil {
		err = r.notCounted
	}
	return r.counts, r.sum, err
}

type run struct {
	src      source.Source
	sub      Submitter
	job      fleet.Job
	opts     Options
	progress func(Counts, fleet.Submission)
	mark     *mark
	seen     map[string]string // id → where it was first seen, for sources whose ids may repeat
	batch    []source.Item
	counts   Counts
	sum      fleet.Submission
	// notCounted is a page's failure to count its jobs into the run
	// (fleet.ErrRunNotSealed): its jobs are queued, so the listing goes
	// on, and the run ends with it.
	notCounted error
}

// list lists the source, resuming after a failure part way.
func (r *run) list(ctx context.Context) error {
	n, err := source.ListResuming(ctx, r.src, r.counts.ResumedAfter, r.opts.ListRetries, r.opts.ListBackoff, func(it source.Item) error {
		r.batch = append(r.batch, it)
		if len(r.batch) >= r.opts.Batch {
			return r.flush(ctx)
		}
		return nil
	})
	r.counts.ListRetries += n
	return err
}

// doc is one item on its way to the queue.
type doc struct {
	item    source.Item
	d       submit.Doc
	version string
	size    int64
	prev    *stored
	read    bool // the bytes were fetched
	skip    bool // unchanged: not queued
	jsonl   bool // JSON Lines: streamed a line at a time (readJSONL)
	partial bool // a JSON Lines object read part way, or a line of it the submitter refused
}

// flush handles the listed batch: look up the watermark, fetch what is
// new or changed, queue it, then remember the batch.
func (r *run) flush(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	items := r.batch
	r.batch = r.batch[:0:0]
	r.counts.Listed += len(items)
	var known map[string]stored
	if r.mark != nil {
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.ID
		}
		var err error
		if known, err = r.mark.lookup(ctx, ids); err != nil {
			return err
		}
	}
	docs := make([]doc, len(items))
	for i, it := range items {
		docs[i] = doc{item: it, version: it.Version, size: it.Size, jsonl: it.Err == nil && intake.IsJSONL(it.Name())}
		if s, ok := known[it.ID]; ok {
			docs[i].prev = &s
		}
		if r.seen != nil && it.Err == nil {
			if first, dup := r.seen[it.ID]; dup {
				docs[i].d = submit.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: id %q appears twice in the source (first at %s): give each document its own id", intake.ErrBadInput, it.ID, first)}
				docs[i].skip = true
				continue
			}
			r.seen[it.ID] = it.URI
		}
		// Known version: decide before reading.
		if it.Version != "" && docs[i].prev != nil && r.unchanged(&docs[i]) {
			docs[i].skip = true
		}
	}
	r.fetchAll(ctx, docs)
	if err := context.Cause(ctx); err != nil {
		return err
	}
	var queue []submit.Doc
	for i := range docs {
		d := &docs[i]
		if d.jsonl && d.d.Err == nil {
			continue // counted once read (readJSONL)
		}
		if d.read && d.item.Version == "" && d.d.Err == nil && d.prev != nil && r.unchanged(d) {
			d.skip = true // its content hash is the one remembered
		}
		r.count(d)
		if d.d.Err != nil || !d.skip || r.opts.Full {
			queue = append(queue, d.d) // one with Err is rejected with its reason, by the submitter
		}
	}
	rejected, err := r.submit(ctx, queue)
	if err != nil {
		return err
	}
	// JSON Lines objects, one at a time, their lines queued in batches
	// as they are read: a dump is never held whole.
	for i := range docs {
		if d := &docs[i]; d.jsonl && d.d.Err == nil {
			if err := r.readJSONL(ctx, d); err != nil {
				return err
			}
		}
	}
	if r.mark != nil {
		var entries []entry
		for _, d := range docs {
			// A rejected document is not remembered: the next run tries
			// it again (and reports it again). So is a JSON Lines object
			// whose reading broke part way, or a line of which the
			// submitter refused; one read to its end is remembered, the
			// lines the reader rejected reported in this run.
			if d.d.Err != nil || d.partial || rejected[d.item.URI] || (d.skip && d.prev == nil) {
				continue
			}
			entries = append(entries, entry{id: d.item.ID, version: d.version, size: d.size})
		}
		position := ""
		if r.src.Resumable() {
			position = items[len(items)-1].Position
		}
		if err := r.mark.commit(ctx, entries, position); err != nil {
			return err
		}
	}
	if r.progress != nil {
		r.progress(r.counts, r.sum)
	}
	return nil
}

// count counts a document read or skipped as new, changed or unchanged.
func (r *run) count(d *doc) {
	switch {
	case d.d.Err != nil:
	case d.skip && d.prev != nil:
		r.counts.Unchanged++
	case d.prev != nil:
		r.counts.Changed++
	default:
		r.counts.New++
	}
}

// submit queues docs (those with Err are rejected by the submitter, with
// their reasons) and returns the sources the submitter rejected.
func (r *run) submit(ctx context.Context, docs []submit.Doc) (rejected map[string]bool, err error) {
	rejected = map[string]bool{}
	if len(docs) == 0 {
		return rejected, nil
	}
	s, err := r.sub.Submit(ctx, r.job, func(yield func(fleet.Document) bool) {
		for _, d := range docs {
			if !yield(fleet.Document(d)) {
				return
			}
		}
	}, fleet.KeepRunOpen()) // the caller seals the run once the listing is done
	if s == nil { // the job was refused: nothing was queued
		return rejected, err
	}
	if errors.Is(err, fleet.ErrRunNotSealed) {
		r.notCounted, err = err, nil
	}
	for _, rej := range s.Rejected {
		rejected[rej.Source] = true
	}
	if !r.opts.KeepJobIDs {
		s.JobIDs, s.JobSeqs = nil, nil
	}
	add(&r.sum, *s)
	return rejected, err
}

// unchanged reports whether d is the version the watermark remembers.
func (r *run) unchanged(d *doc) bool {
	return d.prev.version == d.version && (d.size < 0 || d.prev.size == d.size)
}

// fetchAll reads the documents to queue, Fetchers at a time; with Full,
// unchanged ones too.
func (r *run) fetchAll(ctx context.Context, docs []doc) {
	work := make(chan *doc)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range min(r.opts.Fetchers, len(docs)) {
		wg.Go(func() {
			for d := range work {
				n := r.fetch(ctx, d)
				mu.Lock()
				r.counts.BytesRead += n
				mu.Unlock()
			}
		})
	}
	for i := range docs {
		d := &docs[i]
		if d.d.Err != nil || (d.skip && !r.opts.Full) || d.jsonl {
			continue
		}
		select {
		case work <- d:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// fetch reads one document and makes it a submit.Doc; it returns the
// bytes read.
func (r *run) fetch(ctx context.Context, d *doc) int64 {
	it := d.item
	if it.Err != nil {
		d.d = submit.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: %w", intake.ErrBadInput, it.Err)}
		return 0
	}
	if it.Size > r.opts.MaxDocument {
		d.d = submit.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: document too large: %d bytes, the limit is %d (raise --max-document, or split the document)", intake.ErrBadInput, it.Size, r.opts.MaxDocument)}
		return 0
	}
	b, err := it.Fetch(ctx, r.opts.MaxDocument)
	if err != nil {
		d.d = submit.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: %w", intake.ErrBadInput, err)}
		return 0
	}
	d.read = true
	if d.version == "" {
		sum := sha256.Sum256(b)
		d.version = "sha256:" + hex.EncodeToString(sum[:])
	}
	d.size = int64(len(b))
	d.d = toDoc(ctx, it, b, r.opts)
	return int64(len(b))
}

// readJSONL reads a JSON Lines object (by its name: *.jsonl, *.ndjson,
// also .gz or .bz2) as a local file of that name is read: each line is a
// document (its own id, else the object's URI:LINE), bounded by
// MaxDocument as a line of a local file is, never the object as a whole;
// a bad line is rejected alone, and so is a line whose id an earlier line
// of the object had (idHashes: about 16 bytes a line), as a local file's
// is. The lines are queued in batches of opts.Batch as they are read. An
// unchanged object is not read: its listing's version (an ETag) or, from
// a URL, the ETag its server answers with says so before any line is
// read; without either, its content hash does once it is read, and its
// lines, queued already, are duplicates the submitter does not queue
// again.
func (r *run) readJSONL(ctx context.Context, d *doc) error {
	if d.skip && !r.opts.Full {
		r.count(d)
		return nil
	}
	it := d.item
	st, err := it.Open(ctx)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		d.d = submit.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: %w", intake.ErrBadInput, err)}
		_, err := r.submit(ctx, []submit.Doc{d.d})
		return err
	}
	defer st.Close()
	if d.version == "" && st.Version != "" {
		d.version, d.size = "etag:"+st.Version, st.Size
		if d.prev != nil && r.unchanged(d) {
			d.skip = true
			if !r.opts.Full {
				r.count(d)
				return nil
			}
		}
	}
	hash := sha256.New()
	in := &document.CountingReader{R: st}
	var raw io.Reader = in
	if d.version == "" {
		raw = io.TeeReader(in, hash)
	}
	rd := r.reader()
	batch := make([]submit.Doc, 0, min(r.opts.Batch, 1024))
	queue := func() error {
		rejected, err := r.submit(ctx, batch)
		for _, line := range batch {
			if line.Err == nil && rejected[line.Source] {
				// The submitter refused a line the reader took (the
				// audit database failed it, say): the object is read
				// again on the next run, so that the line is not lost.
				d.partial = true
			}
		}
		batch = batch[:0]
		if err == nil && r.progress != nil {
			r.progress(r.counts, r.sum)
		}
		return err
	}
	ids := newIDHashes()
	err = rd.ReadJSONL(ctx, raw, it.Name(), it.URI, func(line intake.Doc) error {
		r.counts.Records++
		if errors.Is(line.Err, intake.ErrCutShort) {
			d.partial = true
		}
		if line.Err == nil && ids.add(line.ID) {
			line.Err = submit.DuplicateID(line.ID) // as the submitter within a batch
		}
		batch = append(batch, line)
		if len(batch) >= r.opts.Batch {
			return queue()
		}
		return nil
	})
	r.counts.BytesRead += in.N
	if err == nil {
		err = queue()
	}
	if err != nil {
		return err
	}
	r.counts.JSONL++
	d.read = true
	if d.version == "" {
		d.version, d.size = "sha256:"+hex.EncodeToString(hash.Sum(nil)), in.N
		if d.prev != nil && r.unchanged(d) {
			d.skip = true // its lines were read again, and found queued already
		}
	}
	r.count(d)
	return nil
}

// reader is how fetched bytes are read: the command's reader, else one
// with opts' rules.
func (r *run) reader() intake.Reader {
	if r.opts.Reader != nil {
		return *r.opts.Reader
	}
	return intake.Reader{Transcode: r.opts.Transcode, MaxDocument: r.opts.MaxDocument}
}

// toDoc turns fetched bytes into a document: the one place where a
// remote document is read, by package intake exactly as a local file is
// (its format recognised by content, PDFs, e-mails and office files read
// with their pages). One source item is one job: an e-mail's attachments
// travel inline in its text.
func toDoc(ctx context.Context, it source.Item, b []byte, opts Options) submit.Doc {
	rd := intake.Reader{Transcode: opts.Transcode, MaxDocument: opts.MaxDocument}
	if opts.Reader != nil {
		rd = *opts.Reader
	}
	rd.Attachments = intake.AttachInline
	d := submit.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: empty document", intake.ErrBadInput)}
	err := rd.ReadBytes(ctx, it.ID, it.URI, b, func(got intake.Doc) error {
		d = got
		return nil
	})
	if err != nil && d.Err == nil {
		d.Err = fmt.Errorf("%w: %w", intake.ErrBadInput, err)
	}
	d.ID, d.Source = it.ID, it.URI
	if len(it.Metadata) > 0 {
		d.Metadata = it.Metadata
	}
	return d
}

// add sums a batch's summary into the run's.
func add(to *fleet.Submission, s fleet.Submission) {
	to.Run, to.Schema, to.SchemaVersion, to.Provider, to.Model, to.Pool = s.Run, s.Schema, s.SchemaVersion, s.Provider, s.Model, s.Pool
	to.Queued += s.Queued
	to.Duplicates += s.Duplicates
	to.Lost += s.Lost
	to.AlreadyDone += s.AlreadyDone
	to.AlreadyFailed += s.AlreadyFailed
	to.Rejected = append(to.Rejected, s.Rejected...)
	to.Elapsed += s.Elapsed
	to.JobIDs = append(to.JobIDs, s.JobIDs...)
	to.JobSeqs = append(to.JobSeqs, s.JobSeqs...)
}
