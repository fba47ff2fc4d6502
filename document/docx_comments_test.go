package document

import (
	"strings"
	"testing"
)

// TestDOCXComments: a Word document's comments (word/comments.xml, as
// mammoth's test-data/comments.docx holds two) are read after the
// endnotes and before the footers, as the .doc reader reads a .doc's; the
// parts Word 2013 and later write beside them (commentsExtended,
// commentsIds) hold no text and are not read. They were lost.
func TestDOCXComments(t *testing.T) {
	t.Parallel()
	const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	const rel = `http://schemas.openxmlformats.org/officeDocument/2006/relationships/`
	p := func(s string) string { return `<w:p><w:r><w:t>` + s + `</w:t></w:r></w:p>` }
	comment := func(id, author, text string) string {
		return `<w:comment w:id="` + id + `" w:author="` + author + `" w:initials="MW"><w:p><w:pPr><w:pStyle w:val="CommentText"/></w:pPr><w:r><w:annotationRef/></w:r><w:r><w:t>` + text + `</w:t></w:r></w:p></w:comment>`
	}
	b := zipOf(t, "[Content_Types].xml", docxTypes,
		"word/document.xml", `<w:document `+w+`><w:body><w:p><w:commentRangeStart w:id="0"/><w:r><w:t>Ouch</w:t></w:r><w:commentRangeEnd w:id="0"/><w:r><w:commentReference w:id="0"/></w:r><w:r><w:footnoteReference w:id="1"/></w:r><w:r><w:t>.</w:t></w:r></w:p></w:body></w:document>`,
		"word/_rels/document.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
			`<Relationship Id="rId1" Type="`+rel+`footnotes" Target="footnotes.xml"/>`+
			`<Relationship Id="rId2" Type="`+rel+`comments" Target="comments.xml"/>`+
			`<Relationship Id="rId3" Type="http://schemas.microsoft.com/office/2011/relationships/commentsExtended" Target="commentsExtended.xml"/>`+
			`<Relationship Id="rId4" Type="`+rel+`footer" Target="footer1.xml"/></Relationships>`,
		"word/footnotes.xml", `<w:footnotes `+w+`><w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t>A footnote.</w:t></w:r></w:p></w:footnote></w:footnotes>`,
		"word/comments.xml", `<w:comments `+w+`>`+comment("0", "Michael Williamson", "A tachyon walks into a bar.")+comment("2", "Michael Williamson", "Fin.")+`</w:comments>`,
		"word/commentsExtended.xml", `<w15:commentsEx xmlns:w15="http://schemas.microsoft.com/office/word/2012/wordml"><w15:commentEx w15:paraId="1A2B3C4D" w15:done="0"/></w15:commentsEx>`,
		"word/footer1.xml", `<w:ftr `+w+`>`+p("Page footer")+`</w:ftr>`)
	d, err := ReadBytes(t.Context(), b, Options{Name: "comments.docx"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Ouch[1].\n\n[1] A footnote.\n\nA tachyon walks into a bar.\n\nFin.\n\nPage footer"
	if !strings.Contains(d.Text, want) {
		t.Errorf("text %q lacks %q", d.Text, want)
	}
	if strings.Contains(d.Text, "Williamson") || strings.Contains(d.Text, "1A2B3C4D") {
		t.Errorf("text %q holds an author or a comment's id", d.Text)
	}
}
