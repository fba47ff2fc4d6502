package document

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/extractq/extractq/document/internal/cfb"
	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
	"github.com/extractq/extractq/document/internal/tneftest"
)

// fuzzLimits keep each fuzzed input cheap.
var fuzzLimits = Limits{MaxUnpacked: 8 << 20, MaxText: 4 << 20, MaxDepth: 2}

// fuzzRead reads b as format and checks what every reader promises
// whatever the input: no panic, a typed *Error or a document whose text
// is UTF-8 and whose pages are ordered ranges of it.
func fuzzRead(t *testing.T, format string, b []byte) {
	for _, f := range []string{format, ""} {
		d, err := ReadBytes(t.Context(), b, Options{Name: "fuzz", Format: f, Limits: fuzzLimits})
		if err != nil {
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			continue
		}
		if !utf8.ValidString(d.Text) {
			t.Fatalf("%s: text is not UTF-8: %q", d.Format, d.Text)
		}
		prev := 0
		for _, p := range d.Pages {
			if p.Start < prev || p.End < p.Start || p.End > len(d.Text) {
				t.Fatalf("%s: page %d [%d,%d) outside text of %d", d.Format, p.Number, p.Start, p.End, len(d.Text))
			}
			prev = p.End
		}
	}
}

// fuzzSeeds adds the fixtures (and a few hand-made inputs) as seeds.
func fuzzSeeds(f *testing.F, files []string, extra ...string) {
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

func FuzzDOCX(f *testing.F) {
	// altChunks in the body and in a cell, pointing at the fixture's own
	// parts (styles, header), read by content.
	fuzzPart(f, "report.docx", "word/document.xml", "docx",
		`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="`+relNS+`"><w:body><w:p><w:r><w:t>a</w:t></w:r></w:p><w:altChunk r:id="rId1"/><w:tbl><w:tr><w:tc><w:altChunk r:id="rId2"/></w:tc></w:tr></w:tbl></w:body></w:document>`)
}

// FuzzOLEObject fuzzes the \x01Ole10Native stream of an object embedded
// in a .docx (oleObject1.bin), read through the whole document.
func FuzzOLEObject(f *testing.F) {
	f.Add(ole10Native("rates.csv", `C:\rates.csv`, []byte("code,rate\nEUR,1.08\n")))
	f.Add(ole10Native("inner.docx", "", fixture(f, "altchunk.docx")))
	f.Add([]byte{3, 0, 0, 0, 'r', 'a', 'w'})
	f.Fuzz(func(t *testing.T, native []byte) {
		bin := cfbtest.Build([]cfbtest.Stream{{Path: "\x01Ole10Native", Data: native}}, cfbtest.Options{})
		fuzzRead(t, "docx", zipWith(t, zip.Store, "[Content_Types].xml", docxTypes,
			"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>`,
			"word/_rels/document.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="o" Type="`+relNS+`/oleObject" Target="embeddings/oleObject1.bin"/></Relationships>`,
			"word/embeddings/oleObject1.bin", string(bin)))
	})
}

func FuzzXLSX(f *testing.F) {
	// openpyxl's shape: an inline string, formulas with empty cached values.
	fuzzPart(f, "sheet.xlsx", "xl/worksheets/sheet1.xml", "xlsx",
		`<worksheet><sheetData><row r="5"><c r="B5" t="inlineStr"><is><t>Zürich</t></is></c><c r="E5" s="1"><f>C5*D5</f><v></v></c><c r="F5" t="str"><f t="shared" si="0"/><v/></c></row></sheetData></worksheet>`)
}

func FuzzPPTX(f *testing.F) {
	fuzzPart(f, "slides.pptx", "ppt/slides/slide2.xml", "pptx")
}

func FuzzODT(f *testing.F) {
	fuzzPart(f, "report.odt", "content.xml", "odt")
}

// FuzzODFObjects fuzzes the manifest of a Writer report with an embedded
// Calc table: which directories and files are objects, of what type.
func FuzzODFObjects(f *testing.F) {
	fuzzPart(f, "embedded-ods.odt", "META-INF/manifest.xml", "odt",
		`<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="Object 1/" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="Object 1/content.xml" manifest:media-type="application/vnd.sun.star.oleobject"/><manifest:file-entry manifest:full-path="../" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="settings.xml" manifest:media-type="application/vnd.sun.star.oleobject"/></manifest:manifest>`)
}

func FuzzODS(f *testing.F) {
	fuzzPart(f, "sheet.ods", "content.xml", "ods")
}

func FuzzODP(f *testing.F) {
	fuzzPart(f, "slides.odp", "content.xml", "odp")
}

func FuzzEPUB(f *testing.F) {
	fuzzPart(f, "book.epub", "EPUB/content.opf", "epub")
}

// fuzzPart fuzzes one XML part of a container fixture: mutating the
// zip's compressed bytes rarely reaches the XML, so the part is fuzzed
// as text and the container rebuilt around it. The whole fixture and a
// damaged copy are seeds too, fuzzed as the container itself; extra are
// further texts of the part.
func fuzzPart(f *testing.F, fixture, part, format string, extra ...string) {
	b, err := os.ReadFile(filepath.Join("testdata", "formats", fixture))
	if err != nil {
		f.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		f.Fatal(err)
	}
	parts := map[string][]byte{}
	var names []string
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			f.Fatal(err)
		}
		parts[zf.Name], _ = io.ReadAll(rc)
		rc.Close()
		names = append(names, zf.Name)
	}
	if parts[part] == nil {
		f.Fatalf("%s has no part %s", fixture, part)
	}
	f.Add(parts[part])
	for _, s := range extra {
		f.Add([]byte(s))
	}
	f.Add([]byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><x>&b;</x>`))
	f.Fuzz(func(t *testing.T, x []byte) {
		var kv []string
		for _, n := range names {
			v := parts[n]
			if n == part {
				v = x
			}
			kv = append(kv, n, string(v))
		}
		fuzzRead(t, format, zipWith(t, zip.Store, kv...))
	})
}

func FuzzZip(f *testing.F) {
	fuzzSeeds(f, []string{"report.docx", "sheet.xlsx", "book.epub"})
	f.Add(zipOf(f, "a.csv", "a,b\n1,2\n", "b/c.html", "<html><body><p>x</p></body></html>"))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "zip", b) })
}

func FuzzHTML(f *testing.F) {
	fuzzSeeds(f, []string{"page.html"},
		"<!doctype html><table><tr><td><table><tr><td>x</td></tr></table></td></tr></table>",
		"\xff\xfe<\x00h\x00t\x00m\x00l\x00>\x00", "<html><body><ol start=-3><li><ul><li>a</ul></ol><pre>x\n y</pre>")
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRead(t, "html", b)
		// hardSpace is the reader's own mark: a form feed in the text comes
		// from the page (a byte, or a reference such as &#12;) or not at all.
		if bytes.ContainsAny(b, "\f&") {
			return
		}
		if d, err := ReadBytes(t.Context(), b, Options{Format: "html", Limits: fuzzLimits}); err == nil && strings.Contains(d.Text, hardSpace) {
			t.Fatalf("a form feed in the text of a page without one: %q", d.Text)
		}
	})
}

func FuzzEML(f *testing.F) {
	fuzzSeeds(f, []string{"invoice.eml", "memo-tnef.eml"},
		"From: a@b\nSubject: =?iso-8859-1?q?caf=E9?=\nContent-Type: multipart/mixed; boundary=x\n\n--x\nContent-Transfer-Encoding: base64\n\n!!!\n--x")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "eml", b) })
}

func FuzzMBOX(f *testing.F) {
	fuzzSeeds(f, []string{"box.mbox"})
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "mbox", b) })
}

func FuzzRTF(f *testing.F) {
	fuzzSeeds(f, []string{"report.rtf"},
		`{\rtf1\ansi\ansicpg932 \'82\'a0{\footnote x}\u-3913? \cell\row{\*\unknown y}}`, `{\rtf1 caf`+"\xe9"+` \uc0\u233}`)
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "rtf", b) })
}

