// Package wordmatch measures how much of a reference text's words another
// text has: the figures the document benchmarks (bench/formats,
// bench/docsweep) compare readers by.
package wordmatch

// Matched counts the words of ref that got also has, with multiplicity
// (as multisets: a word twice in ref counts twice only if got has it twice).
func Matched(ref, got []string) int {
	have := make(map[string]int, len(got))
	for _, w := range got {
		have[w]++
	}
	n := 0
	for _, w := range ref {
		if have[w] > 0 {
			have[w]--
			n++
		}
	}
	return n
}

// Ratio is a/b, and 1 when b is not positive (nothing to find, all found).
func Ratio(a, b int) float64 {
	if b <= 0 {
		return 1
	}
	return float64(a) / float64(b)
}
