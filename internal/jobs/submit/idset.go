package submit

import "hash/maphash"

// idSet is the set of document ids a submission has taken, to reject an
// id that comes twice. A map[string]bool of every id costs, at a million
// documents, a lookup that misses the cache on every document (about 4%
// of submit's CPU at 200,000) and a table of string keys the collector
// scans in every cycle. idSet keys its table by a 64-bit hash of the id
// instead, with the id's index in a list as the value: a table without
// pointers, about two thirds the size, and a miss (a new id, nearly
// every document) compares no string. A hit compares the id with the one
// listed; ids whose hash an earlier, different id already has (about
// one pair in 2^64) go in an exact map, so no id is ever taken for
// another (TestIDSetIsAMap).
type idSet struct {
	seed   maphash.Seed
	hash   func(maphash.Seed, string) uint64 // maphash.String; a test may collide on purpose
	byHash map[uint64]uint32                 // hash → index in ids
	ids    [][]string                        // in chunks of idChunk: appending copies none
	n      uint32                            // ids taken into byHash
	exact  map[string]bool                   // ids whose hash an earlier, different id has
}

const idChunk = 4096

func newIDSet() *idSet {
	return &idSet{seed: maphash.MakeSeed(), hash: maphash.String, byHash: map[uint64]uint32{}}
}

// add adds id and reports whether it was there already.
func (s *idSet) add(id string) (seen bool) {
	h := s.hash(s.seed, id)
	if i, ok := s.byHash[h]; ok {
		if s.ids[i/idChunk][i%idChunk] == id {
			return true
		}
		if s.exact == nil {
			s.exact = map[string]bool{}
		}
		seen = s.exact[id]
		s.exact[id] = true
		return seen
	}
	if s.n%idChunk == 0 {
		s.ids = append(s.ids, make([]string, 0, idChunk))
	}
	last := &s.ids[len(s.ids)-1]
	*last = append(*last, id)
	s.byHash[h] = s.n
	s.n++
	return false
}