func FuzzCSV(f *testing.F) {
	fuzzSeeds(f, []string{"table.tsv"}, "a,b\n\"1\n2\",3\n", "x;y\n1;2\n")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "csv", b) })
}

func FuzzOLE(f *testing.F) {
	fuzzSeeds(f, []string{"legacy.doc", "ticket.doc", "lists.doc", "stylelists.doc"})
	f.Add(cfbWith("EncryptedPackage"))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "ole", b) })
}

// oleStreams reads every stream of a compound file fixture, to rebuild
// it around a fuzzed stream.
func oleStreams(f testing.TB, fixture string) []cfbtest.Stream {
	b, err := os.ReadFile(filepath.Join("testdata", "formats", fixture))
	if err != nil {
		f.Fatal(err)
	}
	c, err := cfb.Open(bytes.NewReader(b), int64(len(b)), cfb.Limits{})
	if err != nil {
		f.Fatal(err)
	}
	var out []cfbtest.Stream
	for _, e := range c.Entries() {
		if e.Type == cfb.TypeStream {
			data, err := c.Read(e)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, cfbtest.Stream{Path: e.Path, Data: data})
		}
	}
	return out
}

// fuzzStreams fuzzes named streams of a compound file fixture: mutating
// the container's bytes rarely gets past its sector chains, so the
// streams are fuzzed as themselves and the file rebuilt around them.
func fuzzStreams(f *testing.F, fixture string, names ...string) {
	streams := oleStreams(f, fixture)
	seeds := make([][]byte, len(names))
	for i, n := range names {
		for _, s := range streams {
			if strings.EqualFold(s.Path, n) {
				seeds[i] = s.Data
			}
		}
		if seeds[i] == nil {
			f.Fatalf("%s has no stream %s", fixture, n)
		}
	}
	switch len(names) {
	case 1:
		f.Add(seeds[0])
	case 2:
		f.Add(seeds[0], seeds[1])
	}
	run := func(t *testing.T, xs ...[]byte) {
		var out []cfbtest.Stream
		for _, s := range streams {
			for i, n := range names {
				if strings.EqualFold(s.Path, n) {
					s.Data = xs[i]
				}
			}
			out = append(out, s)
		}
		fuzzRead(t, "ole", cfbtest.Build(out, cfbtest.Options{}))
	}
	switch len(names) {
	case 1:
		f.Fuzz(func(t *testing.T, a []byte) { run(t, a) })
	case 2:
		f.Fuzz(func(t *testing.T, a, b []byte) { run(t, a, b) })
	}
}

