package document

import (
	"os"
	"path/filepath"
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
</w:numbering>`), nil)
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

// styledDOCX is a .docx whose body is the given XML, numbered through
// paragraph styles as Word does it: "ListNumber" (numId 1: "1.", then
// "a)") based on "ListParagraph" based on "Normal", the default;
// "ListNumber2" based on it at level 1; "Numbered" based on "ListNumber"
// with no numbering of its own; "ListBullet" (numId 3); "Heading1" in
// the outline numId 2 ("1", "1.1", "1.1.1"), whose levels link to the
// headings (w:pStyle), "Heading2" based on it at level 1, "Heading3" based
// on "Heading1" with only the link to level 2. numId 4 is an outline without
// numbers, as LibreOffice ties its headings to. More styles can be added,
// and more lists: abstracts (w:abstractNum) and nums (w:num).
func styledDOCX(t testing.TB, styles, abstracts, nums, body string) []byte {
	const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	style := func(id, basedOn, numPr string) string {
		s := `<w:style w:type="paragraph" w:styleId="` + id + `"><w:name w:val="` + id + `"/>`
		if basedOn != "" {
			s += `<w:basedOn w:val="` + basedOn + `"/>`
		}
		if numPr != "" {
			s += `<w:pPr><w:numPr>` + numPr + `</w:numPr></w:pPr>`
		}
		return s + `</w:style>`
	}
	lvl := func(ilvl, format, text, pStyle string) string {
		s := `<w:lvl w:ilvl="` + ilvl + `"><w:start w:val="1"/>`
		if pStyle != "" {
			s += `<w:pStyle w:val="` + pStyle + `"/>`
		}
		return s + `<w:numFmt w:val="` + format + `"/><w:lvlText w:val="` + text + `"/></w:lvl>`
	}
	return zipOf(t,
		"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/></Types>`,
		"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/_rels/document.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/></Relationships>`,
		"word/styles.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles `+w+`>`+
			`<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>`+
			style("ListParagraph", "Normal", "")+
			style("ListNumber", "ListParagraph", `<w:numId w:val="1"/>`)+
			style("ListNumber2", "ListNumber", `<w:ilvl w:val="1"/>`)+
			style("Numbered", "ListNumber", "")+
			style("ListBullet", "ListParagraph", `<w:ilvl w:val="0"/><w:numId w:val="3"/>`)+
			style("Heading1", "Normal", `<w:numId w:val="2"/>`)+
			style("Heading2", "Heading1", `<w:ilvl w:val="1"/>`)+
			style("Heading3", "Heading1", "")+
			styles+`</w:styles>`,
		"word/numbering.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:numbering `+w+`>`+
			`<w:abstractNum w:abstractNumId="0">`+lvl("0", "decimal", "%1.", "")+lvl("1", "lowerLetter", "%2)", "")+`</w:abstractNum>`+
			`<w:abstractNum w:abstractNumId="1">`+lvl("0", "decimal", "%1", "Heading1")+lvl("1", "decimal", "%1.%2", "Heading2")+
			lvl("2", "decimal", "%1.%2.%3", "Heading3")+`</w:abstractNum>`+
			`<w:abstractNum w:abstractNumId="2">`+lvl("0", "bullet", "•", "")+`</w:abstractNum>`+
			`<w:abstractNum w:abstractNumId="3">`+lvl("0", "none", "", "")+`</w:abstractNum>`+abstracts+
			`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="3"><w:abstractNumId w:val="2"/></w:num>`+
			`<w:num w:numId="4"><w:abstractNumId w:val="3"/></w:num>`+nums+
			`</w:numbering>`,
		"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document `+w+`><w:body>`+body+`</w:body></w:document>`)
}

// styledPara is a paragraph of the given style and numbering properties
// (and other paragraph properties, after them).
func styledPara(style, numPr, text string) string {
	p := `<w:p><w:pPr>`
	if style != "" {
		p += `<w:pStyle w:val="` + style + `"/>`
	}
	if numPr != "" {
		p += `<w:numPr>` + numPr + `</w:numPr>`
	}
	return p + `</w:pPr><w:r><w:t>` + text + `</w:t></w:r></w:p>`
}

// styledBody is a document numbered through its paragraph styles, with
// numbering of the paragraphs' own mixed in, and the text the .docx
// reader gives it, which LibreOffice's text export gives too (and from
// which stylelists.doc was made).
var styledBody, styledText = styledPara("Heading1", "", "Introduction") +
	styledPara("Heading2", "", "Scope") +
	styledPara("Heading2", "", "Terms") +
	styledPara("ListNumber", "", "Check the input") +
	styledPara("ListNumber2", "", "twice") +
	styledPara("Numbered", "", "Write the output") +
	styledPara("ListNumber", `<w:numId w:val="0"/>`, "Not numbered") +
	styledPara("", `<w:ilvl w:val="0"/><w:numId w:val="1"/>`, "Numbered directly") +
	styledPara("ListNumber", `<w:ilvl w:val="1"/>`, "one level down") +
	styledPara("Heading1", "", "Method") +
	styledPara("Heading2", "", "Data") +
	styledPara("ListBullet", "", "apples"),
	"1 Introduction\n  1.1 Scope\n  1.2 Terms\n1. Check the input\n  a) twice\n2. Write the output\n\nNot numbered\n\n" +
		"3. Numbered directly\n  a) one level down\n2 Method\n  2.1 Data\n- apples"

