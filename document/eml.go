package document

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

func init() {
	Register(Format{
		Name:       "eml",
		MediaType:  "message/rfc822",
		Extensions: []string{".eml", ".msg822", ".mht", ".mhtml"},
		// 5: HTML bodies through html/5 (a list item's code and tables
		// keep their lines); a part whose type has no subtype ("text")
		// is text/plain, the body, not an attachment; the parts after
		// one whose headers cannot be read are read.
		// 4: HTML bodies through html/4 (html/3 and 4: line breaks
		// between Chinese or Japanese characters are no spaces).
		// 3: a winmail.dat's body and attachments (TNEF) are the message's;
		// S/MIME: signatures are no attachments, signed bodies and .p7m
		// files are read from inside; a large picture the HTML body shows
		// inline (a photographed receipt) is an attachment.
		// 2: text attachments in their declared charset.
		Version:    "5",
		Match:      matchEML,
		MatchNamed: matchEMLNamed,
		Priority:   60,
		Decoder:    DecoderFunc(decodeEML),
	})
}

// mailHeaders are header fields that, two or more together at the top,
// make a message rather than a text that happens to start with "Note:".
var mailHeaders = map[string]bool{
	"from": true, "to": true, "cc": true, "subject": true, "date": true, "message-id": true, "received": true,
	"return-path": true, "mime-version": true, "content-type": true, "delivered-to": true, "reply-to": true,
	"sender": true, "x-mailer": true, "in-reply-to": true, "references": true, "dkim-signature": true, "user-agent": true,
}

// matchEML recognises an RFC 5322 message: a header block whose fields
// include at least two of the usual e-mail fields.
func matchEML(head []byte, _ io.ReaderAt, _ int64) bool {
	known, _ := mailHeaderBlock(head)
	return known >= 2
}

// matchEMLNamed is eml's Format.MatchNamed: a file named .eml whose
// header block holds one usual field and ends in the blank line before
// a body. A MIME entity saved on its own (the parts of a message, as a
// mail library or a gateway writes them) starts with its Content-Type
// and nothing else.
func matchEMLNamed(head []byte) bool {
	known, ended := mailHeaderBlock(head)
	return known >= 1 && ended
}

// mailHeaderBlock reads the header block at the head of an input: how many
// of its fields are usual e-mail fields (0 when a line is no header field)
// and whether the blank line that ends it is within the head.
func mailHeaderBlock(head []byte) (known int, ended bool) {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	for line := range bytes.Lines(head) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return known, true
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return 0, false
		}
		if mailHeaders[strings.ToLower(string(name))] {
			known++
		}
	}
	return known, false
}

func decodeEML(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	return readMessage(ctx, b, opts)
}

// wordDecoder decodes RFC 2047 encoded words in any charset the HTML
// package knows (ISO-8859-*, Windows-125*, Shift_JIS, GB18030, …).
var wordDecoder = &mime.WordDecoder{CharsetReader: charset.NewReaderLabel}

// readMessage reads one message: its headers as metadata and as the first
// lines of the text, the best body part (plain text preferred, else HTML
// converted), and every attachment, an attached message included, as a
// child document.
func readMessage(ctx context.Context, b []byte, opts *Options) (*Document, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	msg, err := mail.ReadMessage(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a readable e-mail header: %v", ErrCorrupt, err)
	}
	doc := &Document{}
	h := msg.Header
	m := &doc.Meta
	m.From = decodeHeader(h.Get("From"))
	m.To = addressList(h.Get("To"))
	m.Cc = addressList(h.Get("Cc"))
	m.Subject = decodeHeader(h.Get("Subject"))
	m.Title = m.Subject
	m.Author = m.From
	m.MessageID = strings.Trim(strings.TrimSpace(h.Get("Message-Id")), "<>")
	if t, err := mail.ParseDate(h.Get("Date")); err == nil {
		m.Date = t
	}
	mr := newMIMEReader(ctx, opts)
	if err := mr.part(textproto.MIMEHeader(h), msg.Body, 0); err != nil {
		return nil, err
	}
	if m.Subject == "" {
		m.Subject, m.Title = mr.tnefSubject, mr.tnefSubject
	}
	w := newTextWriter(opts.Limits)
	w.block(headerBlock(m, decodeHeader(h.Get("Date"))))
	body, warn := mr.body()
	if warn != "" {
		doc.Warnings = append(doc.Warnings, warn)
	}
	w.block(body)
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	doc.Attachments = mr.attachments
	doc.Warnings = append(doc.Warnings, mr.warnings...)
	return doc, nil
}

