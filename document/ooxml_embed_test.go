package document

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// rezip is a copy of a fixture container with parts replaced or added
// (a nil value removes the part), in the fixture's order, new parts last.
func rezip(t testing.TB, fixtureName string, change map[string][]byte) []byte {
	t.Helper()
	b := fixture(t, fixtureName)
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var kv []string
	done := map[string]bool{}
	for _, f := range zr.File {
		v, ok := change[f.Name]
		if !ok {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			v, _ = io.ReadAll(rc)
			rc.Close()
		}
		done[f.Name] = true
		if v != nil {
			kv = append(kv, f.Name, string(v))
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range change {
			if !done[n] && !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if change[n] != nil {
			kv = append(kv, n, string(change[n]))
		}
	}
	return zipOf(t, kv...)
}

// inOrder fails unless each of want occurs in text after the one before.
func inOrder(t *testing.T, text string, want ...string) {
	t.Helper()
	rest := text
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("text lacks %q after the text before it; text:\n%s", w, text)
		}
		rest = rest[i+len(w):]
	}
}

const (
	relNS       = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	chunkTypes  = `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>`
	chunkBodyNS = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="` + relNS + `"><w:body>`
)

// altChunkDOCX is a .docx whose body is the given XML, its altChunk
// relationship "c1" to word/<part>, typed ctype by an Override.
func altChunkDOCX(t testing.TB, body, part, ctype string, data []byte) []byte {
	return zipOf(t,
		"[Content_Types].xml", chunkTypes+`<Override PartName="/word/`+part+`" ContentType="`+ctype+`"/></Types>`,
		"word/document.xml", chunkBodyNS+body+`</w:body></w:document>`,
		"word/_rels/document.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="c1" Type="`+relNS+`/aFChunk" Target="`+part+`"/></Relationships>`,
		"word/"+part, string(data))
}

func para(s string) string { return `<w:p><w:r><w:t>` + s + `</w:t></w:r></w:p>` }

