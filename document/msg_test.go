package document

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// testMsg is what writeMSG puts in an Outlook message.
type testMsg struct {
	class                                                  string // PR_MESSAGE_CLASS; "" writes IPM.Note
	subject, senderName, senderAddr, body, html, messageID string
	rtf                                                    []byte      // PR_RTF_COMPRESSED
	to, cc                                                 [][2]string // name, address
	date                                                   time.Time
	attachments                                            []testAttachment
}

type testAttachment struct {
	name, mime string
	data       []byte
	msg        *testMsg // an attached message (attach method 5)
	contentID  string   // shown inline by the HTML body: PR_ATTACH_CONTENT_ID, hidden
}

// writeMSG writes an Outlook message as [MS-OXMSG] lays it out: Unicode
// string properties and binary ones each in a __substg1.0_ stream, the
// fixed-size ones (times, recipient type, attach method) and the sizes of
// the others in __properties_version1.0, recipients and attachments in
// storages of their own, the named-property map's three streams. Nothing
// on the build machine writes .msg files; msgconvert checks what this
// writes (TestMSGFixture's comment).
func writeMSG(m testMsg) []byte {
	return cfbtest.Build(msgStreams("", m, 32), cfbtest.Options{})
}

func msgStreams(dir string, m testMsg, hdr int) []cfbtest.Stream {
	join := func(d, n string) string {
		if d == "" {
			return n
		}
		return d + "/" + n
	}
	var out []cfbtest.Stream
	type fixed struct {
		tag uint32
		val uint64
	}
	obj := func(dir string, hdrLen int, strs map[uint16]string, bins map[uint16][]byte, fx []fixed, header []byte) {
		props := make([]byte, hdrLen)
		copy(props, header)
		add := func(tag uint32, val uint64) {
			e := make([]byte, 16)
			binary.LittleEndian.PutUint32(e, tag)
			binary.LittleEndian.PutUint32(e[4:], 6) // readable, writable
			binary.LittleEndian.PutUint64(e[8:], val)
			props = append(props, e...)
		}
		ids := slices.Sorted(func(yield func(uint16) bool) {
			for id := range strs {
				if !yield(id) {
					return
				}
			}
		})
		for _, id := range ids {
			u := utf16.Encode([]rune(strs[id] + "\x00"))
			b := make([]byte, 2*len(u))
			for i, c := range u {
				binary.LittleEndian.PutUint16(b[2*i:], c)
			}
			out = append(out, cfbtest.Stream{Path: join(dir, fmt.Sprintf("__substg1.0_%04X001F", id)), Data: b})
			add(uint32(id)<<16|0x001F, uint64(len(b)))
		}
		for id, b := range bins {
			out = append(out, cfbtest.Stream{Path: join(dir, fmt.Sprintf("__substg1.0_%04X0102", id)), Data: b})
			add(uint32(id)<<16|0x0102, uint64(len(b)))
		}
		for _, f := range fx {
			add(f.tag, f.val)
		}
		out = append(out, cfbtest.Stream{Path: join(dir, "__properties_version1.0"), Data: props})
	}
	ft := func(t time.Time) uint64 { return uint64(t.UnixNano()/100) + 116444736000000000 }
	strs := map[uint16]string{prMessageClass: cmp.Or(m.class, "IPM.Note"), prSubject: m.subject, prSenderName: m.senderName, prSenderEmail: m.senderAddr,
		0x0C1E: "SMTP", prSenderSMTP: m.senderAddr, prBody: m.body, prMessageID: m.messageID}
	var toNames, ccNames []string
	for _, r := range m.to {
		toNames = append(toNames, r[0])
	}
	for _, r := range m.cc {
		ccNames = append(ccNames, r[0])
	}
	strs[prDisplayTo] = strings.Join(toNames, "; ")
	if len(ccNames) > 0 {
		strs[prDisplayCc] = strings.Join(ccNames, "; ")
	}
	for k, v := range strs {
		if v == "" {
			delete(strs, k)
		}
	}
	bins := map[uint16][]byte{}
	if m.html != "" {
		bins[prHTML] = []byte(m.html)
	}
	if m.rtf != nil {
		bins[prRTFCompressed] = m.rtf
	}
	fx := []fixed{{prClientSubmitTime<<16 | 0x0040, ft(m.date)}, {prDeliveryTime<<16 | 0x0040, ft(m.date)}, {0x0E070003, 1}}
	header := make([]byte, 32)
	n := len(m.to) + len(m.cc)
	binary.LittleEndian.PutUint32(header[8:], uint32(n))
	binary.LittleEndian.PutUint32(header[12:], uint32(len(m.attachments)))
	binary.LittleEndian.PutUint32(header[16:], uint32(n))
	binary.LittleEndian.PutUint32(header[20:], uint32(len(m.attachments)))
	obj(dir, hdr, strs, bins, fx, header)
	if dir == "" {
		out = append(out,
			cfbtest.Stream{Path: "__nameid_version1.0/__substg1.0_00020102", Data: []byte{}},
			cfbtest.Stream{Path: "__nameid_version1.0/__substg1.0_00030102", Data: []byte{}},
			cfbtest.Stream{Path: "__nameid_version1.0/__substg1.0_00040102", Data: []byte{}})
	}
	i := 0
	for typ, list := range [][][2]string{m.to, m.cc} {
		for _, r := range list {
			d := join(dir, fmt.Sprintf("__recip_version1.0_#%08X", i))
			obj(d, 8, map[uint16]string{prDisplayName: r[0], prEmailAddress: r[1], prSMTPAddress: r[1], 0x3002: "SMTP"}, nil,
				[]fixed{{prRecipientType<<16 | 0x0003, uint64(typ + 1)}, {0x30000003, uint64(i)}}, nil)
			i++
		}
	}
	for k, a := range m.attachments {
		d := join(dir, fmt.Sprintf("__attach_version1.0_#%08X", k))
		strs := map[uint16]string{prAttachLongName: a.name, prAttachFilename: a.name, prDisplayName: a.name, prAttachMime: a.mime, prAttachContentID: a.contentID}
		for k, v := range strs {
			if v == "" {
				delete(strs, k)
			}
		}
		if a.msg != nil {
			obj(d, 8, strs, nil, []fixed{{prAttachMethod<<16 | 0x0003, 5}, {0x0E210003, uint64(k)}}, nil)
			out = append(out, msgStreams(d+"/__substg1.0_3701000D", *a.msg, 24)...)
			continue
		}
		fx := []fixed{{prAttachMethod<<16 | 0x0003, 1}, {0x0E210003, uint64(k)}}
		if a.contentID != "" {
			fx = append(fx, fixed{prAttachmentHidden<<16 | 0x000B, 1})
		}
		obj(d, 8, strs, map[uint16][]byte{prAttachData: a.data}, fx, nil)
	}
	return out
}

