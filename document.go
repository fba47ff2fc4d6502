package extractq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/chunk"
	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// ReadDocument reads the file at path (a PDF, an e-mail, an office file,
// HTML, an image, text) into a document with its pages, metadata and
// attachments, recognising the format by content. It is document.ReadFile
// with default options; use that for a password, a forced format or OCR.
func ReadDocument(ctx context.Context, path string) (*document.Document, error) {
	return document.ReadFile(ctx, path, document.Options{})
}

// ExtractDocument is New(opts...) followed by ExtractDocument.
func ExtractDocument(ctx context.Context, doc *document.Document, s *schema.Schema, opts ...Option) (*llm.Result, error) {
	x, err := New(opts...)
	if err != nil {
		return nil, err
	}
	return x.ExtractDocument(ctx, doc, s)
}

// Input is how a document reaches the model: as text, or (natively) as the
// pictures and files a model that reads them is shown.
type Input string

// The inputs.
const (
	// InputAuto sends text, and pages without a text layer (scans) as
	// pictures to a model that reads images. The default.
	InputAuto Input = "auto"
	// InputText sends text only: a scanned page must have been read by OCR.
	InputText Input = "text"
	// InputNative sends what the model reads natively: the original PDF to
	// a model that reads PDFs (ExtractOriginal); a PDF to a model that
	// reads none fails with ErrNoNative. Other documents send every page
	// that has a picture as one.
	InputNative Input = "native"
)

// ErrNoNative is matched by the error of a PDF whose input is native while
// the model reads no PDFs: this document's failure, not the run's. The
// message names the remedies (input text or auto, a model that reads PDFs).
var ErrNoNative = errors.New("native input of a PDF")

// ParseInput checks an --input value ("" is InputAuto).
func ParseInput(s string) (Input, error) {
	switch in := Input(s); in {
	case "":
		return InputAuto, nil
	case InputAuto, InputText, InputNative:
		return in, nil
	}
	return "", fmt.Errorf("%w: input %q: want auto, text or native", ErrConfig, s)
}

// WithInput says how documents reach the model (default InputAuto).
func WithInput(in Input) Option { return func(o *options) { o.input = in } }

// ExtractDocument extracts from a document a reader made (ReadDocument,
// document.Read) as Extract does from text, and keeps its pages to the
// result: every value's Source says the page it was found on, the range
// within that page, and its box where the reader has layout.
//
// Pages without a text layer (a scan not read by OCR) are shown to the
// model as pictures when it reads images and the input is not InputText;
// otherwise the error matches document.ErrNoText and names both remedies.
func (x *Extractor) ExtractDocument(ctx context.Context, doc *document.Document, s *schema.Schema) (*llm.Result, error) {
	return x.ExtractOriginal(ctx, doc, nil, s)
}

// ExtractOriginal is ExtractDocument given also the bytes doc was read
// from: with InputNative and a model that reads PDFs, a PDF is sent whole
// (the model sees its layout, tables and pictures) instead of its text.
func (x *Extractor) ExtractOriginal(ctx context.Context, doc *document.Document, original []byte, s *schema.Schema) (*llm.Result, error) {
	if doc == nil {
		return nil, fmt.Errorf("extractq: %w: no document: read one with extractq.ReadDocument or document.Read", ErrConfig)
	}
	if s == nil {
		return nil, fmt.Errorf("extractq: %w: no schema: compile one with schema.Compile, schema.CompileFile or schema.FromStruct", ErrConfig)
	}
	text, attach, err := x.native(doc, original)
	if err != nil {
		return nil, err
	}
	var res *llm.Result
	if len(attach) == 0 {
		res, err = x.extract(ctx, text, s, pageStarts(doc))
	} else {
		// Pictures are not split: the document goes whole.
		cfg := x.cfg
		cfg.Attachments = attach
		if res, err = retry.Run(ctx, x.provider, text, s, cfg); err != nil && res == nil {
			return nil, fmt.Errorf("extractq: %w", err)
		}
	}
	if res != nil {
		locate(doc, res)
	}
	return res, err
}

// pdfNote stands for the text of a PDF sent whole.
const pdfNote = "(The document is the attached PDF file.)\n"

