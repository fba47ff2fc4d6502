package jpx

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkLetterPage decodes a 300 dpi US letter page (2550×3300, grey
// text) that opj_compress makes from an ImageMagick drawing: lossless 5/3
// and lossy 9/7. It is skipped without /usr/bin/convert and opj_compress.
func BenchmarkLetterPage(b *testing.B) {
	for _, tool := range []string{"/usr/bin/convert", "opj_compress"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("no %s", tool)
		}
	}
	dir := b.TempDir()
	png := filepath.Join(dir, "page.png")
	args := []string{"-size", "2550x3300", "xc:white", "-font", "DejaVu-Sans", "-pointsize", "40"}
	for i := range 40 {
		args = append(args, "-annotate", "+150+"+itoa(200+75*i), "Invoice 4471 line "+itoa(i)+": total 88.20 EUR, due 30 days net")
	}
	args = append(args, "-type", "Grayscale", "-depth", "8", png)
	if out, err := exec.Command("/usr/bin/convert", args...).CombinedOutput(); err != nil {
		b.Fatalf("convert: %v: %s", err, out)
	}
	for _, tc := range []struct{ name, opts string }{{"lossless", ""}, {"9-7", "-I -r 20"}} {
		j2k := filepath.Join(dir, tc.name+".j2k")
		cmd := []string{"-i", png, "-o", j2k}
		if tc.opts != "" {
			cmd = append(cmd, "-I", "-r", "20")
		}
		if out, err := exec.Command("opj_compress", cmd...).CombinedOutput(); err != nil {
			b.Fatalf("opj_compress: %v: %s", err, out)
		}
		data, err := os.ReadFile(j2k)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := DecodeBytes(data, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
