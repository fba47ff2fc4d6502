package document

import (
	"image/color"
	"image/png"
	"os"
	"testing"
)

// TestDecodeJPXColourSpaces reads JPEG 2000 fixtures (made by
// internal/jpx/testdata/make-fixtures.sh, with opj_decompress's PNG of
// each) under the colour spaces a PDF may give them, and checks each pixel
// against the oracle mapped by hand.
func TestDecodeJPXColourSpaces(t *testing.T) {
	t.Parallel()
	pal := make([]color.RGBA, 256)
	for v := range pal {
		pal[v] = color.RGBA{255 - uint8(v), uint8(v), 0, 255}
	}
	tests := []struct {
		name, file string
		cs         colourSpace
		dec        []decodeRange
		want       func(o color.NRGBA) color.RGBA // from the oracle's pixel
	}{
		{"no colour space: the codestream's grey", "grey-lossless.j2k", colourSpace{}, nil,
			func(o color.NRGBA) color.RGBA { return color.RGBA{o.R, o.R, o.R, 255} }},
		{"one ink's tints", "grey-lossless.j2k", colourSpace{kind: csGray, comps: 1, ink: true}, nil,
			func(o color.NRGBA) color.RGBA { return color.RGBA{255 - o.R, 255 - o.R, 255 - o.R, 255} }},
		{"DeviceGray, Decode [1 0]", "grey-lossless.j2k", colourSpace{kind: csGray, comps: 1}, []decodeRange{{1, 0}},
			func(o color.NRGBA) color.RGBA { return color.RGBA{255 - o.R, 255 - o.R, 255 - o.R, 255} }},
		{"Indexed", "grey-lossless.j2k", colourSpace{kind: csIndexed, comps: 1, hival: 255, palette: pal}, nil,
			func(o color.NRGBA) color.RGBA { return pal[o.R] }},
		{"DeviceCMYK", "rgba4.j2k", colourSpace{kind: csCMYK, comps: 4}, nil,
			func(o color.NRGBA) color.RGBA {
				r, g, b := cmykToRGB(o.R, o.G, o.B, o.A)
				return color.RGBA{r, g, b, 255}
			}},
		{"no colour space: RGB, alpha dropped", "rgba4.j2k", colourSpace{}, nil,
			func(o color.NRGBA) color.RGBA { return color.RGBA{o.R, o.G, o.B, 255} }},
		{"DeviceGray for three components: the codestream's RGB", "rgb-lossless.jp2", colourSpace{kind: csGray, comps: 1}, nil,
			func(o color.NRGBA) color.RGBA { return color.RGBA{o.R, o.G, o.B, 255} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile("internal/jpx/testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			img, err := decodeJPX(b, 0, tc.cs, tc.cs.comps > 0, tc.dec)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open("internal/jpx/testdata/oracle-" + tc.file[:len(tc.file)-4] + ".png")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			oracle, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			if img.Bounds() != oracle.Bounds() {
				t.Fatalf("bounds %v, want %v", img.Bounds(), oracle.Bounds())
			}
			bad := 0
			for y := range img.Bounds().Dy() {
				for x := range img.Bounds().Dx() {
					o := color.NRGBAModel.Convert(oracle.At(x, y)).(color.NRGBA)
					want := tc.want(o)
					got := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
					if got != want && bad < 3 {
						t.Errorf("at %d,%d: %v, want %v (oracle %v)", x, y, got, want, o)
						bad++
					}
				}
			}
		})
	}
}
