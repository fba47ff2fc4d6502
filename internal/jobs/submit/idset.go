package submit

import "hash/maphash"

// idSet is the set of document ids a submission has taken, to reject an
// id that comes twice. A map[string]bool of every id costs, at a million
// documents, a lookup that misses the cache on every document (about 4%
// of submit's CPU at 200,000) and a table of string keys the collector
// scans in every cycle. idSet keys its table by a 64-bit hash of the id
// instead, with the id's index in a list as the value: a table without
// pointers, and a miss (a new id, nearly every document) compares no
// string. A hit compares the id with the one listed; ids whose hash an
// earlier, different id already has (about one pair in 2^64) go in an
// exact map, so no id is ever taken for another (TestIDSetIsAMap).
//
// The table is its own, open addressing with linear probing at most half
// full, not a map[uint64]uint32: a new id costs a hash, one or two probes
// in adjacent slots and two stores, where the map's insert cost about
// four times the instructions (BenchmarkSubmitOwnWork).
type idSet struct {
	seed  maphash.Seed
	hash  func(maphash.Seed, string) uint64 // maphash.String; a test may collide on purpose
	keys  []uint64                          // the hashes; len a power of two
	at    []uint32                          // at[j]: 1 + the index in ids of the id hashed keys[j]; 0: empty
	ids   [][]string                        // in chunks of idChunk: appending copies none
	n     uint32                            // ids taken into the table
	exact map[string]bool                   // ids whose hash an earlier, different id has
}

const idChunk = 4096

func newIDSet() *idSet {
	return &idSet{seed: maphash.MakeSeed(), hash: maphash.String}
}

// add adds id and reports whether it was there already.
func (s *idSet) add(id string) (seen bool) {
	h := s.hash(s.seed, id)
	if 2*(s.n+1) > uint32(len(s.keys)) {
		s.grow()
	}
	mask := uint64(len(s.keys) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		a := s.at[j]
		if a == 0 {
			if s.n%idChunk == 0 {
				s.ids = append(s.ids, make([]string, 0, idChunk))
			}
			last := &s.ids[len(s.ids)-1]
			*last = append(*last, id)
			s.n++
			s.keys[j], s.at[j] = h, s.n
			return false
		}
		if s.keys[j] != h {
			continue
		}
		if i := a - 1; s.ids[i/idChunk][i%idChunk] == id {
			return true
		}
		if s.exact == nil {
			s.exact = map[string]bool{}
		}
		seen = s.exact[id]
		s.exact[id] = true
		return seen
	}
}

// grow doubles the table (1,024 slots at first) and places the hashes
// again.
func (s *idSet) grow() {
	size := max(1024, 2*len(s.keys))
	keys, at := make([]uint64, size), make([]uint32, size)
	mask := uint64(size - 1)
	for k, a := range s.at {
		if a == 0 {
			continue
		}
		j := s.keys[k] & mask
		for at[j] != 0 {
			j = (j + 1) & mask
		}
		keys[j], at[j] = s.keys[k], a
	}
	s.keys, s.at = keys, at
}
