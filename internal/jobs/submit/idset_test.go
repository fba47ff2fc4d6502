package submit

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// TestIDSetIsAMap compares idSet with the map[string]bool it stands for,
// with its hash and with hashes that collide often (a few bits of it,
// and one value for every id), on ids that repeat.
func TestIDSetIsAMap(t *testing.T) {
	t.Parallel()
	hashes := map[string]func(maphash.Seed, string) uint64{
		"maphash":   maphash.String,
		"four bits": func(s maphash.Seed, id string) uint64 { return maphash.String(s, id) & 15 },
		"constant":  func(maphash.Seed, string) uint64 { return 7 },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			set, want := newIDSet(), map[string]bool{}
			set.hash = hash
			for i := range 3000 {
				id := fmt.Sprintf("doc-%d", r.IntN(1500))
				if i%7 == 0 {
					id = "" // an empty id is an id too
				}
				if got := set.add(id); got != want[id] {
					t.Fatalf("add %q (#%d): seen %v, want %v", id, i, got, want[id])
				}
				want[id] = true
			}
		})
	}
}

// BenchmarkIDSet compares idSet with a map[string]bool on a million
// distinct ids, as a submission of a million documents adds them.
func BenchmarkIDSet(b *testing.B) {
	ids := make([]string, 1_000_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%07d", i)
	}
	b.Run("idSet", func(b *testing.B) {
		for b.Loop() {
			s := newIDSet()
			for _, id := range ids {
				s.add(id)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := map[string]bool{}
			for _, id := range ids {
				if !m[id] {
					m[id] = true
				}
			}
		}
	})
}
