// Package document turns the bytes a user has (PDF, HTML, e-mail, office
// files, EPUB, images, text in any Unicode encoding) into a Document: its
// text, its pages as ranges of that text, layout where the format has it,
// metadata, and attachments as child documents.
//
// It is built like Go's image package: one registry of formats, each
// recognised by its content (magic bytes, container structure) with the file
// name only a hint, and one Decoder per format behind a small interface.
// Decoders register themselves from their own files. Every decoder is bounded
// (Limits) and its failures are typed (*Error, matching the Err… values), so a
// caller can tell a document it must skip from a run it must stop.
//
// The package never calls a model and imports nothing of the engine, NATS or
// Postgres: the commands, the fleet and the library all read through it.
package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Document is what a reader makes of one input.
type Document struct {
	// Text is the document's text in reading order, UTF-8. Offsets
	// everywhere (pages, blocks, a result's sources) are byte offsets into it.
	Text string
	// Format is the registered name of the format that read it ("pdf",
	// "html", "eml", "docx", "text", …).
	Format string
	// Name is an attachment's file name (or an embedded part's), "" for a
	// top-level document.
	Name string
	// MediaType is the document's IANA media type ("application/pdf").
	MediaType string
	// Pages are the document's pages in order, each a range of Text. A
	// format without pages (plain text, HTML, e-mail) has none; slides and
	// spreadsheet sheets are pages.
	Pages []Page
	// Meta holds what the format says about itself.
	Meta Metadata
	// Attachments are child documents (an e-mail's attachments, a
	// container's embedded files), each read by its own decoder. A child
	// that could not be read carries its reason in Err.
	Attachments []*Document
	// Reader names the decoder and its version, recorded with every job so
	// that results can be re-read after a reader upgrade.
	Reader ReaderInfo
	// Warnings say what was read with loss (a page without text, a table
	// flattened, a font without a Unicode map), for the audit and the user.
	Warnings []string
	// Err is set only on an attachment that could not be read; the parent
	// and its other attachments are still good.
	Err error
	// Original is an attachment's own bytes (set by ReadChild), so that it
	// can be kept, sent to a model and read again as a document of its
	// own; nil for a top-level document, whose bytes the caller has.
	Original []byte
	// Embedded marks a child that is an object embedded in its parent's
	// content (a workbook or a chart in a Word report or on a slide), not
	// a file attached to it. Read puts the text of such children into
	// the parent's own (Options.KeepEmbedded keeps them children).
	Embedded bool
	// Archive marks a document that only holds files (a zip or tar
	// archive, a mailbox): its Text lists them and is no content of its
	// own, so a caller that takes each attachment as a document of its
	// own (the intake's "separate") does not extract the list too.
	Archive bool
	// Locked marks a document that opened only with Options.Password (a
	// PDF its empty user password does not open): whoever reads its
	// original again needs the password too, and no model opens it. A
	// document a locked child was inlined into (Inline, an embedded
	// object) is Locked too: its text holds what only the password opened.
	// An attachment kept as a child says it itself.
	Locked bool
}

// embedded marks children as objects embedded in their parent's content.
func embedded(children []*Document, err error) ([]*Document, error) {
	for _, c := range children {
		c.Embedded = true
	}
	return children, err
}

// Page is one page (or slide, or sheet) of a document.
type Page struct {
	// Number is 1-based, as a person counts pages.
	Number int
	// Start and End are byte offsets into Document.Text: Text[Start:End] is
	// the page's text. Pages do not overlap and are in order.
	Start, End int
	// Label is the page's own name where the format has one: a sheet's
	// name, a PDF page label ("iv"), "" otherwise.
	Label string
	// Width and Height are the page's size in points (1/72 inch) where the
	// format has a page size; 0 otherwise.
	Width, Height float64
	// Blocks are the page's runs of text with their boxes, in reading
	// order, where the reader has layout (PDF). Their ranges lie within the
	// page's.
	Blocks []Block
	// Image is the page as a picture, set when the page has no text layer
	// (a scan) or the input was an image, so it can be sent to a model that
	// reads images, or to OCR.
	Image *Image
	// Header and Footer are the byte ranges within the page of a running
	// header or footer the reader recognised (repeated on most pages); zero
	// ranges when none. Options.DropRunning removes them from Text instead.
	Header, Footer Span
	// Unreadable says why the reader could make neither the page's text
	// nor a picture of it (a JBIG2 scan of Huffman-coded refined symbols,
	// a JPEG 2000 one of Part 2 extensions, text drawn as vector outlines,
	// a Type 3 font without a Unicode map); "" for a page it read. Such a
	// page's text is empty or
	// partial: only a model shown the original (a whole PDF) reads it.
	// UnreadableError names the remedies.
	Unreadable string
}

