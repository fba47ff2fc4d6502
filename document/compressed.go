package document

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Compressed files and tar archives: what buckets and exports hold (a
// mailbox's messages as .eml.gz, a day's reports as .tar.gz, logs as
// .txt.bz2). A gzip or bzip2 file reads as the file it compresses, by that
// file's own format (like a .p7m); a tar archive, compressed or not, reads
// as a list of its files, each a child document (like a zip). Decompressed
// bytes are counted as they come out, never trusted from a header: a
// compressed file may inflate to Limits.MaxBytes (the largest document)
// and Limits.MaxRatio times its size; a tar's files together to
// Limits.MaxUnpacked.

func init() {
	Register(Format{Name: "gzip", MediaType: "application/gzip", Extensions: []string{".gz", ".gzip", ".tgz"}, Version: "1",
		// The magic and the deflate method byte, the only one defined.
		Match:   func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, []byte("\x1f\x8b\x08")) },
		Decoder: DecoderFunc(decodeGzip)})
	Register(Format{Name: "bzip2", MediaType: "application/x-bzip2", Extensions: []string{".bz2", ".tbz2", ".tbz"}, Version: "1",
		Match:   isBzip2,
		Decoder: DecoderFunc(decodeBzip2)})
	Register(Format{Name: "tar", MediaType: "application/x-tar", Extensions: []string{".tar"}, Version: "1",
		Match:   func(head []byte, _ io.ReaderAt, _ int64) bool { return isTar(head) },
		Decoder: DecoderFunc(decodeTar)})
}

// isBzip2 matches "BZh", the block size digit and the magic of the first
// block (or of the end of an empty stream): three letters alone begin
// ordinary text.
func isBzip2(head []byte, _ io.ReaderAt, _ int64) bool {
	if len(head) < 10 || string(head[:3]) != "BZh" || head[3] < '1' || head[3] > '9' {
		return false
	}
	block := string(head[4:10])
	return block == "\x31\x41\x59\x26\x53\x59" || block == "\x17\x72\x45\x38\x50\x90"
}

// isTar matches a POSIX (ustar, pax) or GNU tar header: "ustar" at offset
// 257 and a header checksum that adds up. Old v7 archives, which have no
// magic, are not recognised.
func isTar(head []byte) bool {
	if len(head) < 512 || string(head[257:262]) != "ustar" {
		return false
	}
	var sum int64
	for i, c := range head[:512] {
		if i >= 148 && i < 156 {
			c = ' ' // the checksum field counts as spaces
		}
		sum += int64(c)
	}
	field := strings.TrimRight(strings.TrimSpace(string(bytes.TrimRight(head[148:156], "\x00"))), "\x00 ")
	var want int64
	if _, err := fmt.Sscanf(field, "%o", &want); err != nil {
		return false
	}
	return want == sum
}

func decodeGzip(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	zr, err := NewInflateReader(io.NewSectionReader(r, 0, size), "gzip", size, opts.Limits)
	if err != nil {
		return nil, err
	}
	// The name gzip stored (gzip -N, the default), else the file's own
	// without .gz; a .tgz is a .tar.
	name := path.Base(zr.Name())
	if zr.Name() == "" {
		name = trimExt(opts.Name, ".gz", ".gzip")
		if n, ok := strings.CutSuffix(strings.ToLower(name), ".tgz"); ok {
			name = name[:len(n)] + ".tar"
		}
	}
	return decompressed(ctx, zr, name, "gzip", opts)
}

func decodeBzip2(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	name := trimExt(opts.Name, ".bz2")
	if n, ok := strings.CutSuffix(strings.ToLower(name), ".tbz2"); ok {
		name = name[:len(n)] + ".tar"
	} else if n, ok := strings.CutSuffix(strings.ToLower(name), ".tbz"); ok {
		name = name[:len(n)] + ".tar"
	}
	zr, err := NewInflateReader(io.NewSectionReader(r, 0, size), "bzip2", size, opts.Limits)
	if err != nil {
		return nil, err
	}
	return decompressed(ctx, zr, name, "bzip2", opts)
}

