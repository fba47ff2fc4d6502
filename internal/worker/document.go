package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
)

// jobDocument is what a job extracts from: its text, and for a document a
// format reader made, the document with its pages (and its original when
// the model is to see pictures or the whole file).
type jobDocument struct {
	text     string
	doc      *document.Document // nil for plain text
	original []byte
	// mismatch says why the original read again did not line up with the
	// job's pages (withOriginal), for the log; "" when it did.
	mismatch string
}

// errUnreadable marks an original the worker's readers cannot read: no
// delivery can fix it, so the job is dead-lettered with the reason.
var errUnreadable = errors.New("the original cannot be read")

// document assembles a job's document: the text stored at submit and the
// envelope's pages, as submit made them (its OCR, attachments inlined,
// reading options). The original is fetched and read again only when the
// model is to see what text cannot carry: pages without a text layer, or
// the whole file (input native); the re-read gives only that
// (withOriginal), never its own text. A job of an original read with a
// password carries its pages' pictures (Envelope.Pictures): they are used
// and the original is not read (withPictures), except for a PDF with
// input native, where they stand in for an original that does not open
// without it. It is returned as a value, which stays on the caller's
// stack: a *jobDocument was an allocation per job.
func (w *Worker) document(ctx context.Context, env *jobs.Envelope) (jobDocument, error) {
	text, err := w.docs.Text(ctx, env)
	if err != nil {
		return jobDocument{}, err
	}
	jd := &jobDocument{text: text}
	if env.Reader == "" && env.Original == nil {
		return *jd, nil // plain text, as every job before documents
	}
	jd.doc = &document.Document{Text: text}
	for _, p := range env.Pages {
		if p.Start < 0 || p.End > len(text) || p.Start > p.End {
			return jobDocument{}, fmt.Errorf("%w: page %d [%d,%d) lies outside the %d bytes of text", jobs.ErrEnvelope, p.N, p.Start, p.End, len(text))
		}
		jd.doc.Pages = append(jd.doc.Pages, document.Page{Number: p.N, Start: p.Start, End: p.End, Label: p.Label})
	}
	native := env.Options.Input == string(extractq.InputNative)
	if env.Pictures != nil && (!native || !maybePDF(env.Reader)) {
		// The original was read with a password jobs do not carry:
		// submit stored its pages' pictures instead. With input native
		// only a PDF goes whole, and needs its original; any other
		// document (an e-mail with a locked PDF inlined) sends its pages'
		// pictures, which are all stored: read again without the
		// password, the original would lose the locked part's.
		return *jd, w.withPictures(ctx, env, jd.doc)
	}
	if env.Original != nil && (len(env.Scanned) > 0 || native) {
		if jd.original, err = w.docs.Original(ctx, env); err != nil {
			return jobDocument{}, err
		}
		doc, err := document.ReadBytes(ctx, jd.original, document.Options{Name: env.DocumentID})
		if err != nil {
			if ctx.Err() != nil {
				return jobDocument{}, context.Cause(ctx)
			}
			if errors.Is(err, document.ErrEncrypted) && env.Pictures != nil {
				// Input native, but no model opens it: its text and
				// pictures go.
				jd.original = nil
				return *jd, w.withPictures(ctx, env, jd.doc)
			}
			if errors.Is(err, document.ErrEncrypted) {
				return jobDocument{}, fmt.Errorf("%w: %w: it opened with the password given at submit, and jobs carry no password, so submit it again with this build (its pages' pictures then go with the job), or decrypt it first (qpdf --decrypt --password=… in.pdf out.pdf) and submit that", errUnreadable, err)
			}
			return jobDocument{}, fmt.Errorf("%w: %w (its reader was %s when submitted; a worker built with the same readers reads it)", errUnreadable, err, env.Reader)
		}
		jd.mismatch = withOriginal(jd.doc, doc, intake.Inlined(env.Metadata))
	}
	return *jd, nil
}

