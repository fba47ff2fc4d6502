package document

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/document/internal/cfb"
)

// MAPI property ids an Outlook message is read by ([MS-OXPROPS]).
const (
	prMessageClass     = 0x001A
	prSubject          = 0x0037
	prClientSubmitTime = 0x0039
	prSenderName       = 0x0C1A
	prSenderEmail      = 0x0C1F
	prRecipientType    = 0x0C15
	prDisplayCc        = 0x0E03
	prDisplayTo        = 0x0E04
	prDeliveryTime     = 0x0E06
	prBody             = 0x1000
	prRTFCompressed    = 0x1009
	prHTML             = 0x1013
	prMessageID        = 0x1035
	prDisplayName      = 0x3001
	prEmailAddress     = 0x3003
	prAttachData       = 0x3701
	prAttachFilename   = 0x3704
	prAttachMethod     = 0x3705
	prAttachLongName   = 0x3707
	prAttachMime       = 0x370E
	prAttachContentID  = 0x3712
	prAttachmentHidden = 0x7FFE
	prSMTPAddress      = 0x39FE
	prInternetCPID     = 0x3FDE
	prMessageCodepage  = 0x3FFD
	prSenderSMTP       = 0x5D01
)

// msgStore reads the properties of one object of a .msg (the message,
// a recipient, an attachment, an embedded message): variable-size values
// each in a "__substg1.0_IIIITTTT" stream, fixed-size ones in the
// "__properties_version1.0" stream after a header of hdr bytes.
type msgStore struct {
	f        *cfb.File
	dir      string
	fixed    map[uint16][]byte // property id → 8-byte value
	codepage string
}

func newMsgStore(f *cfb.File, dir string, hdr int) *msgStore {
	s := &msgStore{f: f, dir: dir, fixed: map[uint16][]byte{}, codepage: "windows-1252"}
	if b, err := f.ReadStream(s.path("__properties_version1.0")); err == nil && len(b) >= hdr {
		for i := hdr; i+16 <= len(b); i += 16 {
			tag := binary.LittleEndian.Uint32(b[i:])
			s.fixed[uint16(tag>>16)] = b[i+8 : i+16]
		}
	}
	for _, id := range []uint16{prInternetCPID, prMessageCodepage} {
		if cp, ok := s.long(id); ok {
			if label := codepageLabel(cp); label != "" {
				s.codepage = label
				break
			}
		}
	}
	return s
}

func (s *msgStore) path(name string) string {
	if s.dir == "" {
		return name
	}
	return s.dir + "/" + name
}

func (s *msgStore) stream(id, typ uint16) ([]byte, bool) {
	b, err := s.f.ReadStream(s.path(fmt.Sprintf("__substg1.0_%04X%04X", id, typ)))
	return b, err == nil
}

// str is a string property, Unicode (PT_UNICODE) or 8-bit (PT_STRING8,
// in the message's code page), without its terminating NUL.
func (s *msgStore) str(id uint16) string {
	if b, ok := s.stream(id, 0x001F); ok {
		return strings.TrimRight(decodeUTF16LE(b), "\x00")
	}
	if b, ok := s.stream(id, 0x001E); ok {
		return strings.TrimRight(transcode(b, s.codepage), "\x00")
	}
	return ""
}

func (s *msgStore) long(id uint16) (int, bool) {
	v, ok := s.fixed[id]
	if !ok {
		return 0, false
	}
	return int(int32(binary.LittleEndian.Uint32(v))), true
}

func (s *msgStore) time(id uint16) time.Time {
	v, ok := s.fixed[id]
	if !ok {
		return time.Time{}
	}
	return filetimeToTime(binary.LittleEndian.Uint64(v))
}

// codepageLabel names a Windows code page as the charset package knows
// it; "" for one it does not.
func codepageLabel(cp int) string {
	switch {
	case cp == 65001:
		return "utf-8"
	case cp == 20127:
		return "us-ascii"
	case cp >= 1250 && cp <= 1258:
		return "windows-" + strconv.Itoa(cp)
	case cp >= 28591 && cp <= 28605:
		return "iso-8859-" + strconv.Itoa(cp-28590)
	case cp == 932:
		return "shift_jis"
	case cp == 936:
		return "gbk"
	case cp == 949:
		return "euc-kr"
	case cp == 950:
		return "big5"
	case cp == 20866:
		return "koi8-r"
	}
	return ""
}

