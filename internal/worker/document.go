package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/jobs"
)

// jobDocument is what a job extracts from: its text, and for a document a
// format reader made, the document with its pages (and its original when
// the model is to see pictures or the whole file).
type jobDocument struct {
	text     string
	doc      *document.Document // nil for plain text
	original []byte
}

// errUnreadable marks an original the worker's readers cannot read: no
// delivery can fix it, so the job is dead-lettered with the reason.
var errUnreadable = errors.New("the original cannot be read")

// document assembles a job's document. Pages come from the envelope; the
// original is fetched and read again only when the model is to see what
// text cannot carry: pages without a text layer, or the whole file
// (input native).
func (w *Worker) document(ctx context.Context, env *jobs.Envelope) (*jobDocument, error) {
	text, err := w.docs.Text(ctx, env)
	if err != nil {
		return nil, err
	}
	jd := &jobDocument{text: text}
	if env.Reader == "" && env.Original == nil {
		return jd, nil // plain text, as every job before documents
	}
	native := env.Options.Input == string(extractq.InputNative)
	if env.Original != nil && (len(env.Scanned) > 0 || native) {
		if jd.original, err = w.docs.Original(ctx, env); err != nil {
			return nil, err
		}
		doc, err := document.ReadBytes(ctx, jd.original, document.Options{Name: env.DocumentID})
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("%w: %w (its reader was %s when submitted; a worker built with the same readers reads it)", errUnreadable, err, env.Reader)
		}
		jd.doc = doc
		return jd, nil
	}
	jd.doc = &document.Document{Text: text}
	for _, p := range env.Pages {
		if p.Start < 0 || p.End > len(text) || p.Start > p.End {
			return nil, fmt.Errorf("%w: page %d [%d,%d) lies outside the %d bytes of text", jobs.ErrEnvelope, p.N, p.Start, p.End, len(text))
		}
		jd.doc.Pages = append(jd.doc.Pages, document.Page{Number: p.N, Start: p.Start, End: p.End, Label: p.Label})
	}
	return jd, nil
}
