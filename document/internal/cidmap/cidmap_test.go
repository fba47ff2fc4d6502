package cidmap

import "testing"

// TestText: CIDs of each collection read as Adobe's maps say, by a bfchar
// line, inside a bfrange and past its first CID; unknown CIDs and
// collections are none.
func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ordering string
		cid      int
		want     string
		ok       bool
	}{
		{"Japan1", 1, " ", true},    // bfrange <0001> <003c> <0020>
		{"Japan1", 34, "A", true},   // inside that range
		{"Japan1", 0x3d, "¥", true}, // bfchar <003d> <00a5>
		{"Japan1", 1200, "一", true}, // a kanji
		{"Japan1", 550, "の", true},  // a hiragana (in a bfrange)
		{"GB1", 34, "A", true},
		{"CNS1", 34, "A", true},
		{"Korea1", 34, "A", true},
		{"Japan1", 0, "", false},       // .notdef maps to U+FFFD: none
		{"Japan1", 1 << 20, "", false}, // past the collection
	}
	for _, tc := range tests {
		got, ok := For(tc.ordering).Text(tc.cid)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s CID %d: %q %v, want %q %v", tc.ordering, tc.cid, got, ok, tc.want, tc.ok)
		}
	}
	if For("Identity") != nil {
		t.Error("a map for the Identity ordering")
	}
}
