package providers

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadCapped: the body comes back whole up to the cap and cut at
// cap+1 past it, whatever length the response announced (right, wrong or
// unknown), read in one piece or a byte at a time; a read error comes
// back with what was read before it.
func TestReadCapped(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 100) // 1,000 bytes
	cases := []struct {
		name        string
		hint, limit int64
		oneByte     bool
		want        int
	}{
		{"known length", 1000, 4096, false, 1000},
		{"unknown length", -1, 4096, false, 1000},
		{"length announced short", 10, 4096, false, 1000},
		{"length announced long", 5000, 4096, false, 1000},
		{"a byte at a time", 1000, 4096, true, 1000},
		{"at the cap", 1000, 1000, false, 1000},
		{"past the cap", 1000, 999, false, 1000},
		{"far past the cap", -1, 100, false, 101},
		{"far past the cap, length known", 1000, 100, true, 101},
		{"announced far more than is sent", 1 << 30, 1 << 31, false, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r io.Reader = strings.NewReader(body)
			if tc.oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := readCapped(r, tc.hint, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(body[:tc.want])) {
				t.Errorf("read %d bytes, want the body's first %d", len(got), tc.want)
			}
		})
	}
	boom := errors.New("connection reset")
	got, err := readCapped(io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom)), 100, 4096)
	if !errors.Is(err, boom) || string(got) != "partial" {
		t.Errorf("got %q, %v; want \"partial\" and the read error", got, err)
	}
}