// decodeMSG reads an Outlook message ([MS-OXMSG]) stored under dir ("" for
// the top-level message): sender, recipients, date and subject as the
// metadata and the first lines of the text, as the e-mail reader writes
// them, then the plain-text body (else the HTML body converted, else the
// compressed RTF body read by the RTF reader), and each
// attachment as a child document; an attached message is read as one.
func decodeMSG(ctx context.Context, f *cfb.File, dir string, opts *Options) (*Document, error) {
	hdr := 32
	if dir != "" {
		hdr = 24 // an embedded message's properties header is shorter
	}
	s := newMsgStore(f, dir, hdr)
	doc := &Document{}
	m := &doc.Meta
	m.Subject = s.str(prSubject)
	m.Title = m.Subject
	m.From = mailbox(s.str(prSenderName), firstAddress(s.str(prSenderSMTP), s.str(prSenderEmail)))
	m.Author = m.From
	m.MessageID = strings.Trim(strings.TrimSpace(s.str(prMessageID)), "<>")
	if m.Date = s.time(prClientSubmitTime); m.Date.IsZero() {
		m.Date = s.time(prDeliveryTime)
	}
	children := f.Children(dir)
	for _, e := range children {
		if e.Type != cfb.TypeStorage || !strings.HasPrefix(strings.ToLower(e.Name), "__recip_version1.0_") {
			continue
		}
		r := newMsgStore(f, e.Path, 8)
		t, _ := r.long(prRecipientType)
		addRecipient(m, t, r.str(prDisplayName), r.str(prSMTPAddress), r.str(prEmailAddress))
	}
	if len(m.To) == 0 {
		m.To = splitDisplay(s.str(prDisplayTo))
	}
	if len(m.Cc) == 0 {
		m.Cc = splitDisplay(s.str(prDisplayCc))
	}
	signed, smimeDir, warn, err := msgSMIME(ctx, f, s, children, opts)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		doc.Warnings = append(doc.Warnings, warn)
	}
	w := newTextWriter(opts.Limits)
	w.block(headerBlock(m, ""))
	var body string
	if signed != nil {
		if body, warn = signed.body(); warn != "" {
			doc.Warnings = append(doc.Warnings, warn)
		}
	}
	if strings.TrimSpace(body) == "" {
		body = strings.ReplaceAll(s.str(prBody), "\r\n", "\n")
	}
	if strings.TrimSpace(body) == "" {
		html, ok := s.stream(prHTML, 0x0102)
		if !ok {
			if t := s.str(prHTML); t != "" {
				html = []byte(t)
			}
		}
		rtf, _ := s.stream(prRTFCompressed, 0x0102)
		text, warn, err := richBody(ctx, html, rtf, opts)
		if err != nil {
			return nil, err
		}
		body = text
		if warn != "" {
			doc.Warnings = append(doc.Warnings, warn)
		}
	}
	w.block(body)
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	if signed != nil {
		doc.Attachments = append(doc.Attachments, signed.attachments...)
		doc.Warnings = append(doc.Warnings, signed.warnings...)
	}
	for _, e := range children {
		if e.Type != cfb.TypeStorage || !strings.HasPrefix(strings.ToLower(e.Name), "__attach_version1.0_") {
			continue
		}
		if signed != nil && e.Path == smimeDir {
			continue // read above: the signed message, no attachment
		}
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		a, err := msgAttachment(ctx, f, e.Path, len(doc.Attachments), opts)
		if err != nil {
			return nil, err
		}
		if a != nil {
			doc.Attachments = append(doc.Attachments, a)
		}
	}
	return doc, nil
}

