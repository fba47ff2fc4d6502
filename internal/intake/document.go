package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
)

// Attachments says what becomes of a document's attachments (an e-mail's
// files, a container's embedded documents).
type Attachments string

// The attachment policies.
const (
	// AttachSeparate makes each attachment a document of its own, with id
	// PARENT#NAME (nested ones PARENT#NAME#NAME), so that an invoice attached
	// to an e-mail is extracted as an invoice. The default.
	AttachSeparate Attachments = "separate"
	// AttachInline appends each attachment's text to its parent's, after a
	// line naming it; its pages follow the parent's.
	AttachInline Attachments = "inline"
	// AttachSkip drops attachments.
	AttachSkip Attachments = "skip"
)

// ParseAttachments checks a --attachments value ("" is AttachSeparate).
func ParseAttachments(s string) (Attachments, error) {
	switch a := Attachments(s); a {
	case "":
		return AttachSeparate, nil
	case AttachSeparate, AttachInline, AttachSkip:
		return a, nil
	}
	return "", fmt.Errorf("%w: --attachments %q: want separate, inline or skip", ErrUsage, s)
}

// Arrange applies the policy to doc, a document a format reader made, as
// reading a file under it does: under AttachInline doc with its
// attachments' text and pages inlined (document.Inline) and none left to
// hand on; under AttachSkip doc and none; else doc and its attachments,
// each to be a document of its own. A re-read of a carrier submitted
// inline arranges it so too, so that its text is the one submit stored.
func (a Attachments) Arrange(doc *document.Document) (*document.Document, []*document.Document) {
	switch a {
	case AttachInline:
		return document.Inline(doc), nil
	case AttachSkip:
		return doc, nil
	}
	return doc, doc.Attachments
}

// LooksInlined reports whether stored, a document's stored text, shows
// attachments inlined that reread, the text its original gives read again
// without inlining, lacks: it has more of the lines document.Inline writes
// before an attachment's text. Such a document was submitted with
// --attachments inline, and reread is poorer by its attachments' text.
func LooksInlined(stored, reread string) bool {
	return document.InlinedAttachments(stored) > document.InlinedAttachments(reread)
}

// Inlined reports whether meta, a document's metadata as the audit keeps
// it, records that its attachments were inlined (DocumentMetadata under
// AttachInline). A document stored before the policy was recorded says
// nothing: false.
func Inlined(meta json.RawMessage) bool {
	var m struct {
		Attachments Attachments `json:"attachments"`
	}
	return json.Unmarshal(meta, &m) == nil && m.Attachments == AttachInline
}

// textVersion is the version of the plain-text reading below; bump it when
// the text a plain file yields changes.
const textVersion = "1"

// textDocument is plain text as a document without pages.
func textDocument(text string) *document.Document {
	return &document.Document{Text: text, Format: "text", MediaType: "text/plain; charset=utf-8",
		Reader: document.ReaderInfo{Name: "text", Version: textVersion}}
}

// knownFormats names what extractq reads, for an error about what it does not.
func knownFormats() string {
	return strings.Join(append([]string{"plain text"}, slices.DeleteFunc(document.FormatNames(), func(n string) bool { return n == "text" })...), ", ")
}

// ReadBytes reads one document held in memory (fetched from a bucket, a
// table or a URL) as a file named source would be read: by its format,
// under the same rules and limits, attachments as Attachments says.
func (r *Reader) ReadBytes(ctx context.Context, id, source string, b []byte, fn func(Doc) error) error {
	if int64(len(b)) > r.max() {
		return fn(Doc{ID: id, Source: source, Err: r.tooLarge(int64(len(b)))})
	}
	return r.read(ctx, id, source, b, fn)
}

