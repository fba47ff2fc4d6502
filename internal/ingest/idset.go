package ingest

import "hash/maphash"

// idHashes is the set of ids a JSON Lines object's lines have taken, so
// that a line whose id an earlier line had is rejected however far apart
// the two are: the submitter sees the object a batch at a time and only
// catches the two within one batch.
//
// An object may hold tens of millions of lines, so the ids themselves are
// not kept: the set holds a 64-bit hash of each (maphash, seeded afresh
// for each object) in an open-addressed table kept at most three quarters
// full, 11 to 21 bytes a line (about 16 on average; 16 MiB at a million
// lines, 128 MiB at ten million), and half as much again for a moment
// while the table doubles. A hash that is there already is taken for a
// duplicate without comparing the ids, which are gone: two different ids
// of an object of n lines share a hash with a probability of about
// n²/2⁶⁵ (3·10⁻⁶ at ten million lines), and since the seed is random no
// input can be made to collide on purpose, nor does a collision repeat
// when the object is read again.
type idHashes struct {
	seed  maphash.Seed
	slots []uint64 // linear probing; 0 marks an empty slot
	n     int
}

func newIDHashes() *idHashes {
	return &idHashes{seed: maphash.MakeSeed(), slots: make([]uint64, 1024)}
}

// add adds id and reports whether its hash was there already.
func (s *idHashes) add(id string) (seen bool) {
	h := maphash.String(s.seed, id)
	if h == 0 {
		h = 1 // 0 marks an empty slot
	}
	if (s.n+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	if !s.insert(h) {
		return true
	}
	s.n++
	return false
}

// insert puts h in its slot, reporting false when it is there already.
func (s *idHashes) insert(h uint64) bool {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			return true
		case h:
			return false
		}
	}
}

// grow doubles the table.
func (s *idHashes) grow() {
	old := s.slots
	s.slots = make([]uint64, 2*len(old))
	for _, h := range old {
		if h != 0 {
			s.insert(h)
		}
	}
}