// TestDOCXAltChunk: a part imported with w:altChunk is read in its place
// by its content type's reader. The fixtures' HTML reads as LibreOffice's
// HTML import shows it (heading, paragraph, the table's cells in rows, the
// closing paragraph); LibreOffice 7.4 itself leaves an HTML or MHT chunk
// out, but imports a .docx chunk where the nested case below puts it.
func TestDOCXAltChunk(t *testing.T) {
	t.Parallel()
	html := []string{"Site inspection report", "Inspected by Maren Olsson on the north wing.",
		"Room | Finding\nBoiler room | Valve leaks\nArchive | Humidity 71%", "Repairs are due before the next visit."}
	nested := altChunkDOCX(t, para("Inner before.")+`<w:altChunk r:id="c1"/>`+para("Inner after."), "deep.htm", "text/html",
		[]byte(`<p>Deepest text.</p>`))
	cases := []struct {
		name      string
		b         []byte
		lim       Limits
		want      []string
		not       []string
		warn      string
		childName string // an attachment a nested package brings
	}{
		{name: "html-docx-js shape: only an HTML chunk", b: fixture(t, "altchunk.docx"), want: html},
		{name: "html-docx-js's MHT", b: fixture(t, "altchunk-mht.docx"),
			want: append(append([]string{"Cover note."}, html...), "Signed: the inspector.")},
		{name: "a .docx chunk", b: altChunkDOCX(t, para("Cover note.")+`<w:altChunk r:id="c1"/>`+para("Signed."), "chunk.docx",
			"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml", fixture(t, "lists.docx")),
			// LibreOffice's text export of the same file: the list between the two paragraphs.
			want: []string{"Cover note.", "Packing the field kit", "1. Tools", "Then, from step four:", "4. Rest", "Signed."}},
		{name: "an RTF chunk", b: altChunkDOCX(t, `<w:altChunk r:id="c1"/>`+para("After the chunk."), "chunk.rtf", "application/rtf", fixture(t, "report.rtf")),
			want: []string{"The supplier Globex delivered widgets in March.", "Widget | 10 | 100.00", "After the chunk."}},
		{name: "plain text in a table cell", b: altChunkDOCX(t, `<w:tbl><w:tr><w:tc>`+para("Label")+`</w:tc><w:tc><w:altChunk r:id="c1"/></w:tc></w:tr></w:tbl>`,
			"chunk.txt", "text/plain", []byte("Imported\nnote")),
			want: []string{"Label | Imported note"}},
		{name: "XHTML typed by its extension's Default", b: zipOf(t,
			"[Content_Types].xml", chunkTypes+`<Default Extension="xhtml" ContentType="application/xhtml+xml"/></Types>`,
			"word/document.xml", chunkBodyNS+`<w:altChunk r:id="c1"/></w:body></w:document>`,
			"word/_rels/document.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="c1" Type="`+relNS+`/aFChunk" Target="/word/a.xhtml"/></Relationships>`,
			"word/a.xhtml", `<html xmlns="http://www.w3.org/1999/xhtml"><body><p>Prepared for the board.</p><article><p>The article that holds most of the text of this page.</p></article></body></html>`),
			// The whole body: a main-content pick would keep the article only.
			want: []string{"Prepared for the board.", "The article that holds most"}},
		{name: "chunks nested past MaxDepth are left out", b: altChunkDOCX(t, para("Outer.")+`<w:altChunk r:id="c1"/>`, "chunk.docx",
			"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml", nested), lim: Limits{MaxDepth: 1},
			want: []string{"Outer.", "Inner before.", "Inner after."}, not: []string{"Deepest text."}, warn: "MaxDepth"},
		{name: "chunks nested within MaxDepth", b: altChunkDOCX(t, para("Outer.")+`<w:altChunk r:id="c1"/>`, "chunk.docx",
			"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml", nested),
			want: []string{"Outer.", "Inner before.", "Deepest text.", "Inner after."}},
		{name: "a missing chunk is a warning", b: altChunkDOCX(t, para("Text.")+`<w:altChunk r:id="nope"/>`, "chunk.txt", "text/plain", []byte("x")),
			want: []string{"Text."}, warn: "missing"},
		{name: "a damaged chunk is a warning", b: altChunkDOCX(t, para("Text.")+`<w:altChunk r:id="c1"/>`, "chunk.mht", "message/rfc822", []byte("no header here\x00")),
			want: []string{"Text."}, warn: "could not be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.b, Options{Name: "chunked.docx", Limits: tc.lim})
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != "docx" {
				t.Fatalf("format %q, want docx", d.Format)
			}
			inOrder(t, d.Text, tc.want...)
			for _, n := range tc.not {
				if strings.Contains(d.Text, n) {
					t.Errorf("text has %q:\n%s", n, d.Text)
				}
			}
			warns := strings.Join(d.Warnings, "\n")
			if tc.warn != "" && !strings.Contains(warns, tc.warn) {
				t.Errorf("warnings %q lack %q", d.Warnings, tc.warn)
			}
			if tc.warn == "" && warns != "" {
				t.Errorf("unexpected warnings %q", d.Warnings)
			}
			if len(d.Attachments) != 0 {
				t.Errorf("%d attachments, want the chunk in the text only", len(d.Attachments))
			}
		})
	}
}

// TestDOCXAltChunkLimits: a chunk's bytes count against MaxUnpacked as
// every part's do.
func TestDOCXAltChunkLimits(t *testing.T) {
	t.Parallel()
	var big []byte // 1.7 MiB that deflates only about 5:1, within MaxRatio
	for i := range 1 << 16 {
		big = fmt.Appendf(big, "<p>filler paragraph %x</p>\n", uint32(i)*2654435761)
	}
	b := altChunkDOCX(t, `<w:altChunk r:id="c1"/>`, "big.htm", "text/html", big)
	if _, err := ReadBytes(t.Context(), b, Options{Limits: Limits{MaxUnpacked: 1 << 20}}); !isErr(err, ErrBomb) || !strings.Contains(err.Error(), "MaxUnpacked") {
		t.Fatalf("got %v, want ErrBomb naming Limits.MaxUnpacked", err)
	}
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil || !strings.Contains(d.Text, "filler paragraph") {
		t.Fatalf("within the limits: %v", err)
	}
}

