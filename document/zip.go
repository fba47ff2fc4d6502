package document

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// zipMagic starts every zip-based format (OOXML, ODF, EPUB).
var zipMagic = []byte("PK\x03\x04")

// ratioFloor is how many bytes a part, or a gzip or bzip2 stream
// (NewInflateReader), may inflate to before MaxRatio is checked: a tiny
// part of repeated XML may legitimately compress 1000:1, a bomb only
// matters once it is large.
const ratioFloor = 1 << 20

// archive is a zip container whose parts are read within Limits: the bytes
// inflated are counted as they come out, never trusted from the headers.
type archive struct {
	zr       *zip.Reader
	lim      Limits
	unpacked int64
	byName   map[string]*zip.File // lower-cased, slash-cleaned names
}

// openArchive opens r as a zip; a damaged one is ErrCorrupt.
func openArchive(r io.ReaderAt, size int64, lim Limits) (*archive, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%w: not a readable zip container: %v", ErrCorrupt, err)
	}
	a := &archive{zr: zr, lim: lim.withDefaults(), byName: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		a.byName[partKey(f.Name)] = f
	}
	return a, nil
}

// partKey normalises a part name: OOXML part names are case-insensitive and
// relationship targets may carry a leading slash.
func partKey(name string) string {
	return strings.ToLower(strings.TrimPrefix(path.Clean("/"+name), "/"))
}

// has reports whether the container holds the part.
func (a *archive) has(name string) bool { _, ok := a.byName[partKey(name)]; return ok }

// read returns a part's bytes within the limits of open.
func (a *archive) read(ctx context.Context, name string) ([]byte, error) {
	rc, err := a.open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// open streams a part, so that a large sheet is parsed as it inflates and
// never held whole. Reading fails with ErrBomb once the part inflates past
// MaxRatio times its stored size or all parts together past MaxUnpacked,
// counted as the bytes come out (the sizes in the headers are not
// trusted); a missing part is ErrCorrupt.
func (a *archive) open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	f, ok := a.byName[partKey(name)]
	if !ok {
		return nil, fmt.Errorf("%w: %s", errPartMissing, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: part %s: %v", ErrCorrupt, name, err)
	}
	perPart := max(max(int64(f.CompressedSize64), 1)*a.lim.MaxRatio, ratioFloor)
	return &partReader{rc: rc, a: a, f: f, limit: perPart}, nil
}

// partReader counts a part's inflated bytes against its own limit and the
// container's.
type partReader struct {
	rc    io.ReadCloser
	a     *archive
	f     *zip.File
	n     int64
	limit int64
}

func (p *partReader) Read(b []byte) (int, error) {
	n, err := p.rc.Read(b)
	p.n += int64(n)
	p.a.unpacked += int64(n)
	switch {
	case p.a.unpacked > p.a.lim.MaxUnpacked:
		return n, fmt.Errorf("%w: the parts inflate past %d bytes in all (Limits.MaxUnpacked)", ErrBomb, p.a.lim.MaxUnpacked)
	case p.n > p.limit:
		return n, fmt.Errorf("%w: part %s inflates more than %d times its stored %d bytes (Limits.MaxRatio)", ErrBomb, p.f.Name, p.a.lim.MaxRatio, p.f.CompressedSize64)
	case err != nil && err != io.EOF:
		return n, fmt.Errorf("%w: part %s: %v", ErrCorrupt, p.f.Name, err)
	}
	return n, err
}

func (p *partReader) Close() error { return p.rc.Close() }

// errPartMissing: a part a format needs is not in the container.
var errPartMissing = fmt.Errorf("%w: a required part is missing", ErrCorrupt)

// zipMatch opens a container for Match, nil when it is not a zip.
func zipMatch(head []byte, r io.ReaderAt, size int64) *archive {
	if !bytes.HasPrefix(head, zipMagic) || r == nil {
		return nil
	}
	a, err := openArchive(r, size, Limits{MaxUnpacked: 4 << 20})
	if err != nil {
		return nil
	}
	return a
}

// odfMimetype returns the media type an ODF or EPUB container names in its
// first, stored "mimetype" entry, "" when there is none.
func odfMimetype(ctx context.Context, a *archive) string {
	if a == nil || !a.has("mimetype") {
		return ""
	}
	b, err := a.read(ctx, "mimetype")
	if err != nil || len(b) > 200 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// resolvePart resolves a relationship target relative to the part that
// holds the relationship (OOXML) or the package document (EPUB).
func resolvePart(from, target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	if i := strings.IndexAny(target, "#?"); i >= 0 {
		target = target[:i]
	}
	return strings.TrimPrefix(path.Join(path.Dir(from), unescapePath(target)), "/")
}

// unescapePath undoes %-escapes in a URI path, keeping it when malformed.
func unescapePath(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, ok := unhex2(s[i+1], s[i+2]); ok {
				b.WriteByte(v)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex2(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		case 'A' <= c && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}

func init() {
	Register(Format{
		Name:       "zip",
		MediaType:  "application/zip",
		Extensions: []string{".zip"},
		Version:    "2", // 2: hidden files and macOS's metadata skipped
		// Any zip the specific formats did not claim, and a damaged one.
		Match:    func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, zipMagic) },
		Priority: 10,
		Decoder:  DecoderFunc(decodeZip),
	})
}

// decodeZip reads a plain zip archive as a list of files: each file is a
// child document read by its own format (a zip of invoices yields one
// document per invoice), the archive's text is the list of its files.
// Hidden files and macOS's metadata are skipped (skippedEntry).
func decodeZip(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	a, err := openArchive(r, size, opts.Limits)
	if err != nil {
		return nil, err
	}
	doc := &Document{Archive: true}
	w := newTextWriter(opts.Limits)
	for _, f := range a.zr.File {
		if f.FileInfo().IsDir() || skippedEntry(f.Name) {
			continue
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		b, err := a.read(ctx, f.Name)
		if err != nil {
			return nil, err
		}
		doc.Attachments = append(doc.Attachments, ReadChild(ctx, opts, f.Name, b))
		w.line(f.Name)
	}
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}
