package document

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// zipOf builds a zip container from name/content pairs, in order.
func zipOf(t testing.TB, parts ...string) []byte {
	return zipWith(t, zip.Deflate, parts...)
}

// zipWith is zipOf with the given compression method (Store makes fuzzing
// faster); ODF's "mimetype" is always stored, as the format requires.
func zipWith(t testing.TB, method uint16, parts ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(parts); i += 2 {
		method := method
		if parts[i] == "mimetype" {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: parts[i], Method: method})
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

const docxTypes = `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`

// docxOf is a minimal DOCX whose body is the given XML.
func docxOf(t testing.TB, body string) []byte {
	return zipOf(t, "[Content_Types].xml", docxTypes, "word/document.xml",
		`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`+body+`</w:body></w:document>`)
}

// cfbWith is a compound file whose directory names the given streams (in
// UTF-16LE, as a real directory sector stores them).
func cfbWith(names ...string) []byte {
	b := append([]byte{}, oleMagic...)
	b = append(b, make([]byte, 512-len(oleMagic))...)
	for _, n := range names {
		entry := make([]byte, 128)
		for i, r := range n {
			entry[2*i] = byte(r)
		}
		b = append(b, entry...)
	}
	return b
}

// TestBadInput: every bad document fails alone, quickly, with the typed
// error a caller branches on and a message naming the file.
func TestBadInput(t *testing.T) {
	t.Parallel()
	bomb := docxOf(t, `<w:p><w:r><w:t>`+strings.Repeat(" ", 8<<20)+`</w:t></w:r></w:p>`)
	laughs := zipOf(t, "[Content_Types].xml", docxTypes, "word/document.xml", `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol4;</w:t></w:r></w:p></w:body></w:document>`)
	good := fixture(t, "report.docx")
	// A .doc cut short: the directory or the streams are gone.
	legacy := fixture(t, "legacy.doc")
	legacy = legacy[:len(legacy)/3]
	odsRepeat := zipOf(t, "mimetype", "application/vnd.oasis.opendocument.spreadsheet", "content.xml",
		`<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet><table:table table:name="S"><table:table-row table:number-rows-repeated="1048576"><table:table-cell table:number-columns-repeated="16384"><text:p>x</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document-content>`)
	tests := []struct {
		name   string
		in     []byte
		limits Limits
		want   error
	}{
		{"bomb.docx", bomb, Limits{}, ErrBomb},                                       // 8 MiB of spaces in ~8 KiB: past MaxRatio
		{"big.docx", bomb, Limits{MaxUnpacked: 1 << 20, MaxRatio: 1 << 20}, ErrBomb}, // past MaxUnpacked
		{"laughs.docx", laughs, Limits{}, ErrCorrupt},
		{"truncated.docx", good[:len(good)/2], Limits{}, ErrCorrupt}, // no central directory
		{"corrupt.docx", append(append([]byte{}, good[:len(good)-200]...), bytes.Repeat([]byte{0xFF}, 200)...), Limits{}, ErrCorrupt},
		{"locked.docx", cfbWith("Root Entry", "EncryptionInfo", "EncryptedPackage"), Limits{}, ErrEncrypted},
		{"legacy.doc", legacy, Limits{}, ErrCorrupt},
		{"outlook.msg", cfbWith("Root Entry", "__substg1.0_0037001F"), Limits{}, ErrCorrupt}, // names without a directory
		{"repeat.ods", odsRepeat, Limits{MaxText: 1 << 20}, ErrTooLarge},
		{"random.bin", []byte("\x00\x01\x02garbage\x00\xff"), Limits{}, ErrUnknownFormat},
		// The cause quotes the bad header line; the message must stay UTF-8.
		{"latin.eml", []byte(" \xff\xff\nFrom: a@b\nSubject: x\n\nbody\n"), Limits{}, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			d, err := ReadBytes(t.Context(), tc.in, Options{Name: tc.name, Limits: tc.limits})
			if !isErr(err, tc.want) {
				t.Fatalf("got %v (doc %v), want %v", err, d != nil, tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.name+": ") {
				t.Errorf("error does not name the file: %v", err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error is not UTF-8: %q", err)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("took %v: not bounded", el)
			}
		})
	}
}

// TestForcedFormatOnOtherContainer: --format docx on a workbook is a clear
// error, not an empty document.
func TestForcedFormatOnOtherContainer(t *testing.T) {
	t.Parallel()
	b := fixture(t, "sheet.xlsx")
	_, err := ReadBytes(t.Context(), b, Options{Format: "docx"})
	if !isErr(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
}

// TestAttachmentDepth: messages attached inside messages stop at MaxDepth
// with the deepest child's error, the outer ones still read.
func TestAttachmentDepth(t *testing.T) {
	t.Parallel()
	msg := "From: a@example.com\r\nSubject: level 0\r\n\r\ninnermost\r\n"
	for i := 1; i <= 3; i++ {
		msg = "From: a@example.com\r\nSubject: level " + string(rune('0'+i)) + "\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b" + string(rune('0'+i)) +
			"\r\n\r\n--b" + string(rune('0'+i)) + "\r\nContent-Type: text/plain\r\n\r\nbody\r\n--b" + string(rune('0'+i)) +
			"\r\nContent-Type: message/rfc822\r\n\r\n" + msg + "\r\n--b" + string(rune('0'+i)) + "--\r\n"
	}
	d, err := ReadBytes(t.Context(), []byte(msg), Options{Name: "deep.eml", Limits: Limits{MaxDepth: 2}})
	if err != nil {
		t.Fatal(err)
	}
	depth := 0
	for c := d; len(c.Attachments) > 0; c = c.Attachments[0] {
		depth++
		if c.Attachments[0].Err != nil {
			if !isErr(c.Attachments[0].Err, ErrTooLarge) || depth != 3 {
				t.Fatalf("depth %d: %v", depth, c.Attachments[0].Err)
			}
			return
		}
	}
	t.Fatalf("nesting not bounded: %d levels read", depth)
}

// TestMaxAttachments: many tiny entries cost a document each in memory,
// so their count is bounded, every depth together, whatever the
// container; at the limit the document is still read.
func TestMaxAttachments(t *testing.T) {
	t.Parallel()
	entries := func(n int) []string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf("f%d.txt", i), fmt.Sprintf("entry %d", i))
		}
		return parts
	}
	inner := zipOf(t, entries(3)...)
	nested := zipOf(t, "a.zip", string(inner), "b.zip", string(inner)) // 2 + 6 attachments
	mbox := strings.Repeat("From a\nFrom: a@b\nSubject: s\n\nbody\n", 4)
	var eml strings.Builder
	eml.WriteString("From: a@b\nSubject: s\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n")
	for i := range 4 {
		fmt.Fprintf(&eml, "--B\nContent-Type: text/plain\nContent-Disposition: attachment; filename=f%d.txt\n\nentry %d\n", i, i)
	}
	eml.WriteString("--B--\n")
	tests := []struct {
		name string
		in   []byte
		max  int // the count: read at max, refused at max-1
	}{
		{"flat.zip", zipOf(t, entries(5)...), 5},
		{"nested.zip", nested, 8},
		{"box.mbox", []byte(mbox), 4},
		{"parts.eml", []byte(eml.String()), 4},
		{"memo.tnef", fixture(t, "memo.tnef"), 2},
		{"ticket.msg", fixture(t, "ticket.msg"), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := ReadBytes(t.Context(), tc.in, Options{Name: tc.name, Limits: Limits{MaxAttachments: tc.max}}); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			// Past it, the container that counts one too many fails: the
			// document itself, or (nested.zip) the inner archive that did.
			d, err := ReadBytes(t.Context(), tc.in, Options{Name: tc.name, Limits: Limits{MaxAttachments: tc.max - 1}})
			for err == nil && len(d.Attachments) > 0 {
				d, err = d.Attachments[len(d.Attachments)-1], d.Attachments[len(d.Attachments)-1].Err
			}
			if !isErr(err, ErrTooLarge) || !strings.Contains(err.Error(), "Limits.MaxAttachments") {
				t.Fatalf("past the limit: got %v, want ErrTooLarge naming Limits.MaxAttachments", err)
			}
		})
	}
}

