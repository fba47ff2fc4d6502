package intake_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	_ "github.com/extractq/extractq/internal/docfake" // the stand-in formats
	"github.com/extractq/extractq/internal/intake"
)

type docWant struct {
	text, reason string
	pages        int
	is           error // the error must match it too
	withPassword bool  // read with a password (Doc.WithPassword)
}

func TestReaderDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paged := "%FAKEPDF\nPage one.\fPage two."
	write(t, dir, "two.fpdf", []byte(paged))
	write(t, dir, "scan.fpdf", []byte("%FAKEPDF\nCover.\f[scan]"))
	write(t, dir, "locked.fpdf", []byte("%FAKEPDF\nPASSWORD s3cret\nSecret page."))
	write(t, dir, "locked-scan.fpdf", []byte("%FAKEPDF\nPASSWORD s3cret\nCover.\f[scan]"))
	write(t, dir, "locked-mail.eml", []byte("FAKEMAIL\nSee attached.\n--- locked.fpdf\n%FAKEPDF\nPASSWORD s3cret\nSecret page."))
	write(t, dir, "broken.fpdf", []byte("%FAKEPDF\nCORRUPT"))
	write(t, dir, "mail.eml", []byte("FAKEMAIL\nPlease find the invoice attached.\n--- invoice.fpdf\n%FAKEPDF\nInvoice 42\fTotal 9.50\n--- blob.bin\n\x00\x01\x02"))
	write(t, dir, "carrier.eml", []byte("FAKEMAIL\n  \n--- note.fpdf\n%FAKEPDF\nhello"))
	write(t, dir, "unknown.bin", []byte("\x7fELF\x00\x00binary"))
	write(t, dir, "photo.heic", []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"))
	write(t, dir, "mail.dat", []byte("FAKEMAIL\nbody only"))
	write(t, dir, "finder.zip", zipOf(t, "a/one.txt", "Total 5 EUR", "__MACOSX/a/._one.txt", "\x00\x05\x16\x07AppleDouble", "a/.DS_Store", "\x00\x00\x00\x01Bud1"))
	write(t, dir, "records.jsonl.gz", gzipOf(t, `{"id":"r1","text":"Invoice 1"}`+"\n"+`{"id":"r2","text":"Invoice 2"}`+"\n"))

	tests := []struct {
		name   string
		r      intake.Reader
		files  []string
		expect map[string]docWant // by id, relative to dir
	}{
		{
			name: "pages kept, the rest goes on past bad documents", files: []string{"two.fpdf", "locked.fpdf", "broken.fpdf", "unknown.bin", "photo.heic"},
			expect: map[string]docWant{
				"two.fpdf":    {text: "Page one.Page two.", pages: 2},
				"locked.fpdf": {reason: "read as fakepdf: encrypted: the document needs a password: give its password with --password", is: document.ErrEncrypted},
				"broken.fpdf": {reason: "read as fakepdf: corrupt document: repair or re-export it", is: document.ErrCorrupt},
				"unknown.bin": {reason: "binary data (a NUL byte at offset 4) in no format extractq reads (plain text, ", is: document.ErrUnknownFormat},
				"photo.heic":  {reason: "an HEIC/HEIF picture (a phone photo), which extractq does not decode: convert it to JPEG", is: document.ErrUnsupported},
			},
		},
		{
			name: "password", r: intake.Reader{Password: "s3cret"}, files: []string{"locked.fpdf"},
			expect: map[string]docWant{"locked.fpdf": {text: "Secret page.", pages: 1, withPassword: true}},
		},
		{
			// No model opens an encrypted PDF sent whole; one that opens
			// without the password goes, as do its pictures with input auto.
			name: "password, input native", r: intake.Reader{Password: "s3cret", Native: true, NativeInput: true, WholePDF: true},
			files: []string{"locked.fpdf", "two.fpdf", "locked-mail.eml"},
			expect: map[string]docWant{
				"locked.fpdf": {reason: "read as fakepdf: it (or a file attached to it and inlined) opens only with its password, and --input native sends a PDF whole to the model, which cannot open an encrypted PDF: use --input auto (its text, and its pages without text as pictures), or decrypt it first (qpdf --decrypt --password=… in.pdf out.pdf)",
					is: document.ErrEncrypted},
				// Neither needed the password: no pictures are kept.
				"two.fpdf":                    {text: "Page one.Page two.", pages: 2},
				"locked-mail.eml":             {text: "See attached."},
				"locked-mail.eml#locked.fpdf": {reason: "it (or a file attached to it and inlined) opens only with its password, and --input native sends a PDF whole", is: document.ErrEncrypted},
			},
		},
		{
			name: "password, input auto", r: intake.Reader{Password: "s3cret", Native: true, WholePDF: true}, files: []string{"locked-scan.fpdf", "scan.fpdf"},
			expect: map[string]docWant{"locked-scan.fpdf": {text: "Cover.", pages: 2, withPassword: true}, "scan.fpdf": {text: "Cover.", pages: 2}},
		},
		{
			// Only the parts that needed the password are marked: the
			// locked attachment, separate or inlined into its mail.
			name: "password, attachments separate", r: intake.Reader{Password: "s3cret", Native: true}, files: []string{"locked-mail.eml", "mail.eml"},
			expect: map[string]docWant{
				"locked-mail.eml":             {text: "See attached."},
				"locked-mail.eml#locked.fpdf": {text: "Secret page.", pages: 1, withPassword: true},
				"mail.eml":                    {text: "Please find the invoice attached."},
				"mail.eml#invoice.fpdf":       {text: "Invoice 42Total 9.50", pages: 2},
				"mail.eml#blob.bin":           {reason: "unknown format", is: document.ErrUnknownFormat},
			},
		},
		{
			// An e-mail is never sent whole: with input native its locked
			// PDF inlined goes as its text and pictures.
			name: "password, attachments inline, input native", r: intake.Reader{Password: "s3cret", Native: true, NativeInput: true, WholePDF: true, Attachments: intake.AttachInline},
			files: []string{"locked-mail.eml", "mail.eml"},
			expect: map[string]docWant{
				"locked-mail.eml": {text: "See attached.\n\n--- attachment locked.fpdf ---\n\nSecret page.", pages: 1, withPassword: true},
				"mail.eml":        {text: "Please find the invoice attached.\n\n--- attachment invoice.fpdf ---\n\nInvoice 42Total 9.50", pages: 2},
			},
		},
		{
			name: "scan refused when nothing reads images", files: []string{"scan.fpdf"},
			expect: map[string]docWant{"scan.fpdf": {reason: "no text layer on page 2: install tesseract (read by OCR), or use a model that reads images with --input auto or native", is: document.ErrNoText}},
		},
		{
			name: "scan kept for a model that reads images", r: intake.Reader{Native: true}, files: []string{"scan.fpdf"},
			expect: map[string]docWant{"scan.fpdf": {text: "Cover.", pages: 2}},
		},
		{
			name: "attachments separate", files: []string{"mail.eml", "carrier.eml"},
			expect: map[string]docWant{
				"mail.eml":              {text: "Please find the invoice attached."},
				"mail.eml#invoice.fpdf": {text: "Invoice 42Total 9.50", pages: 2},
				"mail.eml#blob.bin":     {reason: "unknown format", is: document.ErrUnknownFormat},
				// The empty body is no document of its own; its attachment is.
				"carrier.eml#note.fpdf": {text: "hello", pages: 1},
			},
		},
		{
			name: "attachments inline", r: intake.Reader{Attachments: intake.AttachInline}, files: []string{"mail.eml"},
			expect: map[string]docWant{"mail.eml": {text: "Please find the invoice attached.\n\n--- attachment invoice.fpdf ---\n\nInvoice 42Total 9.50", pages: 2}},
		},
		{
			name: "attachments skipped", r: intake.Reader{Attachments: intake.AttachSkip}, files: []string{"mail.eml"},
			expect: map[string]docWant{"mail.eml": {text: "Please find the invoice attached."}},
		},
		{
			// An archive's list of files is no document of its own, and
			// macOS's metadata beside each file is none either.
			name: "archive", files: []string{"finder.zip"},
			expect: map[string]docWant{"finder.zip#a/one.txt": {text: "Total 5 EUR"}},
		},
		{
			name: "archive inline", r: intake.Reader{Attachments: intake.AttachInline}, files: []string{"finder.zip"},
			expect: map[string]docWant{"finder.zip": {text: "a/one.txt\n\n--- attachment a/one.txt ---\n\nTotal 5 EUR"}},
		},
		{
			name: "compressed JSON Lines", files: []string{"records.jsonl.gz"},
			expect: map[string]docWant{"r1": {text: "Invoice 1"}, "r2": {text: "Invoice 2"}},
		},
		{
			name: "format named overrides the content", r: intake.Reader{Format: "fakepdf"}, files: []string{"mail.dat"},
			expect: map[string]docWant{"mail.dat": {text: "FAKEMAIL\nbody only", pages: 1}},
		},
		{
			name: "the content says the format", files: []string{"mail.dat"},
			expect: map[string]docWant{"mail.dat": {text: "body only"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var paths []string
			for _, f := range tc.files {
				paths = append(paths, filepath.Join(dir, f))
			}
			got := map[string]intake.Doc{}
			if err := tc.r.Read(t.Context(), paths, func(d intake.Doc) error {
				got[strings.TrimPrefix(d.ID, filepath.ToSlash(dir)+"/")] = d
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.expect) {
				t.Errorf("got documents %v, want %d", keys(got), len(tc.expect))
			}
			for id, w := range tc.expect {
				d, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: not read (got %v)", id, keys(got))
				case w.reason != "":
					if d.Err == nil || !strings.Contains(d.Err.Error(), w.reason) || !errors.Is(d.Err, intake.ErrBadInput) || w.is != nil && !errors.Is(d.Err, w.is) {
						t.Errorf("%s: err = %v, want %q matching %v", id, d.Err, w.reason, w.is)
					}
					if d.Err != nil && strings.Count(d.Err.Error(), dir) > 0 {
						t.Errorf("%s: the error repeats the path the caller prints: %v", id, d.Err)
					}
				default:
					if d.Err != nil || d.Text != w.text || d.Document == nil || d.Document.Text != d.Text || len(d.Document.Pages) != w.pages {
						t.Fatalf("%s: text %q err %v document %+v, want text %q with %d pages", id, d.Text, d.Err, d.Document, w.text, w.pages)
					}
					if d.WithPassword != w.withPassword {
						t.Errorf("%s: read with a password %v, want %v", id, d.WithPassword, w.withPassword)
					}
					for _, p := range d.Document.Pages {
						if p.Start < 0 || p.End > len(d.Text) || p.Start > p.End {
							t.Errorf("%s: page %d range [%d,%d) outside the text", id, p.Number, p.Start, p.End)
						}
					}
				}
			}
		})
	}
}

// zipOf makes a zip archive of name, content pairs.
func zipOf(t *testing.T, parts ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(parts); i += 2 {
		w, err := zw.Create(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(parts[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipOf compresses s.
func gzipOf(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func keys(m map[string]intake.Doc) []string {
	var k []string
	for id := range m {
		k = append(k, id)
	}
	return k
}

// TestReaderDocumentDetails checks what a read document carries beyond its
// text: the original bytes, its metadata, and inline pages that point at
// the attachment's text.
func TestReaderDocumentDetails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mail := "FAKEMAIL\nSee attached.\n--- invoice.fpdf\n%FAKEPDF\nInvoice 42\fTotal 9.50"
	write(t, dir, "mail.eml", []byte(mail))
	var docs []intake.Doc
	r := intake.Reader{Attachments: intake.AttachInline}
	if err := r.Read(t.Context(), []string{filepath.Join(dir, "mail.eml")}, func(d intake.Doc) error {
		docs = append(docs, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Err != nil {
		t.Fatalf("got %+v, want one document", docs)
	}
	d := docs[0]
	if string(d.Original) != mail {
		t.Errorf("Original = %q, want the file's bytes", d.Original)
	}
	var meta map[string]any
	if err := json.Unmarshal(d.Metadata, &meta); err != nil || meta["format"] != "fakemail" || meta["reader"] != "fakemail/2" || meta["from"] != "a@example.com" {
		t.Errorf("Metadata = %s (%v), want format, reader and the e-mail's From", d.Metadata, err)
	}
	pages := d.Document.Pages
	if len(pages) != 2 || d.Text[pages[1].Start:pages[1].End] != "Total 9.50" || pages[1].Label != "invoice.fpdf" || pages[1].Number != 2 {
		t.Errorf("inline pages = %+v, want the attachment's two, pointing at its text", pages)
	}
}

// TestReaderNativePDF: with input native and a model that reads no PDFs, a
// PDF is rejected naming the remedies; other documents and other models
// are unaffected.
func TestReaderNativePDF(t *testing.T) {
	t.Parallel()
	pdf, err := os.ReadFile("../../examples/documents/invoice-07.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    intake.Reader
		file []byte
		want string // the rejection; "" for a document read
	}{
		{"refused", intake.Reader{NoNativePDF: true}, pdf, "--input native sends a PDF whole, and the model reads no PDFs: use --input text (or auto), or a provider that reads PDFs"},
		{"a model that reads PDFs", intake.Reader{}, pdf, ""},
		{"not a PDF", intake.Reader{NoNativePDF: true}, []byte("<html><body><p>Invoice 7</p></body></html>"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got intake.Doc
			if err := tc.r.ReadBytes(t.Context(), "in", "in", tc.file, func(d intake.Doc) error { got = d; return nil }); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && got.Err != nil:
				t.Errorf("err = %v, want the document read", got.Err)
			case tc.want != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.want) || !errors.Is(got.Err, extractq.ErrNoNative) || !errors.Is(got.Err, intake.ErrBadInput)):
				t.Errorf("err = %v, want %q matching extractq.ErrNoNative", got.Err, tc.want)
			}
		})
	}
}

// TestReaderUnreadablePages: a PDF with a page the reader could not read
// (a JBIG2 scan of refined Huffman-coded symbols, outlines, a Type 3 font
// without a Unicode map) is queued with its original only for a model that reads
// PDFs (input not text);
// otherwise it is rejected naming the page and the remedies, never read as
// a text that lacks the page.
func TestReaderUnreadablePages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		r    intake.Reader
		want string // the rejection; "" for a document read
	}{
		{"jbig2-page.pdf", intake.Reader{}, "no text layer on page 2 (its page image could not be read: a JBIG2Decode image: jbig2: segment 1 (symbol dictionary, type 0): Huffman coding with refinement and aggregation (SDHUFF and SDREFAGG) is not supported): send the PDF whole to a model that reads PDFs"},
		{"jbig2-page.pdf", intake.Reader{Native: true}, "page 2 (its page image could not be read"},
		{"jbig2-page.pdf", intake.Reader{WholePDF: true}, ""},
		{"jpx-page.pdf", intake.Reader{}, "JPXDecode"},
		{"outlines-page.pdf", intake.Reader{}, "page 2 (drawn with vector outlines only"},
		{"outlines-page.pdf", intake.Reader{WholePDF: true}, ""},
		{"type3-unnamed.pdf", intake.Reader{}, "page 2 (its text is set in a Type 3 font without a Unicode map"},
		{"type3-unicode.pdf", intake.Reader{}, ""},
	} {
		b, err := os.ReadFile("../../document/testdata/unreadable/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var got intake.Doc
		if err := tc.r.ReadBytes(t.Context(), tc.file, tc.file, b, func(d intake.Doc) error { got = d; return nil }); err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.want == "" && (got.Err != nil || got.Original == nil):
			t.Errorf("%s with %+v: err = %v, want it read with its original", tc.file, tc.r, got.Err)
		case tc.want != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.want) || !errors.Is(got.Err, document.ErrNoText)):
			t.Errorf("%s with %+v: err = %v, want %q", tc.file, tc.r, got.Err, tc.want)
		}
	}
}

// TestEmbeddedObjectsInline reads documents with objects embedded in their
// content (a workbook in a Word report and on a slide, made by
// LibreOffice): the workbook's cells are part of the document's own text
// under every --attachments mode, never a document of their own; an
// e-mail's attachment stays one.
func TestEmbeddedObjectsInline(t *testing.T) {
	t.Parallel()
	formats := "../../document/testdata/formats/"
	for _, tc := range []struct {
		file string
		mode intake.Attachments
	}{
		{"libreoffice-embedded-xlsx.docx", intake.AttachSeparate},
		{"libreoffice-embedded-xlsx.docx", intake.AttachSkip},
		{"libreoffice-embedded-xlsx.docx", intake.AttachInline},
		{"libreoffice-embedded-xlsx.pptx", intake.AttachSeparate},
		{"embedded-ods.doc", intake.AttachSeparate},
	} {
		t.Run(tc.file+" "+string(tc.mode), func(t *testing.T) {
			t.Parallel()
			var got []intake.Doc
			r := intake.Reader{Attachments: tc.mode}
			if err := r.Read(t.Context(), []string{formats + tc.file}, func(d intake.Doc) error {
				got = append(got, d)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Err != nil {
				t.Fatalf("%d documents (%v), want the one", len(got), got)
			}
			if text := got[0].Text; !strings.Contains(text, "--- embedded ") || !strings.Contains(text, "Servers") || !strings.Contains(text, "1350") {
				t.Fatalf("text %q, want the embedded workbook's cells after its name", text)
			}
		})
	}
	// A file attached to an e-mail is still a document of its own.
	mail := "../../examples/documents/invoice-mail.eml"
	var ids []string
	if err := (&intake.Reader{}).Read(t.Context(), []string{mail}, func(d intake.Doc) error {
		ids = append(ids, d.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("documents %q, want the e-mail and its attachment", ids)
	}
}

// TestLockedWholeRealPDF: with the real PDF reader, a PDF that needs its
// password is refused with input native (no model opens it), one that
// opens with the empty user password goes, and is not marked as needing
// the password (no pictures are kept for it).
func TestLockedWholeRealPDF(t *testing.T) {
	t.Parallel()
	r := intake.Reader{Password: "secret", Native: true, NativeInput: true, WholePDF: true}
	for _, tc := range []struct {
		file   string
		locked bool
	}{
		{"encrypted-secret.pdf", true},
		{"encrypted-secret-aes256.pdf", true},
		{"encrypted-empty-user.pdf", false},
	} {
		var got []intake.Doc
		if err := r.Read(t.Context(), []string{filepath.Join("..", "..", "document", "testdata", tc.file)}, func(d intake.Doc) error {
			got = append(got, d)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d documents", tc.file, len(got))
		}
		d := got[0]
		if tc.locked {
			if !errors.Is(d.Err, document.ErrEncrypted) || !strings.Contains(fmt.Sprint(d.Err), "use --input auto") {
				t.Errorf("%s: err %v, want it refused naming --input auto", tc.file, d.Err)
			}
		} else if d.Err != nil || d.WithPassword {
			t.Errorf("%s: err %v, needed the password %v; want it read, without needing it", tc.file, d.Err, d.WithPassword)
		}
	}
}

// TestInlinePolicyRecorded: a document read under AttachInline records the
// policy in its metadata (what a re-read goes by), one read under another
// does not, and its text has the line LooksInlined counts, which the text
// read without inlining lacks.
func TestInlinePolicyRecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	raw := []byte("FAKEMAIL\nSee attached.\n--- invoice.fpdf\n%FAKEPDF\nInvoice 42")
	write(t, dir, "mail.eml", raw)
	plain, err := document.ReadBytes(t.Context(), raw, document.Options{Name: "mail.eml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy  intake.Attachments
		inlined bool
	}{
		{intake.AttachInline, true},
		{intake.AttachSeparate, false},
		{intake.AttachSkip, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			r := intake.Reader{Attachments: tc.policy}
			var mail intake.Doc
			if err := r.Read(t.Context(), []string{filepath.Join(dir, "mail.eml")}, func(d intake.Doc) error {
				if !strings.Contains(d.ID, "#") {
					mail = d
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if mail.Err != nil || intake.Inlined(mail.Metadata) != tc.inlined {
				t.Errorf("metadata %s (%v): Inlined = %v, want %v", mail.Metadata, mail.Err, !tc.inlined, tc.inlined)
			}
			if got := intake.LooksInlined(mail.Text, plain.Text); got != tc.inlined {
				t.Errorf("LooksInlined(%q, %q) = %v, want %v", mail.Text, plain.Text, got, tc.inlined)
			}
		})
	}
}

// TestInlineMark: the line LooksInlined counts is the one document.Inline
// writes before an attachment's text.
func TestInlineMark(t *testing.T) {
	t.Parallel()
	carrier := &document.Document{Text: "body", Attachments: []*document.Document{{Name: "a.pdf", Text: "attached"}}}
	in, rest := intake.AttachInline.Arrange(carrier)
	if !intake.LooksInlined(in.Text, carrier.Text) || rest != nil {
		t.Errorf("Inline wrote %q (and left %d attachments): LooksInlined does not see it", in.Text, len(rest))
	}
}
