package extractq_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
)

// paged is a two-page document as a reader would make it: "ACME" on page
// one (with a box), the total on page two after a non-ASCII character, so
// that character and byte offsets differ.
func paged() *document.Document {
	text := "Invoice from ACME Ltd\nnothing else\n" + "Résumé: total 9.50 EUR\n"
	p2 := strings.Index(text, "Résumé")
	acme := strings.Index(text, "ACME")
	return &document.Document{Text: text, Format: "pdf", Pages: []document.Page{
		{Number: 1, Start: 0, End: p2, Blocks: []document.Block{
			{Start: 0, End: acme, Box: document.Box{X0: 10, Y0: 10, X1: 80, Y1: 20}},
			{Start: acme, End: acme + len("ACME Ltd"), Box: document.Box{X0: 90, Y0: 10, X1: 140, Y1: 20}},
		}},
		{Number: 2, Start: p2, End: len(text), Label: "ii"},
	}}
}

func TestExtractDocumentPages(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"type":"object","properties":{"vendor":{"type":"string"},"total":{"type":"number"}},"required":["vendor","total"]}`)
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor":"ACME Ltd","total":9.5}`)})
	res, err := extractq.ExtractDocument(t.Context(), paged(), s, extractq.WithProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ptr                string
		page               int
		label              string
		pageStart, pageEnd int
		box                *llm.Box
	}{
		{"/vendor", 1, "", 13, 21, &llm.Box{X0: 90, Y0: 10, X1: 140, Y1: 20}},
		{"/total", 2, "ii", 14, 18, nil},
	}
	for _, tc := range tests {
		src, ok := res.Sources[tc.ptr]
		if !ok {
			t.Errorf("%s: no source in %+v", tc.ptr, res.Sources)
			continue
		}
		if src.Page != tc.page || src.PageLabel != tc.label || src.PageStart != tc.pageStart || src.PageEnd != tc.pageEnd {
			t.Errorf("%s: page %d %q [%d,%d), want page %d %q [%d,%d)", tc.ptr, src.Page, src.PageLabel, src.PageStart, src.PageEnd, tc.page, tc.label, tc.pageStart, tc.pageEnd)
		}
		if (src.Box == nil) != (tc.box == nil) || src.Box != nil && *src.Box != *tc.box {
			t.Errorf("%s: box %+v, want %+v", tc.ptr, src.Box, tc.box)
		}
	}
	// The page range points at the value within the page's text.
	doc := paged()
	page2 := []rune(doc.Text[doc.Pages[1].Start:doc.Pages[1].End])
	if got := string(page2[res.Sources["/total"].PageStart:res.Sources["/total"].PageEnd]); got != "9.50" {
		t.Errorf("page 2 [%d,%d) = %q, want 9.50", res.Sources["/total"].PageStart, res.Sources["/total"].PageEnd, got)
	}
}

func TestExtractDocumentRefuses(t *testing.T) {
	t.Parallel()
	s := compile(t, invoice)
	scan := &document.Document{Format: "pdf", Pages: []document.Page{{Number: 1, Image: &document.Image{MediaType: "image/png", Data: []byte("png")}}}}
	tests := []struct {
		name string
		doc  *document.Document
		want error
		msg  string
	}{
		{"no document", nil, extractq.ErrConfig, "extractq.ReadDocument"},
		{"a scan and a model that reads no images", scan, document.ErrNoText, "OCR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := extractqtest.New(nil)
			_, err := extractq.ExtractDocument(t.Context(), tc.doc, s, extractq.WithProvider(p))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if p.Calls() != 0 {
				t.Errorf("%d calls to the model, want none", p.Calls())
			}
		})
	}
}

