package jpx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
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
			} else {
				t.Logf("within %d levels of opj_decompress", worst)
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

// box is a JP2 box of type typ holding body.
func box(typ string, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(8+len(b))), append([]byte(typ), b...)...)
}

// TestPalette wraps a grey codestream in JP2 boxes with a palette (pclr)
// of three columns mapping each grey level v to (255-v, v, 0), and checks
// the decoded colours against opj_decompress's grey decode.
func TestPalette(t *testing.T) {
	t.Parallel()
	cs, err := os.ReadFile("testdata/grey-lossless.j2k")
	if err != nil {
		t.Fatal(err)
	}
	pclr := []byte{1, 0, 3, 7, 7, 7} // 256 entries, 3 columns of 8 bits
	for v := range 256 {
		pclr = append(pclr, byte(255-v), byte(v), 0)
	}
	cmap := []byte{0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 2}
	ihdr := []byte{0, 0, 0, 64, 0, 0, 0, 180, 0, 1, 7, 7, 0, 0}
	colr := []byte{1, 0, 0, 0, 0, 0, 16}
	file := slices.Concat(jp2Magic, box("ftyp", []byte("jp2 \x00\x00\x00\x00jp2 ")),
		box("jp2h", box("ihdr", ihdr), box("colr", colr), box("pclr", pclr), box("cmap", cmap)), box("jp2c", cs))
	img, err := DecodeBytes(file, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	grey := readPNG(t, "testdata/oracle-grey-lossless.png")
	for _, p := range []image.Point{{0, 0}, {10, 20}, {100, 50}, {179, 63}} {
		r, g, b, _ := img.At(p.X, p.Y).RGBA()
		v, _, _, _ := grey.At(p.X, p.Y).RGBA()
		if r>>8 != 255-v>>8 || g>>8 != v>>8 || b != 0 {
			t.Errorf("at %v: %d %d %d, want %d %d 0", p, r>>8, g>>8, b>>8, 255-v>>8, v>>8)
		}
	}
}

// TestUnsupported checks that features the decoder leaves out are named.
func TestUnsupported(t *testing.T) {
	t.Parallel()
	cs, err := os.ReadFile("testdata/grey-lossless.j2k")
	if err != nil {
		t.Fatal(err)
	}
	siz := 4 + int(binary.BigEndian.Uint16(cs[4:])) // SOC, then SIZ and its length
	cod := bytes.Index(cs, []byte{0xff, 0x52})
	for _, tc := range []struct {
		name, want string
		edit       func(b []byte) []byte
	}{
		{"RGN style 1", "region of interest style 1", func(b []byte) []byte {
			return slices.Concat(b[:siz], []byte{0xff, 0x5e, 0, 5, 0, 1, 7}, b[siz:])
		}},
		{"Part 2 wavelet", "Part 2 wavelet", func(b []byte) []byte { b[cod+13] = 2; return b }},
		{"HTJ2K code-blocks", "HT code-block style", func(b []byte) []byte { b[cod+12] |= 0x40; return b }},
	} {
		_, err := DecodeBytes(tc.edit(slices.Clone(cs)), DefaultLimits)
		var ue UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an UnsupportedError naming %q", tc.name, err, tc.want)
		}
	}
}

// TestPackedHeaders moves the packet headers of fixtures into PPT markers
// (each tile-part's own) and into PPM markers (the main header's), as the
// standard allows, and checks that each still decodes as opj_decompress
// decoded the original.
func TestPackedHeaders(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"grey-layers.j2k", "rgb-tiles-pcrl.jp2", "grey-M63.j2k", "rgb-cprl.j2k"} {
		ppt, ppm, err := repack("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		want := readPNG(t, "testdata/oracle-"+strings.TrimSuffix(name, filepath.Ext(name))+".png")
		for kind, b := range map[string][]byte{"PPT": ppt, "PPM": ppm} {
			got, err := decodeAs(b, DefaultLimits, Default)
			if err != nil {
				t.Errorf("%s as %s: %v", name, kind, err)
				continue
			}
			if worst, at := maxDiff(got, want); worst != 0 {
				t.Errorf("%s as %s differs from opj_decompress by %d at %v", name, kind, worst, at)
			}
		}
	}
}

// repack returns the codestream of the fixture file with its packet
// headers in PPT markers and in PPM markers. The decoder's trace says where
// each packet's header and body are; each tile must be one tile-part.
func repack(file string) (ppt, ppm []byte, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	_, cs, err := parseFile(data)
	if err != nil {
		return nil, nil, err
	}
	type span struct{ hs, he, bs, be int }
	spans := map[int][]span{}
	d, err := newDecoder(cs, DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	d.trace = func(tile, hs, he, bs, be int) { spans[tile] = append(spans[tile], span{hs, he, bs, be}) }
	if err := d.decode(); err != nil {
		return nil, nil, err
	}
	// The codestream's parts: main header, then tile-parts of header
	// markers and data.
	mainEnd := bytes.Index(cs, []byte{0xff, 0x90})
	type part struct {
		tile         int
		header, data []byte
	}
	var parts []part
	for pos := mainEnd; pos+12 <= len(cs) && binary.BigEndian.Uint16(cs[pos:]) == mSOT; {
		end := pos + int(binary.BigEndian.Uint32(cs[pos+6:]))
		sod := pos + bytes.Index(cs[pos:end], []byte{0xff, 0x93})
		parts = append(parts, part{int(binary.BigEndian.Uint16(cs[pos+4:])), cs[pos+12 : sod], cs[sod+2 : end]})
		pos = end
	}
	// marker makes marker segments of code m holding b, 60000 bytes at
	// most each, after an index byte.
	marker := func(m uint16, b []byte) []byte {
		var out []byte
		for z := 0; z == 0 || len(b) > 0; z++ {
			n := min(len(b), 60000)
			out = binary.BigEndian.AppendUint16(out, m)
			out = binary.BigEndian.AppendUint16(out, uint16(3+n))
			out = append(append(out, byte(z)), b[:n]...)
			b = b[n:]
		}
		return out
	}
	tilePart := func(p part, extra, body []byte) []byte {
		sot := []byte{0xff, 0x90, 0, 10, byte(p.tile >> 8), byte(p.tile), 0, 0, 0, 0, 0, 1}
		tp := slices.Concat(sot, p.header, extra, []byte{0xff, 0x93}, body)
		binary.BigEndian.PutUint32(tp[6:], uint32(len(tp)))
		return tp
	}
	ppt = slices.Clone(cs[:mainEnd])
	var ppmData, ppmParts []byte
	for _, p := range parts {
		var headers, bodies []byte
		for _, s := range spans[p.tile] {
			headers = append(headers, p.data[s.hs:s.he]...)
			bodies = append(bodies, p.data[s.bs:s.be]...)
		}
		ppt = append(ppt, tilePart(p, marker(mPPT, headers), bodies)...)
		ppmData = append(binary.BigEndian.AppendUint32(ppmData, uint32(len(headers))), headers...)
		ppmParts = append(ppmParts, tilePart(p, nil, bodies)...)
	}
	ppm = slices.Concat(cs[:mainEnd], marker(mPPM, ppmData), ppmParts, []byte{0xff, 0xd9})
	return append(ppt, 0xff, 0xd9), ppm, nil
}
