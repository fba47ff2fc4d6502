package jbig2

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRoundTrip: random pictures of text-like density coded with every
// template, adaptive pixels moved or not, TPGDON on or off, decode to
// themselves.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for template := range 4 {
		for _, tpgdon := range []bool{false, true} {
			for _, moved := range []bool{false, true} {
				bm := newBitmap(37+rng.IntN(50), 1+rng.IntN(40))
				for i := range bm.pix {
					if rng.IntN(5) == 0 {
						bm.pix[i] = 1
					}
				}
				// Some rows the same as the one above: what TPGDON skips.
				for y := 1; y < bm.h; y += 3 {
					copy(bm.pix[y*bm.w:(y+1)*bm.w], bm.pix[(y-1)*bm.w:y*bm.w])
				}
				p := genericParams{template: template, tpgdon: tpgdon, at: defaultAT[template]}
				if moved {
					p.at = [4][2]int{{-5, 0}, {7, -3}, {-20, -1}, {0, -4}}
				}
				data := stream(
					seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(uint32(bm.w), uint32(bm.h), 0, false, 0)},
					seg{number: 1, typ: tImmediateGeneric, page: 1, data: genericRegionData(bm, 0, 0, opOr, p, false)},
				)
				img, err := Decode(data, nil, Limits{})
				if err != nil {
					t.Fatalf("template %d, TPGDON %v, AT moved %v: %v", template, tpgdon, moved, err)
				}
				if d := diff(img, bm); d != "" {
					t.Errorf("template %d, TPGDON %v, AT moved %v: %s", template, tpgdon, moved, d)
				}
			}
		}
	}
}

// TestTrailingBytes: a line end after the last segment, as PDF writers
// leave before endstream, is not a segment; more than a header's worth of
// junk is, unless after the end of the page.
func TestTrailingBytes(t *testing.T) {
	t.Parallel()
	ended, err := os.ReadFile("testdata/generic.jb2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(append(bytes.Clone(ended), "some junk after it"...), nil, Limits{}); err != nil {
		t.Errorf("with junk after the end of the page: %v", err)
	}
	data, err := os.ReadFile("testdata/invoice-generic.jb2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(append(bytes.Clone(data), "\r\n"...), nil, Limits{}); err != nil {
		t.Errorf("with a line end: %v", err)
	}
	if _, err := Decode(append(bytes.Clone(data), "some junk after it"...), nil, Limits{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("with junk: %v, want ErrMalformed", err)
	}
}

// TestSegmentHeaders: every form of the header fields reads.
func TestSegmentHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		seg  seg
	}{
		{"short", seg{number: 3, typ: tEndOfPage, refs: []uint32{1, 2}, page: 7}},
		{"4-byte page", seg{number: 3, typ: tEndOfStripe, page: 70000, page4: true, data: []byte{0, 0, 0, 9}}},
		{"long referred-to list", seg{number: 40, typ: tImmediateText, refs: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, page: 1, data: []byte{1, 2, 3}}},
		{"2-byte references", seg{number: 300, typ: tImmediateText, refs: []uint32{299, 1, 256}, page: 1}},
		{"4-byte references", seg{number: 70000, typ: tImmediateText, refs: []uint32{69999, 5, 6, 7, 8}, page: 2, page4: true}},
	}
	for _, tc := range tests {
		b := tc.seg.bytes()
		s, off, err := parseHeader(append(b, 0xEE), 0)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if s.number != tc.seg.number || s.typ != tc.seg.typ || s.page != tc.seg.page || len(s.referred) != len(tc.seg.refs) || string(s.data) != string(tc.seg.data) || off != len(b)-len(tc.seg.data) {
			t.Errorf("%s: %+v at %d", tc.name, s, off)
		}
		for i, r := range tc.seg.refs {
			if i < len(s.referred) && s.referred[i] != r {
				t.Errorf("%s: referred-to %v, want %v", tc.name, s.referred, tc.seg.refs)
				break
			}
		}
	}
}