// ticketMsg is the message of testdata/formats/ticket.msg.
func ticketMsg(t testing.TB) testMsg {
	doc := fixture(t, "ticket.doc")
	return testMsg{
		subject:    "Ticket 4711: pump replaced in Zürich",
		senderName: "Grace Hopper", senderAddr: "grace@example.com",
		to:        [][2]string{{"Ada Lovelace", "ada@example.com"}, {"Alan Turing", "alan@example.com"}},
		cc:        [][2]string{{"Accounts", "accounts@example.com"}},
		date:      time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC),
		messageID: "<4711.pump@example.com>",
		body:      "Hello Ada,\r\n\r\nthe pump in Zürich was replaced on Friday; the invoice of 980 EUR is attached.\r\n\r\nRegards,\r\nGrace",
		attachments: []testAttachment{
			{name: "lines.csv", mime: "text/csv", data: []byte("Item,Amount\nPump,900\nLabour,80\n")},
			{name: "ticket.doc", mime: "application/msword", data: doc},
			{name: "Re: parts order.msg", msg: &testMsg{
				subject: "Re: parts order", senderName: "Alan Turing", senderAddr: "alan@example.com",
				to:   [][2]string{{"Grace Hopper", "grace@example.com"}},
				date: time.Date(2026, 3, 10, 16, 0, 0, 0, time.UTC),
				html: "<html><body><p>The spare <b>impeller</b> ships on Monday.</p></body></html>",
			}},
		},
	}
}

