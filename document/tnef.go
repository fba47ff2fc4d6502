package document

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:       "tnef",
		MediaType:  "application/vnd.ms-tnef",
		Extensions: []string{".tnef", ".dat"},
		Version:    "3", // 2: HTML bodies through html/4; 3: through html/5
		Match:      func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, tnefMagic) },
		Priority:   90,
		Decoder:    DecoderFunc(decodeTNEF),
	})
}

// tnefMagic is the signature 0x223E9F78 (little-endian) that starts a
// TNEF stream: Outlook's and Exchange's winmail.dat.
var tnefMagic = []byte{0x78, 0x9F, 0x3E, 0x22}

// TNEF attribute ids ([MS-OXTNEF] 2.1.3.2): the attribute's type in the
// high word, its id in the low.
const (
	attFrom           = 0x00008000
	attSubject        = 0x00018004
	attDateSent       = 0x00038005
	attBody           = 0x0002800C
	attAttachData     = 0x0006800F
	attAttachTitle    = 0x00018010
	attAttachRendData = 0x00069002
	attMsgProps       = 0x00069003
	attRecipTable     = 0x00069004
	attAttachment     = 0x00069005
	attOemCodepage    = 0x00069007

	tnefLevelAttachment = 2

	// maxTNEFRecipients bounds the recipients kept for To and Cc.
	maxTNEFRecipients = 1000
)

// MAPI property types a TNEF property list holds ([MS-OXCDATA] 2.11.1).
const (
	ptString8 = 0x001E
	ptUnicode = 0x001F
	ptBinary  = 0x0102
	ptObject  = 0x000D
	ptSystime = 0x0040
	ptMulti   = 0x1000
)

// tnefAttr is one attribute: its level (message or attachment), id and
// data, a slice of the input.
type tnefAttr struct {
	level byte
	id    uint32
	data  []byte
}

// tnefAttrs frames a stream's attributes, handing each to fn in order:
// the signature, the legacy key, then attributes of a level byte, an id,
// a length, the data and a 16-bit checksum. A checksum that does not
// match is a warning (some writers get them wrong; the lengths still
// frame the stream); a stream cut short keeps the attributes before the
// cut, and is corrupt only when there are none; one without any is
// empty.
func tnefAttrs(b []byte, fn func(tnefAttr)) (warnings []string, err error) {
	if len(b) < 6 || !bytes.HasPrefix(b, tnefMagic) {
		return nil, fmt.Errorf("%w: not a TNEF stream (no signature 0x223E9F78)", ErrCorrupt)
	}
	le := binary.LittleEndian
	count, bad, firstBad := 0, 0, 0
	for off := 6; off < len(b); {
		if len(b)-off < 9 {
			err = fmt.Errorf("%w: the stream ends inside an attribute header at offset %d", ErrCorrupt, off)
			break
		}
		level, id, n := b[off], le.Uint32(b[off+1:]), le.Uint32(b[off+5:])
		start := off + 9
		if uint64(n)+2 > uint64(len(b)-start) {
			err = fmt.Errorf("%w: attribute %#08x at offset %d claims %d bytes, %d are left", ErrCorrupt, id, off, n, len(b)-start-min(2, len(b)-start))
			break
		}
		data := b[start : start+int(n)]
		var sum uint16
		for _, c := range data {
			sum += uint16(c)
		}
		if sum != le.Uint16(b[start+int(n):]) {
			if bad == 0 {
				firstBad = off
			}
			bad++
		}
		fn(tnefAttr{level: level, id: id, data: data})
		count++
		off = start + int(n) + 2
	}
	if count == 0 && err == nil {
		err = fmt.Errorf("%w: the TNEF stream holds no attributes", ErrEmpty)
	}
	if err != nil {
		if count == 0 {
			return nil, err
		}
		warnings = append(warnings, err.Error()+" (the stream is truncated; the attributes before are kept)")
	}
	if bad > 0 {
		warnings = append(warnings, fmt.Sprintf("%d TNEF attribute checksum(s) do not match, the first at offset %d (read anyway)", bad, firstBad))
	}
	return warnings, nil
}

// mapiProp is one MAPI property of a TNEF property list: its type and
// its (first) value without padding.
type mapiProp struct {
	typ uint16
	val []byte
}