// Span is a byte range of Document.Text.
type Span struct{ Start, End int }

// Empty reports whether the range holds no bytes.
func (s Span) Empty() bool { return s.End <= s.Start }

// Block is a run of text on a page and the box it occupies.
type Block struct {
	Start, End int // byte offsets into Document.Text
	Box        Box
}

// Box is a rectangle on a page in points, origin at the top left.
type Box struct{ X0, Y0, X1, Y1 float64 }

// Image is a picture to show a model: a scanned page, or an image input.
type Image struct {
	// MediaType is "image/png", "image/jpeg", "image/webp", …
	MediaType string
	// Data is the encoded image, already within Limits.MaxImagePixels
	// (Page.Image); the picture OCR.Recognize gets is within
	// Limits.MaxOCRPixels instead.
	Data []byte
	// Width and Height in pixels.
	Width, Height int
}

// Metadata is what a document says about itself. Fields the format lacks
// are zero.
type Metadata struct {
	Title    string    `json:"title,omitempty"`
	Author   string    `json:"author,omitempty"`
	Subject  string    `json:"subject,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	Modified time.Time `json:"modified,omitzero"`
	Language string    `json:"language,omitempty"`
	// E-mail headers.
	From      string    `json:"from,omitempty"`
	To        []string  `json:"to,omitempty"`
	Cc        []string  `json:"cc,omitempty"`
	Date      time.Time `json:"date,omitzero"`
	MessageID string    `json:"message_id,omitempty"`
	// Other holds further named properties (a PDF's Producer, an office
	// file's Company), by the format's own names.
	Other map[string]string `json:"other,omitempty"`
}

// ReaderInfo names the decoder that produced a document.
type ReaderInfo struct {
	Name    string `json:"name"`    // e.g. "pdf"
	Version string `json:"version"` // bumped when the decoder's output changes
}

// String is "name/version".
func (r ReaderInfo) String() string { return r.Name + "/" + r.Version }

// PageAt returns the page holding byte offset off of Text, or nil when the
// document has no pages or off lies outside them.
func (d *Document) PageAt(off int) *Page {
	i, found := slices.BinarySearchFunc(d.Pages, off, func(p Page, off int) int {
		switch {
		case off < p.Start:
			return 1
		case off >= p.End:
			return -1
		}
		return 0
	})
	if !found {
		_ = i
		return nil
	}
	return &d.Pages[i]
}

// Scanned reports the pages without a text layer (those carrying an Image).
func (d *Document) Scanned() []int {
	var n []int
	for _, p := range d.Pages {
		if p.Image != nil {
			n = append(n, p.Number)
		}
	}
	return n
}

// Unreadable lists the pages the reader could turn into neither text nor a
// picture (Page.Unreadable).
func (d *Document) Unreadable() []int {
	var n []int
	for _, p := range d.Pages {
		if p.Unreadable != "" {
			n = append(n, p.Number)
		}
	}
	return n
}

// UnreadableError is the error for a document with unreadable pages when
// nothing will show the model its original: it matches ErrNoText, names
// each page and why, and the remedies. nil when every page was read.
func UnreadableError(d *Document) error {
	var pages []string
	for _, p := range d.Pages {
		if p.Unreadable != "" {
			pages = append(pages, fmt.Sprintf("%d (%s)", p.Number, p.Unreadable))
		}
	}
	if len(pages) == 0 {
		return nil
	}
	what := "page "
	if len(pages) > 1 {
		what = "pages "
	}
	return fmt.Errorf("%w on %s%s: send the PDF whole to a model that reads PDFs (--input native, or auto), or render the pages to images (e.g. pdftoppm -png) for OCR or a model that reads images",
		ErrNoText, what, strings.Join(pages, ", "))
}

// Limits bound what one document may cost to read. A document past a limit
// fails with ErrTooLarge (or ErrBomb for a container whose parts inflate far
// beyond their compressed size), naming the limit.
type Limits struct {
	// MaxBytes is the largest input (default 64 MiB, the fleet's limit).
	MaxBytes int64
	// MaxText is the most text a document may yield (default 64 MiB).
	MaxText int64
	// MaxPages is the most pages read (default 20,000).
	MaxPages int
	// MaxUnpacked is the most bytes read out of a container (zip parts of
	// OOXML, ODF and EPUB; MIME parts), all parts together (default 512 MiB).
	MaxUnpacked int64
	// MaxRatio is the largest ratio of a zip part's size, or a gzip or
	// bzip2 file's, to its compressed size (default 200; see
	// NewInflateReader for streams whose size is unknown).
	MaxRatio int64
	// MaxImagePixels is the largest image sent on: a larger one is
	// downscaled (default 1568×1568 ≈ 2.46 MP, under every provider's cap).
	MaxImagePixels int
	// MaxOCRPixels is the largest picture OCR reads (default 12 MP: an A4
	// or letter page scanned at 300 to 350 dpi). OCR reads a scan at its
	// own resolution, not the picture fitted to MaxImagePixels: small print
	// downscaled to about 160 dpi is misread (a digit of an amount); a
	// larger scan is downscaled to this. The picture is made for OCR and
	// dropped, never kept in the Document; tesseract's time grows with it.
	MaxOCRPixels int
	// MaxDepth bounds attachments within attachments (default 4).
	MaxDepth int
	// MaxAttachments is the most attachments one document yields, every
	// depth together: zip entries, e-mail parts, a mailbox's messages,
	// winmail.dat's files (default 50,000). Each is a document held in
	// memory, about 2 KB for the smallest, so the count bounds what many
	// tiny entries can cost beyond MaxUnpacked's bytes.
	MaxAttachments int
}

// DefaultLimits are the limits when a field of Options.Limits is zero.
var DefaultLimits = Limits{
	MaxBytes:       64 << 20,
	MaxText:        64 << 20,
	MaxPages:       20000,
	MaxUnpacked:    512 << 20,
	MaxRatio:       200,
	MaxImagePixels: 1568 * 1568,
	MaxOCRPixels:   12_000_000,
	MaxDepth:       4,
	MaxAttachments: 50000,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxBytes > 0 {
		d.MaxBytes = l.MaxBytes
	}
	if l.MaxText > 0 {
		d.MaxText = l.MaxText
	}
	if l.MaxPages > 0 {
		d.MaxPages = l.MaxPages
	}
	if l.MaxUnpacked > 0 {
		d.MaxUnpacked = l.MaxUnpacked
	}
	if l.MaxRatio > 0 {
		d.MaxRatio = l.MaxRatio
	}
	if l.MaxImagePixels > 0 {
		d.MaxImagePixels = l.MaxImagePixels
	}
	if l.MaxOCRPixels > 0 {
		d.MaxOCRPixels = l.MaxOCRPixels
	}
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxAttachments > 0 {
		d.MaxAttachments = l.MaxAttachments
	}
	return d
}

// Options say how to read a document. The zero value reads by content with
// the default limits.
type Options struct {
	// Name is the file name or URI the bytes came from: a hint for the
	// format (its extension) and the name errors carry.
	Name string
	// Format forces a registered format, skipping detection ("pdf", …).
	Format string
	// Limits bound the work; zero fields take DefaultLimits.
	Limits Limits
	// Password opens an encrypted document; "" tries the empty password
	// only.
	Password string
	// DropRunning removes recognised running headers and footers from the
	// text instead of only marking them.
	DropRunning bool
	// Transcode reads text that is not UTF-8 (and has no BOM) as
	// Windows-1252 instead of failing.
	Transcode bool
	// OCR reads the pages without a text layer when set; nil leaves them as
	// images (Page.Image) for a model that reads images, or for the caller
	// to refuse.
	OCR OCR
	// KeepEmbedded keeps the objects embedded in a document's content (a
	// workbook or chart in a Word report or on a slide) as its children,
	// Document.Embedded set. By default their text is put into the
	// document's own after a line "--- embedded NAME ---", their pages
	// numbered on: they are part of what a reader of the document sees.
	KeepEmbedded bool
	// depth counts attachment nesting; set by the package.
	depth int
	// attachments counts the attachments read so far, shared by every
	// depth of one Read; set by the package.
	attachments *int
}

// OCR reads text from a page image. The tesseract command is one
// (NewTesseract); the package never requires it.
type OCR interface {
	// Recognize returns the image's text in reading order. The image is
	// the page's picture at the scan's resolution (within
	// Limits.MaxOCRPixels, upright), not the smaller Page.Image.
	Recognize(ctx context.Context, img *Image) (string, error)
}

// Decoder reads one format. Decode gets the whole input (bounded by
// Limits.MaxBytes) and returns a document whose Format, MediaType and
// Reader the registry fills in when left empty.
type Decoder interface {
	Decode(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error)
}

// DecoderFunc adapts a function to Decoder.
type DecoderFunc func(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error)

// Decode calls f.
func (f DecoderFunc) Decode(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	return f(ctx, r, size, opts)
}

// Format describes one registered format.
type Format struct {
	// Name is the format's short name, used by Options.Format and --format.
	Name string
	// MediaType is its IANA media type.
	MediaType string
	// Extensions are file name endings that hint at it (".pdf"), lower case.
	Extensions []string
	// Version is the decoder's version (ReaderInfo.Version).
	Version string
	// Match reports whether the input is of this format. head holds the
	// first bytes (up to 8 KiB); r and size give the whole input for
	// container formats that must look inside (a zip's parts).
	Match func(head []byte, r io.ReaderAt, size int64) bool
	// MatchNamed, when set, is a weaker check than Match that is enough
	// for an input whose name ends in one of Extensions: a page saved as a
	// fragment (one table, one paragraph) is HTML when it is called .html,
	// and rather text when nothing names it.
	MatchNamed func(head []byte) bool
	// Priority orders matching: higher goes first (a DOCX is a zip, so the
	// zip-based formats go before any generic one). Text, the catch-all,
	// has the lowest.
	Priority int
	// Decoder reads it.
	Decoder Decoder
}

var (
	registryMu sync.RWMutex
	registry   []Format
)

// Register adds a format. It panics on a duplicate name or a format
// without Name, Match or Decoder: registration happens in init, where a
// mistake is a programming error.
func Register(f Format) {
	if f.Name == "" || f.Match == nil || f.Decoder == nil {
		panic("document: Register needs Name, Match and Decoder")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, g := range registry {
		if g.Name == f.Name {
			panic("document: format " + f.Name + " registered twice")
		}
	}
	registry = append(registry, f)
	slices.SortStableFunc(registry, func(a, b Format) int { return b.Priority - a.Priority })
}

// Formats lists the registered formats, highest priority first.
func Formats() []Format {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(registry)
}

func lookup(name string) (Format, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	for _, f := range registry {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// headSize is how much of the input Match sees as head.
const headSize = 8 << 10

// Detect names the format of the input: by content first, the name's
// extension breaking ties between formats whose content matches alike (or
// making a format's MatchNamed enough). It returns "" when nothing
// matches (then the input is an unknown binary).
func Detect(r io.ReaderAt, size int64, name string) string {
	head := make([]byte, min(size, headSize))
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	ext := strings.ToLower(filepath.Ext(name))
	var first string
	for _, f := range Formats() {
		named := ext != "" && slices.Contains(f.Extensions, ext)
		if !f.Match(head, r, size) {
			if named && f.MatchNamed != nil && f.MatchNamed(head) {
				return f.Name
			}
			continue
		}
		if named {
			return f.Name
		}
		if first == "" {
			first = f.Name
		}
	}
	return first
}

// Read reads one document from r (size bytes). The format is detected from
// the content unless opts.Format names one. A document that cannot be read
// returns an *Error.
func Read(ctx context.Context, r io.ReaderAt, size int64, opts Options) (*Document, error) {
	opts.Limits = opts.Limits.withDefaults()
	if opts.attachments == nil {
		opts.attachments = new(int)
	}
	name := opts.Name
	if size > opts.Limits.MaxBytes {
		return nil, &Error{Name: name, Err: fmt.Errorf("%w: %d bytes, the limit is %d (raise the limit, or split the document)", ErrTooLarge, size, opts.Limits.MaxBytes)}
	}
	if size == 0 {
		return nil, &Error{Name: name, Err: ErrEmpty}
	}
	format := opts.Format
	if format == "" {
		format = Detect(r, size, name)
		if format == "" {
			head := make([]byte, min(size, headSize))
			n, _ := r.ReadAt(head, 0)
			if what := Unread(head[:n]); what != "" {
				return nil, &Error{Name: name, Err: fmt.Errorf("%w: it is %s", ErrUnsupported, what)}
			}
			return nil, &Error{Name: name, Err: ErrUnknownFormat}
		}
	}
	f, ok := lookup(format)
	if !ok {
		return nil, &Error{Name: name, Format: format, Err: fmt.Errorf("%w: %q (known: %s)", ErrUnknownFormat, format, strings.Join(FormatNames(), ", "))}
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	doc, err := f.Decoder.Decode(ctx, r, size, &opts)
	if err != nil {
		var de *Error
		if errors.As(err, &de) {
			if de.Name == "" {
				de.Name = name
			}
			if de.Format == "" {
				de.Format = f.Name
			}
			return nil, de
		}
		if ctxErr := context.Cause(ctx); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, err
		}
		return nil, &Error{Name: name, Format: f.Name, Err: err}
	}
	if !opts.KeepEmbedded {
		doc = inlineEmbedded(doc)
	}
	if doc.Format == "" {
		doc.Format = f.Name
	}
	if doc.MediaType == "" {
		doc.MediaType = f.MediaType
	}
	if doc.Reader.Name == "" {
		doc.Reader = ReaderInfo{Name: f.Name, Version: f.Version}
	}
	if int64(len(doc.Text)) > opts.Limits.MaxText {
		return nil, &Error{Name: name, Format: f.Name, Err: fmt.Errorf("%w: %d bytes of text, the limit is %d", ErrTooLarge, len(doc.Text), opts.Limits.MaxText)}
	}
	return doc, nil
}

// ReadBytes reads a document held in memory.
func ReadBytes(ctx context.Context, b []byte, opts Options) (*Document, error) {
	return Read(ctx, bytes.NewReader(b), int64(len(b)), opts)
}

// ReadFile reads the document at path; the path is its name unless
// opts.Name says otherwise.
func ReadFile(ctx context.Context, path string, opts Options) (*Document, error) {
	if opts.Name == "" {
		opts.Name = path
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Name: opts.Name, Err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, &Error{Name: opts.Name, Err: err}
	}
	return Read(ctx, f, info.Size(), opts)
}

// ReadChild reads an attachment of parent with the parent's options, one
// level deeper. A decoder that finds embedded documents calls it; the
// child's failure is returned as a document with Err set, never as the
// parent's failure.
func ReadChild(ctx context.Context, parent *Options, name string, b []byte) *Document {
	opts := *parent
	opts.Name, opts.Format = name, ""
	opts.depth = parent.depth + 1
	if opts.depth > opts.Limits.withDefaults().MaxDepth {
		return &Document{Name: name, Err: &Error{Name: name, Err: fmt.Errorf("%w: attachments nested deeper than %d", ErrTooLarge, opts.Limits.withDefaults().MaxDepth)}}
	}
	d, err := Read(ctx, bytes.NewReader(b), int64(len(b)), opts)
	if err != nil {
		return &Document{Name: name, Err: err}
	}
	d.Name, d.Original = name, b
	return d
}

// countAttachment counts one more attachment of the document being read;
// a container calls it before ReadChild and stops with its error, which
// names the limit, past Limits.MaxAttachments.
func (o *Options) countAttachment() error {
	if o.attachments == nil { // a decoder called without Read (tests)
		o.attachments = new(int)
	}
	*o.attachments++
	if max := o.Limits.withDefaults().MaxAttachments; *o.attachments > max {
		return fmt.Errorf("%w: more than %d attachments, every depth together (Limits.MaxAttachments); split the archive or mailbox into smaller ones", ErrTooLarge, max)
	}
	return nil
}

// FormatNames lists the registered format names, sorted.
func FormatNames() []string {
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// Errors a caller branches on; an *Error wraps one of them (or a decoder's
// own cause).
var (
	// ErrUnknownFormat: the content matches no registered format.
	ErrUnknownFormat = errors.New("unknown format: not a document extractq reads (PDF, HTML, e-mail, office files, EPUB, images, text); convert it to one, or name the format with --format")
	// ErrEmpty: the input has no bytes, or no text at all.
	ErrEmpty = errors.New("empty document")
	// ErrEncrypted: the document needs a password it was not given.
	ErrEncrypted = errors.New("encrypted: the document needs a password")
	// ErrCorrupt: the document is damaged past what the reader recovers.
	ErrCorrupt = errors.New("corrupt document")
	// ErrTooLarge: a limit was reached.
	ErrTooLarge = errors.New("document too large")
	// ErrBomb: a container's parts inflate far beyond their stored size.
	ErrBomb = errors.New("compressed parts inflate beyond the limit (a zip bomb?)")
	// ErrUnsupported: the format is recognised but extractq does not read
	// it (a Word 95 file, an HEIC photo, an encrypted message); the error
	// says what to do instead.
	ErrUnsupported = errors.New("recognised but not read")
	// ErrNoText: the document has pages without a text layer and nothing
	// can read them: no OCR and no model that reads images.
	ErrNoText = errors.New("no text layer")
)

// Error is a document that could not be read: which one, as what format,
// and why.
type Error struct {
	Name   string // file name or URI, "" when unknown
	Format string // the format it was read as, "" when undetected
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(": ")
	}
	if e.Format != "" {
		b.WriteString("read as ")
		b.WriteString(e.Format)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	// A cause may quote the input (a header line, an entry name): the
	// message goes to logs, JSON and Postgres text, which all want UTF-8.
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

func (e *Error) Unwrap() error { return e.Err }
