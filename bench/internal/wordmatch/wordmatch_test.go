package wordmatch

import "testing"

func TestMatched(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ref, got []string
		want     int
	}{
		{[]string{"a", "b", "a"}, []string{"a", "b"}, 2},      // the second "a" is not in got
		{[]string{"a", "b", "a"}, []string{"a", "a", "c"}, 2}, // order does not count
		{nil, []string{"a"}, 0},
	}
	for _, tc := range cases {
		if got := Matched(tc.ref, tc.got); got != tc.want {
			t.Errorf("Matched(%q, %q) = %d, want %d", tc.ref, tc.got, got, tc.want)
		}
	}
	if Ratio(1, 0) != 1 || Ratio(1, 4) != 0.25 {
		t.Errorf("Ratio(1, 0) = %v, Ratio(1, 4) = %v; want 1 and 0.25", Ratio(1, 0), Ratio(1, 4))
	}
}
