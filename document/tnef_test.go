package document

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tt "github.com/extractq/extractq/document/internal/tneftest"
)

// tinyPDF is a one-page PDF showing text in Helvetica: an attachment
// the PDF reader reads, small enough for a fixture.
func tinyPDF(text string) []byte {
	content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	var offs []int
	for i, o := range objs {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// Texts of the memo fixture.
const (
	memoBody    = "Hello Ada,\r\n\r\nthe pump in Z\xfcrich was serviced on Friday; the minutes and the invoice are attached.\r\n\r\nRegards,\r\nGrace"
	memoRTF     = `{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Calibri;}}\pard Hello Ada,\par\par the pump in Z\'fcrich was serviced on \b Friday\b0; the minutes and the invoice are attached.\par\par Regards,\par Grace\par}`
	memoMinutes = "Minutes of the pump meeting\n\n1. The impeller was replaced.\n2. Next service: September.\n"
	memoInvoice = "Invoice 4711: 980 EUR"
)

// psetid is PS_PUBLIC_STRINGS, the GUID of a named property the memo
// carries (as Outlook's do) for the reader to parse past.
var psetid = [16]byte{0x29, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}

// memoTNEF is testdata/formats/memo.tnef: what Outlook puts in a
// winmail.dat. Legacy attributes (a Windows-1252 subject and body, the
// sender, the date), the message's MAPI properties (the compressed RTF
// body, the Internet message id, a named and a multi-valued property),
// two recipients, and two attachments: a text file and a PDF, each with
// a long file name in its MAPI properties beside the 8.3 title.
func memoTNEF() []byte {
	msg, att := byte(tt.LevelMessage), byte(tt.LevelAttachment)
	date := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	return tt.Build(0x0D2F,
		tt.Attr{Level: msg, ID: tt.AttTnefVersion, Data: tt.Version()},
		tt.Attr{Level: msg, ID: tt.AttOemCodepage, Data: tt.Codepage(1252)},
		tt.Attr{Level: msg, ID: tt.AttMessageClass, Data: tt.String8("IPM.Microsoft Mail.Note")},
		tt.Attr{Level: msg, ID: tt.AttFrom, Data: tt.Triple("Grace Hopper", "SMTP:grace@example.com")},
		tt.Attr{Level: msg, ID: tt.AttSubject, Data: tt.String8("Pump service in Z\xfcrich")},
		tt.Attr{Level: msg, ID: tt.AttDateSent, Data: tt.Date(date)},
		tt.Attr{Level: msg, ID: tt.AttBody, Data: tt.String8(memoBody)},
		tt.Attr{Level: msg, ID: tt.AttMsgProps, Data: tt.Props(
			tt.Prop{Tag: prRTFCompressed<<16 | ptBinary, Values: [][]byte{tt.CompressRTF([]byte(memoRTF))}},
			tt.Prop{Tag: prMessageID<<16 | ptUnicode, Values: [][]byte{tt.Unicode("<memo.4711@example.com>")}},
			tt.Prop{Tag: 0x8001<<16 | ptUnicode, Name: &tt.Name{GUID: psetid, Str: "Keywords"}, Values: [][]byte{tt.Unicode("pumps")}},
			tt.Prop{Tag: 0x8002<<16 | 0x0003, Name: &tt.Name{GUID: psetid, ID: 0x8501}, Values: [][]byte{tt.Long(15)}},
			tt.Prop{Tag: 0x6700<<16 | ptMulti | ptUnicode, Values: [][]byte{tt.Unicode("service"), tt.Unicode("Zürich")}},
			tt.Prop{Tag: prClientSubmitTime<<16 | ptSystime, Values: [][]byte{tt.Time(date)}},
		)},
		tt.Attr{Level: msg, ID: tt.AttRecipTable, Data: recipTable(
			tt.Props(
				tt.Prop{Tag: prDisplayName<<16 | ptUnicode, Values: [][]byte{tt.Unicode("Ada Lovelace")}},
				tt.Prop{Tag: prSMTPAddress<<16 | ptUnicode, Values: [][]byte{tt.Unicode("ada@example.com")}},
				tt.Prop{Tag: prRecipientType<<16 | 0x0003, Values: [][]byte{tt.Long(1)}}),
			tt.Props(
				tt.Prop{Tag: prDisplayName<<16 | ptString8, Values: [][]byte{tt.String8("Accounts")}},
				tt.Prop{Tag: prEmailAddress<<16 | ptString8, Values: [][]byte{tt.String8("accounts@example.com")}},
				tt.Prop{Tag: prRecipientType<<16 | 0x0003, Values: [][]byte{tt.Long(2)}}),
		)},
		tt.Attr{Level: att, ID: tt.AttAttachRendData, Data: tt.RendData(0)},
		tt.Attr{Level: att, ID: tt.AttAttachTitle, Data: tt.String8("MINUTE~1.TXT")},
		tt.Attr{Level: att, ID: tt.AttAttachData, Data: []byte(memoMinutes)},
		tt.Attr{Level: att, ID: tt.AttAttachment, Data: tt.Props(
			tt.Prop{Tag: prAttachMethod<<16 | 0x0003, Values: [][]byte{tt.Long(1)}},
			tt.Prop{Tag: prAttachLongName<<16 | ptUnicode, Values: [][]byte{tt.Unicode("Minutes of the pump meeting.txt")}},
			tt.Prop{Tag: prAttachFilename<<16 | ptString8, Values: [][]byte{tt.String8("MINUTE~1.TXT")}},
			tt.Prop{Tag: prAttachMime<<16 | ptString8, Values: [][]byte{tt.String8("text/plain")}},
		)},
		tt.Attr{Level: att, ID: tt.AttAttachRendData, Data: tt.RendData(1)},
		tt.Attr{Level: att, ID: tt.AttAttachTitle, Data: tt.String8("INVOIC~1.PDF")},
		tt.Attr{Level: att, ID: tt.AttAttachData, Data: tinyPDF(memoInvoice)},
		tt.Attr{Level: att, ID: tt.AttAttachment, Data: tt.Props(
			tt.Prop{Tag: prAttachMethod<<16 | 0x0003, Values: [][]byte{tt.Long(1)}},
			tt.Prop{Tag: prAttachLongName<<16 | ptUnicode, Values: [][]byte{tt.Unicode("Invoice 4711 (pump).pdf")}},
			tt.Prop{Tag: prAttachMime<<16 | ptString8, Values: [][]byte{tt.String8("application/pdf")}},
		)},
	)
}

// recipTable is attRecipTable's data: a row count, then the rows.
func recipTable(rows ...[]byte) []byte {
	b := tt.Long(uint32(len(rows)))
	for _, r := range rows {
		b = append(b, r...)
	}
	return b
}

// memoEML is testdata/formats/memo-tnef.eml: the memo as Outlook sends
// it through Exchange, a MIME body with nothing in it and winmail.dat.
func memoEML(tnef []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(tnef)
	var wrapped strings.Builder
	for len(enc) > 76 {
		wrapped.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	wrapped.WriteString(enc + "\r\n")
	return []byte("From: Grace Hopper <grace@example.com>\r\n" +
		"To: Ada Lovelace <ada@example.com>\r\n" +
		"Subject: =?iso-8859-1?q?Pump_service_in_Z=FCrich?=\r\n" +
		"Date: Sat, 14 Mar 2026 09:30:00 +0000\r\n" +
		"Message-ID: <memo.4711@example.com>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=\"us-ascii\"\r\n\r\n\r\n" +
		"--b1\r\nContent-Type: application/ms-tnef; name=\"winmail.dat\"\r\n" +
		"Content-Transfer-Encoding: base64\r\n" +
		"Content-Disposition: attachment; filename=\"winmail.dat\"\r\n\r\n" +
		wrapped.String() + "--b1--\r\n")
}

const memoText = "From: Grace Hopper <grace@example.com>\n" +
	"To: Ada Lovelace <ada@example.com>\n" +
	"Cc: Accounts <accounts@example.com>\n" +
	"Date: Sat, 14 Mar 2026 09:30:00 +0000\n" +
	"Subject: Pump service in Zürich\n\n" +
	"Hello Ada,\n\nthe pump in Zürich was serviced on Friday; the minutes and the invoice are attached.\n\nRegards,\nGrace"

// checkMemoAttachments checks the memo's two attachments, each read by
// its own reader under its long file name.
func checkMemoAttachments(t *testing.T, kids []*Document) {
	t.Helper()
	var got []string
	for _, a := range kids {
		if a.Err != nil {
			t.Errorf("%s: %v", a.Name, a.Err)
		}
		got = append(got, a.Name+" "+a.Format)
	}
	if strings.Join(got, ", ") != "Minutes of the pump meeting.txt text, Invoice 4711 (pump).pdf pdf" {
		t.Fatalf("attachments: %s", strings.Join(got, ", "))
	}
	if !strings.Contains(kids[0].Text, "Next service: September.") || !strings.Contains(kids[1].Text, memoInvoice) {
		t.Errorf("attachment texts %q, %q", kids[0].Text, kids[1].Text)
	}
}

// TestTNEFFixture: memo.tnef (written by memoTNEF, checked with Debian's
// tnef: TestTNEFAgainstTnefTool) read on its own, as a winmail.dat saved
// from a message: headers from the legacy attributes and the recipient
// table, the Windows-1252 body, the attachments by their long names.
// Set EXTRACTQ_WRITE_FIXTURES=1 to write the fixtures again.
func TestTNEFFixture(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "formats", "memo.tnef")
	if os.Getenv("EXTRACTQ_WRITE_FIXTURES") != "" {
		b := memoTNEF()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "formats", "memo-tnef.eml"), memoEML(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadBytes(t.Context(), b, Options{Name: "winmail.dat"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "tnef" || d.MediaType != "application/vnd.ms-tnef" || d.Reader.String() != "tnef/3" {
		t.Errorf("read as %s %s %s", d.Format, d.MediaType, d.Reader)
	}
	if d.Text != memoText || len(d.Warnings) > 0 {
		t.Errorf("text\n%s\nwant\n%s\nwarnings %v", d.Text, memoText, d.Warnings)
	}
	if m := d.Meta; m.MessageID != "memo.4711@example.com" || m.Title != "Pump service in Zürich" || m.Author != "Grace Hopper <grace@example.com>" {
		t.Errorf("meta %+v", m)
	}
	checkMemoAttachments(t, d.Attachments)
}

// TestTNEFInEML: an e-mail carrying winmail.dat shows what it holds: the
// inner attachments as the e-mail's own, the TNEF body in place of the
// empty MIME one; winmail.dat itself is no attachment.
func TestTNEFInEML(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "memo-tnef.eml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "From: Grace Hopper <grace@example.com>\nTo: Ada Lovelace <ada@example.com>\nDate: Sat, 14 Mar 2026 09:30:00 +0000\nSubject: Pump service in Zürich\n\n" +
		"Hello Ada,\n\nthe pump in Zürich was serviced on Friday; the minutes and the invoice are attached.\n\nRegards,\nGrace"
	if d.Format != "eml" || d.Text != want || len(d.Warnings) > 0 {
		t.Errorf("%s text\n%s\nwant\n%s\nwarnings %v", d.Format, d.Text, want, d.Warnings)
	}
	checkMemoAttachments(t, d.Attachments)

	// A MIME body that says something stays the body; the attachments
	// still come out of winmail.dat, under any part name; a message
	// without a subject takes winmail.dat's.
	b := fixture(t, "memo-tnef.eml")
	b = bytes.Replace(b, []byte("us-ascii\"\r\n\r\n\r\n"), []byte("us-ascii\"\r\n\r\nSee the attachments.\r\n"), 1)
	b = bytes.ReplaceAll(b, []byte("winmail.dat"), []byte("att00001.dat"))
	b = bytes.Replace(b, []byte("Subject: =?iso-8859-1?q?Pump_service_in_Z=FCrich?=\r\n"), nil, 1)
	d, err = ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(d.Text, "\nSubject: Pump service in Zürich\n\nSee the attachments.") || d.Meta.Title != "Pump service in Zürich" {
		t.Errorf("text %q, title %q", d.Text, d.Meta.Title)
	}
	checkMemoAttachments(t, d.Attachments)
}

// TestTNEFAgainstTnefTool reads memo.tnef both ways: with this reader,
// and with Debian's tnef (an independent decoder of [MS-OXTNEF], which
// also decompresses the RTF body). The attachments' names and bytes,
// the text body and the decompressed RTF must agree. Skipped where tnef
// is not installed, except under CI (.ci/run installs it).
func TestTNEFAgainstTnefTool(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("tnef")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tnef is required under CI (.ci/run installs it)")
		}
		t.Skip("tnef not installed (apt-get install tnef)")
	}
	path, err := filepath.Abs(filepath.Join("testdata", "formats", "memo.tnef"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.CommandContext(t.Context(), bin, append(args, "-f", path)...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tnef %v: %v\n%s", args, err, out)
		}
		return cmd.Dir
	}
	cmd := exec.CommandContext(t.Context(), bin, "-t", "-f", path)
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("tnef -t: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range d.Attachments {
		names = append(names, a.Name)
	}
	var got []string // "name\t|\tname as saved"
	for line := range strings.Lines(strings.TrimSpace(string(list))) {
		name, _, _ := strings.Cut(line, "\t|")
		got = append(got, name)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("tnef lists %q, we find %q", got, names)
	}
	dir := run("--number-backups")
	for _, a := range d.Attachments {
		theirs, err := os.ReadFile(filepath.Join(dir, a.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(theirs, a.Original) {
			t.Errorf("%s: tnef extracts %d bytes, we read %d", a.Name, len(theirs), len(a.Original))
		}
	}
	dir = run("--save-body=body", "--body-pref=T")
	text, err := os.ReadFile(filepath.Join(dir, "body.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := strings.Cut(d.Text, "\n\n"); transcode(bytes.TrimRight(text, "\x00\r\n"), "windows-1252") != strings.ReplaceAll(body, "\n", "\r\n") {
		t.Errorf("text body: tnef %q, we %q", text, body)
	}
	dir = run("--save-body=body", "--body-pref=R")
	rtf, err := os.ReadFile(filepath.Join(dir, "body.rtf"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := decompressRTF(tt.CompressRTF([]byte(memoRTF)), 1<<20)
	if err != nil || string(rtf) != memoRTF || string(ours) != memoRTF {
		t.Errorf("RTF: tnef %q, we %q (%v)", rtf, ours, err)
	}
}

// tnefWith is a small stream: a subject, then the attributes given.
func tnefWith(attrs ...tt.Attr) []byte {
	return tt.Build(1, append([]tt.Attr{{Level: tt.LevelMessage, ID: tt.AttSubject, Data: tt.String8("s")}}, attrs...)...)
}

// fileAttrs is the attributes of a file attachment named name.
func fileAttrs(name string, data []byte) []tt.Attr {
	return []tt.Attr{
		{Level: tt.LevelAttachment, ID: tt.AttAttachRendData, Data: tt.RendData(0)},
		{Level: tt.LevelAttachment, ID: tt.AttAttachData, Data: data},
		{Level: tt.LevelAttachment, ID: tt.AttAttachment, Data: tt.Props(
			tt.Prop{Tag: prAttachLongName<<16 | ptUnicode, Values: [][]byte{tt.Unicode(name)}})},
	}
}

// TestTNEFBodies: the body comes from PR_BODY, else attBody (in the
// stream's code page), else PR_BODY_HTML, else the compressed RTF.
func TestTNEFBodies(t *testing.T) {
	t.Parallel()
	msgProps := func(ps ...tt.Prop) tt.Attr {
		return tt.Attr{Level: tt.LevelMessage, ID: tt.AttMsgProps, Data: tt.Props(ps...)}
	}
	for _, tc := range []struct {
		name  string
		attrs []tt.Attr
		want  string
	}{
		{"rtf only", []tt.Attr{msgProps(tt.Prop{Tag: prRTFCompressed<<16 | ptBinary, Values: [][]byte{tt.CompressRTF([]byte(`{\rtf1\ansi Only \b rich\b0  text.\par}`))}})},
			"Only rich text."},
		{"html over rtf", []tt.Attr{msgProps(
			tt.Prop{Tag: prHTML<<16 | ptBinary, Values: [][]byte{[]byte("<html><body><p>From <b>HTML</b>.</p></body></html>")}},
			tt.Prop{Tag: prRTFCompressed<<16 | ptBinary, Values: [][]byte{tt.CompressRTF([]byte(`{\rtf1 From RTF.}`))}})},
			"From HTML."},
		{"PR_BODY over attBody", []tt.Attr{
			{Level: tt.LevelMessage, ID: tt.AttBody, Data: tt.String8("legacy")},
			msgProps(tt.Prop{Tag: prBody<<16 | ptUnicode, Values: [][]byte{tt.Unicode("Unicode body: Ελληνικά")}})},
			"Unicode body: Ελληνικά"},
		{"attBody in its code page", []tt.Attr{
			{Level: tt.LevelMessage, ID: tt.AttOemCodepage, Data: tt.Codepage(1251)},
			{Level: tt.LevelMessage, ID: tt.AttBody, Data: tt.String8("\xcf\xf0\xe8\xe2\xe5\xf2")}},
			"Привет"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tnefWith(tc.attrs...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if want := "Subject: s\n\n" + tc.want; d.Text != want || len(d.Warnings) > 0 {
				t.Errorf("text %q (warnings %v), want %q", d.Text, d.Warnings, want)
			}
		})
	}
}

// TestTNEFMalformed: a damaged stream is refused as corrupt when nothing
// of it can be read, and otherwise read up to the damage with a
// warning; a wrong checksum only warns. Never a panic.
func TestTNEFMalformed(t *testing.T) {
	t.Parallel()
	good := tnefWith(fileAttrs("a.txt", []byte("attached text"))...)
	le := func(v uint32) []byte { return tt.Long(v) }
	// lengthAt is good with the first attribute's length set to n.
	lengthAt := func(n uint32) []byte {
		b := bytes.Clone(good)
		copy(b[6+5:], le(n))
		return b
	}
	for _, tc := range []struct {
		name    string
		in      []byte
		err     error  // the error, or nil for a document
		warn    string // a warning the document carries
		attachs int    // attachments read
	}{
		{"no signature", append([]byte{0x78, 0x9F, 0x3E, 0x23}, good[4:]...), ErrUnknownFormat, "", 0},
		{"signature only", good[:6], ErrEmpty, "", 0},
		{"cut in the first header", good[:10], ErrCorrupt, "", 0},
		{"first length past the end", lengthAt(1 << 20), ErrCorrupt, "", 0},
		{"length of 4 GiB", lengthAt(0xFFFFFFFF), ErrCorrupt, "", 0},
		{"cut in the attachment's data", good[:len(good)-40], nil, "truncated", 0},
		{"cut in a checksum", good[:len(good)-1], nil, "truncated", 1},
		{"bad checksums", tt.Build(1, tt.Attr{Level: 1, ID: tt.AttSubject, Data: tt.String8("s"), BadChecksum: true},
			tt.Attr{Level: 1, ID: tt.AttBody, Data: tt.String8("b"), BadChecksum: true}), nil, "2 TNEF attribute checksum(s) do not match, the first at offset 6", 0},
		{"property list cut", tnefWith(tt.Attr{Level: 1, ID: tt.AttMsgProps, Data: tt.Props(
			tt.Prop{Tag: prBody<<16 | ptUnicode, Values: [][]byte{tt.Unicode("body")}})[:20]}), nil, "the message's properties: corrupt document: a MAPI property value", 0},
		{"property count of 4 billion", tnefWith(tt.Attr{Level: 1, ID: tt.AttMsgProps, Data: le(0xFFFFFFFF)}), nil, "the message's properties", 0},
		{"value count of 4 billion", tnefWith(tt.Attr{Level: 1, ID: tt.AttMsgProps, Data: append(le(1), append(le(prBody<<16|ptUnicode), le(0xFFFFFFFF)...)...)}), nil, "the message's properties", 0},
		{"value of 4 GiB", tnefWith(tt.Attr{Level: 1, ID: tt.AttMsgProps, Data: append(le(1), append(le(prBody<<16|ptUnicode), append(le(1), le(0xFFFFFFFF)...)...)...)}), nil, "a MAPI property value of 4294967295 bytes", 0},
		{"unknown property type", tnefWith(tt.Attr{Level: 1, ID: tt.AttMsgProps, Data: append(le(1), le(0x00370099)...)}), nil, "unknown type 0x0099", 0},
		{"recipient rows of 4 billion", tnefWith(tt.Attr{Level: 1, ID: tt.AttRecipTable, Data: le(0xFFFFFFFF)}), nil, "the recipient table", 0},
		{"triple longer than its attribute", tnefWith(tt.Attr{Level: 1, ID: tt.AttFrom, Data: tt.Triple("n", "SMTP:a@b")[:12]}), nil, "", 0},
		{"attachment without data", tnefWith(tt.Attr{Level: 2, ID: tt.AttAttachRendData, Data: tt.RendData(0)}), nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.in, Options{Name: "winmail.dat"})
			if tc.err != nil {
				if !isErr(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(d.Warnings, "\n"); !strings.Contains(w, tc.warn) || (tc.warn == "") != (w == "") {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
			if len(d.Attachments) != tc.attachs {
				t.Errorf("%d attachments, want %d", len(d.Attachments), tc.attachs)
			}
		})
	}
}

// TestTNEFAttachedMessage: an attached message (PR_ATTACH_DATA_OBJ, a
// TNEF stream of its own) is read as one, with its own attachment, down
// to Limits.MaxDepth; the attachments together are bounded by
// Limits.MaxUnpacked.
func TestTNEFAttachedMessage(t *testing.T) {
	t.Parallel()
	inner := tnefWith(fileAttrs("deep.txt", []byte("deep text"))...)
	outer := tnefWith(
		tt.Attr{Level: tt.LevelAttachment, ID: tt.AttAttachRendData, Data: tt.RendData(0)},
		tt.Attr{Level: tt.LevelAttachment, ID: tt.AttAttachment, Data: tt.Props(
			tt.Prop{Tag: prAttachMethod<<16 | 0x0003, Values: [][]byte{tt.Long(5)}},
			tt.Prop{Tag: prDisplayName<<16 | ptUnicode, Values: [][]byte{tt.Unicode("Re: pump")}},
			tt.Prop{Tag: prAttachData<<16 | ptObject, Values: [][]byte{tt.Object(tt.IIDMessage, inner)}})})
	d, err := ReadBytes(t.Context(), outer, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Attachments) != 1 || d.Attachments[0].Name != "Re: pump" || d.Attachments[0].Format != "tnef" ||
		len(d.Attachments[0].Attachments) != 1 || d.Attachments[0].Attachments[0].Text != "deep text" {
		t.Fatalf("attachments %+v", d.Attachments)
	}
	d, err = ReadBytes(t.Context(), outer, Options{Limits: Limits{MaxDepth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Attachments[0].Attachments[0]; !isErr(a.Err, ErrTooLarge) {
		t.Errorf("depth 2 read with MaxDepth 1: %v", a.Err)
	}
	big := tnefWith(append(fileAttrs("a.txt", bytes.Repeat([]byte("a"), 600)), fileAttrs("b.txt", bytes.Repeat([]byte("b"), 600))...)...)
	if _, err := ReadBytes(t.Context(), big, Options{Limits: Limits{MaxUnpacked: 1000}}); !isErr(err, ErrTooLarge) {
		t.Errorf("1200 bytes of attachments with MaxUnpacked 1000: %v", err)
	}
}