// newMIMEReader starts a walk with the whole unpacked budget.
func newMIMEReader(ctx context.Context, opts *Options) *mimeReader {
	return &mimeReader{ctx: ctx, opts: opts, budget: opts.Limits.withDefaults().MaxUnpacked}
}

// body is the message's body as the walk found it: the plain-text parts,
// else a winmail.dat's body, else the HTML part converted; warning says
// why an HTML body could not be read.
func (mr *mimeReader) body() (body, warning string) {
	body = mr.plain
	if strings.TrimSpace(body) == "" {
		// Outlook's rich text travels in winmail.dat, the MIME body left
		// empty: the TNEF body is the message's.
		body = mr.tnefBody
	}
	if strings.TrimSpace(body) == "" && mr.html != nil {
		hd, err := htmlDocument(mr.html, mr.htmlType, mr.opts.Limits, false)
		if err != nil {
			return body, "the HTML body could not be read: " + err.Error()
		}
		body = hd.Text
	}
	return body, ""
}

// readSMIMEEntity walks the MIME entity of a signed or encrypted message
// kept apart from the message's header, as an Outlook .msg keeps it in its
// attachment smime.p7m ([MS-OXOSMIME]): a multipart/signed entity with
// its headers (a clear-signed message), or the CMS blob of an
// application/pkcs7-mime one (signed opaquely: the MIME entity it signs
// is walked; encrypted: errCMSEncrypted). A limit or a cancelled context
// is returned as such; anything else that cannot be read is ErrCorrupt,
// for the caller to keep data as it is.
func readSMIMEEntity(ctx context.Context, data []byte, opts *Options) (*mimeReader, error) {
	corrupt := func(what string) error {
		return fmt.Errorf("%w: the signed message is not readable: %s", ErrCorrupt, what)
	}
	if !cmsPrefix(data) && !isMIMEEntity(data) {
		if d, err := decodeBase64Text(data); err == nil && cmsPrefix(d) {
			data = d
		}
	}
	depth := 0
	if cmsPrefix(data) {
		content, err := cmsContent(data)
		if err != nil {
			return nil, err
		}
		// As the e-mail reader walks an opaquely signed message: the
		// signed entity one level down.
		data, depth = content, 1
	}
	if !isMIMEEntity(data) {
		return nil, corrupt("no MIME header")
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	h, err := tp.ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return nil, corrupt(err.Error())
	}
	mr := newMIMEReader(ctx, opts)
	if err := mr.part(h, tp.R, depth); err != nil {
		return nil, err
	}
	return mr, nil
}

// decodeHeader decodes RFC 2047 words, keeping the raw value when they
// are malformed.
func decodeHeader(v string) string {
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		v = d
	}
	return collapseSpace(headerUTF8(v))
}

// addressList renders an address header as "Name <addr>" entries; a list
// that does not parse is kept as its decoded text.
func addressList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	p := mail.AddressParser{WordDecoder: wordDecoder}
	list, err := p.ParseList(v)
	if err != nil {
		return []string{decodeHeader(v)}
	}
	out := make([]string, len(list))
	defer func() {
		for i := range out {
			out[i] = headerUTF8(out[i])
		}
	}()
	for i, a := range list {
		out[i] = a.Address
		if a.Name != "" {
			out[i] = a.Name + " <" + a.Address + ">"
		}
	}
	return out
}

// headerUTF8 reads raw 8-bit header bytes (sent without encoded words,
// against the RFC but common) as UTF-8 when valid, else as Windows-1252.
func headerUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return transcode([]byte(s), "windows-1252")
}

// mimeReader walks a message's MIME tree.
type mimeReader struct {
	ctx         context.Context
	opts        *Options
	budget      int64 // bytes of decoded parts left (Limits.MaxUnpacked)
	plain       string
	html        []byte
	htmlType    string
	attachments []*Document
	warnings    []string
	// tnefBody and tnefSubject are a winmail.dat's body and subject.
	tnefBody, tnefSubject string
}

