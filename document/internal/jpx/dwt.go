package jpx

// Inverse discrete wavelet transforms (Annex F).

const (
	alpha97 = -1.586134342059924
	beta97  = -0.052980118572961
	gamma97 = 0.882911075530934
	delta97 = 0.443506852043971
	k97     = 1.230174104914001
)

// inverseDWT reconstructs tc's samples from its sub-bands.
func inverseDWT(tc *tileComp) {
	ll := tc.res[0].bands[0]
	ipix, fpix := ll.ipix, ll.fpix
	ll.ipix, ll.fpix = nil, nil
	for r := 1; r < len(tc.res); r++ {
		res := tc.res[r]
		prev := tc.res[r-1]
		w, h := int(res.x1-res.x0), int(res.y1-res.y0)
		pw := int(prev.x1 - prev.x0)
		hl, lh, hh := res.bands[0], res.bands[1], res.bands[2]
		if w <= 0 || h <= 0 {
			ipix, fpix = nil, nil
			continue
		}
		if tc.p.reversible {
			out := make([]int32, w*h)
			interleave(out, w, h, res, ipix, pw, hl.ipix, lh.ipix, hh.ipix, hl.w(), lh.w(), hh.w())
			synthesize2D(out, w, h, res, idwt53)
			ipix = out
			hl.ipix, lh.ipix, hh.ipix = nil, nil, nil
		} else {
			out := make([]float32, w*h)
			interleave(out, w, h, res, fpix, pw, hl.fpix, lh.fpix, hh.fpix, hl.w(), lh.w(), hh.w())
			synthesize2D(out, w, h, res, idwt97)
			fpix = out
			hl.fpix, lh.fpix, hh.fpix = nil, nil, nil
		}
	}
	tc.ipix, tc.fpix = ipix, fpix
}

// synthesize2D runs the one-dimensional synthesis idwt over every row of
// out (w×h, interleaved by interleave), then over every column, each
// starting on an odd coordinate as res's origin says.
func synthesize2D[T int32 | float32](out []T, w, h int, res *resolution, idwt func([]T, bool)) {
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
}

// interleave places the four sub-bands of resolution res (ll the lower
// resolution, then hl, lh, hh, each with its row width) into out, w×h
// (F.3.3): a sample at an even column and row of the resolution's grid
// comes from ll, odd column from hl, odd row from lh, both odd from hh.
func interleave[T int32 | float32](out []T, w, h int, res *resolution, ll []T, llw int, hl, lh, hh []T, hlw, lhw, hhw int) {
	lx0, hx0 := int((res.x0+1)>>1), int(res.x0>>1)
	ly0, hy0 := int((res.y0+1)>>1), int(res.y0>>1)
	for y := range h {
		v := int(res.y0) + y
		var lo, hi []T // the row's sources for even and odd columns
		if v&1 == 0 {
			lo, hi = rowOf(ll, (v>>1-ly0)*llw, llw), rowOf(hl, (v>>1-ly0)*hlw, hlw)
		} else {
			lo, hi = rowOf(lh, (v>>1-hy0)*lhw, lhw), rowOf(hh, (v>>1-hy0)*hhw, hhw)
		}
		row := out[y*w : y*w+w]
		for x := range w {
			u := int(res.x0) + x
			if u&1 == 0 {
				row[x] = at(lo, u>>1-lx0)
			} else {
				row[x] = at(hi, u>>1-hx0)
			}
		}
	}
}

// rowOf is the row of s starting at off, n long; nil when out of range.
func rowOf[T int32 | float32](s []T, off, n int) []T {
	if off < 0 || n <= 0 || off+n > len(s) {
		return nil
	}
	return s[off : off+n]
}

func at[T int32 | float32](s []T, i int) T {
	if i < 0 || i >= len(s) {
		return 0
	}
	return s[i]
}

// idwt53 is the reversible 1D inverse (F.3.8.1); odd says the signal
// starts at an odd coordinate, so a[0] is a high-pass coefficient.
func idwt53(a []int32, odd bool) {
	n := len(a)
	if n == 1 {
		if odd {
			a[0] /= 2
		}
		return
	}
	e, o := 0, 1
	if odd {
		e, o = 1, 0
	}
	for j := e; j < n; j += 2 {
		l, r := j-1, j+1
		if l < 0 {
			l = 1
		}
		if r >= n {
			r = n - 2
		}
		a[j] -= (a[l] + a[r] + 2) >> 2
	}
	for j := o; j < n; j += 2 {
		l, r := j-1, j+1
		if l < 0 {
			l = 1
		}
		if r >= n {
			r = n - 2
		}
		a[j] += (a[l] + a[r]) >> 1
	}
}

// idwt97 is the irreversible 1D inverse (F.3.8.2).
func idwt97(a []float32, odd bool) {
	n := len(a)
	if n == 1 {
		return
	}
	e, o := 0, 1
	if odd {
		e, o = 1, 0
	}
	for j := e; j < n; j += 2 {
		a[j] *= k97
	}
	for j := o; j < n; j += 2 {
		a[j] *= 1 / k97
	}
	lift := func(start int, c float32) {
		for j := start; j < n; j += 2 {
			l, r := j-1, j+1
			if l < 0 {
				l = 1
			}
			if r >= n {
				r = n - 2
			}
			a[j] -= c * (a[l] + a[r])
		}
	}
	lift(e, delta97)
	lift(o, gamma97)
	lift(e, beta97)
	lift(o, alpha97)
}