// TestErrors: what is not decoded says which segment and why, as
// *UnsupportedError, ErrMalformed or ErrLimit; never a panic.
func TestErrors(t *testing.T) {
	t.Parallel()
	info := seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(64, 32, 0, false, 0)}
	region := regionInfoData(64, 32, 0, 0, opOr)
	generic, err := os.ReadFile("testdata/generic.jb2")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		globals []byte
		lim     Limits
		want    error
		say     string
	}{
		{"MMR halftone region", stream(info, seg{number: 1, typ: tImmediateLLHalf, page: 1, data: append(region, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0)}), nil, Limits{}, ErrUnsupported, "immediate halftone region, type 23): an MMR-coded gray-scale image"},
		{"halftone region without patterns", stream(info, seg{number: 1, typ: tImmediateLLHalf, page: 1, data: append(region, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0)}), nil, Limits{}, ErrMalformed, "without its pattern dictionary"},
		{"pattern dictionary cut short", stream(seg{number: 1, typ: tPatternDict, data: []byte{1}}), nil, Limits{}, ErrMalformed, "pattern dictionary of 1 bytes"},
		{"too many patterns", stream(info), stream(seg{number: 1, typ: tPatternDict, data: []byte{0, 4, 4, 0xFF, 0xFF, 0xFF, 0xFF}}), Limits{}, ErrLimit, "4294967296 patterns"},
		{"intermediate halftone region", stream(info, seg{number: 1, typ: tIntermediateHalf, page: 1, data: region}), nil, Limits{}, ErrUnsupported, "intermediate halftone region, type 20"},
		{"intermediate refinement region", stream(info, seg{number: 1, typ: tIntermediateRefine, page: 1, data: region}), nil, Limits{}, ErrUnsupported, "intermediate generic refinement region, type 40"},
		{"refinement of an intermediate region", stream(info, seg{number: 1, typ: tImmediateRefine, refs: []uint32{0}, page: 1, data: region}), nil, Limits{}, ErrUnsupported, "refining an intermediate region"},
		{"aggregate of no symbols", stream(seg{number: 1, typ: tSymbolDict, data: aggregate()}), nil, Limits{}, ErrMalformed, "symbol 0 of 0"},
		{"intermediate generic region", stream(info, seg{number: 1, typ: tIntermediateGeneric, page: 1, data: region}), nil, Limits{}, ErrUnsupported, "intermediate generic region"},
		{"unknown type", stream(info, seg{number: 1, typ: 33, page: 1}), nil, Limits{}, ErrUnsupported, "unknown segment type, type 33"},
		{"Huffman symbol dictionary with refinement", stream(seg{number: 1, typ: tSymbolDict, data: []byte{0, 3}}), nil, Limits{}, ErrUnsupported, "Huffman coding with refinement and aggregation (SDHUFF and SDREFAGG)"},
		{"Huffman table of another segment", stream(seg{number: 1, typ: tSymbolDict, data: []byte{0, 1 | 3<<2, 0, 0, 0, 0, 0, 0, 0, 0}}), nil, Limits{}, ErrMalformed, "a custom Huffman table it does not refer to"},
		{"Huffman code not in its table", stream(seg{number: 1, typ: tSymbolDict, data: []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xFF, 0xFF}}), nil, Limits{}, ErrMalformed, ""},
		{"code table cut short", stream(seg{number: 1, typ: tTables, data: []byte{0x30, 0, 0, 0, 0, 0, 0, 1, 0}}), nil, Limits{}, ErrMalformed, "ends early"},
		{"Huffman text region with refinement", stream(info, seg{number: 1, typ: tImmediateText, page: 1, data: append(region, 0, 3)}), nil, Limits{}, ErrUnsupported, "Huffman coding with refinement (SBHUFF and SBREFINE)"},
		{"refinement region before the page", stream(seg{number: 1, typ: tImmediateRefine, page: 1, data: append(region, 1)}), nil, Limits{}, ErrMalformed, "before the page information"},
		{"extended template", stream(info, seg{number: 1, typ: tImmediateGeneric, page: 1, data: append(region, 0x10)}), nil, Limits{}, ErrUnsupported, "EXTTEMPLATE"},
		{"junk", []byte("not an image this reader decodes"), nil, Limits{}, ErrMalformed, ""},
		{"header cut short", generic[:9], nil, Limits{}, ErrMalformed, "ends early"},
		{"data cut short", generic[:len(generic)-1000], nil, Limits{}, ErrMalformed, "bytes of data"},
		{"no page information", stream(seg{number: 1, typ: tEndOfFile}), nil, Limits{}, ErrMalformed, "no page information"},
		{"region before the page", stream(seg{number: 1, typ: tImmediateGeneric, page: 1, data: append(region, 4, 2, 0xFF)}), nil, Limits{}, ErrMalformed, "before the page information"},
		{"referred-to count 5", []byte{0, 0, 0, 1, 48, 5 << 5, 1, 0, 0, 0, 0}, nil, Limits{}, ErrMalformed, "count 5"},
		{"bad operator", stream(info, seg{number: 1, typ: tImmediateGeneric, page: 1, data: append(regionInfoData(4, 4, 0, 0, 6), 4, 2, 0xFF)}), nil, Limits{}, ErrMalformed, "operator 6"},
		{"page too large", stream(seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(100000, 100000, 0, false, 0)}), nil, Limits{}, ErrLimit, "100000×100000"},
		{"region too large", stream(info, seg{number: 1, typ: tImmediateGeneric, page: 1, data: append(regionInfoData(1<<20, 1<<20, 0, 0, 0), 4, 2, 0xFF)}), nil, Limits{}, ErrLimit, "region"},
		{"too much work", generic, nil, Limits{MaxWork: 1000}, ErrLimit, "pixels decoded"},
		{"too many segments", generic, nil, Limits{MaxSegments: 2}, ErrLimit, "segments"},
		{"coding contexts count as work", stream(info, seg{number: 1, typ: tImmediateGeneric, page: 1, data: genericRegionData(newBitmap(1, 1), 0, 0, opOr, genericParams{at: defaultAT[0]}, false)}), nil, Limits{MaxPixels: 10000}, ErrLimit, "more than 40000 pixels decoded"},
		{"code table lines count as symbols", stream(seg{number: 1, typ: tTables, data: func() []byte { _, t := customDS(); return t }()}), nil, Limits{MaxSymbols: 5}, ErrLimit, "Huffman table lines"},
		{"a dictionary referred to too often", stream(seg{number: 0, typ: tSymbolDict, data: dictData([]*bitmap{newBitmap(2, 2), newBitmap(3, 2)}, nil, false, 0)}, seg{number: 1, typ: tSymbolDict, refs: []uint32{0, 0, 0, 0, 0, 0, 0, 0}, data: dictData(nil, nil, false, 0)}), nil, Limits{MaxSymbols: 10}, ErrLimit, "refers to more than 10 symbols"},
		{"striped page too high", stream(seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(1000, 0xFFFFFFFF, 0, true, 0)}, seg{number: 1, typ: tEndOfStripe, page: 1, data: []byte{0xFF, 0, 0, 0}}), nil, Limits{}, ErrLimit, "page"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(tc.data, tc.globals, tc.lim)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("%v, want %v saying %q", err, tc.want, tc.say)
			}
			var u *UnsupportedError
			if errors.Is(tc.want, ErrUnsupported) && !errors.As(err, &u) {
				t.Errorf("%v is not an *UnsupportedError", err)
			}
		})
	}
}