// read turns one input's bytes into documents: plain text under the text
// rules, anything else through its format's reader, and hands each to fn.
func (r *Reader) read(ctx context.Context, id, source string, b []byte, fn func(Doc) error) error {
	format := r.Format
	if format == "" {
		format = document.Detect(bytes.NewReader(b), int64(len(b)), source)
	}
	// Plain text keeps its own rules (and their messages); text in UTF-16
	// or UTF-32 goes to the text reader, which knows their byte-order marks.
	if format == "" || format == "text" && !unicodeBOM(b) {
		return fn(r.doc(id, source, b, nil))
	}
	doc, err := document.ReadBytes(ctx, b, document.Options{
		Name: source, Format: r.Format, Password: r.Password, Transcode: r.Transcode, OCR: r.OCR,
		Limits: document.Limits{MaxBytes: r.max(), MaxText: r.max()},
	})
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		return fn(Doc{ID: id, Source: source, Err: readError(err)})
	}
	doc, children := r.Attachments.Arrange(doc)
	// A message whose body is empty is only a carrier of its attachments,
	// and an archive's text only lists them.
	if len(children) == 0 || !doc.Archive && (strings.TrimSpace(doc.Text) != "" || len(doc.Scanned()) > 0) {
		if err := fn(r.docOf(ctx, id, source, doc, b)); err != nil {
			return err
		}
	}
	return r.separate(ctx, id, source, children, fn)
}

// Separate hands on the attachments of doc, read from the document with
// id and source, as reading it under AttachSeparate does: each a document
// of its own (id PARENT#NAME, nested ones PARENT#NAME#NAME), depth first,
// one that cannot be read with its reason. A re-read of a carrier uses it
// to find the attachments a newer reader finds.
func (r *Reader) Separate(ctx context.Context, id, source string, doc *document.Document, fn func(Doc) error) error {
	return r.separate(ctx, id, source, doc.Attachments, fn)
}

// separate hands on each attachment as a document of its own, depth first.
func (r *Reader) separate(ctx context.Context, id, source string, children []*document.Document, fn func(Doc) error) error {
	for i, c := range children {
		name := c.Name
		if name == "" {
			name = "attachment-" + strconv.Itoa(i+1)
		}
		cid, csrc := id+"#"+name, source+"#"+name
		if c.Err != nil {
			if err := fn(Doc{ID: cid, Source: csrc, Err: readError(c.Err)}); err != nil {
				return err
			}
			continue
		}
		if err := fn(r.docOf(ctx, cid, csrc, c, c.Original)); err != nil {
			return err
		}
		if err := r.separate(ctx, cid, csrc, c.Attachments, fn); err != nil {
			return err
		}
	}
	return nil
}

// docOf checks a document a reader made: some text, or pages a model or
// OCR can read; read with a password, a PDF that would go whole to the
// model must open without it (LockedWhole), and a document that needed
// the password is marked (Doc.WithPassword).
func (r *Reader) docOf(ctx context.Context, id, source string, doc *document.Document, original []byte) Doc {
	d := Doc{ID: id, Source: source}
	unread := UnreadPages(doc)
	switch {
	case r.NoNativePDF && doc.MediaType == "application/pdf":
		d.Err = &rejected{msg: "read as pdf: --input native sends a PDF whole, and the model reads no PDFs: use --input text (or auto), or a provider that reads PDFs",
			cause: extractq.ErrNoNative}
	case len(doc.Unreadable()) > 0 && !(r.WholePDF && doc.MediaType == "application/pdf" && original != nil):
		d.Err = &rejected{msg: "read as " + doc.Format + ": " + document.UnreadableError(doc).Error(), cause: document.ErrNoText}
	case len(unread) > 0 && !r.Native:
		d.Err = &rejected{msg: fmt.Sprintf("read as %s: %s on page %s: install tesseract (read by OCR), or use a model that reads images with --input auto or native",
			doc.Format, document.ErrNoText.Error(), joinInts(unread)), cause: document.ErrNoText}
	case strings.TrimSpace(doc.Text) == "" && len(unread) == 0:
		d.Err = reject("read as %s: empty document: no text in it", doc.Format)
	default:
		if r.Password != "" && original != nil {
			if d.Err = LockedWhole(doc, r.NativeInput); d.Err != nil {
				return d
			}
			// Only a document whose reading needed the password (itself,
			// or a part inlined into it) has its pages' pictures kept: a
			// worker reads any other original again without it.
			d.WithPassword = doc.Locked
		}
		d.Text, d.Document, d.Original, d.Metadata = doc.Text, doc, original, DocumentMetadata(doc, r.Attachments)
	}
	return d
}

