package document_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

func readPDF(t *testing.T, b []byte, opts document.Options) *document.Document {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "test.pdf"
	}
	doc, err := document.ReadBytes(t.Context(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Format != "pdf" {
		t.Fatalf("read as %q, want pdf", doc.Format)
	}
	return doc
}

func pageText(d *document.Document, i int) string {
	p := d.Pages[i]
	return d.Text[p.Start:p.End]
}

func TestPDFLayout(t *testing.T) {
	t.Parallel()
	left := lines(50, 700, "The left column starts here and", "runs on for a few lines of text", "until it ends with this line.")
	// The right column is drawn first: reading order must not be drawing order.
	right := lines(330, 700, "The right column comes second", "in reading order although it is", "drawn first in the content.")
	table := []show{}
	for i, row := range [][]string{{"Item", "Qty", "Price"}, {"Widget", "12", "4.50"}, {"Fitting", "200", "0.35"}, {"Delivery", "1", "15.00"}} {
		for j, cell := range row {
			table = append(table, show{x: 50 + 150*float64(j), y: 500 - 14*float64(i), size: 10, s: cell})
		}
	}
	var toc []show
	for i, entry := range []string{"1 Introduction", "2 Related work", "3 Method", "4 Results"} {
		y := 600 - 14*float64(i)
		toc = append(toc, show{x: 50, y: y, size: 10, s: entry})
		for x := 200.0; x <= 300; x += 10 {
			toc = append(toc, show{x: x, y: y, size: 10, s: "."})
		}
		toc = append(toc, show{x: 320, y: y, size: 10, s: string(rune('3' + 2*i))})
	}
	tests := []struct {
		name  string
		pages []genPage
		want  []string // page texts
	}{
		{
			name:  "dot leaders are not table columns",
			pages: []genPage{{shows: toc}},
			want:  []string{"1 Introduction . . . . . . . . . . . 3\n2 Related work . . . . . . . . . . . 5\n3 Method . . . . . . . . . . . 7\n4 Results . . . . . . . . . . . 9"},
		},
		{
			name: "a numbered list is not a table",
			pages: []genPage{{shows: []show{
				{x: 50, y: 700, size: 10, s: "1."}, {x: 64, y: 700, size: 10, s: "Send the invoice"},
				{x: 50, y: 686, size: 10, s: "2."}, {x: 64, y: 686, size: 10, s: "Wait for payment"},
				{x: 50, y: 672, size: 10, s: "3."}, {x: 64, y: 672, size: 10, s: "Archive it"},
				{x: 50, y: 658, size: 10, s: "4."}, {x: 64, y: 658, size: 10, s: "Report"},
			}}},
			want: []string{"1. Send the invoice\n2. Wait for payment\n3. Archive it\n4. Report"},
		},
		{
			name: "TeX's OT1 ligatures without a Unicode map",
			// \x0c is fi, \x0e ffi, \x19 ß, \x7b an en dash in CMR10.
			pages: []genPage{{shows: []show{{x: 50, y: 700, size: 10, font: "F2", s: "e\x0ecient \x0cnal Stra\x19e 1\x7b2"}}}},
			want:  []string{"efficient final Straße 1–2"},
		},
		{
			name:  "two columns in reading order",
			pages: []genPage{{shows: append(append(lines(50, 750, "A title across the page"), right...), left...)}},
			want: []string{"A title across the page\n\nThe left column starts here and\nruns on for a few lines of text\nuntil it ends with this line.\n\n" +
				"The right column comes second\nin reading order although it is\ndrawn first in the content."},
		},
		{
			name:  "table rows with cell separators",
			pages: []genPage{{shows: table}},
			want:  []string{"Item | Qty | Price\nWidget | 12 | 4.50\nFitting | 200 | 0.35\nDelivery | 1 | 15.00"},
		},
		{
			name:  "hyphenation at a line end joined",
			pages: []genPage{{shows: lines(50, 700, "Self-correcting structured extrac-", "tion keeps the hyphen of Self-", "Correcting and joins the rest.")}},
			want:  []string{"Self-correcting structured extraction keeps the hyphen of Self-\nCorrecting and joins the rest."},
		},
		{
			name: "rotated page",
			pages: []genPage{{rotate: 90, shows: []show{
				{x: 100, y: 50, size: 10, s: "First line of a landscape page", rot: 1},
				{x: 114, y: 50, size: 10, s: "and its second line.", rot: 1},
			}}},
			want: []string{"First line of a landscape page\nand its second line."},
		},
		{
			name:  "pages kept apart",
			pages: []genPage{{shows: lines(50, 700, "Page one.")}, {shows: lines(50, 700, "Page two.")}},
			want:  []string{"Page one.", "Page two."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := readPDF(t, makePDF(tt.pages), document.Options{})
			if len(doc.Pages) != len(tt.want) {
				t.Fatalf("%d pages, want %d", len(doc.Pages), len(tt.want))
			}
			for i, want := range tt.want {
				if got := pageText(doc, i); got != want {
					t.Errorf("page %d:\n got %q\nwant %q", i+1, got, want)
				}
				p := doc.Pages[i]
				if p.Number != i+1 || p.Width != 612 || p.Height != 792 || len(p.Blocks) == 0 {
					t.Errorf("page %d: %+v", i+1, p)
				}
				for _, bl := range p.Blocks {
					if bl.Start < p.Start || bl.End > p.End || bl.Box.X1 <= bl.Box.X0 || bl.Box.Y1 <= bl.Box.Y0 {
						t.Errorf("page %d: block %+v outside the page [%d,%d) or boxless", i+1, bl, p.Start, p.End)
					}
				}
			}
			if doc.Meta.Title != "Generated by the tests" || doc.Meta.Other["Producer"] != "extractq document tests" {
				t.Errorf("meta = %+v", doc.Meta)
			}
		})
	}
}

func TestPDFPageLabels(t *testing.T) {
	t.Parallel()
	pages := make([]genPage, 7)
	for i := range pages {
		pages[i] = genPage{shows: lines(50, 700, "Text")}
	}
	// Front matter i–iii, then 1–2, then appendix pages.
	b := makePDFWith(pages, "/PageLabels << /Nums [0 << /S /r >> 3 << /S /D >> 5 << /S /D /P (A-) >>] >> ")
	doc := readPDF(t, b, document.Options{})
	var got []string
	for _, p := range doc.Pages {
		got = append(got, p.Label)
	}
	if want := "i ii iii 1 2 A-1 A-2"; strings.Join(got, " ") != want {
		t.Errorf("labels = %q, want %q", strings.Join(got, " "), want)
	}
	if plain := readPDF(t, makePDF(pages[:1]), document.Options{}); plain.Pages[0].Label != "" {
		t.Errorf("a file without labels got %q", plain.Pages[0].Label)
	}
}

func runningPages(n int) []genPage {
	var pages []genPage
	for i := range n {
		body := lines(50, 650, "Body text of this page, different", strings.Repeat("on every page ", i+1))
		shows := append(lines(50, 760, "ACME Annual Report 2024"), body...)
		shows = append(shows, show{x: 290, y: 30, size: 9, s: "Page " + string(rune('1'+i))})
		pages = append(pages, genPage{shows: shows})
	}
	return pages
}

func TestPDFRunningHeadersAndFooters(t *testing.T) {
	t.Parallel()
	b := makePDF(runningPages(3))
	doc := readPDF(t, b, document.Options{})
	for i, p := range doc.Pages {
		if got := doc.Text[p.Header.Start:p.Header.End]; got != "ACME Annual Report 2024" {
			t.Errorf("page %d header = %q", i+1, got)
		}
		if got, want := doc.Text[p.Footer.Start:p.Footer.End], "Page "+string(rune('1'+i)); got != want {
			t.Errorf("page %d footer = %q, want %q", i+1, got, want)
		}
	}
	dropped := readPDF(t, b, document.Options{DropRunning: true})
	if strings.Contains(dropped.Text, "ACME") || strings.Contains(dropped.Text, "Page 2") {
		t.Errorf("DropRunning kept a running header or footer:\n%s", dropped.Text)
	}
	for i, p := range dropped.Pages {
		got := dropped.Text[p.Start:p.End]
		if !strings.HasPrefix(got, "Body text of this page") || !p.Header.Empty() || !p.Footer.Empty() {
			t.Errorf("page %d = %q (header %v footer %v)", i+1, got, p.Header, p.Footer)
		}
		for _, bl := range p.Blocks {
			if bl.Start < p.Start || bl.End > p.End {
				t.Errorf("page %d: block %+v outside the page", i+1, bl)
			}
		}
	}
	// One page alone has nothing running.
	single := readPDF(t, makePDF(runningPages(1)), document.Options{})
	if !single.Pages[0].Header.Empty() {
		t.Errorf("a single page's first line was taken for a running header")
	}
}

func grayJPEG(t testing.TB, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	img.SetGray(1, 1, color.Gray{0})
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type fakeOCR struct{ text string }

func (f fakeOCR) Recognize(_ context.Context, img *document.Image) (string, error) {
	if img == nil || len(img.Data) == 0 {
		return "", errors.New("no image")
	}
	return f.text, nil
}

func TestPDFScannedPage(t *testing.T) {
	t.Parallel()
	pages := []genPage{{shows: lines(50, 700, "A page with text.")}, {jpeg: grayJPEG(t, 120, 160), jw: 120, jh: 160}}
	b := makePDF(pages)
	doc := readPDF(t, b, document.Options{})
	if got := doc.Scanned(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("Scanned() = %v, want [2]", got)
	}
	img := doc.Pages[1].Image
	if img.MediaType != "image/jpeg" || img.Width != 120 || img.Height != 160 {
		t.Errorf("page image = %s %dx%d", img.MediaType, img.Width, img.Height)
	}
	if len(doc.Warnings) == 0 || !strings.Contains(doc.Warnings[0], "page 2 has no text layer") {
		t.Errorf("warnings = %q", doc.Warnings)
	}
	ocr := readPDF(t, b, document.Options{OCR: fakeOCR{"Scanned invoice 42"}})
	if got := pageText(ocr, 1); got != "Scanned invoice 42" {
		t.Errorf("OCR page text = %q", got)
	}
	gray := image.NewGray(image.Rect(0, 0, 90, 120))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i % 251)
	}
	flate := readPDF(t, makePDF([]genPage{{flate: gray}}), document.Options{})
	if im := flate.Pages[0].Image; im == nil || im.MediaType != "image/png" || im.Width != 90 || im.Height != 120 {
		t.Fatalf("PNG-predicted page image = %+v, warnings %q", im, flate.Warnings)
	} else if dec, err := png.Decode(bytes.NewReader(im.Data)); err != nil || dec.(*image.Gray).Pix[5*90+7] != gray.Pix[5*90+7] {
		t.Errorf("PNG-predicted page image does not decode to its samples: %v", err)
	}
	small := readPDF(t, b, document.Options{Limits: document.Limits{MaxImagePixels: 100 * 100}})
	if im := small.Pages[1].Image; im.Width*im.Height > 100*100 || im.Width == 0 {
		t.Errorf("downscaled page image is %dx%d, over 10,000 pixels", im.Width, im.Height)
	}
}