// FuzzDOC fuzzes a Word document's text stream (FIB, pieces, paragraph
// properties) and its table stream (the piece table, the list tables)
// together; the two streams of lists.doc and stylelists.doc seed it too,
// for their lists and styles.
func FuzzDOC(f *testing.F) {
	for _, fixture := range []string{"lists.doc", "stylelists.doc", "pagebreaks.doc"} {
		var seed [2][]byte
		for _, s := range oleStreams(f, fixture) {
			switch s.Path {
			case "WordDocument":
				seed[0] = s.Data
			case "1Table":
				seed[1] = s.Data
			}
		}
		f.Add(seed[0], seed[1])
	}
	fuzzStreams(f, "ticket.doc", "WordDocument", "1Table")
}

// FuzzMSG fuzzes an Outlook message's top-level property stream and its
// body; the attachments (a CSV, a .doc, an attached message) stay whole.
func FuzzMSG(f *testing.F) {
	fuzzStreams(f, "ticket.msg", "__properties_version1.0", "__substg1.0_1000001F")
}

// FuzzXLS fuzzes a workbook's BIFF stream (globals with the shared
// strings, then the sheets).
func FuzzXLS(f *testing.F) {
	fuzzStreams(f, "sheet.xls", "Workbook")
}

// FuzzPPT fuzzes a presentation's record stream with the "Current User"
// stream that points into it.
func FuzzPPT(f *testing.F) {
	fuzzStreams(f, "slides.ppt", "PowerPoint Document", "Current User")
}