// withOriginal gives doc, the stored text with the envelope's pages, what
// only the original has, from reread, the original read again: the format
// (a PDF goes whole to a model that reads PDFs), and by page number each
// page's picture, size and why it is unreadable. Text, page ranges and
// labels stay the stored ones, so that the model reads what submit read
// (OCR text, inlined attachments) and every offset indexes that text. A
// page's boxes (Blocks) and running header and footer come along only
// when its text is the same in both, moved to the stored offsets; else
// they would index the re-read's text.
//
// inlined says the job's metadata records that submit inlined the
// attachments (intake.Inlined): the envelope then numbers their pages
// after the carrier's, so pages are matched in the re-read inlined the
// same way (document.Inline), whatever the page counts. A job that
// records nothing (not inline, or submitted before the policy was
// recorded) is matched in the re-read inlined only when that gives the
// envelope's page count. When the pages still do not line up (the
// envelope has none, or a newer reader counts them differently) each page
// gets only what a page of its number has, and the reason is returned for
// the log; doc's text is never replaced. With no envelope pages, the
// re-read's pages are taken when its text is the stored text.
func withOriginal(doc, reread *document.Document, inlined bool) (mismatch string) {
	doc.Format, doc.MediaType, doc.Name, doc.Meta, doc.Reader = reread.Format, reread.MediaType, reread.Name, reread.Meta, reread.Reader
	if inlined {
		reread = document.Inline(reread)
	} else if len(reread.Pages) != len(doc.Pages) && len(reread.Attachments) > 0 {
		if in := document.Inline(reread); len(in.Pages) == len(doc.Pages) {
			reread = in
		}
	}
	if len(doc.Pages) == 0 && reread.Text == doc.Text {
		doc.Pages = reread.Pages
		return ""
	}
	if len(reread.Pages) != len(doc.Pages) {
		mismatch = fmt.Sprintf("the original read again has %d pages, the job %d: pictures, sizes and unreadable pages go by page number, the stored text stays", len(reread.Pages), len(doc.Pages))
	}
	byNumber := make(map[int]*document.Page, len(reread.Pages))
	for i := range reread.Pages {
		byNumber[reread.Pages[i].Number] = &reread.Pages[i]
	}
	for i := range doc.Pages {
		p := &doc.Pages[i]
		r := byNumber[p.Number]
		if r == nil {
			continue
		}
		p.Image, p.Unreadable, p.Width, p.Height = r.Image, r.Unreadable, r.Width, r.Height
		if !validRange(reread.Text, r.Start, r.End) || reread.Text[r.Start:r.End] != doc.Text[p.Start:p.End] {
			continue
		}
		shift := p.Start - r.Start
		for _, b := range r.Blocks {
			b.Start, b.End = b.Start+shift, b.End+shift
			p.Blocks = append(p.Blocks, b)
		}
		for _, s := range [][2]*document.Span{{&p.Header, &r.Header}, {&p.Footer, &r.Footer}} {
			if !s[1].Empty() {
				*s[0] = document.Span{Start: s[1].Start + shift, End: s[1].End + shift}
			}
		}
	}
	return mismatch
}

// withPictures gives doc's pages the pictures submit stored
// (Envelope.Pictures), and their sizes, by page number; a picture of a
// page doc does not have is left out.
func (w *Worker) withPictures(ctx context.Context, env *jobs.Envelope, doc *document.Document) error {
	pics, err := w.docs.Pictures(ctx, env)
	if err != nil {
		return err
	}
	byNumber := make(map[int]*jobs.PagePicture, len(pics))
	for i := range pics {
		byNumber[pics[i].N] = &pics[i]
	}
	for i := range doc.Pages {
		p := &doc.Pages[i]
		if pic := byNumber[p.Number]; pic != nil {
			p.Image = &document.Image{MediaType: pic.MediaType, Data: pic.Data, Width: pic.Width, Height: pic.Height}
			p.Width, p.Height = pic.PageWidth, pic.PageHeight
		}
	}
	return nil
}

// maybePDF reports whether reader (Envelope.Reader, "NAME/VERSION")
// names a format of PDFs, or one this build does not know: such a job's
// original may go whole to the model.
func maybePDF(reader string) bool {
	name, _, _ := strings.Cut(reader, "/")
	for _, f := range document.Formats() {
		if f.Name == name {
			return f.MediaType == "application/pdf"
		}
	}
	return true
}

// validRange reports whether [start,end) is a range of text.
func validRange(text string, start, end int) bool {
	return 0 <= start && start <= end && end <= len(text)
}
