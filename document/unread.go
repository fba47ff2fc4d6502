package document

import (
	"bytes"
	"slices"
)

// unreadKinds are formats people send that no reader here reads, known by
// their signatures, each with what to do instead: an error that names the
// format and the conversion helps more than "binary data".
var unreadKinds = []struct {
	match func(head []byte) bool
	what  string
}{
	{isoBrand("heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"),
		"an HEIC/HEIF picture (a phone photo), which extractq does not decode: convert it to JPEG (heif-convert, in Debian's libheif-examples), or set the phone to save JPEG"},
	{isoBrand("avif", "avis"), "an AVIF picture, which extractq does not decode: convert it to PNG or JPEG"},
	{func(h []byte) bool {
		return bytes.HasPrefix(h, []byte("AT&TFORM")) && len(h) >= 16 && (string(h[12:16]) == "DJVU" || string(h[12:16]) == "DJVM")
	}, "a DjVu document, which extractq does not read: convert it to PDF (ddjvu -format=pdf, in Debian's djvulibre-bin)"},
	{prefix("II+\x00", "MM\x00+"), "a BigTIFF picture, which extractq does not decode: convert it to TIFF or PNG"},
	{prefix("\xffWPC"), "a WordPerfect document, which extractq does not read: convert it to .docx or PDF (soffice --headless --convert-to docx)"},
	{prefix("7z\xbc\xaf\x27\x1c"), "a 7-Zip archive, which extractq does not unpack: unpack it, or pack its files as a zip"},
	{prefix("Rar!\x1a\x07"), "a RAR archive, which extractq does not unpack: unpack it, or pack its files as a zip"},
	{prefix("\xfd7zXZ\x00"), "an xz-compressed file, which extractq does not unpack: decompress it first (unxz), or compress it with gzip"},
	{prefix("\x28\xb5\x2f\xfd"), "a Zstandard-compressed file, which extractq does not unpack: decompress it first (unzstd), or compress it with gzip"},
}

// Unread names a format extractq recognises but does not read, with what
// to do instead ("an HEIC/HEIF picture …: convert it to JPEG …"); "" when
// head (the first bytes of a file) is of no format it knows.
func Unread(head []byte) string {
	for _, k := range unreadKinds {
		if k.match(head) {
			return k.what
		}
	}
	return ""
}

func prefix(sigs ...string) func([]byte) bool {
	return func(h []byte) bool {
		return slices.ContainsFunc(sigs, func(s string) bool { return bytes.HasPrefix(h, []byte(s)) })
	}
}

// isoBrand matches an ISO base media file (HEIF, AVIF) by its major brand.
func isoBrand(brands ...string) func([]byte) bool {
	return func(h []byte) bool {
		return len(h) >= 12 && string(h[4:8]) == "ftyp" && slices.Contains(brands, string(h[8:12]))
	}
}
