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
	if d.Format != "tnef" || d.MediaType != "application/vnd.ms-tnef" || d.Reader.String() != "tnef/1" {
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
	// still come out of winmail.dat, under any part name.
	b, err := os.ReadFile(filepath.Join("testdata", "formats", "memo-tnef.eml"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("us-ascii\"\r\n\r\n\r\n"), []byte("us-ascii\"\r\n\r\nSee the attachments.\r\n"), 1)
	b = bytes.ReplaceAll(b, []byte("winmail.dat"), []byte("att00001.dat"))
	d, err = ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(d.Text, "\n\nSee the attachments.") {
		t.Errorf("text %q", d.Text)
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
