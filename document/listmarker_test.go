package document

import (
	"strings"
	"testing"
)

// TestListMarkers: the markers of Word lists, .docx and .doc alike: a
// list's start values (its definition's w:start, its own
// startOverride), deeper levels reset under a new item, numbers a
// format cannot write (0 in letters) in decimal.
func TestListMarkers(t *testing.T) {
	t.Parallel()
	numbering := readNumbering([]byte(`<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:abstractNum w:abstractNumId="5">
 <w:lvl w:ilvl="0"><w:start w:val="3"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>
 <w:lvl w:ilvl="1"><w:start w:val="0"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1.%2)"/></w:lvl>
</w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="5"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="5"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="7"/></w:lvlOverride></w:num>
</w:numbering>`))
	type item struct {
		num string
		lvl int
	}
	tests := []struct {
		name  string
		items []item
		want  string
	}{
		{"start values", []item{{"1", 0}, {"1", 1}, {"1", 1}, {"1", 0}, {"1", 1}}, "III.|  III.0)|  III.a)|IV.|  IV.0)"},
		{"start override", []item{{"2", 0}, {"2", 0}, {"1", 0}}, "VII.|VIII.|III."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lc := listCounters{}
			var got []string
			for _, it := range tc.items {
				got = append(got, lc.marker(it.num, numbering[it.num], it.lvl))
			}
			if g := strings.Join(got, "|"); g != tc.want {
				t.Errorf("markers %q, want %q", g, tc.want)
			}
		})
	}
}
