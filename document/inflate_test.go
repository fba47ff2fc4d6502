package document

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// TestInflateReader: the one bound every decompression meets. With the
// stored size known the stream may inflate to MaxRatio times it in all;
// with it unknown, to MaxRatio times the compressed bytes read so far, so
// a stream whose start is a bomb fails there even when what follows would
// bring the whole under the ratio. Both allow 1 MiB before the ratio
// counts. A damaged stream is ErrCorrupt wrapping the decompressor's error.
func TestInflateReader(t *testing.T) {
	t.Parallel()
	noise := make([]byte, 100<<10) // does not compress: ratio about 1
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	// 2 MiB of zeros (about 2 KiB of gzip) then the noise: about 2.1 MiB
	// out of about 102 KiB, 21 times in all, but 1000 times at its start.
	bombFirst := gzipOf(t, append(make([]byte, 2<<20), noise...))
	bomb := gzipOf(t, make([]byte, 8<<20))
	invoice := compressedFixture(t, "invoice.eml.gz")
	tests := []struct {
		name   string
		in     []byte
		format string
		known  bool // pass the stored size
		want   error
		is     error  // a further error the failure wraps
		says   string // words of the failure
		out    int    // bytes read out, when it succeeds
	}{
		{name: "known size: a bomb", in: bomb, format: "gzip", known: true, want: ErrBomb, says: "inflates more than 200 times its"},
		{name: "known size: within the ratio in all", in: bombFirst, format: "gzip", known: true, out: 2<<20 + len(noise)},
		{name: "unknown size: past the ratio so far", in: bombFirst, format: "gzip", want: ErrBomb, says: "stream inflates to more than 200 times the"},
		{name: "unknown size: a bomb", in: bomb, format: "gzip", want: ErrBomb, says: "split the export, or compress it less"},
		{name: "unknown size: past the floor at ratio 1", in: gzipOf(t, bytes.Repeat(noise, 12)), format: "gzip", out: 12 * len(noise)},
		{name: "bzip2, known size", in: compressedFixture(t, "invoice.eml.bz2"), format: "bzip2", known: true, out: -1},
		{name: "truncated", in: invoice[:len(invoice)-12], format: "gzip", want: ErrCorrupt, is: io.ErrUnexpectedEOF, says: "the gzip stream is damaged"},
		{name: "truncated, known size", in: invoice[:len(invoice)-12], format: "gzip", known: true, want: ErrCorrupt, is: io.ErrUnexpectedEOF, says: "the gzip file is damaged"},
		{name: "not gzip", in: []byte("plain text"), format: "gzip", want: ErrCorrupt, says: "not a readable gzip stream"},
		{name: "not a compression", in: invoice, format: "zstd", want: ErrUnsupported, says: "zstd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// One byte a read: the running ratio is measured against what
			// the decompressor has taken, not a buffer read ahead of it.
			var in io.Reader = iotest.OneByteReader(bytes.NewReader(tc.in))
			size := int64(-1)
			if tc.known {
				size = int64(len(tc.in))
			}
			n, err := func() (int64, error) {
				z, err := NewInflateReader(in, tc.format, size, Limits{})
				if err != nil {
					return 0, err
				}
				return io.Copy(io.Discard, z)
			}()
			if tc.want == nil {
				if err != nil || (tc.out >= 0 && n != int64(tc.out)) || n == 0 {
					t.Fatalf("read %d bytes, %v; want %d bytes", n, err, tc.out)
				}
				return
			}
			if !errors.Is(err, tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(fmtErr(err), tc.says) {
				t.Fatalf("got %v; want %v (and %v) saying %q", err, tc.want, tc.is, tc.says)
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
