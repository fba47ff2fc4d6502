package document_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestUnread names formats people send that extractq does not read, by
// their first bytes, and leaves text that starts with the same letters
// alone.
func TestUnread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		head, want string // want: "" for no name
	}{
		{"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", "HEIC/HEIF picture"},
		{"\x00\x00\x00\x1cftypmif1\x00\x00\x00\x00mif1heic", "HEIC/HEIF picture"},
		{"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1", "AVIF picture"},
		{"\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00\x00\x14ftypjp2 ", ""}, // JPEG 2000: read as a picture
		{"AT&TFORM\x00\x00\x10\x00DJVUINFO", "DjVu document"},
		{"II+\x00\x08\x00\x00\x00", "BigTIFF picture"},
		{"\xffWPC\x10\x00\x00\x00", "WordPerfect document"},
		{"7z\xbc\xaf\x27\x1c\x00\x04", "7-Zip archive"},
		{"Rar!\x1a\x07\x01\x00", "RAR archive"},
		{"\xfd7zXZ\x00\x00\x04", "xz-compressed file"},
		{"\x28\xb5\x2f\xfd\x04\x00", "Zstandard-compressed file"},
		{"\x00\x00\x00\x18ftypisom", ""}, // an MP4 video: not named
		{"Rar! is not a word", ""},
		{"7z is a command", ""},
		{"II+ is a roman numeral", ""},
		{"AT&T FORM letter", ""},
	}
	for _, tc := range tests {
		got := document.Unread([]byte(tc.head))
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("Unread(%q) = %q, want %q", tc.head, got, tc.want)
		}
		if tc.want == "" {
			continue
		}
		// Read says it too, as a format recognised but not read.
		_, err := document.ReadBytes(t.Context(), []byte(tc.head+strings.Repeat("\x00", 64)), document.Options{})
		if !errors.Is(err, document.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Read(%q): %v, want ErrUnsupported naming %q", tc.head, err, tc.want)
		}
	}
}
