package jpx

// Inverse discrete wavelet transforms (Annex F).

const (
	alpha97 = -1.586134342059924
	beta97  = -0.052980118572961
	gamma97 = 0.882911075530934
	delta97 = 0.443506852043971
	k97     = 1.230174104914001
)

// inverseDWT reconstructs tc's samples from its sub-bands, in place.
func inverseDWT(tc *tileComp) {
	if tc.p.reversible {
		synthesize(tc.ipix, tc.w(), tc.res, idwt53)
	} else {
		synthesize(tc.fpix, tc.w(), tc.res, idwt97)
	}
}

// synthesize runs the inverse DWT over buf (row length stride), one
// resolution after another. Each starts with the resolution below in its
// top left corner and its sub-bands beside and below (placeBands); the
// one-dimensional synthesis idwt runs over each row, low-pass samples
// going to the even coordinates of the resolution's grid and high-pass
// ones to the odd (F.3.3), then over each column likewise, and leaves the
// resolution's samples in their order in its corner. This is the
// interleaving of F.3.3 and the row and column passes of F.3.4 done a
// line at a time, through one buffer the length of the longest line.
func synthesize[T int32 | float32](buf []T, stride int, levels []*resolution, idwt func([]T, bool)) {
	if len(buf) == 0 {
		return
	}
	line := make([]T, max(stride, len(buf)/stride))
	for r := 1; r < len(levels); r++ {
		res := levels[r]
		w, h := res.w(), res.h()
		pw, ph := levels[r-1].w(), levels[r-1].h()
		if w <= 0 || h <= 0 {
			continue
		}
		// The first low-pass and high-pass coordinates, halved.
		lx0, hx0 := int((res.x0+1)>>1), int(res.x0>>1)
		ly0, hy0 := int((res.y0+1)>>1), int(res.y0>>1)
		for y := range h {
			row := buf[y*stride : y*stride+w]
			for x := range w {
				if u := int(res.x0) + x; u&1 == 0 {
					line[x] = row[u>>1-lx0]
				} else {
					line[x] = row[pw+(u>>1-hx0)]
				}
			}
			idwt(line[:w], res.x0&1 == 1)
			copy(row, line[:w])
		}
		for x := range w {
			for y := range h {
				if v := int(res.y0) + y; v&1 == 0 {
					line[y] = buf[(v>>1-ly0)*stride+x]
				} else {
					line[y] = buf[(ph+(v>>1-hy0))*stride+x]
				}
			}
			idwt(line[:h], res.y0&1 == 1)
			for y := range h {
				buf[y*stride+x] = line[y]
			}
		}
	}
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