// TestDOCXStyleLists: paragraphs in a list through their style (its
// basedOn chain, a level set in a style or linked to it from the list)
// are numbered with the paragraphs numbered directly, and their own
// numbering wins; a basedOn cycle ends. Set EXTRACTQ_WRITE_FIXTURES=1 to
// write styledBody's .docx (to convert with LibreOffice).
func TestDOCXStyleLists(t *testing.T) {
	t.Parallel()
	if os.Getenv("EXTRACTQ_WRITE_FIXTURES") != "" {
		if err := os.WriteFile(filepath.Join("testdata", "formats", "stylelists.docx"), styledDOCX(t, "", "", "", styledBody), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loops := `<w:style w:type="paragraph" w:styleId="LoopA"><w:basedOn w:val="LoopB"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="LoopB"><w:basedOn w:val="LoopA"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Self"><w:basedOn w:val="Self"/><w:pPr><w:numPr><w:numId w:val="3"/></w:numPr></w:pPr></w:style>` +
		`<w:style w:type="paragraph" w:default="1" w:styleId="Listed"><w:pPr><w:numPr><w:numId w:val="3"/></w:numPr></w:pPr></w:style>`
	tests := []struct {
		name, body, want string
	}{
		{"document", styledBody, styledText},
		{"basedOn chain", styledPara("Numbered", "", "one") + styledPara("Numbered", "", "two"), "1. one\n2. two"},
		{"level linked to the style", styledPara("Heading1", "", "A") + styledPara("Heading3", "", "B") + styledPara("Heading3", "", "C"),
			"1 A\n    1.1.1 B\n    1.1.2 C"},
		{"own list wins", styledPara("ListNumber", `<w:numId w:val="3"/>`, "dot") + styledPara("Heading1", `<w:numId w:val="0"/>`, "Plain"), "- dot\n\nPlain"},
		{"own level, style's list", styledPara("ListNumber", "", "one") + styledPara("ListNumber", `<w:ilvl w:val="1"/>`, "sub"), "1. one\n  a) sub"},
		{"tracked change", `<w:p><w:pPr><w:pStyle w:val="ListNumber"/><w:pPrChange><w:pPr><w:pStyle w:val="Normal"/><w:numPr><w:numId w:val="0"/></w:numPr></w:pPr></w:pPrChange></w:pPr><w:r><w:t>kept</w:t></w:r></w:p>`,
			"1. kept"},
		{"cycles end", styledPara("LoopA", "", "round") + styledPara("Self", "", "self"), "round\n\n- self"},
		{"outline without numbers", styledPara("Heading1", `<w:numId w:val="4"/>`, "Title"), "Title"},
		{"default style", styledPara("", "", "by default") + styledPara("Normal", "", "Normal"), "- by default\n\nNormal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), styledDOCX(t, loops, "", "", tc.body), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Text != tc.want {
				t.Errorf("text\n%s\nwant\n%s", d.Text, tc.want)
			}
		})
	}
}

