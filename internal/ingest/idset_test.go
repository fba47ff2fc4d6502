package ingest

import (
	"strconv"
	"testing"
)

// TestIDHashes: ids are new once and seen ever after, through the
// table's doublings, and the table stays at most three quarters full
// (the memory its doc comment states).
func TestIDHashes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 767, 768, 100_000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			s := newIDHashes()
			for i := range n {
				if s.add("id-" + strconv.Itoa(i)) {
					t.Fatalf("id-%d seen before it was added", i)
				}
			}
			for i := range n {
				if !s.add("id-" + strconv.Itoa(i)) {
					t.Fatalf("id-%d not seen the second time", i)
				}
			}
			if s.n != n || s.n*4 > len(s.slots)*3 || len(s.slots) > max(1024, 8*n/3+1) {
				t.Errorf("%d ids in %d slots; want %d, at most three quarters full and at least three eighths", s.n, len(s.slots), n)
			}
		})
	}
}
