// Package docfake registers two stand-in document formats for tests, so
// that what reads through package document (intake, the commands, the
// simulator) is tested against its contract without the real decoders:
//
//   - "fakepdf" (application/pdf, content "%FAKEPDF\n…"): pages split by
//     form feeds; a page "[scan]" has no text layer, only a picture; a first
//     line "PASSWORD x" needs the password x; "CORRUPT" fails as corrupt.
//   - "fakemail" (content "FAKEMAIL\n…"): a body, then "\n--- NAME\n" lines
//     each starting an attachment read through the registry, as an
//     e-mail's are.
//
// Importing the package registers them.
package docfake

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/extractq/extractq/document"
)

// Magic starts of the two formats.
const (
	PDF  = "%FAKEPDF\n"
	Mail = "FAKEMAIL\n"
)

// ScanPicture is the picture a "[scan]" page carries.
var ScanPicture = []byte("\x89PNG fake scan")

func init() {
	document.Register(document.Format{
		Name: "fakepdf", MediaType: "application/pdf", Extensions: []string{".pdf"}, Version: "7",
		Match:   func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, []byte(PDF)) },
		Decoder: document.DecoderFunc(decodePDF),
	})
	document.Register(document.Format{
		Name: "fakemail", MediaType: "message/rfc822", Extensions: []string{".eml"}, Version: "2",
		Match:   func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, []byte(Mail)) },
		Decoder: document.DecoderFunc(decodeMail),
	})
}

func readAll(r io.ReaderAt, size int64) string {
	b := make([]byte, size)
	n, _ := r.ReadAt(b, 0)
	return string(b[:n])
}

func decodePDF(_ context.Context, r io.ReaderAt, size int64, opts *document.Options) (*document.Document, error) {
	body := strings.TrimPrefix(readAll(r, size), PDF)
	pw, locked := strings.CutPrefix(body, "PASSWORD ")
	if locked {
		want, rest, _ := strings.Cut(pw, "\n")
		if opts.Password != want {
			return nil, document.ErrEncrypted
		}
		body = rest
	}
	if strings.HasPrefix(body, "CORRUPT") {
		return nil, document.ErrCorrupt
	}
	d := &document.Document{Meta: document.Metadata{Title: "fake"}, Locked: locked}
	var text strings.Builder
	for i, p := range strings.Split(body, "\f") {
		page := document.Page{Number: i + 1, Start: text.Len(), Width: 612, Height: 792}
		if p == "[scan]" {
			page.Image = &document.Image{MediaType: "image/png", Data: ScanPicture, Width: 1, Height: 1}
		} else {
			text.WriteString(p)
		}
		page.End = text.Len()
		d.Pages = append(d.Pages, page)
	}
	d.Text = text.String()
	return d, nil
}

func decodeMail(ctx context.Context, r io.ReaderAt, size int64, opts *document.Options) (*document.Document, error) {
	parts := strings.Split(strings.TrimPrefix(readAll(r, size), Mail), "\n--- ")
	d := &document.Document{Text: parts[0], Meta: document.Metadata{From: "a@example.com", Subject: "invoice"}}
	for _, p := range parts[1:] {
		name, content, _ := strings.Cut(p, "\n")
		d.Attachments = append(d.Attachments, document.ReadChild(ctx, opts, name, []byte(content)))
	}
	return d, nil
}