// maxMIMEDepth bounds multipart nesting: deeper is a crafted message.
const maxMIMEDepth = 32

// maxSkippedLines bounds the lines passed over after a part that cannot
// be read, looking for the next boundary (multipart reads one a call).
const maxSkippedLines = 100000

// part reads one MIME entity.
func (mr *mimeReader) part(h textproto.MIMEHeader, body io.Reader, depth int) error {
	if err := context.Cause(mr.ctx); err != nil {
		return err
	}
	if depth > maxMIMEDepth {
		return fmt.Errorf("%w: MIME parts nested deeper than %d", ErrCorrupt, maxMIMEDepth)
	}
	ct := h.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(ct)
	if err == nil && !strings.Contains(mediaType, "/") {
		// A type without a subtype ("text; charset=us-ascii", as some
		// ISPs' mailers write): syntactically invalid, so text/plain (RFC
		// 2045 §5.2, as Python's email package reads it); its parameters
		// still name the charset. It was an attachment, the body gone.
		mediaType = "text/plain"
	}
	if err != nil || ct == "" {
		mediaType, params = "text/plain", map[string]string{"charset": "us-ascii"}
		if ct != "" {
			// A malformed type with a recognisable base is still that type.
			if base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(ct)), ";"); strings.Contains(base, "/") {
				mediaType = base
			}
		}
	}
	disp, dparams, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	name = path.Base(strings.ReplaceAll(decodeHeader(name), `\`, "/"))
	if name == "." || name == "/" {
		name = ""
	}
	if mediaType == "multipart/encrypted" { // PGP/MIME
		err := fmt.Errorf("%w: it is encrypted with OpenPGP (PGP/MIME): decrypt it first (gpg --decrypt)", ErrUnsupported)
		if depth == 0 {
			return err
		}
		return mr.failed(cmp.Or(name, "encrypted.asc"), err)
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		if boundary := params["boundary"]; boundary != "" {
			return mr.multipart(mediaType, boundary, body, depth)
		}
		// Without a boundary the parts cannot be told apart: keep the text.
		mr.warnings = append(mr.warnings, mediaType+" without a boundary: read as plain text")
		mediaType, params = "text/plain", map[string]string{}
	}
	data, err := mr.decoded(h, body)
	if err != nil {
		return err
	}
	switch {
	case signatureTypes[mediaType]:
		// A signed message's signature (S/MIME, OpenPGP): not a document.
		return nil
	case pkcs7Types[mediaType] || strings.HasSuffix(strings.ToLower(name), ".p7m") && cmsPrefix(data):
		return mr.pkcs7(name, data, depth)
	}
	isAttachment := disp == "attachment" || (name != "" && disp != "inline") ||
		(!strings.HasPrefix(mediaType, "text/") && mediaType != "message/delivery-status")
	if mediaType == "text/plain" && !isAttachment {
		mr.plain = joinBody(mr.plain, transcode(data, params["charset"]))
		return nil
	}
	if mediaType == "text/html" && !isAttachment {
		if mr.html == nil {
			mr.html, mr.htmlType = data, ct
		}
		return nil
	}
	if !isAttachment && strings.HasPrefix(mediaType, "text/") {
		mr.plain = joinBody(mr.plain, transcode(data, params["charset"]))
		return nil
	}
	if px, _ := pictureSize(data); strings.HasPrefix(mediaType, "image/") && disp != "attachment" && h.Get("Content-Id") != "" && px < minContentPixels {
		// A picture the HTML body shows inline (a logo, a banner): not an
		// attachment. A large one (a receipt photographed or a scan pasted
		// into the message) is.
		return nil
	}
	if (mediaType == "application/ms-tnef" || mediaType == "application/vnd.ms-tnef" || strings.EqualFold(name, "winmail.dat")) &&
		bytes.HasPrefix(data, tnefMagic) {
		return mr.tnef(name, data)
	}
	if name == "" {
		name = "attachment-" + strconv.Itoa(len(mr.attachments)+1)
		if mediaType == "message/rfc822" {
			name += ".eml"
		} else if exts, _ := mime.ExtensionsByType(mediaType); len(exts) > 0 {
			name += exts[0]
		}
	}
	if strings.HasPrefix(mediaType, "text/") {
		data = textToUTF8(data, params["charset"])
	}
	if err := mr.opts.countAttachment(); err != nil {
		return err
	}
	mr.attachments = append(mr.attachments, ReadChild(mr.ctx, mr.opts, name, data))
	return nil
}

// signatureTypes are the media types of a signed message's detached
// signature part.
var signatureTypes = map[string]bool{
	"application/pkcs7-signature": true, "application/x-pkcs7-signature": true, "application/pgp-signature": true,
}

// pkcs7Types are the media types of an S/MIME part that wraps its
// content: signed opaquely, or encrypted.
var pkcs7Types = map[string]bool{"application/pkcs7-mime": true, "application/x-pkcs7-mime": true}

// pkcs7 reads an S/MIME part (smime.p7m) or a signed file (.p7m). Signed
// content that is a MIME entity (a message signed opaquely) is read in
// the part's place, so its body is the message's; a signed file becomes
// the attachment it wraps. An encrypted message cannot be read: at the
// top, the message's error; deeper, an attachment carrying it.
func (mr *mimeReader) pkcs7(name string, data []byte, depth int) error {
	if !cmsPrefix(data) {
		if d, err := decodeBase64Text(data); err == nil && cmsPrefix(d) {
			data = d
		}
	}
	content, err := cmsContent(data)
	switch {
	case errors.Is(err, errCMSEncrypted) && depth == 0:
		return err
	case err != nil:
		return mr.failed(cmp.Or(name, "smime.p7m"), err)
	}
	if isMIMEEntity(content) {
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(content)))
		h, err := tp.ReadMIMEHeader()
		if err == nil || len(h) > 0 {
			return mr.part(h, tp.R, depth+1)
		}
	}
	if err := mr.opts.countAttachment(); err != nil {
		return err
	}
	inner := strings.TrimSuffix(strings.TrimSuffix(name, ".p7m"), ".P7M")
	mr.attachments = append(mr.attachments, ReadChild(mr.ctx, mr.opts, cmp.Or(inner, "attachment-"+strconv.Itoa(len(mr.attachments)+1)), content))
	return nil
}

// isMIMEEntity says whether b starts with a MIME header field, as the
// content of an opaquely signed message does.
func isMIMEEntity(b []byte) bool {
	line, _, _ := bytes.Cut(b[:min(len(b), 200)], []byte("\n"))
	field, _, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return false
	}
	switch strings.ToLower(string(field)) {
	case "content-type", "content-transfer-encoding", "mime-version", "content-disposition":
		return true
	}
	return false
}

// failed keeps an attachment that cannot be read as one carrying the
// reason, so that it is reported rather than lost.
func (mr *mimeReader) failed(name string, err error) error {
	if err := mr.opts.countAttachment(); err != nil {
		return err
	}
	mr.attachments = append(mr.attachments, &Document{Name: name, Err: &Error{Name: name, Err: err}})
	return nil
}

// tnef reads a winmail.dat part (TNEF, sent by Outlook and Exchange):
// its attachments become the message's own, its body stands in for an
// empty MIME body. One that cannot be read stays an attachment that
// carries the reason.
func (mr *mimeReader) tnef(name string, data []byte) error {
	if name == "" {
		name = "winmail.dat"
	}
	t, err := readTNEF(mr.ctx, data, mr.opts)
	if err != nil {
		if ctxErr := context.Cause(mr.ctx); ctxErr != nil {
			return ctxErr
		}
		mr.attachments = append(mr.attachments, &Document{Name: name, Err: &Error{Name: name, Format: "tnef", Err: err}})
		return nil
	}
	mr.attachments = append(mr.attachments, t.attachments...)
	mr.tnefBody = joinBody(mr.tnefBody, t.body)
	if mr.tnefSubject == "" {
		mr.tnefSubject = t.meta.Subject
	}
	for _, w := range t.warnings {
		mr.warnings = append(mr.warnings, name+": "+w)
	}
	return nil
}

// textToUTF8 gives a text attachment the charset its MIME part declares:
// the part's bytes carry none of their own (a .txt or .csv in ISO-8859-1
// would be refused as not UTF-8, an HTML file without <meta charset> read
// as Windows-1252), so they are converted to UTF-8 behind a byte-order
// mark, which the text, CSV and HTML readers all honour above any charset
// the content names. The converted bytes are the attachment's original:
// read again on their own they give the same text. Without a charset, or
// with UTF-8 or US-ASCII, the bytes are kept as sent.
func textToUTF8(data []byte, label string) []byte {
	label = strings.ToLower(strings.Trim(strings.TrimSpace(label), `"`))
	switch label {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return data
	}
	if _, _, _, ok := bomOf(data); ok {
		return data // a byte-order mark says more than the label
	}
	if e, _ := charset.Lookup(label); e != nil {
		return append([]byte("\xef\xbb\xbf"), transcode(data, label)...)
	}
	return data
}

// multipart reads a multipart entity: of an alternative, the plain part
// is kept for the body and an HTML part only when there is no plain one.
func (mr *mimeReader) multipart(mediaType, boundary string, body io.Reader, depth int) error {
	r := multipart.NewReader(body, boundary)
	skipped := 0 // lines passed over since a part that could not be read
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || skipped >= maxSkippedLines {
				// A truncated message keeps what was read so far.
				mr.warnings = append(mr.warnings, fmt.Sprintf("%s: %v (the message is truncated or malformed; the parts before are kept)", mediaType, err))
				return nil
			}
			// A part whose headers cannot be read (a line without a
			// colon, from a broken mailer) is skipped: each call reads on,
			// a line at a time, to the next boundary, so the parts after it
			// (the invoice attached after it) are still read. They were lost.
			if err := context.Cause(mr.ctx); err != nil {
				return err
			}
			if skipped == 0 {
				mr.warnings = append(mr.warnings, fmt.Sprintf("%s: a part skipped: %v (the parts after it are read)", mediaType, err))
			}
			skipped++
			continue
		}
		skipped = 0
		err = mr.part(p.Header, p, depth+1)
		p.Close()
		if err != nil {
			return err
		}
	}
}

