package document

import (
	"bytes"
	"compress/lzw"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/pdf"
)

// imagePDF makes a one-page PDF whose page draws one image XObject of the
// dictionary entries and stream data given.
func imagePDF(entries string, data []byte) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(body string, stream []byte) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s", len(offs), body)
		if stream != nil {
			b.WriteString("\nstream\n")
			b.Write(stream)
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	b.WriteString("%PDF-1.7\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", nil)
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Resources << /XObject << /Im0 4 0 R >> >> >>", nil)
	obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image %s /Length %d >>", entries, len(data)), data)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

// FuzzXObjectImage decodes image XObjects of any dictionary and data: no
// runtime fault (an index out of range, a nil map) and no image past the
// size the dictionary gives. The PDF parser's own panics on a malformed
// object are what the reader recovers from, and pass.
func FuzzXObjectImage(f *testing.F) {
	flate := func(b []byte) []byte {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(b)
		w.Close()
		return z.Bytes()
	}
	var l bytes.Buffer
	lw := lzw.NewWriter(&l, lzw.MSB, 8)
	lw.Write(bytes.Repeat([]byte{0, 1, 1, 0}, 16))
	lw.Close()
	var j bytes.Buffer
	jpeg.Encode(&j, image.NewGray(image.Rect(0, 0, 8, 8)), nil)
	gray := bytes.Repeat([]byte{0x00, 0x80, 0xFF, 0x40}, 16)
	jpx, err := os.ReadFile("internal/jpx/testdata/rgb-lossless.j2k")
	if err != nil {
		f.Fatal(err)
	}
	seeds := []struct {
		entries string
		data    []byte
	}{
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /RunLengthDecode", append([]byte{3, 1, 2, 3, 4, 250, 9}, 128)},
		{"/Width 8 /Height 8 /ColorSpace [/Indexed /DeviceRGB 1 <000000ffffff>] /BitsPerComponent 8 /Filter /LZWDecode /DecodeParms << /EarlyChange 0 >>", l.Bytes()},
		{"/Width 8 /Height 8 /ColorSpace [/Indexed /DeviceRGB 1 <000000ffffff>] /BitsPerComponent 8 /Filter /LZWDecode", l.Bytes()},
		{"/Width 4 /Height 4 /ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Columns 4 /Colors 4 >>", flate(append([]byte{4}, gray...))},
		{"/Width 8 /Height 8 /ImageMask true /Decode [1 0] /Filter /ASCIIHexDecode", []byte(hex.EncodeToString(gray[:8]) + ">")},
		{"/Width 8 /Height 8 /ColorSpace [/Lab << /Range [-128 127 -128 127] >>] /BitsPerComponent 16 /Filter [/ASCII85Decode /FlateDecode]", []byte("GhQ%~>")},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Decode [1 0] /Filter [/FlateDecode /DCTDecode]", flate(j.Bytes())},
		{"/Width 8 /Height 8 /ColorSpace /CalGray /BitsPerComponent 2 /Filter /FlateDecode /DecodeParms << /Predictor 2 /Colors 1 /BitsPerComponent 8 /Columns 2 >>", flate(gray)},
		{"/Width 8 /Height 8 /BitsPerComponent 1 /ColorSpace /DeviceGray /Filter /CCITTFaxDecode /DecodeParms << /K -1 /Columns 8 >>", []byte{0x26, 0xA0, 0x00, 0x10, 0x01}},
		{"/Width 67 /Height 45 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /JPXDecode", jpx},
		{"/Width 67 /Height 45 /ColorSpace [/Indexed /DeviceRGB 1 <000000ffffff>] /Filter /JPXDecode", jpx},
	}
	for _, s := range seeds {
		f.Add(s.entries, s.data)
	}
	f.Fuzz(func(t *testing.T, entries string, data []byte) {
		b := imagePDF(entries, data)
		var x pdf.Value
		func() {
			defer func() { recover() }()
			r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				return
			}
			x = r.Trailer().Key("Root").Key("Pages").Key("Kids").Index(0).Key("Resources").Key("XObject").Key("Im0")
		}()
		if x.Kind() != pdf.Stream || x.Key("Width").Int64()*x.Key("Height").Int64() > 1<<16 {
			return
		}
		defer func() {
			if p := recover(); p != nil {
				if _, fault := p.(runtime.Error); fault {
					t.Fatalf("runtime fault decoding %q: %v", entries, p)
				}
			}
		}()
		img, stored, err := decodeXObject(x)
		if err != nil || stored != nil {
			return
		}
		if r := img.Bounds(); int64(r.Dx())*int64(r.Dy()) > 1<<18 {
			t.Fatalf("decoded %v from %q", r, entries)
		}
	})
}

