package document

import (
	"encoding/binary"
	"fmt"
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
	strs := map[uint16]string{0x001A: "IPM.Note", prSubject: m.subject, prSenderName: m.senderName, prSenderEmail: m.senderAddr,
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
		strs := map[uint16]string{prAttachLongName: a.name, prAttachFilename: a.name, prDisplayName: a.name, prAttachMime: a.mime}
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
		obj(d, 8, strs, map[uint16][]byte{prAttachData: a.data}, []fixed{{prAttachMethod<<16 | 0x0003, 1}, {0x0E210003, uint64(k)}}, nil)
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
	bin, err := exec.LookPath("msgconvert")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("msgconvert is required under CI (.ci/run installs libemail-outlook-message-perl)")
		}
		t.Skip("msgconvert not installed (apt-get install libemail-outlook-message-perl)")
	}
	dir := t.TempDir()
	b := fixture(t, "ticket.msg")
	in := filepath.Join(dir, "ticket.msg")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "--outfile", filepath.Join(dir, "ticket.eml"), in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("msgconvert: %v\n%s", err, out)
	}
	msg, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eml, err := ReadFile(t.Context(), filepath.Join(dir, "ticket.eml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if eml.Format != "eml" {
		t.Fatalf("msgconvert's output read as %s", eml.Format)
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