// TestMSGFixture: ticket.msg (written by writeMSG, checked with
// msgconvert from libemail-outlook-message-perl, which turns it into an
// e-mail with the same subject, body and attachments) reads as the e-mail
// reader reads the same message: headers, body, each attachment through
// the registry, the attached message in place. Set
// EXTRACTQ_WRITE_FIXTURES=1 to write the fixture again.
func TestMSGFixture(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "formats", "ticket.msg")
	if os.Getenv("EXTRACTQ_WRITE_FIXTURES") != "" {
		if err := os.WriteFile(path, writeMSG(ticketMsg(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := ReadFile(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "From: Grace Hopper <grace@example.com>\n" +
		"To: Ada Lovelace <ada@example.com>, Alan Turing <alan@example.com>\n" +
		"Cc: Accounts <accounts@example.com>\n" +
		"Date: Sat, 14 Mar 2026 09:30:00 +0000\n" +
		"Subject: Ticket 4711: pump replaced in Zürich\n\n" +
		"Hello Ada,\n\nthe pump in Zürich was replaced on Friday; the invoice of 980 EUR is attached.\n\nRegards,\nGrace"
	if d.Text != want {
		t.Errorf("text\n%s\nwant\n%s", d.Text, want)
	}
	if d.Format != "ole" || d.MediaType != "application/vnd.ms-outlook" || d.Meta.Subject != "Ticket 4711: pump replaced in Zürich" ||
		d.Meta.MessageID != "4711.pump@example.com" || !d.Meta.Date.Equal(time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)) {
		t.Errorf("doc %s %s meta %+v", d.Format, d.MediaType, d.Meta)
	}
	var kids []string
	for _, a := range d.Attachments {
		if a.Err != nil {
			t.Errorf("%s: %v", a.Name, a.Err)
			continue
		}
		kids = append(kids, a.Name+" "+a.Format)
	}
	if got := strings.Join(kids, ", "); got != "lines.csv csv, ticket.doc ole, Re: parts order.msg ole" {
		t.Fatalf("attachments: %s", got)
	}
	for i, w := range []string{"Pump | 900", "Ελληνικά: η αντλία αντικαταστάθηκε.", "The spare impeller ships on Monday."} {
		if !strings.Contains(d.Attachments[i].Text, w) {
			t.Errorf("attachment %s lacks %q:\n%s", d.Attachments[i].Name, w, d.Attachments[i].Text)
		}
	}
	if a := d.Attachments[2]; a.Meta.From != "Alan Turing <alan@example.com>" || !strings.HasPrefix(a.Text, "From: Alan Turing") {
		t.Errorf("attached message: %+v\n%s", a.Meta, a.Text)
	}
}

// TestMSGNesting: attached messages deeper than Limits.MaxDepth are
// refused one by one, the outer message still read.
func TestMSGNesting(t *testing.T) {
	t.Parallel()
	m := &testMsg{subject: "level 0", body: "innermost"}
	for i := 1; i <= 4; i++ {
		m = &testMsg{subject: fmt.Sprintf("level %d", i), body: "b", attachments: []testAttachment{{name: "inner.msg", msg: m}}}
	}
	d, err := ReadBytes(t.Context(), writeMSG(*m), Options{Limits: Limits{MaxDepth: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a := d.Attachments[0].Attachments[0].Attachments[0]
	if a.Err == nil || !isErr(a.Err, ErrTooLarge) {
		t.Fatalf("depth 3: %v", a.Err)
	}
}

// TestMSGAgainstMsgconvert reads ticket.msg both ways: with this reader,
// and as the e-mail msgconvert (libemail-outlook-message-perl, an
// independent reader of [MS-OXMSG]) makes of it, read by the e-mail
// reader. The subject, sender, recipients, body and attachments must
// agree. Skipped where msgconvert is not installed, except under CI
// (.ci/run installs it).
func TestMSGAgainstMsgconvert(t *testing.T) {
	t.Parallel()
	b := fixture(t, "ticket.msg")
	eml := msgconvert(t, b)
	msg, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// msgconvert writes the subject as raw 8-bit: compare it without its
	// non-ASCII letters.
	ascii := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r > 127 || r == 0xFFFD {
				return -1
			}
			return r
		}, s)
	}
	if ascii(msg.Meta.Subject) != ascii(eml.Meta.Subject) || msg.Meta.From != eml.Meta.From ||
		fmt.Sprint(msg.Meta.To, msg.Meta.Cc) != fmt.Sprint(eml.Meta.To, eml.Meta.Cc) || !msg.Meta.Date.Equal(eml.Meta.Date) {
		t.Errorf("headers differ:\n msg %+v\n eml %+v", msg.Meta, eml.Meta)
	}
	body := func(d *Document) string { _, b, _ := strings.Cut(d.Text, "\n\n"); return strings.TrimSpace(b) }
	if body(msg) != body(eml) {
		t.Errorf("bodies differ:\n msg %q\n eml %q", body(msg), body(eml))
	}
	if len(msg.Attachments) != len(eml.Attachments) {
		t.Fatalf("%d attachments, msgconvert finds %d", len(msg.Attachments), len(eml.Attachments))
	}
	for i, a := range msg.Attachments {
		e := eml.Attachments[i]
		if a.Name != e.Name || body(a) != body(e) && a.Text != e.Text {
			t.Errorf("attachment %d: %s %q\nvs msgconvert's %s %q", i, a.Name, a.Text, e.Name, e.Text)
		}
	}
}

// msgconvert turns a .msg into an e-mail with msgconvert and reads that.
// Skipped where msgconvert is not installed, except under CI (.ci/run
// installs it).
func msgconvert(t *testing.T, msg []byte) *Document {
	t.Helper()
	bin, err := exec.LookPath("msgconvert")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("msgconvert is required under CI (.ci/run installs libemail-outlook-message-perl)")
		}
		t.Skip("msgconvert not installed (apt-get install libemail-outlook-message-perl)")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.msg")
	if err := os.WriteFile(in, msg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "--outfile", filepath.Join(dir, "out.eml"), in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("msgconvert: %v\n%s", err, out)
	}
	eml, err := ReadFile(t.Context(), filepath.Join(dir, "out.eml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if eml.Format != "eml" {
		t.Fatalf("msgconvert's output read as %s", eml.Format)
	}
	return eml
}

// TestMSGSMIMEAgainstMsgconvert: msgconvert makes of an opaquely signed
// .msg an e-mail whose attachment is smime.p7m as application/pkcs7-mime,
// which the e-mail reader reads from inside: the .msg must read alike,
// header fields and body. (Of a clear-signed .msg, msgconvert nests the
// multipart/signed entity, headers and all, as the body of a
// multipart/signed part without a boundary: nothing to compare with.)
func TestMSGSMIMEAgainstMsgconvert(t *testing.T) {
	t.Parallel()
	b := writeMSG(testMsg{class: "IPM.Note.SMIME", subject: "Invoice INV-77 from Outlook", senderName: "Ann Sender",
		senderAddr: "ann@example.com", to: [][2]string{{"Bob", "bob@example.com"}}, date: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC),
		attachments: []testAttachment{{name: "smime.p7m", mime: "application/pkcs7-mime", data: smimeBlob(t, "opaque.eml")}}})
	eml := msgconvert(t, b)
	msg, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text != eml.Text || len(msg.Attachments) != 0 || len(eml.Attachments) != 0 {
		t.Errorf("msg %q (%d attachments)\nmsgconvert's %q (%d)", msg.Text, len(msg.Attachments), eml.Text, len(eml.Attachments))
	}
	if !strings.Contains(msg.Text, "\n\nInvoice INV-77 total 99.00 EUR") {
		t.Errorf("text %q lacks the signed body", msg.Text)
	}
}

// TestMSGRTFBody: a message whose body is only compressed RTF (older
// Outlook) is read through the RTF reader.
func TestMSGRTFBody(t *testing.T) {
	t.Parallel()
	rtf := []byte{0x2d, 0x00, 0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, 0x4c, 0x5a, 0x46, 0x75, 0xf1, 0xc5, 0xc7, 0xa7,
		0x03, 0x00, 0x0a, 0x00, 0x72, 0x63, 0x70, 0x67, 0x31, 0x32, 0x35, 0x42, 0x32, 0x0a, 0xf3, 0x20,
		0x68, 0x65, 0x6c, 0x09, 0x00, 0x20, 0x62, 0x77, 0x05, 0xb0, 0x6c, 0x64, 0x7d, 0x0a, 0x80, 0x0f, 0xa0}
	d, err := ReadBytes(t.Context(), writeMSG(testMsg{subject: "rtf only", rtf: rtf}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Subject: rtf only\n\nhello world"; d.Text != want || len(d.Warnings) > 0 {
		t.Errorf("text %q (warnings %v), want %q", d.Text, d.Warnings, want)
	}
}

// smimeEntity is a signed e-mail of testdata/smime without its message
// header fields (From, To, Subject, …), its Content-* fields kept: the
// MIME entity Outlook keeps in a clear-signed .msg's smime.p7m.
func smimeEntity(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "smime", file))
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		t.Fatalf("%s: no header", file)
	}
	var out bytes.Buffer
	keep := false
	for line := range bytes.Lines(head) {
		if line[0] != ' ' && line[0] != '\t' {
			keep = bytes.HasPrefix(bytes.ToLower(line), []byte("content-"))
		}
		if keep {
			out.Write(bytes.TrimRight(line, "\n"))
			out.WriteString("\r\n")
		}
	}
	out.WriteString("\r\n")
	out.Write(body)
	return out.Bytes()
}