// BenchmarkDecodeXObject decodes a letter page at 300 dpi (2550×3300) of
// Flate samples: RGB, and a 16-colour palette of 4-bit indexes.
func BenchmarkDecodeXObject(b *testing.B) {
	const w, h = 2550, 3300
	for _, tc := range []struct {
		name, entries string
		rowBytes      int
	}{
		{"rgb8", "/ColorSpace /DeviceRGB /BitsPerComponent 8", 3 * w},
		{"indexed4", "/ColorSpace [/Indexed /DeviceRGB 15 <" + hex.EncodeToString(bytes.Repeat([]byte{0x10, 0x80, 0xF0}, 16)) + ">] /BitsPerComponent 4", (w + 1) / 2},
	} {
		raw := make([]byte, tc.rowBytes*h)
		for i := range raw {
			raw[i] = byte(i * 7 / 5)
		}
		var z bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
		zw.Write(raw)
		zw.Close()
		doc := imagePDF(fmt.Sprintf("/Width %d /Height %d %s /Filter /FlateDecode", w, h, tc.entries), z.Bytes())
		r, err := pdf.NewReader(bytes.NewReader(doc), int64(len(doc)))
		if err != nil {
			b.Fatal(err)
		}
		x := r.Trailer().Key("Root").Key("Pages").Key("Kids").Index(0).Key("Resources").Key("XObject").Key("Im0")
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := decodeXObject(x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeXObjectRefuses checks that images the reader does not decode,
// or that lie about their size, fail with an error saying why.
func TestDecodeXObjectRefuses(t *testing.T) {
	t.Parallel()
	gray := bytes.Repeat([]byte{0x80}, 64)
	jpx, err := os.ReadFile("internal/jpx/testdata/rgb-lossless.j2k") // 67×45
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		entries string
		data    []byte
		want    string
	}{
		{"/Width 0 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8", gray, "image of 0×8 pixels"},
		{"/Width 8000 /Height 8000 /ColorSpace /DeviceGray /BitsPerComponent 8", gray, "image of 8000×8000 pixels"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /JPXDecode", gray, "JPEG 2000 (JPXDecode) image does not decode"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /JPXDecode", jpx, "JPEG 2000 (JPXDecode) image too large"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter [/DCTDecode /FlateDecode]", gray, "filtered again"},
		{"/Width 8 /Height 8 /ColorSpace [/DeviceN [/Cyan /Spot] /DeviceCMYK null] /BitsPerComponent 8", gray, "2 colorants"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 5", gray, "5-bit samples"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Decode [0 1 0 1]", gray, "Decode array of 4 numbers"},
		{"/Width 8 /Height 8 /ColorSpace [/Indexed /DeviceRGB 300 <00>] /BitsPerComponent 8", gray, "301 colours"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", gray, "Flate data does not open"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 7 >>", nil, "predictor 7"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /ASCIIHexDecode", []byte("8x>"), "ASCIIHex data holds"},
		{"/Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /RunLengthDecode", []byte{128}, "samples end at row 0"},
		{"/Width 8 /Height 8 /BitsPerComponent 1 /ColorSpace /DeviceGray /Filter /CCITTFaxDecode /DecodeParms << /K -1 /Columns 900 >>", gray, "900 columns"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			data := tc.data
			if strings.Contains(tc.entries, "Predictor") {
				var z bytes.Buffer
				zw := zlib.NewWriter(&z)
				zw.Write(gray)
				zw.Close()
				data = z.Bytes()
			}
			b := imagePDF(tc.entries, data)
			r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			x := r.Trailer().Key("Root").Key("Pages").Key("Kids").Index(0).Key("Resources").Key("XObject").Key("Im0")
			_, _, err = decodeXObject(x)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