// LockedWhole rejects doc, read with a password, when it is a PDF that
// would go whole to the model (native: the input is native; or pages only
// a model shown the PDF reads) and opens only with that password
// (Document.Locked; or a locked file attached to it was inlined, whose
// pages a model shown the PDF would not see): no model opens an encrypted
// PDF. (A PDF with an empty
// user password opens without one.) nil for any other document.
func LockedWhole(doc *document.Document, native bool) error {
	if !doc.Locked || doc.MediaType != "application/pdf" || !native && len(doc.Unreadable()) == 0 {
		return nil
	}
	why := "--input native sends a PDF whole to the model"
	fix := "use --input auto (its text, and its pages without text as pictures), or decrypt it first"
	if !native {
		why = fmt.Sprintf("page %s can be read only by a model shown the whole PDF", joinInts(doc.Unreadable()))
		fix = "decrypt it first"
	}
	return &rejected{msg: fmt.Sprintf("read as %s: it (or a file attached to it and inlined) opens only with its password, and %s, which cannot open an encrypted PDF: %s (qpdf --decrypt --password=… in.pdf out.pdf) and submit that",
		doc.Format, why, fix), cause: document.ErrEncrypted}
}

// UnreadPages lists the pages that are only a picture: an image and no
// text but white space.
func UnreadPages(doc *document.Document) []int {
	var n []int
	for _, p := range doc.Pages {
		if p.Image != nil && strings.TrimSpace(doc.Text[p.Start:p.End]) == "" {
			n = append(n, p.Number)
		}
	}
	return n
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// unicodeBOM reports a UTF-16 or UTF-32 byte-order mark.
func unicodeBOM(b []byte) bool {
	return bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF}) ||
		bytes.HasPrefix(b, []byte{0, 0, 0xFE, 0xFF})
}

// DocumentMetadata is what a read document says about itself, as the JSON
// object a job and an output line carry: its format, reader, page count and
// the format's own metadata (title, author, an e-mail's From/To/Subject).
// Read under AttachInline (a), it also says "attachments": "inline": the
// audit keeps it with the document, so that a re-read after a reader
// upgrade inlines the attachments again instead of queueing the carrier
// without their text (Inlined). The other policies are not recorded: they
// leave the carrier's text its own.
func DocumentMetadata(doc *document.Document, a Attachments) json.RawMessage {
	if a != AttachInline {
		a = ""
	}
	m := struct {
		Format      string      `json:"format"`
		Reader      string      `json:"reader"`
		Pages       int         `json:"pages,omitempty"`
		Name        string      `json:"name,omitempty"`
		Attachments Attachments `json:"attachments,omitempty"`
		document.Metadata
	}{doc.Format, doc.Reader.String(), len(doc.Pages), doc.Name, a, doc.Meta}
	b, _ := json.Marshal(m) // strings, numbers and times only: never fails
	return b
}

// rejected is a document a reader refused: it matches ErrBadInput and the
// reader's own error (document.ErrEncrypted, …).
type rejected struct {
	msg   string
	cause error
}

func (e *rejected) Error() string   { return ErrBadInput.Error() + ": " + e.msg }
func (e *rejected) Unwrap() []error { return []error{ErrBadInput, e.cause} }

// readError turns a reader's error into a rejection that says what to do.
// The file's name is left out: the caller names the document.
func readError(err error) error {
	msg := err.Error()
	var de *document.Error
	if errors.As(err, &de) {
		msg = de.Err.Error()
		if de.Format != "" {
			msg = "read as " + de.Format + ": " + msg
		}
	}
	switch {
	case errors.Is(err, document.ErrEncrypted):
		msg += ": give its password with --password"
	case errors.Is(err, document.ErrCorrupt):
		msg += ": repair or re-export it (e.g. print it to PDF again)"
	case errors.Is(err, document.ErrTooLarge) || errors.Is(err, document.ErrBomb):
		msg += " (raise --max-document, or split the document)"
	}
	return &rejected{msg: msg, cause: err}
}