// smimeBlob is the CMS blob of an application/pkcs7-mime e-mail of
// testdata/smime: its base64 body decoded, as Outlook keeps it in the
// .msg's smime.p7m.
func smimeBlob(t testing.TB, file string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "smime", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMSGSMIME reads signed and encrypted Outlook messages as
// [MS-OXOSMIME] stores them: the message class IPM.Note.SMIME(.
// MultipartSigned), and the whole signed message in one attachment
// smime.p7m (a multipart/signed entity, or a CMS blob). The body,
// attachments and warnings are the signed message's, the header fields
// the .msg's own; an encrypted message is refused with what to do; an
// smime.p7m that cannot be read stays the attachment it was, with a
// warning.
func TestMSGSMIME(t *testing.T) {
	t.Parallel()
	const sig = "Content-Type: application/pkcs7-signature; name=smime.p7s\r\nContent-Transfer-Encoding: base64\r\n\r\nMIAGCSqGSIb3DQEHAqCAMIACAQEx\r\n"
	withCSV := "Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256; boundary=\"S\"\r\n\r\n" +
		"--S\r\nContent-Type: multipart/mixed; boundary=\"M\"\r\n\r\n" +
		"--M\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe pump invoice, signed.\r\n" +
		"--M\r\nContent-Type: text/csv; name=lines.csv\r\nContent-Disposition: attachment; filename=lines.csv\r\n\r\nItem,Amount\r\nPump,900\r\n" +
		"--M--\r\n\r\n--S\r\n" + sig + "--S--\r\n"
	opaque := smimeBlob(t, "opaque.eml")
	tests := []struct {
		name     string
		class    string
		ownBody  string // the .msg's PR_BODY
		att      testAttachment
		body     string   // the body, once in the text
		atts     []string // attachment names, in order; "!" marks one with an error
		warning  string   // in the warnings; "" for none
		wantErr  error
		errMatch string
	}{
		{name: "clear-signed", class: "IPM.Note.SMIME.MultipartSigned",
			att:  testAttachment{name: "smime.p7m", mime: "multipart/signed", data: smimeEntity(t, "signed.eml")},
			body: "Invoice INV-77 total 99.00 EUR"},
		{name: "clear-signed with an attachment, body copied", class: "ipm.note.smime.multipartsigned", ownBody: "The pump invoice, signed.",
			att:  testAttachment{name: "smime.p7m", mime: "multipart/signed", data: []byte(withCSV)},
			body: "The pump invoice, signed.", atts: []string{"lines.csv"}},
		{name: "opaque-signed", class: "IPM.Note.SMIME",
			att:  testAttachment{name: "smime.p7m", mime: "application/pkcs7-mime", data: opaque},
			body: "Invoice INV-77 total 99.00 EUR"},
		{name: "opaque-signed, unnamed", class: "IPM.Note.SMIME",
			att:  testAttachment{mime: "application/x-pkcs7-mime", data: opaque},
			body: "Invoice INV-77 total 99.00 EUR"},
		{name: "encrypted", class: "IPM.Note.SMIME",
			att:     testAttachment{name: "smime.p7m", mime: "application/pkcs7-mime", data: smimeBlob(t, "encrypted.eml")},
			wantErr: ErrUnsupported, errMatch: "decrypt it first"},
		{name: "damaged", class: "IPM.Note.SMIME", ownBody: "see the attachment",
			att:  testAttachment{name: "smime.p7m", mime: "application/pkcs7-mime", data: opaque[:300]},
			body: "see the attachment", atts: []string{"smime.p7m!"}, warning: "smime.p7m) could not be read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := testMsg{class: tc.class, subject: "Invoice INV-77 from Outlook", senderName: "Ann Sender", senderAddr: "ann@example.com",
				to: [][2]string{{"Bob", "bob@example.com"}}, date: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC),
				body: tc.ownBody, attachments: []testAttachment{tc.att}}
			d, err := ReadBytes(t.Context(), writeMSG(m), Options{})
			if tc.wantErr != nil {
				if !isErr(err, tc.wantErr) || !strings.Contains(fmt.Sprint(err), tc.errMatch) {
					t.Fatalf("err = %v, want %v saying %q", err, tc.wantErr, tc.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			head := "From: Ann Sender <ann@example.com>\nTo: Bob <bob@example.com>\nDate: Thu, 26 Nov 2026 09:00:00 +0000\nSubject: Invoice INV-77 from Outlook\n\n"
			if !strings.HasPrefix(d.Text, head) || strings.Count(d.Text, tc.body) != 1 || strings.Contains(d.Text, "Content-Type") {
				t.Errorf("text %q, want the .msg's header fields and the body %q once", d.Text, tc.body)
			}
			if d.Meta.Subject != m.subject || d.Meta.From != "Ann Sender <ann@example.com>" {
				t.Errorf("meta %+v, want the .msg's own", d.Meta)
			}
			var names []string
			for _, a := range d.Attachments {
				n := a.Name
				if a.Err != nil {
					n += "!"
				}
				names = append(names, n)
			}
			if !slices.Equal(names, tc.atts) {
				t.Fatalf("attachments %q, want %q", names, tc.atts)
			}
			if len(names) > 0 && names[0] == "lines.csv" && !strings.Contains(d.Attachments[0].Text, "Pump | 900") {
				t.Errorf("lines.csv reads %q", d.Attachments[0].Text)
			}
			w := strings.Join(d.Warnings, "\n")
			if tc.warning == "" && w != "" || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want %q", d.Warnings, tc.warning)
			}
		})
	}
}