// mapiProps are the properties of one object (message, recipient,
// attachment) by id. Named properties (ids from 0x8000) and
// multi-valued ones are parsed past but not kept: nothing read here
// needs them.
type mapiProps map[uint16]mapiProp

// tnefCursor reads a property list; err is set at the first read past
// the end and every later read is empty.
type tnefCursor struct {
	b   []byte
	err error
}

func (c *tnefCursor) take(n uint64) []byte {
	if c.err != nil {
		return nil
	}
	if n > uint64(len(c.b)) {
		c.err = fmt.Errorf("%w: a MAPI property value of %d bytes, %d are left", ErrCorrupt, n, len(c.b))
		return nil
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v
}

func (c *tnefCursor) u32() uint32 {
	if v := c.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

// pad skips the padding after n bytes to the next 4-byte boundary; a
// list that ends without its last padding is still whole.
func (c *tnefCursor) pad(n uint64) {
	if p := (4 - n%4) % 4; p <= uint64(len(c.b)) {
		c.b = c.b[p:]
	}
}

// mapiFixedSize is the size of a fixed-size type's value (before its
// padding to 4 bytes), 0 for a type of variable size or unknown.
func mapiFixedSize(typ uint16) uint64 {
	switch typ {
	case 0x0002, 0x000B: // PT_SHORT, PT_BOOLEAN
		return 2
	case 0x0003, 0x0004, 0x000A: // PT_LONG, PT_FLOAT, PT_ERROR
		return 4
	case 0x0005, 0x0006, 0x0007, 0x0014, ptSystime: // PT_DOUBLE, PT_CURRENCY, PT_APPTIME, PT_I8
		return 8
	case 0x0048: // PT_CLSID
		return 16
	}
	return 0
}

// readProps reads a property list ([MS-OXTNEF] 2.1.3.4): a count, then
// each property's tag, its name when it is a named property (a GUID, a
// kind, an id or a UTF-16 string), its values: a multi-valued or
// variable-size property's are counted, a variable-size value carries
// its size, every value is padded to 4 bytes. Every count is bounded by
// the bytes left, since each value takes at least 4. The map is made at
// the first property kept: nil for a list that keeps none.
func (c *tnefCursor) readProps(into mapiProps) mapiProps {
	for n := c.u32(); n > 0 && c.err == nil; n-- {
		tag := c.u32()
		typ, id := uint16(tag), uint16(tag>>16)
		if id >= 0x8000 {
			c.take(16)
			switch kind := c.u32(); kind {
			case 0:
				c.u32()
			case 1:
				l := uint64(c.u32())
				c.take(l)
				c.pad(l)
			default:
				if c.err == nil {
					c.err = fmt.Errorf("%w: named property %#08x of kind %d", ErrCorrupt, tag, kind)
				}
			}
		}
		base := typ &^ ptMulti
		size := mapiFixedSize(base)
		varSize := base == ptString8 || base == ptUnicode || base == ptBinary || base == ptObject
		if size == 0 && !varSize {
			if c.err == nil {
				c.err = fmt.Errorf("%w: MAPI property %#08x of unknown type %#04x", ErrCorrupt, tag, typ)
			}
			return into
		}
		count := uint32(1)
		if typ&ptMulti != 0 || varSize {
			count = c.u32()
		}
		for i := uint32(0); i < count && c.err == nil; i++ {
			l := size
			if varSize {
				l = uint64(c.u32())
			}
			v := c.take(l)
			c.pad(l)
			if i == 0 && typ&ptMulti == 0 && id < 0x8000 && c.err == nil {
				if into == nil {
					into = mapiProps{}
				}
				into[id] = mapiProp{typ: typ, val: v}
			}
		}
	}
	return into
}

// tnefStrings decodes an object's strings: PT_UNICODE as UTF-16LE,
// PT_STRING8 and the legacy attributes in the stream's code page.
type tnefStrings struct{ codepage string }

func (t tnefStrings) str8(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return transcode(b, t.codepage)
}

func (t tnefStrings) str(p mapiProps, id uint16) string {
	v, ok := p[id]
	switch {
	case !ok:
		return ""
	case v.typ == ptUnicode:
		return strings.TrimRight(decodeUTF16LE(v.val), "\x00")
	case v.typ == ptString8:
		return t.str8(v.val)
	}
	return ""
}

func (p mapiProps) bin(id uint16) []byte {
	if v, ok := p[id]; ok && (v.typ == ptBinary || v.typ == ptObject) {
		return v.val
	}
	return nil
}

func (p mapiProps) long(id uint16) int {
	if v, ok := p[id]; ok && v.typ == 0x0003 {
		return int(int32(binary.LittleEndian.Uint32(v.val)))
	}
	return 0
}

func (p mapiProps) time(id uint16) time.Time {
	if v, ok := p[id]; ok && v.typ == ptSystime {
		return filetimeToTime(binary.LittleEndian.Uint64(v.val))
	}
	return time.Time{}
}

// tnefMessage is what a TNEF stream holds: the message's headers, its
// body, its attachments read as child documents.
type tnefMessage struct {
	meta        Metadata
	body        string
	attachments []*Document
	warnings    []string
}

// tnefAttachment gathers one attachment's attributes.
type tnefAttachment struct {
	title string
	data  []byte
	props mapiProps
}

// decodeTNEF reads a bare TNEF stream (a winmail.dat saved on its own)
// as an e-mail: its headers as the first lines, its body, its
// attachments as child documents.
func decodeTNEF(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	t, err := readTNEF(ctx, b, opts)
	if err != nil {
		return nil, err
	}
	doc := &Document{Meta: t.meta, Attachments: t.attachments, Warnings: t.warnings}
	w := newTextWriter(opts.Limits)
	w.block(headerBlock(&doc.Meta, ""))
	w.block(t.body)
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}

// readTNEF reads a TNEF stream ([MS-OXTNEF]). The MAPI properties
// (attMsgProps, attAttachment) say more than the legacy attributes and
// win over them: PR_SUBJECT over attSubject, PR_BODY over attBody, then
// PR_BODY_HTML, then PR_RTF_COMPRESSED read by the RTF reader. Each
// attachment starts at its attAttachRendData; its bytes
// (PR_ATTACH_DATA_BIN, else attAttachData) are read through the
// registry, an attached message (PR_ATTACH_DATA_OBJ, a TNEF stream of
// its own) as a TNEF child.
func readTNEF(ctx context.Context, b []byte, opts *Options) (*tnefMessage, error) {
	le := binary.LittleEndian
	// The code page (attOemCodepage) is needed by strings before it.
	ts := tnefStrings{codepage: "windows-1252"}
	if _, err := tnefAttrs(b, func(a tnefAttr) {
		if a.id == attOemCodepage && len(a.data) >= 4 {
			if l := codepageLabel(int(le.Uint32(a.data))); l != "" {
				ts.codepage = l
			}
		}
	}); err != nil {
		return nil, err
	}
	t := &tnefMessage{}
	var props mapiProps
	var subject, body, fromName, fromAddr string
	var sent time.Time
	var recips []mapiProps
	var atts []*tnefAttachment
	// readList reads a property list into p, or a table of them (the
	// recipients) into recips, up to maxTNEFRecipients rows.
	readList := func(what string, data []byte, p mapiProps, rows bool) mapiProps {
		c := &tnefCursor{b: data}
		if !rows {
			p = c.readProps(p)
		} else {
			for n := c.u32(); n > 0 && c.err == nil; n-- {
				if r := c.readProps(nil); r != nil && len(recips) < maxTNEFRecipients {
					recips = append(recips, r)
				}
			}
		}
		if c.err != nil {
			t.warnings = append(t.warnings, what+": "+c.err.Error()+" (the properties before are kept)")
		}
		return p
	}
	warnings, _ := tnefAttrs(b, func(a tnefAttr) {
		if a.level == tnefLevelAttachment {
			if a.id == attAttachRendData || len(atts) == 0 {
				atts = append(atts, &tnefAttachment{})
			}
			cur := atts[len(atts)-1]
			switch a.id {
			case attAttachTitle:
				cur.title = ts.str8(a.data)
			case attAttachData:
				cur.data = a.data
			case attAttachment:
				cur.props = readList("attachment "+strconv.Itoa(len(atts))+"'s properties", a.data, cur.props, false)
			}
			return
		}
		switch a.id {
		case attSubject:
			subject = ts.str8(a.data)
		case attBody:
			body = ts.str8(a.data)
		case attDateSent:
			// Year, month, day, hour, minute, second, weekday: the
			// sender's local time, its zone unsaid.
			if len(a.data) >= 12 && le.Uint16(a.data) > 0 {
				v := func(i int) int { return int(le.Uint16(a.data[2*i:])) }
				sent = time.Date(v(0), time.Month(v(1)), v(2), v(3), v(4), v(5), 0, time.UTC)
			}
		case attFrom:
			// A one-off triple: id, size, name length, address length,
			// the name, the address ("SMTP:a@b").
			if len(a.data) >= 8 {
				nl, al := int(le.Uint16(a.data[4:])), int(le.Uint16(a.data[6:]))
				if 8+nl+al <= len(a.data) {
					fromName = ts.str8(a.data[8 : 8+nl])
					fromAddr = ts.str8(a.data[8+nl : 8+nl+al])
					if i := strings.IndexByte(fromAddr, ':'); i >= 0 {
						fromAddr = fromAddr[i+1:]
					}
				}
			}
		case attMsgProps:
			props = readList("the message's properties", a.data, props, false)
		case attRecipTable:
			readList("the recipient table", a.data, nil, true)
		}
	})
	t.warnings = append(warnings, t.warnings...)

	m := &t.meta
	if m.Subject = ts.str(props, prSubject); m.Subject == "" {
		m.Subject = subject
	}
	m.Subject = collapseSpace(m.Subject)
	m.Title = m.Subject
	if m.From = mailbox(ts.str(props, prSenderName), firstAddress(ts.str(props, prSenderSMTP), ts.str(props, prSenderEmail))); m.From == "" {
		m.From = mailbox(fromName, firstAddress(fromAddr))
	}
	m.Author = m.From
	m.MessageID = strings.Trim(strings.TrimSpace(ts.str(props, prMessageID)), "<>")
	if m.Date = props.time(prClientSubmitTime); m.Date.IsZero() {
		m.Date = sent
	}
	for _, r := range recips {
		addRecipient(m, r.long(prRecipientType), ts.str(r, prDisplayName), ts.str(r, prSMTPAddress), ts.str(r, prEmailAddress))
	}
	if len(m.To) == 0 {
		m.To = splitDisplay(ts.str(props, prDisplayTo))
	}
	if len(m.Cc) == 0 {
		m.Cc = splitDisplay(ts.str(props, prDisplayCc))
	}

	if p := ts.str(props, prBody); strings.TrimSpace(p) != "" {
		body = p
	}
	t.body = strings.ReplaceAll(body, "\r\n", "\n")
	if strings.TrimSpace(t.body) == "" {
		html := props.bin(prHTML)
		if s := ts.str(props, prHTML); html == nil && s != "" {
			html = []byte(s)
		}
		text, warn, err := richBody(ctx, html, props.bin(prRTFCompressed), opts)
		if err != nil {
			return nil, err
		}
		t.body = text
		if warn != "" {
			t.warnings = append(t.warnings, warn)
		}
	}

	budget := opts.Limits.withDefaults().MaxUnpacked
	for _, a := range atts {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		name := ts.str(a.props, prAttachLongName)
		for _, alt := range []string{ts.str(a.props, prAttachFilename), a.title, ts.str(a.props, prDisplayName)} {
			if name == "" {
				name = alt
			}
		}
		name = path.Base(strings.ReplaceAll(name, `\`, "/"))
		if name == "." || name == "/" {
			name = ""
		}
		data := a.data
		if v, ok := a.props[prAttachData]; ok {
			data = v.val
			if v.typ == ptObject {
				// An attached message: the interface id (IID_IMessage),
				// then a TNEF stream of its own.
				data = data[min(16, len(data)):]
				if name == "" {
					name = "attachment-" + strconv.Itoa(len(t.attachments)+1) + ".tnef"
				}
			}
		}
		if data == nil {
			continue // a link, or an OLE object without bytes of its own
		}
		if budget -= int64(len(data)); budget < 0 {
			return nil, fmt.Errorf("%w: the attachments hold more than %d bytes (Limits.MaxUnpacked)", ErrTooLarge, opts.Limits.withDefaults().MaxUnpacked)
		}
		if name == "" {
			name = "attachment-" + strconv.Itoa(len(t.attachments)+1)
			if exts, _ := mime.ExtensionsByType(ts.str(a.props, prAttachMime)); len(exts) > 0 {
				name += exts[0]
			}
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		t.attachments = append(t.attachments, ReadChild(ctx, opts, name, data))
	}
	return t, nil
}