// decoded undoes a part's transfer encoding within the unpacked budget.
func (mr *mimeReader) decoded(h textproto.MIMEHeader, body io.Reader) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, &base64Cleaner{r: body})
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(body, mr.budget+1))
	mr.budget -= n
	if mr.budget < 0 {
		return nil, fmt.Errorf("%w: the message's parts decode to more than %d bytes (Limits.MaxUnpacked)", ErrTooLarge, mr.opts.Limits.withDefaults().MaxUnpacked)
	}
	if err != nil {
		mr.warnings = append(mr.warnings, "a part could not be fully decoded: "+err.Error())
	}
	return buf.Bytes(), nil
}

// base64Cleaner drops what is not base64 (line breaks, stray spaces) so a
// sloppily wrapped attachment still decodes.
type base64Cleaner struct{ r io.Reader }

func (c *base64Cleaner) Read(p []byte) (int, error) {
	for {
		n, err := c.r.Read(p)
		j := 0
		for _, b := range p[:n] {
			if b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '+' || b == '/' || b == '=' {
				p[j] = b
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}

// transcode converts text in the named charset to UTF-8; an unknown
// label is read as UTF-8 when valid, else as Windows-1252.
func transcode(b []byte, label string) string {
	label = strings.ToLower(strings.TrimSpace(label))
	if label == "" || label == "us-ascii" || label == "utf-8" || label == "utf8" {
		if s := string(b); strings.ToValidUTF8(s, "") == s {
			return s
		}
		label = "windows-1252"
	}
	r, err := charset.NewReaderLabel(label, bytes.NewReader(b))
	if err != nil {
		r, _ = charset.NewReaderLabel("windows-1252", bytes.NewReader(b))
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(out)
}

func joinBody(a, b string) string {
	b = strings.ReplaceAll(b, "\r\n", "\n")
	if strings.TrimSpace(a) == "" {
		return b
	}
	return strings.TrimRight(a, "\n") + "\n\n" + b
}
