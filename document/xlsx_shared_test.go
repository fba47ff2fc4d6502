package document

import (
	"strings"
	"testing"
)

// TestXLSXSharedFormulaWithoutValue: a shared formula without cached
// values (xlsx-populate's examples/ranges/out.xlsx: <f t="shared" ref="D3:D13"
// si="1">B3/C3</f> in D3, <f t="shared" si="1"/> below it, no <v>) reads
// in every cell as that cell's formula, its relative references moved
// along; the cells after the first were empty.
func TestXLSXSharedFormulaWithoutValue(t *testing.T) {
	t.Parallel()
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	book := func(rows string) []byte {
		return zipOf(t,
			"[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>`,
			"_rels/.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
			"xl/workbook.xml", `<workbook `+ns+`><sheets><sheet name="CTR" sheetId="1" r:id="rId1"/></sheets></workbook>`,
			"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
			"xl/worksheets/sheet1.xml", `<worksheet `+ns+`><sheetData>`+rows+`</sheetData></worksheet>`)
	}
	row := func(r, cells string) string { return `<row r="` + r + `">` + cells + `</row>` }
	num := func(ref, v string) string { return `<c r="` + ref + `"><v>` + v + `</v></c>` }
	for _, tc := range []struct {
		name, rows string
		want       []string
		not        string
	}{
		{"down a column", row("3", num("B3", "937")+num("C3", "965560")+`<c r="D3"><f t="shared" si="1" ref="D3:D5">B3/C3</f></c>`) +
			row("4", num("B4", "120")+num("C4", "361403")+`<c r="D4"><f t="shared" si="1"/></c>`) +
			row("5", num("B5", "561")+num("C5", "154880")+`<c r="D5"><f t="shared" si="1"/></c>`),
			[]string{"B3: 937 | 965560 | =B3/C3", "B4: 120 | 361403 | =B4/C4", "B5: 561 | 154880 | =B5/C5"}, ""},
		{"across a row, anchors, a string, a function, a sheet", row("2",
			`<c r="B2"><f t="shared" si="0" ref="B2:D2">SUM($A1:A1)*$C$1+LOG10(A$1)&amp;"A1"&amp;'Q1 2024'!A1</f></c>`+
				`<c r="C2"><f t="shared" si="0"/></c><c r="D2"><f t="shared" si="0"/></c>`),
			[]string{`B2: =SUM($A1:A1)*$C$1+LOG10(A$1)&"A1"&'Q1 2024'!A1 | =SUM($A1:B1)*$C$1+LOG10(B$1)&"A1"&'Q1 2024'!B1 | =SUM($A1:C1)*$C$1+LOG10(C$1)&"A1"&'Q1 2024'!C1`}, ""},
		{"off the sheet", row("1", `<c r="B1"><f t="shared" si="2" ref="B1:B2">A2-A1</f></c>`) + row("2", `<c r="A2"><f t="shared" si="2"/></c>`),
			[]string{"B1: =A2-A1", "A2: =#REF!-#REF!"}, ""},
		// Excel's own: cached values, shown as such.
		{"cached", row("3", `<c r="D3"><f t="shared" si="0" ref="D3:D4">B3*2</f><v>4</v></c>`) + row("4", `<c r="D4"><f t="shared" si="0"/><v>6</v></c>`),
			[]string{"D3: 4", "D4: 6"}, "="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), book(tc.rows), Options{Name: "ranges.xlsx"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(d.Text, w) {
					t.Errorf("text %q lacks %q", d.Text, w)
				}
			}
			if tc.not != "" && strings.Contains(d.Text, tc.not) {
				t.Errorf("text %q holds %q", d.Text, tc.not)
			}
		})
	}
}

// FuzzShiftFormula: any formula moved any distance, without a panic, and
// back again when no reference fell off the sheet.
func FuzzShiftFormula(f *testing.F) {
	f.Add(`SUM($A1:A1)*$C$1+LOG10(A$1)&"A1"&'Q1 2024'!A1`, 1, 2)
	f.Add(`XFD1048576+A1`, 1, 1)
	f.Add(`"unterminated A1`, -3, 0)
	f.Fuzz(func(t *testing.T, formula string, dr, dc int) {
		there := shiftFormula(formula, dr, dc)
		if !strings.Contains(there, "#REF!") && !strings.Contains(formula, "#REF!") {
			// Lower-case column letters come back upper-case.
			if back := shiftFormula(there, -dr, -dc); strings.ToUpper(back) != strings.ToUpper(formula) {
				t.Fatalf("%q moved %d,%d is %q, and back %q", formula, dr, dc, there, back)
			}
		}
	})
}
