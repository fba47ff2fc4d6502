package document

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"net/textproto"
	"path"
	"strings"

	"github.com/extractq/extractq/document/internal/cfb"
)

// What an OOXML package holds besides its own text: parts imported in
// place (a WordprocessingML altChunk, as "export to Word" web apps write
// their whole document) and embedded objects (an Excel table pasted into a
// Word report or a slide, a file dropped in as an icon), whose body shows
// only a preview picture.

// contentTypes is a package's [Content_Types].xml: the media type of each
// part, by its own Override or by its extension's Default.
type contentTypes struct {
	byExt, byPart map[string]string // lower-cased extension / part key → media type
}

// readContentTypes reads [Content_Types].xml; a damaged one types nothing
// (best effort: the caller falls back to the part's bytes).
func readContentTypes(ctx context.Context, a *archive) contentTypes {
	ct := contentTypes{byExt: map[string]string{}, byPart: map[string]string{}}
	b, err := a.read(ctx, "[Content_Types].xml")
	if err != nil {
		return ct
	}
	_ = eachStart(b, "[Content_Types].xml", func(e xml.StartElement) {
		switch e.Name.Local {
		case "Default":
			ct.byExt[strings.ToLower(attr(e, "Extension"))] = attr(e, "ContentType")
		case "Override":
			ct.byPart[partKey(attr(e, "PartName"))] = attr(e, "ContentType")
		}
	})
	return ct
}

// of is the media type of a part, lower-cased and without parameters; ""
// when the package does not say.
func (ct contentTypes) of(part string) string {
	t, ok := ct.byPart[partKey(part)]
	if !ok {
		t = ct.byExt[strings.ToLower(strings.TrimPrefix(path.Ext(part), "."))]
	}
	if mt, _, err := mime.ParseMediaType(t); err == nil {
		return strings.ToLower(mt)
	}
	return strings.ToLower(strings.TrimSpace(t))
}

// errChunkDepth: an altChunk nested past Limits.MaxDepth is left out.
var errChunkDepth = errors.New("imported parts (altChunk) nested deeper than Limits.MaxDepth")

// altChunkText reads an imported part (w:altChunk) to the text Word shows
// in its place, by the part's content type: HTML and XHTML whole (as an
// e-mail's HTML body, not a main-content pick: the chunk is all the
// author wrote), MHT through the e-mail reader, RTF, plain text, a whole
// WordprocessingML package through this reader. The chunk's bytes count
// against Limits.MaxUnpacked as any part's; opts is the document's, the
// chunk is read one level deeper. The document returned carries the
// chunk's text, and a nested package's attachments and warnings.
func altChunkText(ctx context.Context, a *archive, part, ctype string, opts *Options) (*Document, error) {
	child := *opts
	child.depth = opts.depth + 1
	if child.depth > child.Limits.withDefaults().MaxDepth {
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, errChunkDepth)
	}
	b, err := a.read(ctx, part)
	if err != nil {
		return nil, err
	}
	switch ctype {
	case "text/html", "application/xhtml+xml":
		return htmlDocument(b, "", child.Limits, false)
	case "message/rfc822", "multipart/related":
		return mhtDocument(ctx, b, &child)
	case "application/rtf", "text/rtf":
		return decodeRTF(ctx, bytes.NewReader(b), int64(len(b)), &child)
	case "text/plain":
		text, _, err := decodeTextBytes(b, child.Transcode)
		if errors.Is(err, ErrEmpty) {
			err = nil
		}
		return &Document{Text: text}, err
	}
	// A whole package (wordprocessingml…main+xml, as Word and docx4j type
	// a .docx chunk) or a type the package does not say: read by content.
	child.Name, child.Format = path.Base(part), ""
	return Read(ctx, bytes.NewReader(b), int64(len(b)), child)
}

// mhtDocument is an MHT chunk's (a MIME message of the page and its
// pictures) body, HTML converted whole; its pictures are not documents.
func mhtDocument(ctx context.Context, b []byte, opts *Options) (*Document, error) {
	b = bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), "\r\n")
	msg, err := mail.ReadMessage(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a readable MHT header: %v", ErrCorrupt, err)
	}
	mr := newMIMEReader(ctx, opts)
	if err := mr.part(textproto.MIMEHeader(msg.Header), msg.Body, 0); err != nil {
		return nil, err
	}
	body, warn := mr.body()
	if warn != "" {
		return nil, fmt.Errorf("%w: %s", ErrCorrupt, warn)
	}
	return &Document{Text: body, Warnings: mr.warnings}, nil
}

