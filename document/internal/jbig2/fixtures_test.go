package jbig2

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/image/tiff"
)

// fixture is one embedded JBIG2 stream of testdata, its globals, and the
// picture it is of when coded losslessly (nil when its regions combine
// into something else).
type fixture struct {
	data, globals []byte
	source        *bitmap
}

// sources are the pictures the fixtures code: octave.pbm, a crop of the
// Octave quick reference card rendered by pdftoppm (make-fixtures.sh), and
// the invoice scan of document/testdata/scans/scan.tif (Group 4 TIFF).
func sources(t testing.TB) (octave, invoice *bitmap, invoiceT6 []byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/octave.pbm")
	if err != nil {
		t.Fatal(err)
	}
	if octave, err = readPBM(b); err != nil {
		t.Fatal(err)
	}
	tb, err := os.ReadFile("../../testdata/scans/scan.tif")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tiff.Decode(bytes.NewReader(tb))
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	invoice = newBitmap(r.Dx(), r.Dy())
	for y := range r.Dy() {
		for x := range r.Dx() {
			if g, _, _, _ := img.At(r.Min.X+x, r.Min.Y+y).RGBA(); g < 0x8000 {
				invoice.pix[y*invoice.w+x] = 1
			}
		}
	}
	// Its one strip (tag 273 at offset 8, 1076 bytes: see tiffdump) is
	// T.6 data, 1 black: an MMR generic region as it is.
	off, n := 8, 1076
	if binary.LittleEndian.Uint32(tb[4:]) == 0 || len(tb) < off+n {
		t.Fatal("scan.tif is not the TIFF the fixtures expect")
	}
	return octave, invoice, tb[off : off+n]
}