func TestPDFBadInput(t *testing.T) {
	t.Parallel()
	good := makePDF([]genPage{{shows: lines(50, 700, "Recovered text survives.")}, {shows: lines(50, 700, "Second page.")}})
	xref := bytes.LastIndex(good, []byte("xref"))
	brokenXref := bytes.Clone(good)
	copy(brokenXref[xref+5:], "9 9\nbroken")
	wrongStart := bytes.Replace(bytes.Clone(good), []byte("startxref\n"), []byte("startxref\n1"), 1)
	noTrailer := bytes.Clone(good[:xref])
	encEmpty, _ := os.ReadFile("testdata/encrypted-empty-user.pdf")
	encRC4, _ := os.ReadFile("testdata/encrypted-empty-rc4.pdf")
	encSecret, _ := os.ReadFile("testdata/encrypted-secret.pdf")
	enc256, _ := os.ReadFile("testdata/encrypted-empty-aes256.pdf")
	enc256Secret, _ := os.ReadFile("testdata/encrypted-secret-aes256.pdf")
	if encEmpty == nil || encRC4 == nil || encSecret == nil || enc256 == nil || enc256Secret == nil {
		t.Fatal("testdata/encrypted-*.pdf missing")
	}
	tests := []struct {
		name     string
		in       []byte
		password string
		want     string // text contained, or "" for an error
		wantErr  error
		errHas   string
	}{
		{name: "broken xref recovered", in: brokenXref, want: "Recovered text survives."},
		{name: "wrong startxref recovered", in: wrongStart, want: "Second page."},
		{name: "truncated before the xref recovered", in: noTrailer, want: "Recovered text survives."},
		{name: "cut in half", in: good[:len(good)/2], wantErr: document.ErrCorrupt},
		{name: "header only", in: []byte("%PDF-1.7\n%%EOF\n"), wantErr: document.ErrCorrupt},
		{name: "empty user password opens (AES-128)", in: encEmpty, want: "This AES file opens with the empty password."},
		{name: "empty user password opens (RC4)", in: encRC4, want: "This RC4 file opens with the empty password."},
		{name: "empty user password opens (AES-256)", in: enc256, want: "This AES-256 file opens with the empty password."},
		{name: "user password refused (AES-256)", in: enc256Secret, wantErr: document.ErrEncrypted, errHas: "empty user password"},
		{name: "right password opens (AES-256)", in: enc256Secret, password: "secret", want: "AES-256 file opens"},
		{name: "user password refused", in: encSecret, wantErr: document.ErrEncrypted, errHas: "secret.pdf"},
		{name: "wrong password refused", in: encSecret, password: "nope", wantErr: document.ErrEncrypted, errHas: "password given"},
		{name: "right password opens", in: encSecret, password: "secret", want: "needs the password"},
		{name: "pdf 2.0 header", in: append([]byte("%PDF-2.0\n"), good[9:]...), want: "Second page."},
		{name: "junk before the header", in: append([]byte("X-Gateway: scanned\r\n"), good...), want: "Second page."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), tt.in, document.Options{Name: "secret.pdf", Format: "pdf", Password: tt.password})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), "secret.pdf") {
					t.Fatalf("err = %v, want %v naming the file and %q", err, tt.wantErr, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(doc.Text, tt.want) {
				t.Errorf("text = %q, want it to contain %q", doc.Text, tt.want)
			}
		})
	}
}