// Relationship types of embedded objects: an OOXML or other file kept as
// it is (package), or an OLE object's compound file (oleObject).
const (
	relPackage   = "/package"
	relOLEObject = "/oleObject"
)

// embeddedParts lists the embedded objects the relationships of the
// document's content parts (a Word body, a sheet, a slide) name, each
// once, in order. A chart's own workbook (related from the chart part) is
// not among them: the chart's series are already read from its cache.
func embeddedParts(a *archive, rels ...[]rel) []string {
	var out []string
	seen := map[string]bool{}
	for _, rs := range rels {
		for _, r := range rs {
			if r.External || !(strings.HasSuffix(r.Type, relPackage) || strings.HasSuffix(r.Type, relOLEObject)) {
				continue
			}
			if k := partKey(r.Target); !seen[k] && a.has(r.Target) {
				seen[k] = true
				out = append(out, r.Target)
			}
		}
	}
	return out
}

// readEmbedded reads each embedded object as a child document: a package
// (.xlsx, .docx, .pdf…) as itself, named by its part's base name; an OLE
// object by what its compound file holds (oleObjectFile), a packed file
// under its own name, anything else under the part's with the extension
// of what it was read as (oleObject1.xls). One whose part
// cannot be read is a child with its error; a limit stops the document.
func readEmbedded(ctx context.Context, a *archive, parts []string, opts *Options) ([]*Document, error) {
	var out []*Document
	for _, part := range parts {
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		name := path.Base(part)
		b, err := a.read(ctx, part)
		if err != nil {
			if isLimitErr(err) || errors.Is(err, ErrBomb) {
				return nil, err
			}
			out = append(out, &Document{Name: name, Err: &Error{Name: name, Err: err}})
			continue
		}
		c, err := embeddedChild(ctx, name, b, opts)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// embeddedChild reads one embedded object's bytes as a child document
// named name: an OLE object by what its compound file holds
// (oleObjectFile), a packed file under its own name, anything else under
// name, given the extension of what it was read as when name has none or
// ".bin" (oleObject1.bin holding a workbook is oleObject1.xls). An
// object of no kind read here is nil; the error is a limit's.
func embeddedChild(ctx context.Context, name string, b []byte, opts *Options) (*Document, error) {
	if bytes.HasPrefix(b, oleMagic) {
		fname, data, ok, err := oleObjectFile(b, opts.Limits)
		if err != nil {
			if isLimitErr(err) {
				return nil, err
			}
			return &Document{Name: name, Err: &Error{Name: name, Err: err}}, nil
		}
		if !ok {
			// An object of no kind read here (an equation, a drawing):
			// its preview picture is all there is.
			return nil, nil
		}
		if data != nil {
			name, b = cmpName(fname, name), data
		}
	}
	c := ReadChild(ctx, opts, name, b)
	if ext, own := kindExt(c), path.Ext(c.Name); ext != "" && (own == "" || strings.EqualFold(own, ".bin")) {
		// oleObject1.bin holding a workbook is the workbook: named so,
		// as LibreOffice names the packages it embeds (oleObject1.xlsx).
		c.Name = strings.TrimSuffix(c.Name, own) + ext
		if e, ok := c.Err.(*Error); ok {
			e.Name = c.Name
		}
	}
	return c, nil
}

// kindExt is the extension of what an OLE object held, by the format
// that read it; "" when unknown.
func kindExt(d *Document) string {
	switch d.Format {
	case "docx", "xlsx", "pptx", "pdf", "odt", "ods", "odp":
		return "." + d.Format
	}
	switch d.MediaType {
	case "application/msword":
		return ".doc"
	case "application/vnd.ms-excel":
		return ".xls"
	case "application/vnd.ms-powerpoint":
		return ".ppt"
	}
	return ""
}

// cmpName is the first usable base name of the candidates.
func cmpName(names ...string) string {
	for _, n := range names {
		n = strings.TrimSpace(strings.ReplaceAll(n, `\`, "/"))
		if b := path.Base(n); n != "" && b != "." && b != "/" {
			return b
		}
	}
	return ""
}

// oleObjectFile says what an embedded OLE object (oleObject*.bin) holds:
// a file packed by the Packager ("\x01Ole10Native": its name and bytes),
// an OOXML package ("Package" stream, how Office embeds an .xlsx as an
// OLE object), a PDF (Acrobat's "CONTENTS"), an OpenDocument package
// ("package_stream", how LibreOffice exports an object of its own that
// has no Office counterpart, a chart in a .doc), or a legacy Word, Excel or
// PowerPoint binary, which is the compound file itself (data nil: read
// the object's own bytes). ok is false for any other object.
func oleObjectFile(b []byte, lim Limits) (name string, data []byte, ok bool, err error) {
	f, err := cfb.Open(bytes.NewReader(b), int64(len(b)), cfb.Limits{MaxRead: lim.withDefaults().MaxUnpacked})
	if err != nil {
		return "", nil, false, cfbErr("the embedded object", err)
	}
	return oleStorageFile(f, "")
}

// oleStorageFile is oleObjectFile for the object storage at dir of an
// open compound file ("" its root; "ObjectPool/_1234" an object in a Word
// .doc): for a legacy binary, data is nil and the storage is the file.
func oleStorageFile(f *cfb.File, dir string) (name string, data []byte, ok bool, err error) {
	at := func(n string) string {
		if dir == "" {
			return n
		}
		return dir + "/" + n
	}
	has := func(n string) bool { e, ok := f.Lookup(at(n)); return ok && e.Type == cfb.TypeStream }
	switch {
	case has("\x01Ole10Native"):
		s, err := f.ReadStream(at("\x01Ole10Native"))
		if err != nil {
			return "", nil, false, cfbErr("the embedded object's Ole10Native stream", err)
		}
		name, data, err := parseOle10Native(s)
		if err != nil {
			return "", nil, false, err
		}
		return name, data, true, nil
	case has("Package"), has("CONTENTS"), has("package_stream"):
		stream := "Package"
		for _, n := range []string{"CONTENTS", "package_stream"} {
			if !has(stream) {
				stream = n
			}
		}
		s, err := f.ReadStream(at(stream))
		if err != nil {
			return "", nil, false, cfbErr("the embedded object's "+stream+" stream", err)
		}
		return "", s, true, nil
	case has("WordDocument"), has("Workbook"), has("PowerPoint Document"):
		return "", nil, true, nil
	}
	return "", nil, false, nil
}

// parseOle10Native reads an OLENativeStream ([MS-OLEDS] 2.3.6): its size,
// then, for the Packager's objects, a 2-byte flag, the label (the file
// name) and the source path, NUL-terminated ANSI strings, 4 bytes of
// flags, the length and bytes of a temporary path, and the file's size
// and bytes. A stream not in that shape (another server's native data)
// is its data whole, without a name.
func parseOle10Native(s []byte) (name string, data []byte, err error) {
	le := binary.LittleEndian
	if len(s) < 4 {
		return "", nil, fmt.Errorf("%w: an Ole10Native stream of %d bytes", ErrCorrupt, len(s))
	}
	total := int(le.Uint32(s))
	native := s[4:]
	if total >= 0 && total < len(native) {
		native = native[:total]
	}
	p := native
	cstr := func() (string, bool) {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			return "", false
		}
		v := transcode(p[:i], "windows-1252")
		p = p[i+1:]
		return v, true
	}
	u32 := func() (int, bool) {
		if len(p) < 4 {
			return 0, false
		}
		v := int(le.Uint32(p))
		p = p[4:]
		return v, v >= 0
	}
	parsed := func() bool {
		if len(p) < 2 {
			return false
		}
		p = p[2:]
		label, ok1 := cstr()
		src, ok2 := cstr()
		if !ok1 || !ok2 || len(p) < 4 {
			return false
		}
		p = p[4:]
		n, ok := u32()
		if !ok || n > len(p) {
			return false
		}
		p = p[n:]
		size, ok := u32()
		if !ok || size > len(p) {
			return false
		}
		name, data = cmpName(label, src), p[:size]
		return true
	}
	if parsed() {
		return name, data, nil
	}
	return "", native, nil
}
