package document

import (
	"strconv"
	"strings"

	"github.com/extractq/extractq/document/internal/pdf"
)

// pageLabels reads the catalog's /PageLabels number tree (ISO 32000-1
// §12.4.2): ranges of pages, each with a numbering style, a prefix and a
// first number. label(i) names 0-based page i; "" when the file has none.
type pageLabels struct {
	starts []int
	specs  []pdf.Value
}

func readPageLabels(root pdf.Value) (pl pageLabels) {
	defer func() { recover() }() // labels are optional: a broken tree loses only them
	var walk func(node pdf.Value, depth int)
	walk = func(node pdf.Value, depth int) {
		if depth > 16 {
			return
		}
		nums := node.Key("Nums")
		for i := 0; i+1 < nums.Len() && len(pl.starts) < 100_000; i += 2 {
			pl.starts = append(pl.starts, int(nums.Index(i).Int64()))
			pl.specs = append(pl.specs, nums.Index(i+1))
		}
		kids := node.Key("Kids")
		for i := 0; i < kids.Len(); i++ {
			walk(kids.Index(i), depth+1)
		}
	}
	walk(root.Key("PageLabels"), 0)
	return pl
}

func (pl pageLabels) label(page int) string {
	r := -1
	for i, s := range pl.starts {
		if s <= page && (r < 0 || s >= pl.starts[r]) {
			r = i
		}
	}
	if r < 0 {
		return ""
	}
	spec := pl.specs[r]
	first := 1
	if st := spec.Key("St"); st.Kind() == pdf.Integer {
		first = int(st.Int64())
	}
	n := first + page - pl.starts[r]
	var num string
	switch spec.Key("S").Name() {
	case "D":
		num = strconv.Itoa(n)
	case "R":
		num = strings.ToUpper(roman(n))
	case "r":
		num = roman(n)
	case "A":
		num = strings.ToUpper(letters(n))
	case "a":
		num = letters(n)
	}
	return spec.Key("P").Text() + num
}

// roman writes n (1–3999) in lower-case Roman numerals.
func roman(n int) string {
	if n <= 0 || n >= 4000 {
		return strconv.Itoa(n)
	}
	var b strings.Builder
	for _, d := range []struct {
		v int
		s string
	}{{1000, "m"}, {900, "cm"}, {500, "d"}, {400, "cd"}, {100, "c"}, {90, "xc"}, {50, "l"}, {40, "xl"}, {10, "x"}, {9, "ix"}, {5, "v"}, {4, "iv"}, {1, "i"}} {
		for n >= d.v {
			b.WriteString(d.s)
			n -= d.v
		}
	}
	return b.String()
}

// letters writes n as PDF labels do: a…z, then aa…zz, then aaa…
func letters(n int) string {
	if n <= 0 || n > 26*100 {
		return strconv.Itoa(n)
	}
	return strings.Repeat(string(rune('a'+(n-1)%26)), (n-1)/26+1)
}