func TestPDFBrokenPageKeepsTheOthers(t *testing.T) {
	t.Parallel()
	b := makePDF([]genPage{{shows: lines(50, 700, "The good page.")}, {shows: lines(50, 700, "The broken page.")}})
	// The second page's object (the last page object written) no longer
	// is what the cross-reference table says it is.
	i := bytes.LastIndex(b, []byte("0 obj\n<< /Type /Page "))
	b[i] = '7'
	doc := readPDF(t, b, document.Options{})
	if len(doc.Pages) != 1 || pageText(doc, 0) != "The good page." {
		t.Fatalf("pages %d, text %q", len(doc.Pages), doc.Text)
	}
	if len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "page tree is unreadable") {
		t.Errorf("warnings = %q", doc.Warnings)
	}
}

func TestPDFDetection(t *testing.T) {
	t.Parallel()
	good := makePDF([]genPage{{shows: lines(50, 700, "Text")}})
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"a pdf", good, "pdf"},
		{"junk first", append([]byte("garbage line\n"), good...), "pdf"},
		{"a text quoting a header", []byte("A PDF starts with %PDF-1.7 and ends with a trailer.\n"), "text"},
	}
	for _, tt := range tests {
		if got := document.Detect(bytes.NewReader(tt.in), int64(len(tt.in)), ""); got != tt.want {
			t.Errorf("%s: detected %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPDFPageLimitAndManyPages(t *testing.T) {
	t.Parallel()
	pages := make([]genPage, 10_000)
	for i := range pages {
		pages[i] = genPage{shows: lines(50, 700, "Page text")}
	}
	pages[9_999] = genPage{shows: lines(50, 700, "The last page")}
	b := makePDF(pages)
	doc := readPDF(t, b, document.Options{})
	if len(doc.Pages) != 10_000 || pageText(doc, 9_999) != "The last page" {
		t.Fatalf("%d pages, the last %q", len(doc.Pages), pageText(doc, len(doc.Pages)-1))
	}
	_, err := document.ReadBytes(t.Context(), b, document.Options{Limits: document.Limits{MaxPages: 500}})
	if !errors.Is(err, document.ErrTooLarge) || !strings.Contains(err.Error(), "500 pages") {
		t.Fatalf("err = %v, want ErrTooLarge naming the 500-page limit", err)
	}
}

// TestPDFAttachments reads the files a PDF carries as its attachments: a
// Factur-X invoice's XML in the EmbeddedFiles tree (testdata/facturx.pdf:
// examples/documents/invoice-07.pdf with factur-x.xml attached by
// poppler's pdfattach), and files attached to pages by annotations, one
// of them damaged: that one is a child with its error, the rest are read,
// and the pages' text is what it is without attachments.
func TestPDFAttachments(t *testing.T) {
	t.Parallel()
	plain, err := os.ReadFile("../examples/documents/invoice-07.pdf")
	if err != nil {
		t.Fatal(err)
	}
	facturx, err := os.ReadFile("testdata/facturx.pdf")
	if err != nil {
		t.Fatal(err)
	}
	plainDoc, err := document.ReadBytes(t.Context(), plain, document.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := genPage{shows: lines(72, 700, "Delivery note 7"), attach: []genFile{
		{name: "notes.txt", content: "Deliver to the back door."},
		{name: "C:\\Users\\ann\\order.csv", content: "item,qty\ndesk,2\nchair,4\n"},
		{name: "broken.txt", content: "not flate data", filter: "FlateDecode"},
	}}
	type child struct{ name, format, text, err string }
	tests := []struct {
		name     string
		in       []byte
		text     string // the document's own text; "" to skip
		children []child
	}{
		{"Factur-X", facturx, plainDoc.Text, []child{{name: "factur-x.xml", format: "text", text: "<ram:ID>INV-2026-0042</ram:ID>"}}},
		{"page annotations", makePDF([]genPage{page, {shows: lines(72, 700, "Page two")}}), "Delivery note 7\n\nPage two", []child{
			{name: "notes.txt", format: "text", text: "Deliver to the back door."},
			{name: "order.csv", format: "csv", text: "desk | 2"},
			{name: "broken.txt", err: "does not decode"},
		}},
		{"none", plain, plainDoc.Text, nil},
	}
	t.Run("Limits.MaxAttachments", func(t *testing.T) {
		t.Parallel()
		_, err := document.ReadBytes(t.Context(), makePDF([]genPage{page}), document.Options{Limits: document.Limits{MaxAttachments: 2}})
		if !errors.Is(err, document.ErrTooLarge) || !strings.Contains(err.Error(), "Limits.MaxAttachments") {
			t.Fatalf("err = %v, want ErrTooLarge naming Limits.MaxAttachments", err)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), tc.in, document.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.text != "" && doc.Text != tc.text {
				t.Errorf("text %q, want %q (as without attachments)", doc.Text, tc.text)
			}
			if len(doc.Attachments) != len(tc.children) {
				t.Fatalf("%d attachments, want %d", len(doc.Attachments), len(tc.children))
			}
			for i, want := range tc.children {
				got := doc.Attachments[i]
				if got.Name != want.name {
					t.Errorf("attachment %d named %q, want %q", i, got.Name, want.name)
				}
				if want.err != "" {
					if got.Err == nil || !strings.Contains(got.Err.Error(), want.err) {
						t.Errorf("%s: err %v, want %q", want.name, got.Err, want.err)
					}
					continue
				}
				if got.Err != nil || got.Format != want.format || !strings.Contains(got.Text, want.text) {
					t.Errorf("%s: format %q, text %q, err %v; want %s with %q", want.name, got.Format, got.Text, got.Err, want.format, want.text)
				}
			}
		})
	}
}

// TestPDFContentStreamFilters: a page whose content stream is stored with
// a filter older writers used for text (ASCIIHex, LZW, RunLength) reads
// as one stored plainly; those filters panicked in the stream reader and
// the page came out empty.
func TestPDFContentStreamFilters(t *testing.T) {
	t.Parallel()
	for _, filter := range []string{"", "ASCIIHexDecode", "LZWDecode", "RunLengthDecode"} {
		t.Run(cmp.Or(filter, "none"), func(t *testing.T) {
			t.Parallel()
			b := makePDF([]genPage{{contentFilter: filter, shows: lines(50, 700, "Invoice INV-42", "Total 99.50 EUR")}})
			doc, err := document.ReadBytes(t.Context(), b, document.Options{Format: "pdf"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(doc.Text, "Invoice INV-42") || !strings.Contains(doc.Text, "Total 99.50 EUR") {
				t.Fatalf("text %q, want both lines", doc.Text)
			}
		})
	}
}