// native decides what the model is shown: the text with pictures at the
// pages that have them, or a note and the whole PDF.
func (x *Extractor) native(doc *document.Document, original []byte) (string, []retry.Attachment, error) {
	caps := x.provider.Capabilities()
	in := x.input
	if in == "" {
		in = InputAuto
	}
	isPDF := doc.MediaType == "application/pdf"
	whole := func() (string, []retry.Attachment, error) {
		return pdfNote, []retry.Attachment{{At: len(pdfNote), Part: llm.Part{Kind: llm.PartFile, MediaType: doc.MediaType, Data: original, Name: doc.Name}}}, nil
	}
	if in == InputNative && isPDF {
		switch {
		case !caps.PDF:
			return "", nil, fmt.Errorf("extractq: %w: %s reads no PDFs: send its text with input text or auto (--input text), or use a model that reads PDFs (OpenAI gpt-4o and later, Claude 3.5 and later, Gemini)", ErrNoNative, x.provider.Name())
		case len(original) > 0:
			return whole()
		}
	}
	// Pages the reader could turn into neither text nor a picture (a JPEG 2000
	// scan, text as outlines): only a model shown the PDF reads them, so
	// auto sends it whole when the model reads PDFs; else the document
	// fails naming the pages, never as a text that silently lacks them.
	if err := document.UnreadableError(doc); err != nil {
		if in != InputText && isPDF && caps.PDF && len(original) > 0 {
			return whole()
		}
		return "", nil, fmt.Errorf("extractq: %w", err)
	}
	unread := imageOnlyPages(doc)
	var attach []retry.Attachment
	for _, p := range doc.Pages {
		// Text sends no picture; auto sends only those of pages without
		// text (a page read by OCR keeps its picture but needs none).
		if p.Image == nil || in == InputText || in == InputAuto && hasText(doc, p) {
			continue
		}
		attach = append(attach, retry.Attachment{At: p.End, Part: llm.Part{Kind: llm.PartImage, MediaType: p.Image.MediaType, Data: p.Image.Data}})
	}
	switch {
	case len(unread) > 0 && (in == InputText || !caps.Images):
		why := "the input is text"
		if in != InputText {
			why = fmt.Sprintf("%s reads no images", x.provider.Name())
		}
		return "", nil, fmt.Errorf("extractq: %w on page %s and %s: read them by OCR (install tesseract; document.Options.OCR), or use a model that reads images with input auto or native", document.ErrNoText, joinPages(unread), why)
	case len(attach) > 0 && !caps.Images:
		return doc.Text, nil, nil // native asked for, but the text is all this model reads
	}
	return doc.Text, attach, nil
}

func joinPages(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// pageStarts lists where the pages after the first start: where a long
// document is cut first.
func pageStarts(doc *document.Document) []int {
	var starts []int
	for _, p := range doc.Pages[min(1, len(doc.Pages)):] {
		starts = append(starts, p.Start)
	}
	return starts
}

// imageOnlyPages lists the pages that are a picture without text.
func imageOnlyPages(doc *document.Document) []int {
	var n []int
	for _, p := range doc.Pages {
		if p.Image != nil && !hasText(doc, p) {
			n = append(n, p.Number)
		}
	}
	return n
}

// hasText reports whether page p holds more than white space.
func hasText(doc *document.Document, p document.Page) bool {
	return strings.TrimSpace(doc.Text[p.Start:p.End]) != ""
}

// locate grounds a valid value in the document when the extraction did not
// (a document sent whole), then gives each source its page, its range
// within the page and its box.
func locate(doc *document.Document, res *llm.Result) {
	if res.Sources == nil && len(res.Value) > 0 {
		res.Sources, res.Ungrounded = Locate(doc, res.Value)
		return
	}
	paginate(doc, res.Sources)
}

// Locate finds the strings and numbers of value in doc, as ExtractDocument
// does for a result: each one's JSON pointer maps to its Source (range,
// snippet, and for a document with pages its page, range within the page
// and box); ungrounded lists those found nowhere. Use it to place a value
// from elsewhere in its document, e.g. a failed attempt's invalid fields.
// A value that is not JSON finds nothing.
func Locate(doc *document.Document, value json.RawMessage) (sources map[string]llm.Source, ungrounded []string) {
	// Numbers stay json.Number, as Ground wants them.
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var v any
	if doc == nil || d.Decode(&v) != nil {
		return nil, nil
	}
	g := chunk.Ground(doc.Text, v, nil, nil)
	paginate(doc, g.Sources)
	return g.Sources, g.Ungrounded
}

// paginate gives each source its page, its range within the page and its
// box.
func paginate(doc *document.Document, sources map[string]llm.Source) {
	if len(doc.Pages) == 0 || len(sources) == 0 {
		return
	}
	// Sources count characters; pages count bytes.
	var chars []int
	for _, src := range sources {
		chars = append(chars, src.Start, src.End)
	}
	at := byteOffsets(doc.Text, chars)
	for ptr, src := range sources {
		start, end := at[src.Start], at[src.End]
		p := doc.PageAt(start)
		if p == nil {
			continue
		}
		pageChar := utf8.RuneCountInString(doc.Text[:p.Start])
		src.Page, src.PageLabel = p.Number, p.Label
		src.PageStart, src.PageEnd = src.Start-pageChar, src.End-pageChar
		src.Box = boxOf(p.Blocks, start, end)
		sources[ptr] = src
	}
}

// byteOffsets maps character (code point) offsets of text to byte offsets.
func byteOffsets(text string, chars []int) map[int]int {
	want := slices.Clone(chars)
	slices.Sort(want)
	want = slices.Compact(want)
	out := make(map[int]int, len(want))
	i, n := 0, 0
	for b := range text {
		for i < len(want) && want[i] <= n {
			out[want[i]] = b
			i++
		}
		n++
	}
	for ; i < len(want); i++ {
		out[want[i]] = len(text)
	}
	return out
}

// boxOf is the union of the boxes of the blocks that overlap [start, end),
// nil when none does.
func boxOf(blocks []document.Block, start, end int) *llm.Box {
	var box *llm.Box
	for _, b := range blocks {
		if b.End <= start || b.Start >= end {
			continue
		}
		if box == nil {
			box = &llm.Box{X0: b.Box.X0, Y0: b.Box.Y0, X1: b.Box.X1, Y1: b.Box.Y1}
			continue
		}
		box.X0, box.Y0 = min(box.X0, b.Box.X0), min(box.Y0, b.Box.Y0)
		box.X1, box.Y1 = max(box.X1, b.Box.X1), max(box.Y1, b.Box.Y1)
	}
	return box
}