// numStyleLists are the lists of listStyleBody, as Word writes lists
// made from a list style: the numbering style "Legal" is defined by
// abstractNum 10 (w:styleLink), and the lists that use it (numIds 11
// and 12, the latter from 5) have an abstractNum with only a
// w:numStyleLink to it. "Letters" is found only through its style's own
// numId (14); "Chain" is defined by an abstractNum that links on to
// "Legal"; "Missing" has no style; "Loop" and "LoopA"/"LoopB" lead back
// to where they start.
var numStyleStyles, numStyleAbstracts, numStyleNums = `<w:style w:type="numbering" w:styleId="Legal"><w:name w:val="Legal"/><w:pPr><w:numPr><w:numId w:val="10"/></w:numPr></w:pPr></w:style>` +
	`<w:style w:type="numbering" w:styleId="Letters"><w:name w:val="Letters"/><w:pPr><w:numPr><w:numId w:val="14"/></w:numPr></w:pPr></w:style>` +
	`<w:style w:type="numbering" w:styleId="Chain"><w:name w:val="Chain"/></w:style>` +
	`<w:style w:type="numbering" w:styleId="Loop"><w:name w:val="Loop"/><w:pPr><w:numPr><w:numId w:val="15"/></w:numPr></w:pPr></w:style>` +
	`<w:style w:type="numbering" w:styleId="LoopA"><w:name w:val="LoopA"/><w:pPr><w:numPr><w:numId w:val="17"/></w:numPr></w:pPr></w:style>` +
	`<w:style w:type="numbering" w:styleId="LoopB"><w:name w:val="LoopB"/><w:pPr><w:numPr><w:numId w:val="16"/></w:numPr></w:pPr></w:style>` +
	`<w:style w:type="paragraph" w:styleId="Clause"><w:name w:val="Clause"/><w:pPr><w:numPr><w:numId w:val="11"/></w:numPr></w:pPr></w:style>`,
	`<w:abstractNum w:abstractNumId="10"><w:multiLevelType w:val="multilevel"/><w:styleLink w:val="Legal"/>` +
		`<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>` +
		`<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2."/></w:lvl>` +
		`<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2.%3."/></w:lvl></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="11"><w:multiLevelType w:val="multilevel"/><w:numStyleLink w:val="Legal"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="12"><w:numStyleLink w:val="Missing"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="13"><w:numStyleLink w:val="Letters"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="14"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperLetter"/><w:lvlText w:val="%1)"/></w:lvl></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="15"><w:numStyleLink w:val="Loop"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="16"><w:numStyleLink w:val="LoopA"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="17"><w:numStyleLink w:val="LoopB"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="18"><w:numStyleLink w:val="Chain"/></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="19"><w:styleLink w:val="Chain"/><w:numStyleLink w:val="Legal"/></w:abstractNum>`,
	`<w:num w:numId="10"><w:abstractNumId w:val="10"/></w:num><w:num w:numId="11"><w:abstractNumId w:val="11"/></w:num>` +
		`<w:num w:numId="12"><w:abstractNumId w:val="11"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>` +
		`<w:num w:numId="13"><w:abstractNumId w:val="12"/></w:num><w:num w:numId="14"><w:abstractNumId w:val="14"/></w:num>` +
		`<w:num w:numId="15"><w:abstractNumId w:val="15"/></w:num><w:num w:numId="16"><w:abstractNumId w:val="16"/></w:num>` +
		`<w:num w:numId="17"><w:abstractNumId w:val="17"/></w:num><w:num w:numId="18"><w:abstractNumId w:val="13"/></w:num>` +
		`<w:num w:numId="19"><w:abstractNumId w:val="18"/></w:num>`

// numPr is a paragraph's own numbering: list and level.
func numPr(num, lvl string) string {
	return `<w:ilvl w:val="` + lvl + `"/><w:numId w:val="` + num + `"/>`
}

// listStyleBody is a document numbered through the list style "Legal"
// (Word's "1. / 1.1. / 1.1.1." multilevel list), directly and through the
// paragraph style "Clause", and the text the .docx reader gives it, which
// LibreOffice's text export gives too; so does the .doc reader from
// LibreOffice's .doc export, which copies the style's levels into each
// list (LSTF and its LVLs), links none, and so needs nothing more.
var listStyleBody, listStyleText = styledPara("", numPr("11", "0"), "Parties") +
	styledPara("", numPr("11", "1"), "The buyer") +
	styledPara("", numPr("11", "1"), "The seller") +
	styledPara("", numPr("11", "2"), "their agents") +
	styledPara("Clause", "", "Price") +
	styledPara("Clause", `<w:ilvl w:val="1"/>`, "Payment"),
	"1. Parties\n  1.1. The buyer\n  1.2. The seller\n    1.2.1. their agents\n2. Price\n  2.1. Payment"

// TestDOCXNumberingStyles: a list defined through a numbering style (its
// abstractNum has a w:numStyleLink and no levels) has the levels of the
// style's definition (the abstractNum with the w:styleLink, else the
// list the style's own numId names), its own start values on top; links
// that lead nowhere or in a circle end, the list with "-" markers. Set
// EXTRACTQ_WRITE_FIXTURES=1 to write listStyleBody's .docx (to convert
// with LibreOffice).
func TestDOCXNumberingStyles(t *testing.T) {
	t.Parallel()
	if os.Getenv("EXTRACTQ_WRITE_FIXTURES") != "" {
		b := styledDOCX(t, numStyleStyles, numStyleAbstracts, numStyleNums, listStyleBody)
		if err := os.WriteFile(filepath.Join("testdata", "formats", "liststyles.docx"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, body, want string
	}{
		{"document", listStyleBody, listStyleText},
		{"start override", styledPara("", numPr("12", "0"), "five") + styledPara("", numPr("12", "1"), "sub"), "5. five\n  5.1. sub"},
		{"through the style's numId", styledPara("", numPr("18", "0"), "A") + styledPara("", numPr("18", "0"), "B"), "A) A\nB) B"},
		{"chain of links", styledPara("", numPr("19", "0"), "x") + styledPara("", numPr("19", "1"), "y"), "1. x\n  1.1. y"},
		{"no such style", styledPara("", numPr("13", "0"), "lost"), "- lost"},
		{"cycles end", styledPara("", numPr("15", "0"), "self") + styledPara("", numPr("16", "0"), "round"), "- self\n- round"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), styledDOCX(t, numStyleStyles, numStyleAbstracts, numStyleNums, tc.body), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Text != tc.want {
				t.Errorf("text\n%s\nwant\n%s", d.Text, tc.want)
			}
		})
	}
}