// TestExtractDocumentNative checks what a model is shown of a document
// with a scanned page, by input and by what the model reads.
func TestExtractDocumentNative(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"type":"object","properties":{"vendor":{"type":"string"}},"required":["vendor"]}`)
	scanned := func() *document.Document {
		text := "Cover letter from ACME Ltd\n"
		return &document.Document{Text: text, Format: "pdf", MediaType: "application/pdf", Name: "in.pdf", Pages: []document.Page{
			{Number: 1, Start: 0, End: len(text)},
			{Number: 2, Start: len(text), End: len(text), Image: &document.Image{MediaType: "image/png", Data: []byte("PAGE2")}},
		}}
	}
	tests := []struct {
		name          string
		input         extractq.Input
		images, pdf   bool
		original      []byte
		ocred         bool           // page 2's picture was read by OCR: it has text too
		want          []llm.PartKind // the task message's parts
		wantErr       error
		wantErrSubstr string
	}{
		{name: "auto shows the scan to a model that reads images", input: extractq.InputAuto, images: true, want: []llm.PartKind{llm.PartImage}},
		{name: "auto and a model that reads no images", input: extractq.InputAuto, wantErr: document.ErrNoText, wantErrSubstr: "fake:model reads no images"},
		{name: "text never sends pictures", input: extractq.InputText, images: true, wantErr: document.ErrNoText, wantErrSubstr: "install tesseract"},
		{name: "native sends the PDF whole", input: extractq.InputNative, images: true, pdf: true, original: []byte("%PDF-1.7"), want: []llm.PartKind{llm.PartFile}},
		{name: "native and a model that reads no PDFs", input: extractq.InputNative, images: true, original: []byte("%PDF-1.7"), wantErr: extractq.ErrNoNative, wantErrSubstr: "--input text"},
		{name: "native without the original sends the pictures", input: extractq.InputNative, images: true, pdf: true, want: []llm.PartKind{llm.PartImage}},
		{name: "text sends no picture of a page read by OCR", input: extractq.InputText, images: true, ocred: true},
		{name: "auto sends no picture of a page read by OCR", input: extractq.InputAuto, images: true, ocred: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor":"ACME Ltd"}`)}, extractqtest.WithMedia(tc.images, tc.pdf))
			x, err := extractq.New(extractq.WithProvider(p), extractq.WithInput(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			doc := scanned()
			if tc.ocred {
				doc.Text += "OCR text"
				doc.Pages[1].End = len(doc.Text)
			}
			res, err := x.ExtractOriginal(t.Context(), doc, tc.original, s)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantErrSubstr) || p.Calls() != 0 {
					t.Fatalf("err = %v after %d calls, want %v mentioning %q before any call", err, p.Calls(), tc.wantErr, tc.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			req, _ := p.LastRequest()
			var kinds []llm.PartKind
			for _, part := range req.Messages[1].Parts {
				if part.Kind != llm.PartText {
					kinds = append(kinds, part.Kind)
				}
			}
			if !slices.Equal(kinds, tc.want) {
				t.Errorf("parts %v, want %v", kinds, tc.want)
			}
			if src := res.Sources["/vendor"]; src.Page != 1 {
				t.Errorf("vendor source %+v, want page 1", src)
			}
		})
	}
}

// TestExtractDocumentUnreadable: a PDF page the reader could not read (a
// JBIG2 scan) goes to the model inside the whole PDF when the model reads
// PDFs and the input is not text; otherwise the document fails before any
// call naming the page, never as a text that silently lacks it.
func TestExtractDocumentUnreadable(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"type":"object","properties":{"vendor":{"type":"string"}},"required":["vendor"]}`)
	text := "Cover letter from ACME Ltd\n"
	tests := []struct {
		name     string
		input    extractq.Input
		pdf      bool
		original []byte
		wantFile bool
	}{
		{name: "auto sends the PDF to a model that reads PDFs", input: extractq.InputAuto, pdf: true, original: []byte("%PDF-1.7"), wantFile: true},
		{name: "native sends the PDF", input: extractq.InputNative, pdf: true, original: []byte("%PDF-1.7"), wantFile: true},
		{name: "auto and a model that reads no PDFs", input: extractq.InputAuto, original: []byte("%PDF-1.7")},
		{name: "text", input: extractq.InputText, pdf: true, original: []byte("%PDF-1.7")},
		{name: "no original to send", input: extractq.InputAuto, pdf: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor":"ACME Ltd"}`)}, extractqtest.WithMedia(true, tc.pdf))
			x, err := extractq.New(extractq.WithProvider(p), extractq.WithInput(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			doc := &document.Document{Text: text, Format: "pdf", MediaType: "application/pdf", Name: "in.pdf", Pages: []document.Page{
				{Number: 1, Start: 0, End: len(text)},
				{Number: 2, Start: len(text), End: len(text), Unreadable: "its page image could not be read: a JBIG2Decode image: Huffman-coded refinement is not decoded"},
			}}
			_, err = x.ExtractOriginal(t.Context(), doc, tc.original, s)
			if !tc.wantFile {
				if !errors.Is(err, document.ErrNoText) || !strings.Contains(err.Error(), "page 2 (its page image") || p.Calls() != 0 {
					t.Fatalf("err = %v after %d calls, want ErrNoText naming page 2 before any call", err, p.Calls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			req, _ := p.LastRequest()
			if parts := req.Messages[1].Parts; !slices.ContainsFunc(parts, func(p llm.Part) bool { return p.Kind == llm.PartFile }) {
				t.Errorf("parts %+v, want the PDF as a file", parts)
			}
		})
	}
}
