package mq

import (
	"math/rand/v2"
	"testing"
)

// TestRoundTrip: what the encoder codes, the decoder reads back, bit for
// bit, over skewed and even bits in several contexts at once (every state
// of the table is reached by the skewed ones), and a segment cut short
// still decodes without failing.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p1   float64 // probability of a 1
		ctxs int
	}{
		{"even", 0.5, 1},
		{"skewed", 0.02, 3},
		{"mostly ones", 0.97, 2},
		{"many contexts", 0.3, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, uint64(tc.ctxs)))
			bits := make([]int, 20000)
			for i := range bits {
				if rng.Float64() < tc.p1 {
					bits[i] = 1
				}
			}
			enc := NewEncoder()
			ecx := make([]Context, tc.ctxs)
			for i, b := range bits {
				enc.Encode(&ecx[i%tc.ctxs], b)
			}
			data := enc.Flush()
			var dec Decoder
			dec.Init(data)
			dcx := make([]Context, tc.ctxs)
			for i, want := range bits {
				if got := dec.Decode(&dcx[i%tc.ctxs]); got != want {
					t.Fatalf("bit %d: got %d, want %d", i, got, want)
				}
			}
			dec.Init(data[:len(data)/2])
			for i := range bits {
				dec.Decode(&dcx[i%tc.ctxs])
			}
		})
	}
}
