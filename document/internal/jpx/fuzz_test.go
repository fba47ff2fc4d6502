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
	// Packed packet headers (made by TestPackedHeaders's repack).
	if ppt, ppm, err := repack("testdata/rgb-tiles-pcrl.jp2"); err == nil {
		f.Add(ppt)
		f.Add(ppm)
	}
	// Small limits keep each run fast: the fixtures are at most 180×64.
	lim := Limits{MaxPixels: 1 << 15, MaxComponents: 4, MaxTiles: 64, MaxCodeBlocks: 1 << 11}
	f.Fuzz(func(t *testing.T, data []byte) {
		// decodeAs: DecodeBytes recovers from a panic as a last guard,
		// the fuzzer looks for the panics themselves.
		img, err := decodeAs(data, lim, Default)
		if err == nil && img.Bounds().Dx()*img.Bounds().Dy() > 1<<15 {
			t.Fatalf("decoded %v past the pixel limit", img.Bounds())
		}
	})
}
