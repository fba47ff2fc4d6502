package jpx

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
)

// TestSynthesizeInPlace checks the in-place inverse DWT against the
// textbook form (F.3.3, F.3.4: the sub-bands interleaved into a new array
// for each resolution, then its rows and its columns), over origins of
// both parities, one-sample edges and levels beyond the size.
func TestSynthesizeInPlace(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 29))
	for range 300 {
		x0, y0 := uint32(r.IntN(40)), uint32(r.IntN(40))
		x1, y1 := x0+1+uint32(r.IntN(70)), y0+1+uint32(r.IntN(70))
		nl := r.IntN(7)
		for _, reversible := range []bool{true, false} {
			tc := tileCompFor(t, x0, y0, x1, y1, nl, reversible)
			bands := fillBands(tc, r)
			where := fmt.Sprintf("[%d,%d)×[%d,%d), %d levels", x0, x1, y0, y1, nl)
			if reversible {
				checkInPlace(t, tc, bands, func(b bandSamples) []int32 { return b.i }, idwt53, func() []int32 { return tc.ipix }, "5/3, "+where)
			} else {
				checkInPlace(t, tc, bands, func(b bandSamples) []float32 { return b.f }, idwt97, func() []float32 { return tc.fpix }, "9/7, "+where)
			}
		}
	}
}

// checkInPlace puts bands in tc's buffer, runs the in-place inverse DWT
// and compares its samples (pix) with the textbook form's.
func checkInPlace[T int32 | float32](t *testing.T, tc *tileComp, bands []bandSamples, of func(bandSamples) []T, idwt func([]T, bool), pix func() []T, what string) {
	t.Helper()
	want := synthesizeByInterleaving(tc, bands, of, idwt)
	decodeBuffers(tc, bands)
	inverseDWT(tc)
	got := pix()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: sample %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestDecodeMemory bounds what a decode allocates per pixel, so that the
// sub-bands and resolutions do not come back as arrays of their own (a
// 40-megapixel 8-bit RGB scan peaked at 1.49 GB that way, 0.77 GB in
// place). An 8-bit grey image with 5 levels: 4 bytes a sample for the
// tile-component, 1 for the plane, 1 for the image, and at this small
// size (180×64) about 5 for the code-blocks' own structures. Not
// parallel: TotalAlloc counts every goroutine of the process.
func TestDecodeMemory(t *testing.T) {
	data, err := os.ReadFile("testdata/grey-rlcp.j2k")
	if err != nil {
		t.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	img, err := DecodeBytes(data, DefaultLimits)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	px := img.Bounds().Dx() * img.Bounds().Dy()
	perPixel := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(px)
	t.Logf("%.1f bytes a pixel", perPixel)
	if perPixel > 13 {
		t.Errorf("decoding %v allocated %.1f bytes a pixel, want at most 13 (in place: 11.0; with a new array for every sub-band and resolution and 2-byte planes: 17.7)", img.Bounds(), perPixel)
	}
}

// tileCompFor sets up a one-component tile [x0,x1)×[y0,y1) with nl
// decomposition levels, as a codestream's headers would.
func tileCompFor(t *testing.T, x0, y0, x1, y1 uint32, nl int, reversible bool) *tileComp {
	t.Helper()
	d := &decoder{budget: 1 << 20, siz: siz{x0: x0, y0: y0, x1: x1, y1: y1, tw: x1, th: y1, ntx: 1, nty: 1, comps: []sizComp{{prec: 8, dx: 1, dy: 1}}}}
	precincts := make([]byte, nl+1)
	for i := range precincts {
		precincts[i] = 15 | 15<<4
	}
	tl := &tile{p: &params{comps: []compParams{{levels: nl, cbw: 6, cbh: 6, reversible: reversible, precincts: precincts, qStyle: 1, guard: 2, steps: []uint16{10 << 11}}}}}
	tl.x0, tl.y0, tl.x1, tl.y1 = x0, y0, x1, y1
	tc, err := d.setupTileComp(tl, 0)
	if err != nil {
		t.Fatalf("[%d,%d)×[%d,%d), %d levels: %v", x0, x1, y0, y1, nl, err)
	}
	return tc
}

// bandSamples is one sub-band's coefficients, in an array of its own.
type bandSamples struct {
	b *band
	i []int32
	f []float32
}

func fillBands(tc *tileComp, r *rand.Rand) []bandSamples {
	var out []bandSamples
	for _, res := range tc.res {
		for _, b := range res.bands {
			s := bandSamples{b: b, i: make([]int32, b.w()*b.h()), f: make([]float32, b.w()*b.h())}
			for k := range s.i {
				s.i[k] = int32(r.IntN(511) - 255)
				s.f[k] = float32(r.NormFloat64() * 40)
			}
			out = append(out, s)
		}
	}
	return out
}

// decodeBuffers puts the sub-bands where decodeBlocks decodes them.
func decodeBuffers(tc *tileComp, bands []bandSamples) {
	stride, n := tc.w(), tc.w()*tc.h()
	if tc.p.reversible {
		tc.ipix = make([]int32, n)
	} else {
		tc.fpix = make([]float32, n)
	}
	for _, s := range bands {
		for y := range s.b.h() {
			for x := range s.b.w() {
				if tc.p.reversible {
					tc.ipix[s.b.off+y*stride+x] = s.i[y*s.b.w()+x]
				} else {
					tc.fpix[s.b.off+y*stride+x] = s.f[y*s.b.w()+x]
				}
			}
		}
	}
}

// synthesizeByInterleaving is the inverse DWT as F.3 writes it.
func synthesizeByInterleaving[T int32 | float32](tc *tileComp, bands []bandSamples, of func(bandSamples) []T, idwt func([]T, bool)) []T {
	by := map[*band][]T{}
	for _, s := range bands {
		by[s.b] = of(s)
	}
	ll := by[tc.res[0].bands[0]]
	for r := 1; r < len(tc.res); r++ {
		res, prev := tc.res[r], tc.res[r-1]
		w, h := res.w(), res.h()
		if w <= 0 || h <= 0 {
			ll = nil
			continue
		}
		hl, lh, hh := res.bands[0], res.bands[1], res.bands[2]
		out := make([]T, w*h)
		lx0, hx0 := int((res.x0+1)>>1), int(res.x0>>1)
		ly0, hy0 := int((res.y0+1)>>1), int(res.y0>>1)
		for y := range h {
			v := int(res.y0) + y
			lo, hi, lw, hw := ll, by[hl], prev.w(), hl.w()
			row := v>>1 - ly0
			if v&1 == 1 {
				lo, hi, lw, hw = by[lh], by[hh], lh.w(), hh.w()
				row = v>>1 - hy0
			}
			for x := range w {
				if u := int(res.x0) + x; u&1 == 0 {
					out[y*w+x] = lo[row*lw+u>>1-lx0]
				} else {
					out[y*w+x] = hi[row*hw+u>>1-hx0]
				}
			}
		}
		for y := range h {
			idwt(out[y*w:y*w+w], res.x0&1 == 1)
		}
		col := make([]T, h)
		for x := range w {
			for y := range h {
				col[y] = out[y*w+x]
			}
			idwt(col, res.y0&1 == 1)
			for y := range h {
				out[y*w+x] = col[y]
			}
		}
		ll = out
	}
	return ll
}
