package jpx

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lossyTolerance is how far (in 8-bit levels) a 9/7 decode may stray from
// opj_decompress's: both use float32 arithmetic, in a different order.
const lossyTolerance = 2

// TestMatchesOpenJPEG decodes every fixture and compares it with what
// opj_decompress made of it (testdata/make-fixtures.sh): reversible ones
// bit for bit, irreversible ones within lossyTolerance.
func TestMatchesOpenJPEG(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/*.j2k")
	jp2, _ := filepath.Glob("testdata/*.jp2")
	files = append(files, jp2...)
	if len(files) < 20 {
		t.Fatalf("found %d fixtures", len(files))
	}
	exact := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeBytes(data, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			want := readPNG(t, "testdata/oracle-"+name+".png")
			if got.Bounds() != want.Bounds() {
				t.Fatalf("bounds %v, want %v", got.Bounds(), want.Bounds())
			}
			tol := 0
			if strings.Contains(name, "97") {
				tol = lossyTolerance
			}
			worst, at := maxDiff(got, want)
			if worst > tol {
				t.Fatalf("differs from opj_decompress by %d levels at %v (tolerance %d)", worst, at, tol)
			}
			if worst == 0 {
				exact++
			}
		})
	}
	t.Logf("%d of %d fixtures match opj_decompress bit for bit", exact, len(files))
}

func readPNG(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func maxDiff(a, b image.Image) (int, image.Point) {
	worst, at := 0, image.Point{}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			for _, d := range []int{int(r1>>8) - int(r2>>8), int(g1>>8) - int(g2>>8), int(b1>>8) - int(b2>>8)} {
				if d < 0 {
					d = -d
				}
				if d > worst {
					worst, at = d, image.Pt(x, y)
				}
			}
		}
	}
	return worst, at
}

func TestDecodeConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		w, h int
	}{{"grey-lossless.jp2", 180, 64}, {"rgb-lossless.j2k", 67, 45}} {
		data, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != tc.w || cfg.Height != tc.h {
			t.Errorf("%s: %+v, %v; want %dx%d", tc.file, cfg, err, tc.w, tc.h)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/grey-lossless.j2k")
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range []Limits{{MaxPixels: 1000}, {MaxCodeBlocks: 3}} {
		_, err := DecodeBytes(data, lim)
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("limits %+v: %v, want a LimitError", lim, err)
		}
	}
	var fe FormatError
	if _, err := DecodeBytes([]byte("not a picture"), DefaultLimits); !errors.As(err, &fe) {
		t.Errorf("junk: %v, want a FormatError", err)
	}
}
