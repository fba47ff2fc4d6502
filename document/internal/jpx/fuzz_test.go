package jpx

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzJPX checks that no input makes the decoder panic or allocate past
// its limits.
func FuzzJPX(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.j2*")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	lim := Limits{MaxPixels: 1 << 20, MaxComponents: 4, MaxTiles: 256, MaxCodeBlocks: 1 << 14}
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := DecodeBytes(data, lim)
		if err == nil && img.Bounds().Dx()*img.Bounds().Dy() > 1<<20 {
			t.Fatalf("decoded %v past the pixel limit", img.Bounds())
		}
	})
}
