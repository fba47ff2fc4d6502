// Package submit queues documents as extraction jobs: it rejects bad input
// with a reason, registers the schema, stores the documents in the audit
// store (so failed or outdated ones can be resubmitted without the original
// files) and publishes the jobs asynchronously with bounded pending acks.
// It also resubmits dead letters and documents whose results were made
// under an older schema. Documents are read by package intake, the one
// reader `submit` and `extractq extract` share.
package submit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
)

// Doc is one input document, or the reason it was rejected.
type Doc = intake.Doc

// ErrBadInput is matched by the reasons input documents are rejected.
var ErrBadInput = intake.ErrBadInput

func reject(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, a...))
}

// DuplicateID is the rejection of a document whose id an earlier document
// of the same submission had (ErrBadInput). A caller that queues one
// submission in several batches (a JSON Lines object from a bucket)
// rejects its repeats across batches with it too.
func DuplicateID(id string) error { return reject("id %q appears twice in this submission", id) }

// contentHashes are the identities of docs: of each, the sha256 of its
// original bytes when a format reader read it (so that a re-read with a
// newer reader is the same document), else of its text (jobs.HashBytes,
// jobs.HashText). They share one allocation (TestBatchHashes): a batch's
// hashes live as long as its jobs, until it is settled.
func contentHashes(docs []Doc) []string {
	const size = 2 * sha256.Size
	buf := make([]byte, 0, len(docs)*size)
	for i := range docs {
		if d := &docs[i]; d.Original != nil {
			buf = jobs.AppendHashBytes(buf, d.Original)
		} else {
			buf = jobs.AppendHashText(buf, d.Text)
		}
	}
	return cut(buf, size)
}

// jobIDs are the job ids (jobs.MsgID) of docs under job, whose content
// hashes are hashes, in one allocation (TestBatchHashes). The summary
// keeps them all: each takes its 32 bytes, as it did alone.
func jobIDs(job Job, docs []Doc, hashes []string) []string {
	const size = 32
	buf := make([]byte, 0, len(docs)*size)
	for i := range docs {
		buf = jobs.AppendMsgID(buf, docs[i].ID, hashes[i], job.Schema.Fingerprint, job.Model, "")
	}
	return cut(buf, size)
}

// cut returns buf's consecutive pieces of size bytes as strings, sharing
// buf's array: buf is not written to again.
func cut(buf []byte, size int) []string {
	all := unsafe.String(unsafe.SliceData(buf), len(buf))
	out := make([]string, len(buf)/size)
	for i := range out {
		out[i] = all[i*size : (i+1)*size]
	}
	return out
}

// maxEnvelopePages bounds the pages a job carries: 5,000 take about
// 200 KB of JSON, which with the largest inline text (512 KiB) stays under
// NATS's default 1 MiB payload.
const maxEnvelopePages = 5000

// describe puts into a job what the reader made of its document beyond the
// text: its original, reader, pages and the pages without a text layer.
func describe(env *jobs.Envelope, d Doc, original *jobs.ObjectRef) {
	if original != nil {
		env.Original, env.OriginalHash = original, original.Name
	}
	doc := d.Document
	if doc == nil || doc.Format == "text" {
		return
	}
	env.Reader = doc.Reader.String()
	// Beyond maxEnvelopePages the pages are dropped (sources then have no
	// page), never the list of scans.
	if len(doc.Pages) <= maxEnvelopePages {
		for _, p := range doc.Pages {
			env.Pages = append(env.Pages, jobs.Page{N: p.Number, Start: p.Start, End: p.End, Label: p.Label})
		}
	}
	env.Scanned = append(intake.UnreadPages(doc), doc.Unreadable()...)
	slices.Sort(env.Scanned)
}

// pagePictures are the pictures of doc's pages a worker would read its
// original again for (pages without text, or every picture with input
// native), for a job of a document read with a password
// (Envelope.Pictures); nil when it reads none, or when it needs the
// original itself: a PDF going whole to the model (input native, or pages
// only the model reads), which intake refused if it opens only with the
// password (Reader.NativeInput).
func pagePictures(doc *document.Document, input string) []jobs.PagePicture {
	if doc == nil {
		return nil
	}
	native := input == string(extractq.InputNative)
	if doc.MediaType == "application/pdf" && (native || len(doc.Unreadable()) > 0) ||
		!native && len(intake.UnreadPages(doc)) == 0 {
		return nil
	}
	var pics []jobs.PagePicture
	for _, p := range doc.Pages {
		if img := p.Image; img != nil {
			pics = append(pics, jobs.PagePicture{N: p.Number, MediaType: img.MediaType, Data: img.Data, Width: img.Width, Height: img.Height,
				PageWidth: p.Width, PageHeight: p.Height})
		}
	}
	return pics
}

// reread reads a job's original again from the object store, with the
// readers of this build (password opens an encrypted one; no OCR), and
// describes the job anew: its text, reader, pages and scans. It is how a
// dead letter is resubmitted whose text neither it nor the audit has.
// When the job's metadata records that submit inlined the attachments
// (intake.Inlined), they are inlined again as submit does
// (intake.Attachments.Arrange), and inlined says so; else the carrier is
// read alone. An original that opened only with the password (or has a
// part inlined that did) is checked and pictured as submit does: refused
// when it would go whole to the model (intake.LockedWhole), else its
// pages' pictures are stored and named in the job, since its worker has
// no password.
func reread(ctx context.Context, docs *jobs.Documents, env *jobs.Envelope, password string) (text string, inlined bool, err error) {
	b, err := docs.Original(ctx, env)
	if err != nil {
		return "", false, fmt.Errorf("read the original again: %w", err)
	}
	doc, err := document.ReadBytes(ctx, b, document.Options{Name: env.DocumentID, Password: password})
	if err != nil {
		if errors.Is(err, document.ErrEncrypted) && password == "" {
			return "", false, fmt.Errorf("read the original again: %w: give its password with --password or --password-file", err)
		}
		return "", false, fmt.Errorf("read the original again: %w", err)
	}
	if inlined = intake.Inlined(env.Metadata); inlined {
		doc, _ = intake.AttachInline.Arrange(doc)
	}
	if doc.Locked {
		if err := intake.LockedWhole(doc, env.Options.Input == string(extractq.InputNative)); err != nil {
			return "", false, fmt.Errorf("read the original again: %w", err)
		}
	}
	env.Text, env.TextRef, env.Pages, env.Scanned = "", nil, nil, nil
	describe(env, Doc{Document: doc, Original: b}, env.Original)
	if doc.Locked && env.OriginalHash != "" {
		if pics := pagePictures(doc, env.Options.Input); pics != nil {
			if env.Pictures, err = docs.PutPictures(ctx, env.OriginalHash, pics); err != nil {
				return "", false, err
			}
		}
	}
	return doc.Text, inlined, nil
}
