package document

import (
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"os"
	"testing"
)

// TestOrient turns a 3×2 picture by each EXIF orientation and checks where
// its stored top-left pixel (0) and stored top-right pixel (2) land, as the
// EXIF specification draws them.
func TestOrient(t *testing.T) {
	t.Parallel()
	src := image.NewGray(image.Rect(0, 0, 3, 2)) // 0 1 2 / 3 4 5
	for i := range 6 {
		src.Pix[i] = uint8(i)
	}
	tests := []struct {
		o      int
		w, h   int
		tl, tr image.Point // where stored pixels 0 and 2 land
		rgba   bool
	}{
		{1, 3, 2, image.Pt(0, 0), image.Pt(2, 0), false},
		{2, 3, 2, image.Pt(2, 0), image.Pt(0, 0), false},
		{3, 3, 2, image.Pt(2, 1), image.Pt(0, 1), false},
		{4, 3, 2, image.Pt(0, 1), image.Pt(2, 1), false},
		{5, 2, 3, image.Pt(0, 0), image.Pt(0, 2), false},
		{6, 2, 3, image.Pt(1, 0), image.Pt(1, 2), false},
		{7, 2, 3, image.Pt(1, 2), image.Pt(1, 0), false},
		{8, 2, 3, image.Pt(0, 2), image.Pt(0, 0), false},
		{6, 2, 3, image.Pt(1, 0), image.Pt(1, 2), true},
	}
	for _, tc := range tests {
		var in image.Image = src
		if tc.rgba {
			c := image.NewRGBA(src.Bounds())
			for y := range 2 {
				for x := range 3 {
					c.Set(x, y, color.RGBA{R: src.GrayAt(x, y).Y, A: 255})
				}
			}
			in = c
		}
		out := orient(in, tc.o)
		if b := out.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
			t.Errorf("orientation %d: %d×%d, want %d×%d", tc.o, b.Dx(), b.Dy(), tc.w, tc.h)
			continue
		}
		val := func(p image.Point) uint8 { r, _, _, _ := out.At(p.X, p.Y).RGBA(); return uint8(r >> 8) }
		if val(tc.tl) != 0 || val(tc.tr) != 2 {
			t.Errorf("orientation %d (rgba %v): pixel at %v is %d, at %v is %d; want 0 and 2", tc.o, tc.rgba, tc.tl, val(tc.tl), tc.tr, val(tc.tr))
		}
	}
}

// TestTIFFChain reads damaged chains of a real two-page TIFF: a chain
// that loops back reads each page once, one that points outside the file
// ends there, and a page whose data is cut stays a page, unreadable.
func TestTIFFChain(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile("testdata/scans/scan.tif")
	if err != nil {
		t.Fatal(err)
	}
	ifds, bo, err := tiffIFDs(orig, 100)
	if err != nil || len(ifds) != 2 {
		t.Fatalf("%d IFDs, %v; want the 2 pages", len(ifds), err)
	}
	nextOf := func(b []byte, off uint32) int { return int(off) + 2 + 12*int(bo.Uint16(b[off:])) }
	tests := []struct {
		name    string
		edit    func(b []byte)
		pages   int
		unread  int // pages kept as unreadable
		wantErr error
	}{
		{"as made", func([]byte) {}, 2, 0, nil},
		{"a loop back to page 1", func(b []byte) { bo.PutUint32(b[nextOf(b, ifds[1].off):], ifds[0].off) }, 2, 0, nil},
		{"a loop onto itself", func(b []byte) { bo.PutUint32(b[nextOf(b, ifds[0].off):], ifds[0].off) }, 1, 0, nil},
		{"page 2 outside the file", func(b []byte) { bo.PutUint32(b[nextOf(b, ifds[0].off):], uint32(len(b)+10)) }, 1, 0, nil},
		{"page 2 a thumbnail", func(b []byte) { setShort(b, bo, ifds[1].off, tiffNewSubfileType, 1) }, 1, 0, nil},
		{"page 2's data cut", func(b []byte) { setShort(b, bo, ifds[1].off, 259, 99) }, 2, 1, nil}, // compression 99: unknown
		{"the first IFD outside the file", func(b []byte) { bo.PutUint32(b[4:], uint32(len(b))) }, 0, 0, ErrCorrupt},
		{"every page unknown", func(b []byte) {
			setShort(b, bo, ifds[0].off, 259, 99)
			setShort(b, bo, ifds[1].off, 259, 99)
		}, 0, 0, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := append([]byte(nil), orig...)
			tc.edit(b)
			doc, err := decodeTIFF(t.Context(), b, &Options{})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			unread := 0
			for _, p := range doc.Pages {
				if p.Unreadable != "" {
					unread++
				}
			}
			if len(doc.Pages) != tc.pages || unread != tc.unread {
				t.Fatalf("%d pages, %d unreadable; want %d and %d", len(doc.Pages), unread, tc.pages, tc.unread)
			}
		})
	}
}

// setShort sets an IFD entry's SHORT value, the entry found by its tag.
func setShort(b []byte, bo binary.ByteOrder, off uint32, tag, v uint16) {
	n := int(bo.Uint16(b[off:]))
	for i := range n {
		e := b[int(off)+2+12*i:]
		if bo.Uint16(e) == tag {
			bo.PutUint16(e[2:], tiffTypeShort)
			bo.PutUint32(e[4:], 1)
			bo.PutUint16(e[8:], v)
			return
		}
	}
	panic("no such tag")
}