// TestInlinePictures: a picture an e-mail's HTML body shows inline is left
// out when it is decoration (a logo) and kept as an attachment when it is
// content (a receipt photographed into the message), in an .eml and in an
// Outlook .msg alike.
func TestInlinePictures(t *testing.T) {
	t.Parallel()
	picture := func(w, h int) []byte {
		var b bytes.Buffer
		if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	logo, receipt := picture(300, 100), picture(900, 1200)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	eml := "From: a@example.com\nTo: b@example.com\nSubject: My receipt\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/related; boundary=R\n\n--R\nContent-Type: text/html\n\n" +
		`<p>Receipt below.</p><img src="cid:logo"><img src="cid:receipt">` + "\n--R\n" +
		"Content-Type: image/png\nContent-ID: <logo>\nContent-Transfer-Encoding: base64\n\n" + b64(logo) + "\n--R\n" +
		"Content-Type: image/png; name=receipt.png\nContent-Disposition: inline; filename=receipt.png\nContent-ID: <receipt>\nContent-Transfer-Encoding: base64\n\n" + b64(receipt) + "\n--R--\n"
	msg := writeMSG(testMsg{subject: "My receipt", senderAddr: "a@example.com", html: `<p>Receipt below.</p><img src="cid:logo"><img src="cid:receipt">`,
		attachments: []testAttachment{
			{name: "image001.png", mime: "image/png", data: logo, contentID: "logo"},
			{name: "receipt.png", mime: "image/png", data: receipt, contentID: "receipt"},
			{name: "terms.png", mime: "image/png", data: logo}, // small but attached, not inline
		}})
	tests := []struct {
		name string
		in   []byte
		want []string
	}{
		{"eml", []byte(eml), []string{"receipt.png"}},
		{"msg", msg, []string{"receipt.png", "terms.png"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := ReadBytes(t.Context(), tc.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range doc.Attachments {
				names = append(names, a.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("attachments %q, want %q", names, tc.want)
			}
		})
	}
}
