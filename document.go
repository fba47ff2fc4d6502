package extractq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/chunk"
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

// ExtractDocument extracts from a document a reader made (ReadDocument,
// document.Read) as Extract does from text, and keeps its pages to the
// result: every value's Source says the page it was found on, the range
// within that page, and its box where the reader has layout.
//
// A document with pages that are only pictures (a scan without OCR) cannot
// be read from text: the error then matches document.ErrNoText and names
// the remedies.
func (x *Extractor) ExtractDocument(ctx context.Context, doc *document.Document, s *schema.Schema) (*llm.Result, error) {
	if doc == nil {
		return nil, fmt.Errorf("extractq: %w: no document: read one with extractq.ReadDocument or document.Read", ErrConfig)
	}
	if pages := imageOnlyPages(doc); len(pages) > 0 {
		return nil, fmt.Errorf("extractq: %w on pages %v: read them by OCR (document.Options.OCR, e.g. the tesseract command) before extracting", document.ErrNoText, pages)
	}
	res, err := x.Extract(ctx, doc.Text, s)
	if res != nil {
		locate(doc, res)
	}
	return res, err
}

// imageOnlyPages lists the pages that are a picture without text.
func imageOnlyPages(doc *document.Document) []int {
	var n []int
	for _, p := range doc.Pages {
		if p.Image != nil && p.End <= p.Start {
			n = append(n, p.Number)
		}
	}
	return n
}

// locate grounds a valid value in the document when the extraction did not
// (a document sent whole), then gives each source its page, its range
// within the page and its box.
func locate(doc *document.Document, res *llm.Result) {
	if res.Sources == nil && len(res.Value) > 0 {
		// Numbers stay json.Number, as Ground wants them.
		d := json.NewDecoder(bytes.NewReader(res.Value))
		d.UseNumber()
		var v any
		if d.Decode(&v) == nil {
			g := chunk.Ground(doc.Text, v, nil, nil)
			res.Sources, res.Ungrounded = g.Sources, g.Ungrounded
		}
	}
	if len(doc.Pages) == 0 || len(res.Sources) == 0 {
		return
	}
	// Sources count characters; pages count bytes.
	var chars []int
	for _, src := range res.Sources {
		chars = append(chars, src.Start, src.End)
	}
	at := byteOffsets(doc.Text, chars)
	for ptr, src := range res.Sources {
		start, end := at[src.Start], at[src.End]
		p := doc.PageAt(start)
		if p == nil {
			continue
		}
		pageChar := utf8.RuneCountInString(doc.Text[:p.Start])
		src.Page, src.PageLabel = p.Number, p.Label
		src.PageStart, src.PageEnd = src.Start-pageChar, src.End-pageChar
		src.Box = boxOf(p.Blocks, start, end)
		res.Sources[ptr] = src
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