// TestHalftoneDefaultPixel: a halftone region of default pixel 1 drawn
// with XOR is the one of default pixel 0 inverted.
func TestHalftoneDefaultPixel(t *testing.T) {
	t.Parallel()
	f := makeFixtures(t)["halftone-turned"]
	want, err := Decode(f.data, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The same stream but for HDEFPIXEL: the region's flags byte, after
	// the pattern dictionary's segment, the page's and the region's
	// header and region information.
	data := bytes.Clone(f.data)
	i := bytes.Index(data, []byte{0, 0, 0, 2, tImmediateHalf, 0x20, 0, 1})
	if i < 0 {
		t.Fatal("no halftone region segment")
	}
	data[i+12+17] |= 0x80
	img, err := Decode(data, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for j := range img.Pix {
		if img.Pix[j] != ^want.Pix[j] {
			t.Fatalf("pixel %d: %#x, want %#x inverted", j, img.Pix[j], want.Pix[j])
		}
	}
}

// aggregate is a symbol dictionary whose one symbol aggregates two of
// none.
func aggregate() []byte {
	b := binary.BigEndian.AppendUint16(nil, 2|1<<12) // refinement and aggregation, template 1
	b = append(b, 3, 0xFF, 0xFD, 0xFF, 2, 0xFE, 0xFE, 0xFE)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	e := newMQEncoder()
	var iadh, iadw, iaai intDecoder
	e.encodeInt(&iadh, 5, false)
	e.encodeInt(&iadw, 4, false)
	e.encodeInt(&iaai, 2, false)
	return append(b, e.flush()...)
}

// TestLimitsBoundTime: page-sized regions coded in a few bytes each
// decode within the work limit (4 pages' pixels), and past it fail fast.
func TestLimitsBoundTime(t *testing.T) {
	t.Parallel()
	var segs []seg
	segs = append(segs, seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(2000, 2000, 0, false, 0)})
	for i := range 50 {
		segs = append(segs, seg{number: uint32(i + 1), typ: tImmediateGeneric, page: 1, data: append(regionInfoData(2000, 2000, 0, 0, opXor), 4, 2, 0xFF)})
	}
	start := time.Now()
	_, err := Decode(stream(segs...), nil, Limits{MaxPixels: 4_000_000})
	if !errors.Is(err, ErrLimit) {
		t.Errorf("50 regions of 4 MP: %v, want ErrLimit", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("took %v", el)
	}
}

// FuzzJBIG2: no input panics or runs unbounded; what decodes is the
// page's size.
func FuzzJBIG2(f *testing.F) {
	for _, name := range []string{"generic", "stripes", "operators", "mmr", "text", "text-bottomright", "text-refine", "dict-refine", "refine-page", "ocrmypdf-2", "halftone-turned", "huffman-strips", "huffman-custom", "huffman-mmr", "aggregate"} {
		data, err := os.ReadFile("testdata/" + name + ".jb2")
		if err != nil {
			f.Fatal(err)
		}
		globals, _ := os.ReadFile("testdata/" + name + ".globals.jb2")
		f.Add(data, globals)
	}
	f.Fuzz(func(t *testing.T, data, globals []byte) {
		lim := Limits{MaxPixels: 1 << 18, MaxWork: 1 << 20, MaxSegments: 1000, MaxSymbols: 10000}
		img, err := Decode(data, globals, lim)
		if err != nil {
			return
		}
		if n := int64(img.Rect.Dx()) * int64(img.Rect.Dy()); n > lim.MaxPixels || n == 0 || len(img.Pix) != int(n) {
			t.Fatalf("a %v picture of %d bytes", img.Rect, len(img.Pix))
		}
	})
}

// BenchmarkDecode: the fixtures' pictures, in pixels a second.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"generic", "mmr", "text", "refine-page", "halftone"} {
		data, err := os.ReadFile("testdata/" + name + ".jb2")
		if err != nil {
			b.Fatal(err)
		}
		globals, _ := os.ReadFile("testdata/" + name + ".globals.jb2")
		b.Run(name, func(b *testing.B) {
			var px int
			for b.Loop() {
				img, err := Decode(data, globals, Limits{})
				if err != nil {
					b.Fatal(err)
				}
				px += len(img.Pix)
			}
			b.ReportMetric(float64(px)/b.Elapsed().Seconds()/1e6, "MP/s")
		})
	}
}

