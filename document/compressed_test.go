package document

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompressed: a gzip or bzip2 file reads as the file it compresses,
// by that file's format and under the name inside (or its own without the
// ending); a tar archive, compressed or not, as its files, with hidden
// files, macOS's metadata, folders and links left out.
func TestCompressed(t *testing.T) {
	t.Parallel()
	reports := []string{"reports/q3.txt", "reports/rates.csv"}
	tests := []struct {
		file, name string // name: the input's name
		format     string // of the document read
		childName  string // the wrapped file's name, for a compressed file
		children   []string
	}{
		{file: "invoice.eml.gz", name: "mail/x.gz", format: "eml", childName: "invoice.eml"},
		{file: "renamed.gz", name: "mail/renamed.eml.gz", format: "eml", childName: "mail/renamed.eml"},
		{file: "invoice.eml.bz2", name: "invoice.eml.bz2", format: "eml", childName: "invoice.eml"},
		{file: "reports.tar", name: "reports.tar", format: "tar", children: reports},
		{file: "reports.tgz", name: "reports.tgz", format: "tar", children: reports},
		{file: "reports.tar.bz2", name: "reports.tar.bz2", format: "tar", children: reports},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), compressedFixture(t, tc.file), Options{Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != tc.format {
				t.Errorf("format %q, want %q", d.Format, tc.format)
			}
			if tc.childName != "" {
				if d.Name != tc.childName || !strings.Contains(d.Text, "total due 1,234.50 EUR") || d.Meta.Subject != "Invoice INV-2207" || d.Archive {
					t.Errorf("read as %q (archive %v), subject %q, text %q", d.Name, d.Archive, d.Meta.Subject, d.Text)
				}
				return
			}
			var names []string
			for _, c := range d.Attachments {
				names = append(names, c.Name)
				if c.Err != nil {
					t.Errorf("%s: %v", c.Name, c.Err)
				}
			}
			if !slices.Equal(names, tc.children) || !d.Archive {
				t.Fatalf("children %q (archive %v), want %q", names, d.Archive, tc.children)
			}
			if c := d.Attachments[1]; c.Format != "csv" || !strings.Contains(c.Text, "A2: EUR | 1.08") || string(c.Original) != "code,rate\nEUR,1.08\nGBP,0.86\n" {
				t.Errorf("rates.csv read as %s: %q", c.Format, c.Text)
			}
		})
	}
}

// compressedFixture returns testdata/compressed/name (made by make.sh there).
func compressedFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "compressed", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gzipOf compresses b.
func gzipOf(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarOf makes a tar archive of name, content pairs.
func tarOf(t testing.TB, parts ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(parts); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: parts[i], Mode: 0o644, Size: int64(len(parts[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(parts[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCompressedLimits: what a compressed file inflates to is counted as
// it comes out: a bomb, a file past the largest document, a tar past
// MaxUnpacked and a damaged stream each fail with their typed error; a
// tar's file past MaxBytes is a child with its reason, its siblings read.
func TestCompressedLimits(t *testing.T) {
	t.Parallel()
	noise := make([]byte, 4000)
	for i := range noise {
		noise[i] = 'a' + byte(i*7919%26)
	}
	invoice := compressedFixture(t, "invoice.eml.gz")
	tests := []struct {
		name string
		in   []byte
		lim  Limits
		want error
	}{
		{"bomb", gzipOf(t, make([]byte, 8<<20)), Limits{}, ErrBomb},
		{"past MaxBytes", gzipOf(t, noise), Limits{MaxBytes: 3000}, ErrTooLarge},
		{"tar past MaxUnpacked", gzipOf(t, tarOf(t, "a.txt", string(noise), "b.txt", string(noise))), Limits{MaxUnpacked: 6000}, ErrBomb},
		{"truncated", invoice[:len(invoice)-12], Limits{}, ErrCorrupt},
		{"bad checksum", append(slices.Clone(invoice[:len(invoice)-8]), 0, 0, 0, 0, 0xff, 0, 0, 0), Limits{}, ErrCorrupt},
		{"empty inside", gzipOf(t, nil), Limits{}, ErrEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadBytes(t.Context(), tc.in, Options{Name: "x.gz", Limits: tc.lim})
			if !isErr(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("one file past MaxBytes", func(t *testing.T) {
		t.Parallel()
		in := gzipOf(t, tarOf(t, "big.txt", strings.Repeat("x", 20000), "small.txt", "Total 5 EUR"))
		d, err := ReadBytes(t.Context(), in, Options{Limits: Limits{MaxBytes: 12000}})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Attachments) != 2 || !isErr(d.Attachments[0].Err, ErrTooLarge) || d.Attachments[1].Text != "Total 5 EUR" {
			for _, c := range d.Attachments {
				t.Logf("%s: %v %q", c.Name, c.Err, c.Text)
			}
			t.Fatal("want big.txt too large and small.txt read")
		}
	})
}

// TestArchiveSkipsHidden: a zip made by macOS's Finder carries
// "__MACOSX/._name" beside each file and often a .DS_Store; none is a
// document (each was a bad_input line before).
func TestArchiveSkipsHidden(t *testing.T) {
	t.Parallel()
	z := zipOf(t, "invoices/a.txt", "Total 5 EUR", "__MACOSX/invoices/._a.txt", "\x00\x05\x16\x07AppleDouble", "invoices/.DS_Store", "\x00\x00\x00\x01Bud1", ".hidden/b.txt", "b")
	d, err := ReadBytes(t.Context(), z, Options{Name: "finder.zip"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Attachments) != 1 || d.Attachments[0].Name != "invoices/a.txt" || !d.Archive {
		var names []string
		for _, c := range d.Attachments {
			names = append(names, c.Name)
		}
		t.Fatalf("children %q (archive %v), want only invoices/a.txt", names, d.Archive)
	}
}

// TestIsTar: the "ustar" magic alone does not make a tar; the header's
// checksum must add up (a text quoting a header's bytes is text).
func TestIsTar(t *testing.T) {
	t.Parallel()
	tr := tarOf(t, "a.txt", "x")
	if !isTar(tr) {
		t.Fatal("a tar header is not recognised")
	}
	bad := slices.Clone(tr[:512])
	bad[0] ^= 1
	if isTar(bad) {
		t.Error("a header whose checksum does not add up is recognised")
	}
	text := []byte(strings.Repeat("x", 257) + "ustar" + strings.Repeat(" ", 300))
	if isTar(text) {
		t.Error("text with ustar at 257 is recognised")
	}
}

func FuzzCompressed(f *testing.F) {
	for _, name := range []string{"invoice.eml.gz", "invoice.eml.bz2", "reports.tar", "reports.tgz", "reports.tar.bz2"} {
		f.Add(compressedFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{"gzip", "bzip2", "tar"} {
			fuzzRead(t, format, b)
		}
	})
}