// msgSMIME reads a signed or encrypted Outlook message ([MS-OXOSMIME]):
// its message class is IPM.Note.SMIME.MultipartSigned (clear-signed) or
// IPM.Note.SMIME (signed opaquely, or encrypted), and the message it
// carries is its attachment smime.p7m, the .msg's own body empty or a
// copy: a multipart/signed entity with its headers, or an
// application/pkcs7-mime CMS blob. That entity is walked as the e-mail
// reader walks a message, so the body, attachments and warnings are the
// signed message's; dir is the attachment's storage, which is no
// attachment then. An encrypted message is errCMSEncrypted, as an
// encrypted e-mail is. An smime.p7m that cannot be read is left to be
// read as the attachment it was before, with a warning saying why.
func msgSMIME(ctx context.Context, f *cfb.File, s *msgStore, children []*cfb.Entry, opts *Options) (signed *mimeReader, dir, warning string, err error) {
	if !isSMIMEClass(s.str(prMessageClass)) {
		return nil, "", "", nil
	}
	for _, e := range children {
		if e.Type != cfb.TypeStorage || !strings.HasPrefix(strings.ToLower(e.Name), "__attach_version1.0_") {
			continue
		}
		a := newMsgStore(f, e.Path, 8)
		mt, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(a.str(prAttachMime))), ";")
		if !strings.EqualFold(msgAttachName(a), "smime.p7m") && mt != "multipart/signed" && !pkcs7Types[mt] {
			continue
		}
		data, ok := a.stream(prAttachData, 0x0102)
		if !ok {
			continue
		}
		mr, err := readSMIMEEntity(ctx, data, opts)
		switch {
		case err == nil:
			return mr, e.Path, "", nil
		case errors.Is(err, errCMSEncrypted) || isLimitErr(err):
			return nil, "", "", err
		case context.Cause(ctx) != nil:
			return nil, "", "", context.Cause(ctx)
		}
		return nil, "", "the signed message (" + cmp.Or(msgAttachName(a), "smime.p7m") + ") could not be read, kept as an attachment: " + err.Error(), nil
	}
	return nil, "", "", nil
}

// isSMIMEClass says whether a message class is that of a signed or
// encrypted message: IPM.Note.SMIME and the classes under it
// (IPM.Note.SMIME.MultipartSigned), or an InfoPath form's class ending
// so ([MS-OXCMAIL] maps these two endings to S/MIME's two structures).
// Message classes are case-insensitive.
func isSMIMEClass(class string) bool {
	c := strings.ToLower(strings.TrimSpace(class))
	return c == "ipm.note.smime" || strings.HasPrefix(c, "ipm.note.smime.") ||
		strings.HasPrefix(c, "ipm.infopathform.") && (strings.HasSuffix(c, ".smime") || strings.HasSuffix(c, ".smime.multipartsigned"))
}

// msgAttachName is an attachment's file name as given (long, short or
// display name), without a path; "" when it has none.
func msgAttachName(a *msgStore) string {
	name := a.str(prAttachLongName)
	if name == "" {
		name = a.str(prAttachFilename)
	}
	if name == "" {
		name = a.str(prDisplayName)
	}
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" {
		name = ""
	}
	return name
}

