package cfb_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/extractq/extractq/document/internal/cfb"
	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

func open(t testing.TB, b []byte, lim cfb.Limits) (*cfb.File, error) {
	t.Helper()
	return cfb.Open(bytes.NewReader(b), int64(len(b)), lim)
}

// TestRoundTrip: streams in the mini stream and in their own chains,
// nested storages, both sector sizes, and a file big enough to need DIFAT
// sectors read back byte for byte.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789abcdef"), 9<<20/16) // 9 MiB: > 109 FAT sectors of 512 bytes
	tests := []struct {
		name    string
		shift   uint
		streams []cfbtest.Stream
	}{
		{"v3-small", 9, []cfbtest.Stream{{Path: "a", Data: []byte("hello")}, {Path: "s/b", Data: bytes.Repeat([]byte{7}, 100)}, {Path: "s/t/c", Data: []byte{}}, {Path: "d", Data: bytes.Repeat([]byte("x"), 5000)}}},
		{"v4", 12, []cfbtest.Stream{{Path: "WordDocument", Data: bytes.Repeat([]byte("w"), 9000)}, {Path: "1Table", Data: []byte("table")}, {Path: "\x05SummaryInformation", Data: make([]byte, 4095)}, {Path: "e", Data: make([]byte, 4096)}}},
		{"v3-difat", 9, []cfbtest.Stream{{Path: "big", Data: big}, {Path: "small", Data: []byte("s")}}},
		{"v3-many", 9, func() []cfbtest.Stream {
			var s []cfbtest.Stream
			for i := range 300 {
				s = append(s, cfbtest.Stream{Path: fmt.Sprintf("st%d/__substg1.0_%04X001F", i%7, i), Data: bytes.Repeat([]byte{byte(i)}, i*17)})
			}
			return s
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := cfbtest.Build(tc.streams, cfbtest.Options{SectorShift: tc.shift})
			f, err := open(t, b, cfb.Limits{MaxRead: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.streams {
				got, err := f.ReadStream(s.Path)
				if err != nil {
					t.Fatalf("%s: %v", s.Path, err)
				}
				if !bytes.Equal(got, s.Data) {
					t.Fatalf("%s: got %d bytes, want %d (differ)", s.Path, len(got), len(s.Data))
				}
			}
			n := 0
			for _, e := range f.Entries() {
				if e.Type == cfb.TypeStream {
					n++
				}
			}
			if n != len(tc.streams) {
				t.Errorf("listed %d streams, want %d", n, len(tc.streams))
			}
		})
	}
}

func TestChildren(t *testing.T) {
	t.Parallel()
	b := cfbtest.Build([]cfbtest.Stream{{Path: "x/a", Data: []byte("1")}, {Path: "x/b", Data: []byte("2")}, {Path: "y", Data: []byte("3")}, {Path: "x/z/c", Data: []byte("4")}}, cfbtest.Options{})
	f, err := open(t, b, cfb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range f.Children("x") {
		names = append(names, e.Name)
	}
	if fmt.Sprint(names) != "[a b z]" {
		t.Errorf("children of x: %v", names)
	}
	if _, err := f.ReadStream("X/A"); err != nil {
		t.Errorf("case-insensitive lookup: %v", err)
	}
	if _, err := f.ReadStream("x/nope"); !errors.Is(err, cfb.ErrNotFound) {
		t.Errorf("missing stream: %v", err)
	}
}

// TestDamaged: every kind of damage is a typed error, never a panic or a
// loop.
func TestDamaged(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	good := cfbtest.Build([]cfbtest.Stream{{Path: "big", Data: bytes.Repeat([]byte("b"), 20000)}, {Path: "small", Data: []byte("small")}}, cfbtest.Options{})
	// Layout of good: header, FAT sector 0, directory sector 1, mini FAT 2,
	// mini stream 3, big stream 4...
	mod := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	fatAt := 512
	tests := []struct {
		name string
		in   []byte
		lim  cfb.Limits
		want error
	}{
		{"short", good[:100], cfb.Limits{}, cfb.ErrFormat},
		{"magic", mod(func(b []byte) { b[0] = 0 }), cfb.Limits{}, cfb.ErrFormat},
		{"shift", mod(func(b []byte) { le.PutUint16(b[0x1E:], 20) }), cfb.Limits{}, cfb.ErrFormat},
		{"fat-count", mod(func(b []byte) { le.PutUint32(b[0x2C:], 1<<30) }), cfb.Limits{}, cfb.ErrFormat},
		{"difat-loop", mod(func(b []byte) {
			le.PutUint32(b[0x2C:], 200)
			le.PutUint32(b[0x44:], 0)
			le.PutUint32(b[0x48:], 1)
		}), cfb.Limits{}, cfb.ErrFormat},
		{"dir-beyond", mod(func(b []byte) { le.PutUint32(b[0x30:], 1<<20) }), cfb.Limits{}, cfb.ErrFormat},
		{"chain-loop", mod(func(b []byte) { le.PutUint32(b[fatAt+4*5:], 4) }), cfb.Limits{}, cfb.ErrFormat},
		{"chain-out", mod(func(b []byte) { le.PutUint32(b[fatAt+4*5:], 1<<25) }), cfb.Limits{}, cfb.ErrFormat},
		{"budget", good, cfb.Limits{MaxRead: 4096}, cfb.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := open(t, tc.in, tc.lim)
			if err == nil {
				for _, e := range f.Entries() {
					if e.Type == cfb.TypeStream {
						if _, err = f.Read(e); err != nil {
							break
						}
					}
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A stream claiming more than the file holds.
	b := mod(func(b []byte) {
		dir := 512 * 2 // directory: sector 1, after the header
		for i := 0; i < 4; i++ {
			e := b[dir+128*i:]
			if e[0] == 'b' {
				le.PutUint64(e[0x78:], 1<<31)
			}
		}
	})
	f, err := open(t, b, cfb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadStream("big"); !errors.Is(err, cfb.ErrFormat) {
		t.Errorf("oversized stream: %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(cfbtest.Build([]cfbtest.Stream{{Path: "a/b", Data: []byte("x")}, {Path: "c", Data: bytes.Repeat([]byte("y"), 5000)}}, cfbtest.Options{}))
	f.Add(cfbtest.Build([]cfbtest.Stream{{Path: "a", Data: []byte("x")}}, cfbtest.Options{SectorShift: 12}))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := cfb.Open(bytes.NewReader(b), int64(len(b)), cfb.Limits{MaxRead: 16 << 20})
		if err != nil {
			return
		}
		for _, e := range c.Entries() {
			if e.Type == cfb.TypeStream {
				c.Read(e)
			}
		}
	})
}

// TestExtract: a storage taken out is a compound file holding the streams
// under it (nested storages too) by their paths within it, and nothing
// else; its reads count against the source's MaxRead; a stream or a
// missing path is ErrNotFound.
func TestExtract(t *testing.T) {
	t.Parallel()
	src := cfbtest.Build([]cfbtest.Stream{
		{Path: "WordDocument", Data: []byte("outer")},
		{Path: "ObjectPool/_1/Workbook", Data: bytes.Repeat([]byte("w"), 5000)},
		{Path: "ObjectPool/_1/\x01CompObj", Data: []byte("comp")},
		{Path: "ObjectPool/_1/MBD1/Ole", Data: []byte("nested")},
		{Path: "ObjectPool/_2/Other", Data: []byte("other")},
	}, cfbtest.Options{})
	f, err := open(t, src, cfb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Extract("objectpool/_1")
	if err != nil {
		t.Fatal(err)
	}
	g, err := open(t, b, cfb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range g.Entries() {
		if e.Type == cfb.TypeStream {
			d, err := g.Read(e)
			if err != nil {
				t.Fatal(err)
			}
			got[e.Path] = string(d)
		}
	}
	want := map[string]string{"Workbook": string(bytes.Repeat([]byte("w"), 5000)), "\x01CompObj": "comp", "MBD1/Ole": "nested"}
	if len(got) != len(want) {
		t.Fatalf("extracted streams %q, want %q", keys(got), keys(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("stream %q: %d bytes, want %d", k, len(got[k]), len(v))
		}
	}
	for _, p := range []string{"WordDocument", "ObjectPool/_3"} {
		if _, err := f.Extract(p); !errors.Is(err, cfb.ErrNotFound) {
			t.Errorf("Extract(%q): %v, want ErrNotFound", p, err)
		}
	}
	small, err := open(t, src, cfb.Limits{MaxRead: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Extract("ObjectPool/_1"); !errors.Is(err, cfb.ErrTooLarge) {
		t.Errorf("Extract past MaxRead: %v, want ErrTooLarge", err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