// makeFixtures codes the fixtures of testdata with the test encoder.
func makeFixtures(t testing.TB) map[string]fixture {
	octave, invoice, t6 := sources(t)
	w, h := uint32(octave.w), uint32(octave.h)
	t0 := genericParams{template: 0, tpgdon: true, at: defaultAT[0]}
	fx := map[string]fixture{}

	// Lossless generic region, template 0, TPGDON: jbig2enc's default.
	fx["generic"] = fixture{data: stream(
		seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(w, h, 0, false, 0)},
		seg{number: 1, typ: tImmediateLLGeneric, page: 1, data: genericRegionData(octave, 0, 0, opOr, t0, false)},
		seg{number: 2, typ: tEndOfPage, page: 1},
		seg{number: 3, typ: tEndOfFile},
	), source: octave}
	fx["invoice-generic"] = fixture{data: stream(
		seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(uint32(invoice.w), uint32(invoice.h), 0, false, 0)},
		seg{number: 1, typ: tImmediateLLGeneric, page: 1, data: genericRegionData(invoice, 0, 0, opOr, t0, false)},
	), source: invoice}

	// A striped page of unknown height, 4-byte page associations, a
	// stripe in each of templates 1, 2 and 3 with adaptive pixels moved,
	// the last of unknown length.
	var stripes []seg
	stripes = append(stripes, seg{number: 0, typ: tPageInfo, page: 1, page4: true, data: pageInfoData(w, 0xFFFFFFFF, 0, true, 140)})
	params := []genericParams{
		{template: 1, at: defaultAT[1]},
		{template: 2, tpgdon: true, at: [4][2]int{{-3, -1}}},
		{template: 3, tpgdon: true, at: [4][2]int{{2, -2}}},
	}
	for i, p := range params {
		y0 := i * 140
		band := crop(octave, 0, y0, octave.w, 140)
		stripes = append(stripes,
			seg{number: uint32(2*i + 1), typ: tImmediateLLGeneric, page: 1, page4: true, data: genericRegionData(band, 0, int32(y0), opOr, p, i == 2), unknownLength: i == 2},
			seg{number: uint32(2*i + 2), typ: tEndOfStripe, page: 1, page4: true, data: binary.BigEndian.AppendUint32(nil, uint32(y0+139))})
	}
	stripes = append(stripes, seg{number: 7, typ: tEndOfPage, page: 1, page4: true})
	fx["stripes"] = fixture{data: stream(stripes...), source: octave}

	// Every combination operator over a page of default pixel 1.
	box := func(x, y, w, h int) *bitmap { return crop(octave, x, y, w, h) }
	t2 := genericParams{template: 2, at: defaultAT[2]}
	fx["operators"] = fixture{data: stream(
		seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(160, 90, 1, false, 0)},
		seg{number: 1, typ: tImmediateGeneric, page: 1, data: genericRegionData(box(50, 30, 120, 60), 0, 0, opReplace, t2, false)},
		seg{number: 2, typ: tImmediateGeneric, page: 1, data: genericRegionData(box(50, 80, 100, 40), 30, 20, opAnd, t0, false)},
		seg{number: 3, typ: tImmediateGeneric, page: 1, data: genericRegionData(box(50, 100, 60, 60), 100, 40, opXor, t2, false)},
		seg{number: 4, typ: tImmediateGeneric, page: 1, data: genericRegionData(box(200, 30, 70, 30), 10, 60, opXnor, t0, false)},
		seg{number: 5, typ: tImmediateGeneric, page: 1, data: genericRegionData(box(50, 140, 80, 40), 120, -10, opOr, t2, false)},
		seg{number: 6, typ: tEndOfPage, page: 1},
	)}

	// MMR: the invoice's Group 4 strip.
	fx["mmr"] = fixture{data: stream(
		seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(uint32(invoice.w), uint32(invoice.h), 0, false, 0)},
		seg{number: 1, typ: tImmediateLLGeneric, page: 1, data: mmrRegionData(invoice.w, invoice.h, t6)},
		seg{number: 2, typ: tEndOfPage, page: 1},
	), source: invoice}

	// Symbol mode, as jbig2enc -s writes for PDF: the dictionary in the
	// globals, the page a text region drawing its symbols.
	dict, text := symbolText(octave, textParams{corner: cornerTopLeft})
	fx["text"] = fixture{
		globals: stream(seg{number: 0, typ: tSymbolDict, data: dict}),
		data: stream(
			seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(w, h, 0, false, 0)},
			seg{number: 2, typ: tImmediateLLText, refs: []uint32{0}, page: 1, data: text},
			seg{number: 3, typ: tEndOfPage, page: 1},
		),
		source: octave,
	}

	// Text regions of every other reference corner, transposed or not,
	// in strips of 2 to 8 rows, S offsets, and one drawn with XOR over a
	// default pixel of 1 (the picture inverted); the dictionary in the
	// page's stream.
	small := crop(octave, 40, 70, 300, 110)
	for name, tp := range map[string]textParams{
		"text-topright":    {corner: cornerTopRight, logStrips: 1, dsOffset: 5},
		"text-bottomleft":  {corner: cornerBottomLeft, transposed: true, logStrips: 3, dsOffset: -16},
		"text-bottomright": {corner: cornerBottomRight, logStrips: 2, dsOffset: -3, op: opXor, defPixel: 1},
		"text-transposed":  {corner: cornerTopLeft, transposed: true, logStrips: 2, dsOffset: 15},
	} {
		dict, text := symbolText(small, tp)
		f := fixture{data: stream(
			seg{number: 0, typ: tSymbolDict, data: dict},
			seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
			seg{number: 2, typ: tImmediateText, refs: []uint32{0}, page: 1, data: text},
		)}
		if tp.defPixel == 0 {
			f.source = small
		}
		fx[name] = f
	}

	// Refinement: text regions refining every odd symbol from the one
	// before it (templates 0 and 1), a dictionary of symbols each refined
	// from the one before it (the first from another dictionary's), and a
	// page refined by two refinement regions (TPGRON) from a noisy
	// generic region: the top half, then the whole. (Both at the page's
	// origin: jbig2dec 0.19 refines a region elsewhere from the page's
	// pixels at the region's own coordinates, not the page's under it;
	// TestRefineRegionOffset holds the decoder to T.88 there.)
	for name, tp := range map[string]textParams{
		"text-refine":  {corner: cornerTopLeft, refine: true},
		"text-refine1": {corner: cornerBottomLeft, logStrips: 1, refine: true, rtemplate: 1},
	} {
		syms, insts := components(small)
		fx[name] = fixture{data: stream(
			seg{number: 0, typ: tSymbolDict, data: dictData(syms, nil, false, 0)},
			seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
			seg{number: 2, typ: tImmediateText, refs: []uint32{0}, page: 1, data: textData(small.w, small.h, syms, insts, tp)},
		), source: small}
	}
	syms, insts := components(small)
	half := len(syms) / 2
	fx["dict-refine"] = fixture{
		globals: stream(seg{number: 0, typ: tSymbolDict, data: dictData(syms[:half], nil, false, 0)}),
		data: stream(
			seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
			seg{number: 2, typ: tSymbolDict, refs: []uint32{0}, page: 1, data: dictData(syms[half:], syms[:half], true, 0)},
			seg{number: 3, typ: tImmediateText, refs: []uint32{0, 2}, page: 1, data: textData(small.w, small.h, syms, insts, textParams{corner: cornerTopLeft})},
		),
		source: small,
	}
	// Two pages as jbig2enc -s -p writes them for OCRmyPDF: the symbols
	// both pages use in one dictionary in the globals, each page's own in
	// a dictionary of its page, the text region drawing from both.
	pages := []*bitmap{crop(octave, 0, 0, octave.w, 195), crop(octave, 0, 195, octave.w, octave.h-195)}
	var pageSyms [2][]*bitmap
	var pageInsts [2][]inst
	for i, pg := range pages {
		pageSyms[i], pageInsts[i] = components(pg)
	}
	same := func(a, b *bitmap) bool { return a.w == b.w && a.h == b.h && string(a.pix) == string(b.pix) }
	var shared []*bitmap
	for _, a := range pageSyms[0] {
		if slices.ContainsFunc(pageSyms[1], func(b *bitmap) bool { return same(a, b) }) {
			shared = append(shared, a)
		}
	}
	globals := stream(seg{number: 0, typ: tSymbolDict, data: dictData(shared, nil, false, 0)})
	for i, pg := range pages {
		var own []*bitmap
		for _, a := range pageSyms[i] {
			if !slices.ContainsFunc(shared, func(b *bitmap) bool { return same(a, b) }) {
				own = append(own, a)
			}
		}
		all := append(slices.Clone(shared), own...)
		insts := slices.Clone(pageInsts[i])
		for j := range insts {
			insts[j].id = slices.IndexFunc(all, func(b *bitmap) bool { return same(pageSyms[i][insts[j].id], b) })
		}
		n := uint32(1 + 4*i)
		fx[fmt.Sprintf("ocrmypdf-%d", i+1)] = fixture{globals: globals, source: pg, data: stream(
			seg{number: n, typ: tPageInfo, page: uint32(i + 1), data: pageInfoData(uint32(pg.w), uint32(pg.h), 0, false, 0)},
			seg{number: n + 1, typ: tSymbolDict, page: uint32(i + 1), data: dictData(own, nil, false, 0)},
			seg{number: n + 2, typ: tImmediateLLText, refs: []uint32{0, n + 1}, page: uint32(i + 1), data: textData(pg.w, pg.h, all, insts, textParams{corner: cornerTopLeft})},
			seg{number: n + 3, typ: tEndOfPage, page: uint32(i + 1)},
		)}
	}

	// Huffman coding: symbol dictionaries with collective bitmaps and
	// text regions with every standard table of theirs, strips, a custom
	// table, and symbol code lengths of 0 for symbols never drawn (a
	// dictionary of twelve in the globals before the one drawn from).
	hsyms, hinsts := components(small)
	fx["huffman"] = fixture{source: small, data: stream(
		seg{number: 0, typ: tSymbolDict, data: huffDictData(hsyms, 4, 2)},
		seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
		seg{number: 2, typ: tImmediateText, refs: []uint32{0}, page: 1, data: huffTextData(small.w, small.h, hsyms, hinsts, huffTextParams{fs: 6, ds: 8, dt: 11})},
	)}
	var dummies []*bitmap
	for i := range 12 {
		dummies = append(dummies, newBitmap(i+1, 1))
	}
	fx["huffman-strips"] = fixture{source: small,
		globals: stream(seg{number: 0, typ: tSymbolDict, data: dictData(dummies, nil, false, 0)}),
		data: stream(
			seg{number: 1, typ: tSymbolDict, page: 1, data: huffDictData(hsyms, 5, 3)},
			seg{number: 2, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
			seg{number: 3, typ: tImmediateText, refs: []uint32{0, 1}, page: 1, data: huffTextData(small.w, small.h, hsyms, hinsts, huffTextParams{fs: 7, ds: 9, dt: 12, unused: 12, logStrip: 1})},
		)}
	ds, table := customDS()
	fx["huffman-custom"] = fixture{source: small, data: stream(
		seg{number: 0, typ: tTables, data: table},
		seg{number: 1, typ: tSymbolDict, data: huffDictData(hsyms, 4, 2)},
		seg{number: 2, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
		seg{number: 3, typ: tImmediateText, refs: []uint32{1, 0}, page: 1, data: huffTextData(small.w, small.h, hsyms, hinsts, huffTextParams{fs: 6, custom: ds, dt: 13, logStrip: 2})},
	)}
	fx["huffman-b10"] = fixture{source: small, data: stream(
		seg{number: 0, typ: tSymbolDict, data: huffDictData(hsyms, 4, 2)},
		seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(uint32(small.w), uint32(small.h), 0, false, 0)},
		seg{number: 2, typ: tImmediateText, refs: []uint32{0}, page: 1, data: huffTextData(small.w, small.h, hsyms, hinsts, huffTextParams{fs: 6, ds: 10, dt: 11})},
	)}

	// The invoice's Group 4 strip as a collective bitmap: three symbols
	// 300 pixels wide, side by side.
	var thirds []*bitmap
	var thirdInsts []inst
	for i := range 3 {
		thirds = append(thirds, crop(invoice, 300*i, 0, 300, invoice.h))
		thirdInsts = append(thirdInsts, inst{x: 300 * i, id: i})
	}
	fx["huffman-mmr"] = fixture{source: invoice, data: stream(
		seg{number: 0, typ: tSymbolDict, data: huffDictMMR([]int{300, 300, 300}, invoice.h, t6)},
		seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(uint32(invoice.w), uint32(invoice.h), 0, false, 0)},
		seg{number: 2, typ: tImmediateText, refs: []uint32{0}, page: 1, data: huffTextData(invoice.w, invoice.h, thirds, thirdInsts, huffTextParams{fs: 6, ds: 8, dt: 11})},
	)}

	// Halftones: 4×4 ordered-dither patterns of 0 to 16 black pixels; the
	// page drawn with, in each 4×4 cell, the pattern of as many black
	// pixels as the card's cell has (template 0, an upright grid); and a
	// turned grid starting off the region, cells outside it skipped,
	// template 1, drawn with XOR. (jbig2dec 0.19 fills a halftone region
	// of default pixel 1 with every eighth pixel only: see
	// TestHalftoneDefaultPixel.)
	bayer := [4][4]int{{0, 8, 2, 10}, {12, 4, 14, 6}, {3, 11, 1, 9}, {15, 7, 13, 5}}
	var pats []*bitmap
	for k := range 17 {
		p := newBitmap(4, 4)
		for y := range 4 {
			for x := range 4 {
				if bayer[y][x] < k {
					p.pix[y*4+x] = 1
				}
			}
		}
		pats = append(pats, p)
	}
	cells := make([][]int, octave.h/4)
	want := newBitmap(octave.w, octave.h)
	for m := range cells {
		cells[m] = make([]int, octave.w/4)
		for n := range cells[m] {
			for y := range 4 {
				for x := range 4 {
					cells[m][n] += int(octave.at(4*n+x, 4*m+y))
				}
			}
			want.combine(pats[cells[m][n]], int64(4*n), int64(4*m), opOr)
		}
	}
	fx["halftone"] = fixture{source: want, data: stream(
		seg{number: 0, typ: tPatternDict, data: patternDictData(pats, 0)},
		seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(w, h, 0, false, 0)},
		seg{number: 2, typ: tImmediateLLHalf, refs: []uint32{0}, page: 1, data: halftoneData(cells, halftone{w: octave.w, h: octave.h, rx: 4 << 8, template: 0, op: opOr, npats: 17, pw: 4, ph: 4})},
	)}
	turned := make([][]int, 45)
	for m := range turned {
		turned[m] = make([]int, 70)
		for n := range turned[m] {
			turned[m][n] = cells[20+m][10+n]
		}
	}
	fx["halftone-turned"] = fixture{data: stream(
		seg{number: 0, typ: tPatternDict, data: patternDictData(pats, 2)},
		seg{number: 1, typ: tPageInfo, page: 1, data: pageInfoData(200, 120, 0, false, 0)},
		seg{number: 2, typ: tImmediateHalf, refs: []uint32{0}, page: 1, data: halftoneData(turned, halftone{w: 200, h: 120, gx: -2000, gy: -500, rx: 1000, ry: 70, template: 1, skip: true, op: opXor, npats: 17, pw: 4, ph: 4})},
	)}

	// Aggregation: a dictionary of symbols each two symbols of another
	// side by side, or one refined, drawn below the crop's own.
	var aggs []aggSym
	for i := 0; i+1 < len(hsyms) && len(aggs) < 12; i += 2 {
		a, b := hsyms[i], hsyms[i+1]
		if a.h != b.h {
			continue
		}
		bm := newBitmap(a.w+2+b.w, a.h)
		bm.combine(a, 0, 0, opOr)
		bm.combine(b, int64(a.w+2), 0, opOr)
		aggs = append(aggs, aggSym{bm: bm, parts: []struct{ id, x int }{{i, 0}, {i + 1, a.w + 2}}})
	}
	if len(aggs) < 4 {
		t.Fatalf("%d aggregates of two symbols, want 4 or more", len(aggs))
	}
	tall := hsyms[len(hsyms)-1]
	aggs = append(aggs, aggSym{bm: crop(tall, 0, 0, tall.w, tall.h), parts: []struct{ id, x int }{{len(hsyms) - 1, 0}}})
	slices.SortStableFunc(aggs, func(a, b aggSym) int {
		if a.bm.h != b.bm.h {
			return a.bm.h - b.bm.h
		}
		return a.bm.w - b.bm.w
	})
	aggPage := newBitmap(small.w, small.h+40)
	aggPage.combine(small, 0, 0, opOr)
	aggSyms := slices.Clone(hsyms)
	aggInsts := slices.Clone(hinsts)
	x := 0
	for _, a := range aggs {
		aggInsts = append(aggInsts, inst{x: x, y: small.h + 5, id: len(aggSyms)})
		aggSyms = append(aggSyms, a.bm)
		aggPage.combine(a.bm, int64(x), int64(small.h+5), opOr)
		x += a.bm.w + 3
	}
	fx["aggregate"] = fixture{source: aggPage, data: stream(
		seg{number: 0, typ: tSymbolDict, data: dictData(hsyms, nil, false, 0)},
		seg{number: 1, typ: tSymbolDict, refs: []uint32{0}, data: aggDictData(aggs, hsyms, 1)},
		seg{number: 2, typ: tPageInfo, page: 1, data: pageInfoData(uint32(aggPage.w), uint32(aggPage.h), 0, false, 0)},
		seg{number: 3, typ: tImmediateText, refs: []uint32{0, 1}, page: 1, data: textData(aggPage.w, aggPage.h, aggSyms, aggInsts, textParams{corner: cornerTopLeft})},
	)}

	noisy := crop(octave, 0, 0, octave.w, octave.h)
	for i := range noisy.pix {
		if (i*7)%11 == 0 {
			noisy.pix[i] ^= 1
		}
	}
	top := crop(octave, 0, 0, octave.w, 210)
	refined := crop(noisy, 0, 0, noisy.w, noisy.h) // the page once the top is refined
	copy(refined.pix, top.pix)
	fx["refine-page"] = fixture{data: stream(
		seg{number: 0, typ: tPageInfo, page: 1, data: pageInfoData(w, h, 0, false, 0)},
		seg{number: 1, typ: tImmediateGeneric, page: 1, data: genericRegionData(noisy, 0, 0, opOr, t0, false)},
		seg{number: 2, typ: tImmediateRefine, page: 1, data: refineData(top, noisy, 0, 0, opReplace, 0, true)},
		seg{number: 3, typ: tImmediateLLRefine, page: 1, data: refineData(octave, refined, 0, 0, opReplace, 1, true)},
		seg{number: 4, typ: tEndOfPage, page: 1},
	), source: octave}
	return fx
}