// msgAttachment reads one attachment storage: its bytes through the
// registry (ReadChild), or an attached message read in place.
func msgAttachment(ctx context.Context, f *cfb.File, dir string, n int, opts *Options) (*Document, error) {
	a := newMsgStore(f, dir, 8)
	name := msgAttachName(a)
	if _, ok := f.Lookup(dir + fmt.Sprintf("/__substg1.0_%04X000D", prAttachData)); ok {
		// An attached message (attach method 5): a storage holding a
		// message of its own.
		if name == "" {
			name = "attachment-" + strconv.Itoa(n+1) + ".msg"
		}
		child := *opts
		child.Name, child.depth = name, opts.depth+1
		if max := opts.Limits.withDefaults().MaxDepth; child.depth > max {
			return &Document{Name: name, Err: &Error{Name: name, Err: fmt.Errorf("%w: attachments nested deeper than %d", ErrTooLarge, max)}}, nil
		}
		d, err := decodeMSG(ctx, f, dir+fmt.Sprintf("/__substg1.0_%04X000D", prAttachData), &child)
		if err != nil {
			if isLimitErr(err) {
				return nil, err
			}
			return &Document{Name: name, Err: &Error{Name: name, Format: "ole", Err: err}}, nil
		}
		d.Name, d.Format, d.MediaType = name, "ole", "application/vnd.ms-outlook"
		d.Reader = ReaderInfo{Name: "ole", Version: oleVersion}
		return d, nil
	}
	data, ok := a.stream(prAttachData, 0x0102)
	if !ok {
		return nil, nil // a link or an OLE object without bytes of its own
	}
	hidden, _ := a.long(prAttachmentHidden)
	if px, ok := pictureSize(data); ok && px < minContentPixels && hidden != 0 && a.str(prAttachContentID) != "" {
		// A picture the HTML body shows inline (a logo, a banner), as the
		// e-mail reader leaves it out; a large one is content.
		return nil, nil
	}
	if name == "" {
		name = "attachment-" + strconv.Itoa(n+1)
		if exts, _ := mime.ExtensionsByType(a.str(prAttachMime)); len(exts) > 0 {
			name += exts[0]
		}
	}
	return ReadChild(ctx, opts, name, data), nil
}

// isLimitErr reports an error that stops the whole document (a limit,
// a cancelled context) rather than one attachment.
func isLimitErr(err error) bool {
	return errors.Is(err, ErrTooLarge) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// mailbox renders a name and an address as "Name <addr>", or whichever
// of the two there is.
func mailbox(name, addr string) string {
	name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
	switch {
	case addr == "" || strings.EqualFold(name, addr):
		if name == "" {
			return addr
		}
		return name
	case name == "":
		return addr
	}
	return name + " <" + addr + ">"
}

// addRecipient files a recipient under To or Cc by its
// PR_RECIPIENT_TYPE; a Bcc recipient is left out (not part of what the
// recipients saw), as is one without name or address.
func addRecipient(m *Metadata, typ int, name string, addrs ...string) {
	who := mailbox(name, firstAddress(addrs...))
	if who == "" {
		return
	}
	switch typ & 0xF {
	case 2:
		m.Cc = append(m.Cc, who)
	case 3:
	default:
		m.To = append(m.To, who)
	}
}

// richBody reads a body kept as HTML (preferred) or as compressed RTF,
// for a message without a plain-text one; nil means absent. A body that
// cannot be read is a warning, a limit an error.
func richBody(ctx context.Context, html, rtf []byte, opts *Options) (body, warning string, err error) {
	switch {
	case html != nil:
		hd, err := htmlDocument(html, "", opts.Limits, false)
		if err != nil {
			return "", "the HTML body could not be read: " + err.Error(), nil
		}
		return hd.Text, "", nil
	case rtf != nil:
		text, err := rtfBody(ctx, rtf, opts)
		if err != nil {
			if isLimitErr(err) {
				return "", "", err
			}
			return text, "the RTF body could not be read: " + err.Error(), nil
		}
		return text, "", nil
	}
	return "", "", nil
}

// headerBlock is the first lines of a message's text: From, To, Cc,
// Date and Subject, those it has. date is the Date header as sent; ""
// writes m.Date.
func headerBlock(m *Metadata, date string) string {
	if date == "" && !m.Date.IsZero() {
		date = m.Date.Format(time.RFC1123Z)
	}
	var lines []string
	for _, h := range []struct{ k, v string }{
		{"From", m.From}, {"To", strings.Join(m.To, ", ")}, {"Cc", strings.Join(m.Cc, ", ")},
		{"Date", date}, {"Subject", m.Subject},
	} {
		if h.v != "" {
			lines = append(lines, h.k+": "+h.v)
		}
	}
	return strings.Join(lines, "\n")
}

// firstAddress is the first argument that looks like an SMTP address (an
// Exchange sender has an X.500 path in its e-mail property).
func firstAddress(list ...string) string {
	for _, a := range list {
		if strings.Contains(a, "@") {
			return a
		}
	}
	return ""
}

// splitDisplay splits a display list ("A; B") into names.
func splitDisplay(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
