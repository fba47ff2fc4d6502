package document

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
)

// CountingReader counts the bytes read through it. Like io.LimitedReader,
// its fields are its state: R is read from and N is the count so far.
// NewInflateReader measures a stream's ratio with it; a caller streaming
// an object counts what it fetched with it.
type CountingReader struct {
	R io.Reader
	N int64
}

func (c *CountingReader) Read(b []byte) (int, error) {
	n, err := c.R.Read(b)
	c.N += int64(n)
	return n, err
}

// InflateReader decompresses a gzip or bzip2 stream as it is read and
// refuses a bomb while it inflates: every compressed file, every JSON
// Lines export and every compressed object streamed from a bucket is
// decompressed through one, so all of them are bounded by the same rule
// (see NewInflateReader).
type InflateReader struct {
	zr     io.Reader
	in     *CountingReader
	format string
	name   string
	stored int64 // the compressed size, or -1 when unknown
	ratio  int64
	n      int64 // decompressed bytes so far
}

// NewInflateReader decompresses r, a stream of format "gzip" or "bzip2",
// bounded by lim.MaxRatio (zero fields of lim take DefaultLimits). The
// decompressed bytes are counted as they come out, never trusted from a
// header, and the rule has two forms:
//
//   - size ≥ 0 is the stored (compressed) size, known before reading (a
//     file in hand): the stream may inflate to MaxRatio × size in all.
//   - size < 0: the size is unknown (an object streamed as it arrives):
//     after each read the bytes out may be at most MaxRatio times the
//     compressed bytes read from r so far (a buffer of 64 KiB ahead of
//     the decompressor), a running ratio.
//
// Either way at least 1 MiB may come out before the ratio counts: a
// small file of repeated records may legitimately compress far better
// than a large one. Past the limit a read fails with ErrBomb; a stream
// that is not gzip, or is damaged part way (truncated, a bad checksum), is
// ErrCorrupt wrapping the decompressor's error (io.ErrUnexpectedEOF,
// gzip.ErrChecksum, …). The errors of a stream name its fix (split the
// export, or compress it less); a file's are a document's, whose reader's
// caller names the fix.
func NewInflateReader(r io.Reader, format string, size int64, lim Limits) (*InflateReader, error) {
	z := &InflateReader{in: &CountingReader{R: r}, format: format, stored: size, ratio: lim.withDefaults().MaxRatio}
	if size < 0 {
		z.stored = -1
	}
	br := bufio.NewReaderSize(z.in, 64<<10)
	switch format {
	case "gzip":
		g, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: not a readable gzip %s: %w", ErrCorrupt, z.noun(), err)
		}
		z.zr, z.name = g, g.Name
	case "bzip2":
		z.zr = bzip2.NewReader(br)
	default:
		return nil, fmt.Errorf("%w: %q is not a compression extractq reads (gzip, bzip2)", ErrUnsupported, format)
	}
	return z, nil
}

// Name is the file name a gzip header stores (gzip -N, the default), ""
// when it stores none and for bzip2, which has no header to store it in.
func (z *InflateReader) Name() string { return z.name }

// noun is what a message calls the input: a file when its size is known,
// else a stream.
func (z *InflateReader) noun() string {
	if z.stored < 0 {
		return "stream"
	}
	return "file"
}

func (z *InflateReader) Read(b []byte) (int, error) {
	n, err := z.zr.Read(b)
	z.n += int64(n)
	switch {
	case z.stored >= 0 && z.n > max(z.stored*z.ratio, ratioFloor):
		return n, fmt.Errorf("%w: the %s file inflates more than %d times its %d bytes (Limits.MaxRatio)", ErrBomb, z.format, z.ratio, z.stored)
	case z.stored < 0 && z.n > max(z.in.N*z.ratio, ratioFloor):
		return n, fmt.Errorf("%w: the %s stream inflates to more than %d times the %d bytes of it read (document.Limits.MaxRatio): split the export, or compress it less", ErrBomb, z.format, z.ratio, z.in.N)
	case err != nil && err != io.EOF:
		return n, fmt.Errorf("%w: the %s %s is damaged: %w", ErrCorrupt, z.format, z.noun(), err)
	}
	return n, err
}