// ole10Native is a Packager object's \x01Ole10Native stream holding a
// file ([MS-OLEDS] 2.3.6 and the Packager's layout within it).
func ole10Native(label, src string, data []byte) []byte {
	var p bytes.Buffer
	le := binary.LittleEndian
	p.Write([]byte{2, 0})
	p.WriteString(label + "\x00")
	p.WriteString(src + "\x00")
	p.Write([]byte{0, 0, 3, 0})
	tmp := `C:\Users\x\AppData\Local\Temp\` + label + "\x00"
	p.Write(le.AppendUint32(nil, uint32(len(tmp))))
	p.WriteString(tmp)
	p.Write(le.AppendUint32(nil, uint32(len(data))))
	p.Write(data)
	p.Write([]byte{0, 0, 0, 0}) // the Unicode copies of the names follow; none here
	return append(le.AppendUint32(nil, uint32(p.Len())), p.Bytes()...)
}

// TestOOXMLEmbeddedObjects: a workbook pasted into a Word report or onto
// a slide, and a file packed as an OLE object, are child documents; the
// preview picture is not.
func TestOOXMLEmbeddedObjects(t *testing.T) {
	t.Parallel()
	budget := []string{"A1: Item | Q1 | Q2", "A2: Servers | 1200 | 1350", "A4: Travel | 310 | 95"}
	// The Word report with its object swapped for an oleObject*.bin.
	withOLE := func(bin []byte) []byte {
		return rezip(t, "embedded-xlsx.docx", map[string][]byte{
			"word/_rels/document.xml.rels": []byte(`<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
				`<Relationship Id="rId5" Type="` + relNS + `/image" Target="media/image1.png"/>` +
				`<Relationship Id="rId6" Type="` + relNS + `/oleObject" Target="embeddings/oleObject1.bin"/></Relationships>`),
			"word/embeddings/Microsoft_Excel_Worksheet.xlsx": nil,
			"word/embeddings/oleObject1.bin":                 bin,
		})
	}
	csv := []byte("code,rate\nEUR,1.08\nGBP,0.86\n")
	type child = wantChild
	cases := []struct {
		name     string
		file     string
		b        []byte
		body     []string
		children []child
	}{
		{name: "a workbook in a Word report", file: "r.docx", b: fixture(t, "embedded-xlsx.docx"),
			body:     []string{"Budget report: the quarters are in the table below.", "Travel fell in the second quarter."},
			children: []child{{name: "Microsoft_Excel_Worksheet.xlsx", format: "xlsx", text: budget}}},
		// LibreOffice Writer 7.4's own export of that report: the object
		// as embeddings/oleObject1.xlsx, its preview an EMF.
		{name: "LibreOffice's export of the report", file: "lo.docx", b: fixture(t, "libreoffice-embedded-xlsx.docx"),
			body:     []string{"Budget report: the quarters are in the table below.", "Travel fell in the second quarter."},
			children: []child{{name: "oleObject1.xlsx", format: "xlsx", text: budget}}},
		{name: "a workbook on a slide", file: "s.pptx", b: fixture(t, "embedded-xlsx.pptx"),
			body:     []string{"Slide 1", "Quarterly budget"},
			children: []child{{name: "Microsoft_Excel_Worksheet.xlsx", format: "xlsx", text: budget}}},
		// LibreOffice Impress 7.4's export of that slide.
		{name: "LibreOffice's export of the slide", file: "lo.pptx", b: fixture(t, "libreoffice-embedded-xlsx.pptx"),
			body:     []string{"Slide 1", "Quarterly budget"},
			children: []child{{name: "oleObject1.xlsx", format: "xlsx", text: budget}}},
		{name: "a Word document in a workbook", file: "w.xlsx", b: rezip(t, "sheet.xlsx", map[string][]byte{
			"xl/worksheets/_rels/sheet1.xml.rels": []byte(`<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
				`<Relationship Id="rId1" Type="` + relNS + `/package" Target="../embeddings/Microsoft_Word_Document.docx"/>` +
				`<Relationship Id="rId2" Type="` + relNS + `/image" Target="../media/image1.emf"/></Relationships>`),
			"xl/embeddings/Microsoft_Word_Document.docx": fixture(t, "report.docx"),
			"xl/media/image1.emf":                        []byte("\x01\x00\x00\x00preview"),
		}), body: []string{"Sheet: "}, children: []child{{name: "Microsoft_Word_Document.docx", format: "docx", text: []string{"Globex delivered widgets"}}}},
		{name: "a Packager object's file", file: "p.docx", b: withOLE(cfbtest.Build([]cfbtest.Stream{
			{Path: "\x01CompObj", Data: []byte("Package")},
			{Path: "\x01Ole10Native", Data: ole10Native("rates.csv", `C:\Users\x\Desktop\rates.csv`, csv)},
		}, cfbtest.Options{})), body: []string{"Budget report"}, children: []child{{name: "rates.csv", format: "csv", text: []string{"EUR", "0.86"}}}},
		{name: "a legacy Excel workbook as an OLE object", file: "x.docx", b: withOLE(fixture(t, "sheet.xls")),
			body: []string{"Budget report"}, children: []child{{name: "oleObject1.xls", format: "ole", text: []string{"A2: INV-1 | Globex", "A2: Globex | Springfield"}}}},
		{name: "an OOXML package in an OLE object", file: "k.docx", b: withOLE(cfbtest.Build([]cfbtest.Stream{
			{Path: "Package", Data: fixture(t, "budget.xlsx")},
		}, cfbtest.Options{})), body: []string{"Budget report"}, children: []child{{name: "oleObject1.xlsx", format: "xlsx", text: budget}}},
		{name: "an equation object is no document", file: "e.docx", b: withOLE(cfbtest.Build([]cfbtest.Stream{
			{Path: "Equation Native", Data: []byte("\x1c\x00\x00\x00\x02\x00")},
		}, cfbtest.Options{})), body: []string{"Budget report"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.b, Options{Name: tc.file, KeepEmbedded: true})
			if err != nil {
				t.Fatal(err)
			}
			inOrder(t, d.Text, tc.body...)
			checkChildren(t, d, tc.children)
		})
	}
}

// TestOOXMLEmbeddedLimits: embedded objects count as attachments and
// nest within MaxDepth.
func TestOOXMLEmbeddedLimits(t *testing.T) {
	t.Parallel()
	b := fixture(t, "embedded-xlsx.docx")
	if _, err := ReadBytes(t.Context(), zipOf(t, "a.zip", string(b), "b.txt", "x"), Options{Limits: Limits{MaxAttachments: 2}}); !isErr(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxAttachments") {
		t.Fatalf("past MaxAttachments: got %v, want ErrTooLarge naming it", err)
	}
	d, err := ReadBytes(t.Context(), zipOf(t, "report.docx", string(b)), Options{Limits: Limits{MaxDepth: 1}, KeepEmbedded: true})
	if err != nil {
		t.Fatal(err)
	}
	r := d.Attachments[0]
	if r.Err != nil || len(r.Attachments) != 1 || !isErr(r.Attachments[0].Err, ErrTooLarge) {
		t.Fatalf("the workbook two levels down with MaxDepth 1: %+v", r)
	}
}

func TestParseOle10Native(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       []byte
		wantName string
		wantData string
		err      bool
	}{
		{"packaged file", ole10Native("a.txt", `C:\a.txt`, []byte("hello")), "a.txt", "hello", false},
		{"label empty: the source path's name", ole10Native("", `C:\dir\b.csv`, []byte("x,y")), "b.csv", "x,y", false},
		{"native data of another kind", append([]byte{3, 0, 0, 0}, "raw"...), "", "raw", false},
		{"data size past the end", func() []byte {
			b := ole10Native("a.txt", "a", []byte("hello"))
			return b[:len(b)-8]
		}(), "", "", false},
		{"too short", []byte{1, 0}, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name, data, err := parseOle10Native(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			if name != tc.wantName || (tc.wantData != "" && string(data) != tc.wantData) {
				t.Fatalf("got %q %q, want %q %q", name, data, tc.wantName, tc.wantData)
			}
		})
	}
}

// TestEmbeddedFlag: objects embedded in a document's content are marked
// Embedded when kept as children (Options.KeepEmbedded) and read into the
// document's text by default; files attached to an e-mail or carried by a
// PDF are neither.
func TestEmbeddedFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path     string
		embedded bool
	}{
		{"testdata/formats/libreoffice-embedded-xlsx.docx", true},
		{"testdata/formats/libreoffice-embedded-xlsx.pptx", true},
		{"testdata/formats/libreoffice-embedded-xlsx.odt", true},
		{"testdata/formats/embedded-ods.doc", true},
		{"testdata/formats/embedded-odt.xls", true},
		{"testdata/facturx.pdf", false},
		{"../examples/documents/invoice-mail.eml", false},
	} {
		b, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := ReadBytes(t.Context(), b, Options{KeepEmbedded: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Attachments) == 0 {
			t.Fatalf("%s: no children", tc.path)
		}
		// By default embedded objects are part of the text, attachments stay.
		plain, err := ReadBytes(t.Context(), b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if inlined := strings.Contains(plain.Text, "--- embedded "); inlined != tc.embedded || (len(plain.Attachments) == 0) == !tc.embedded {
			t.Errorf("%s: read by default, text inlines objects %v with %d attachments; want inlined %v", tc.path, inlined, len(plain.Attachments), tc.embedded)
		}
		for _, c := range doc.Attachments {
			if c.Embedded != tc.embedded {
				t.Errorf("%s: child %s Embedded %v, want %v", tc.path, c.Name, c.Embedded, tc.embedded)
			}
		}
	}
}

// wantChild is a child document a test expects: its name, format, text in
// order, and its own children's names.
type wantChild struct {
	name, format string
	text         []string
	children     []string
}

// checkChildren checks d's children against want, in order: read, named
// and read as expected, keeping their bytes; a preview picture is none.
func checkChildren(t *testing.T, d *Document, want []wantChild) {
	t.Helper()
	names := func(ds []*Document) []string {
		var out []string
		for _, a := range ds {
			out = append(out, a.Name)
		}
		return out
	}
	if len(d.Attachments) != len(want) {
		t.Fatalf("attachments %q, want %d (a preview picture is none)", names(d.Attachments), len(want))
	}
	for i, w := range want {
		c := d.Attachments[i]
		if c.Err != nil {
			t.Fatalf("child %s: %v", c.Name, c.Err)
		}
		if c.Name != w.name || c.Format != w.format {
			t.Errorf("child %d is %s read as %s, want %s as %s", i, c.Name, c.Format, w.name, w.format)
		}
		inOrder(t, c.Text, w.text...)
		if len(c.Original) == 0 {
			t.Errorf("child %s keeps no bytes", c.Name)
		}
		if got := strings.Join(names(c.Attachments), ","); got != strings.Join(w.children, ",") {
			t.Errorf("child %s has children %q, want %q", c.Name, got, w.children)
		}
	}
}