// TestRefineRegionOffset: a refinement region away from the page's origin
// refines the page's pixels under it (T.88 7.4.7.5), its neighbours
// outside the region included.
func TestRefineRegionOffset(t *testing.T) {
	t.Parallel()
	octave, _, _ := sources(t)
	noisy := crop(octave, 0, 0, octave.w, octave.h)
	for i := range noisy.pix {
		if (i*5)%13 == 0 {
			noisy.pix[i] ^= 1
		}
	}
	want := crop(noisy, 0, 0, noisy.w, noisy.h)
	for y := 150; y < 300; y++ {
		copy(want.pix[y*want.w+200:y*want.w+450], octave.pix[y*octave.w+200:y*octave.w+450])
	}
	for template := range 2 {
		data := stream(
			seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(uint32(octave.w), uint32(octave.h), 0, false, 0)},
			seg{number: 1, typ: tImmediateGeneric, page: 1, data: genericRegionData(noisy, 0, 0, opOr, genericParams{at: defaultAT[0]}, false)},
			seg{number: 2, typ: tImmediateRefine, page: 1, data: refineData(crop(octave, 200, 150, 250, 150), noisy, 200, 150, opReplace, template, true)},
		)
		img, err := Decode(data, nil, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(img, want); d != "" {
			t.Errorf("template %d: %s", template, d)
		}
	}
}