// FuzzOLEObjects fuzzes the objects embedded in the legacy binaries: the
// workbook in a .doc's ObjectPool (taken out as a file of its own), and a
// .ppt's stream with its compressed ExOleObjStg record.
func FuzzOLEObjects(f *testing.F) {
	doc := oleStreams(f, "embedded-ods.doc")
	ppt := oleStreams(f, "embedded-ods.ppt")
	stream := func(ss []cfbtest.Stream, name string) []byte {
		for _, s := range ss {
			if s.Path == name {
				return s.Data
			}
		}
		f.Fatalf("no stream %s", name)
		return nil
	}
	const workbook, pptDoc = "ObjectPool/_2147483647/Workbook", "PowerPoint Document"
	f.Add(stream(doc, workbook), stream(ppt, pptDoc))
	f.Fuzz(func(t *testing.T, wb, pd []byte) {
		for _, c := range []struct {
			ss   []cfbtest.Stream
			name string
			x    []byte
		}{{doc, workbook, wb}, {ppt, pptDoc, pd}} {
			out := make([]cfbtest.Stream, len(c.ss))
			for i, s := range c.ss {
				if s.Path == c.name {
					s.Data = c.x
				}
				out[i] = s
			}
			fuzzRead(t, "ole", cfbtest.Build(out, cfbtest.Options{}))
		}
	})
}

// FuzzTNEF fuzzes a winmail.dat: the memo fixture, and small streams
// with an attached message, an RTF-only body and a wrong checksum.
func FuzzTNEF(f *testing.F) {
	fuzzSeeds(f, []string{"memo.tnef"})
	inner := tnefWith(fileAttrs("deep.txt", []byte("deep text"))...)
	f.Add(tnefWith(
		tneftest.Attr{Level: tneftest.LevelAttachment, ID: tneftest.AttAttachRendData, Data: tneftest.RendData(0)},
		tneftest.Attr{Level: tneftest.LevelAttachment, ID: tneftest.AttAttachment, Data: tneftest.Props(
			tneftest.Prop{Tag: prAttachData<<16 | ptObject, Values: [][]byte{tneftest.Object(tneftest.IIDMessage, inner)}})}))
	f.Add(tnefWith(tneftest.Attr{Level: tneftest.LevelMessage, ID: tneftest.AttMsgProps, Data: tneftest.Props(
		tneftest.Prop{Tag: prRTFCompressed<<16 | ptBinary, Values: [][]byte{tneftest.CompressRTF([]byte(`{\rtf1 caf\'e9}`))}})},
		tneftest.Attr{Level: tneftest.LevelMessage, ID: tneftest.AttBody, Data: []byte("x"), BadChecksum: true}))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "tnef", b) })
}

// FuzzP7M fuzzes signed files (DER, streamed BER, PEM, encrypted, a
// detached signature) and the e-mails that carry them.
func FuzzP7M(f *testing.F) {
	for _, name := range []string{"invoice-der.xml.p7m", "invoice-ber.xml.p7m", "invoice-pem.xml.p7m", "encrypted.xml.p7m", "invoice.xml.p7s", "opaque.eml", "signed.eml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "smime", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "p7m", b) })
}

// FuzzMSGSMIME fuzzes the smime.p7m of a signed Outlook message
// (IPM.Note.SMIME*): seeded with a multipart/signed entity and the CMS
// blobs of an opaquely signed and an encrypted message.
func FuzzMSGSMIME(f *testing.F) {
	for _, seed := range [][]byte{smimeEntity(f, "signed.eml"), smimeBlob(f, "opaque.eml"), smimeBlob(f, "encrypted.eml")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, class := range []string{"IPM.Note.SMIME.MultipartSigned", "IPM.Note.SMIME"} {
			fuzzRead(t, "ole", writeMSG(testMsg{class: class, subject: "fuzz",
				attachments: []testAttachment{{name: "smime.p7m", mime: "multipart/signed", data: data}}}))
		}
	})
}