// trimExt removes the first of exts that name ends with, in any case.
func trimExt(name string, exts ...string) string {
	for _, ext := range exts {
		if len(name) > len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			return name[:len(name)-len(ext)]
		}
	}
	return name
}

// decompressed reads what a compressed file holds: a tar archive as its
// list of files, streamed; anything else, whole, as the document it is.
// zr is bounded by MaxRatio already (NewInflateReader).
func decompressed(ctx context.Context, zr *InflateReader, name, kind string, opts *Options) (*Document, error) {
	lim := opts.Limits.withDefaults()
	br := bufio.NewReaderSize(zr, 64<<10)
	head, err := br.Peek(512)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if isTar(head) {
		return readTar(ctx, br, opts)
	}
	// A document is at most MaxBytes, compressed or not.
	b, err := io.ReadAll(io.LimitReader(br, lim.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: the %s file decompresses to more than %d bytes, the limit (raise the limit, or split the document)", ErrTooLarge, kind, lim.MaxBytes)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: the %s file decompresses to nothing", ErrEmpty, kind)
	}
	inner := ReadChild(ctx, opts, name, b)
	if inner.Err != nil {
		return nil, fmt.Errorf("the compressed file: %w", inner.Err)
	}
	return inner, nil
}

func decodeTar(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	return readTar(ctx, bufio.NewReader(io.NewSectionReader(r, 0, size)), opts)
}

// readTar reads a tar archive as a list of files, each a child document
// read by its own format; the archive's text is the list. Directories,
// links and special files are not documents; hidden files and macOS's
// AppleDouble companions (._name, __MACOSX/) are skipped, as in a folder.
func readTar(ctx context.Context, r io.Reader, opts *Options) (*Document, error) {
	lim := opts.Limits.withDefaults()
	tr := tar.NewReader(r)
	doc := &Document{Format: "tar", MediaType: "application/x-tar", Archive: true}
	w := newTextWriter(opts.Limits)
	var unpacked int64
	for {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrBomb) || errors.Is(err, ErrCorrupt) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: the tar archive is damaged after %d files: %v", ErrCorrupt, len(doc.Attachments), err)
		}
		if h.Typeflag != tar.TypeReg || skippedEntry(h.Name) {
			continue
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Size > lim.MaxBytes {
			doc.Attachments = append(doc.Attachments, &Document{Name: name, Err: &Error{Name: name,
				Err: fmt.Errorf("%w: %d bytes, the limit is %d (raise the limit, or split the document)", ErrTooLarge, h.Size, lim.MaxBytes)}})
			w.line(name)
			continue
		}
		if unpacked += h.Size; unpacked > lim.MaxUnpacked {
			return nil, fmt.Errorf("%w: the tar archive's files come to more than %d bytes in all (Limits.MaxUnpacked)", ErrBomb, lim.MaxUnpacked)
		}
		b := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, b); err != nil {
			if errors.Is(err, ErrBomb) || errors.Is(err, ErrCorrupt) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: the tar archive ends inside %s: %v", ErrCorrupt, name, err)
		}
		doc.Attachments = append(doc.Attachments, ReadChild(ctx, opts, name, b))
		w.line(name)
	}
	var err error
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}

// skippedEntry says whether an archive entry is not a document of the
// user's: a hidden file, a file in a hidden folder, or macOS's metadata
// (the AppleDouble "._name" beside each file and the "__MACOSX/" folder
// Finder's Compress adds to a zip).
func skippedEntry(name string) bool {
	for _, part := range strings.Split(strings.Trim(path.Clean("/"+name), "/"), "/") {
		if strings.HasPrefix(part, ".") || part == "__MACOSX" {
			return true
		}
	}
	return false
}
