package document

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzCFFEncoding: cffEncoding never panics and names only codes of
// glyphs with a name, whatever the program's bytes.
//
//	go test -run '^$' -fuzz FuzzCFFEncoding -fuzztime 45s ./document/
func FuzzCFFEncoding(f *testing.F) {
	prog, err := os.ReadFile(filepath.Join("testdata", "cff-encoding.cff"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(prog)
	f.Add(prog[:len(prog)/2])
	f.Add([]byte{1, 0, 4, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := cffEncoding(b)
		if err != nil && m != nil {
			t.Fatalf("a map with an error: %q, %v", m, err)
		}
		for c, n := range m {
			if n == "" || n == ".notdef" {
				t.Fatalf("code %d names %q", c, n)
			}
		}
	})
}