// fixture returns the bytes of testdata/formats/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestXLSXFormulaWithoutValue: a formula cell whose cached value is empty
// reads as its formula when the value would be a number (openpyxl never
// calculates), and stays empty when it is a string result, as Excel
// writes =IF(…,"",…).
func TestXLSXFormulaWithoutValue(t *testing.T) {
	t.Parallel()
	book := fixture(t, "sheet.xlsx")
	zr, err := zip.NewReader(bytes.NewReader(book), int64(len(book)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, cell, want, not string }{
		{"openpyxl", `<c r="A1"><f>B1*C1</f><v></v></c>`, "=B1*C1", ""},
		{"numeric type", `<c r="A1" t="n"><f>SUM(B1:B3)</f><v/></c>`, "=SUM(B1:B3)", ""},
		{"cached zero", `<c r="A1"><f>B1*0</f><v>0</v></c>`, "A1: 0", "="},
		{"empty string result", `<c r="A1" t="str"><f>IF(B1="","",B1)</f><v></v></c><c r="B1" t="inlineStr"><is><t>x</t></is></c>`, "x", "=IF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var parts []string
			for _, zf := range zr.File {
				if zf.Name == "xl/worksheets/sheet1.xml" {
					parts = append(parts, zf.Name, `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">`+tc.cell+`</row></sheetData></worksheet>`)
					continue
				}
				rc, err := zf.Open()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(rc)
				rc.Close()
				parts = append(parts, zf.Name, string(b))
			}
			d, err := ReadBytes(t.Context(), zipOf(t, parts...), Options{Name: "f.xlsx"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d.Text, tc.want) || tc.not != "" && strings.Contains(d.Text, tc.not) {
				t.Errorf("text %q: want %q, not %q", d.Text, tc.want, tc.not)
			}
		})
	}
}