// TestMakeFixtures: the committed fixtures are what the encoder makes;
// EXTRACTQ_UPDATE_FIXTURES=1 writes them again (make-fixtures.sh).
func TestMakeFixtures(t *testing.T) {
	t.Parallel()
	for name, f := range makeFixtures(t) {
		files := map[string][]byte{name + ".jb2": f.data}
		if f.globals != nil {
			files[name+".globals.jb2"] = f.globals
		}
		for file, want := range files {
			path := filepath.Join("testdata", file)
			if os.Getenv("EXTRACTQ_UPDATE_FIXTURES") == "1" {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes, %v; the encoder makes %d: run testdata/make-fixtures.sh", path, len(got), err, len(want))
			}
		}
	}
}

// TestDecodeFixtures: every fixture decodes to exactly the picture
// jbig2dec decodes it to (testdata/*.pbm, made by make-fixtures.sh), and
// a lossless one to the picture coded.
func TestDecodeFixtures(t *testing.T) {
	t.Parallel()
	for name, f := range makeFixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", name+".jb2"))
			if err != nil {
				t.Fatal(err)
			}
			var globals []byte
			if f.globals != nil {
				if globals, err = os.ReadFile(filepath.Join("testdata", name+".globals.jb2")); err != nil {
					t.Fatal(err)
				}
			}
			img, err := Decode(data, globals, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := os.ReadFile(filepath.Join("testdata", name+".pbm"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := readPBM(ref)
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(img, want); d != "" {
				t.Errorf("differs from jbig2dec's picture: %s", d)
			}
			if f.source != nil {
				if d := diff(img, f.source); d != "" {
					t.Errorf("differs from the picture coded: %s", d)
				}
			}
		})
	}
}

// diff says how img (black 0x00) differs from bm (black 1), "" when not.
func diff(img *image.Gray, bm *bitmap) string {
	if img.Rect.Dx() != bm.w || img.Rect.Dy() != bm.h {
		return fmt.Sprintf("%v, want %d×%d", img.Rect.Size(), bm.w, bm.h)
	}
	n, first := 0, ""
	for y := range bm.h {
		for x := range bm.w {
			black := img.Pix[y*img.Stride+x] == 0
			if black != (bm.pix[y*bm.w+x] == 1) {
				if n == 0 {
					first = fmt.Sprintf(" (first at %d,%d)", x, y)
				}
				n++
			}
		}
	}
	if n > 0 {
		return fmt.Sprintf("%d pixels%s", n, first)
	}
	return ""
}
