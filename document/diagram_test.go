package document

import (
	"archive/zip"
	"strings"
	"testing"
)

// smartArtData is a SmartArt data model as PowerPoint and Word write it
// (pptx2json's fixtures/test.pptx, cut down): a doc point, nodes with
// their text (runs, a line break), a child node, the transitions between
// them (empty text) and presentation points; the tree's order is the
// connections' srcOrd, not the points' order in the part.
const smartArtData = `<dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>` +
	`<dgm:pt modelId="{D}" type="doc"><dgm:prSet phldr="1"/><dgm:spPr/><dgm:t><a:bodyPr/><a:p><a:endParaRPr lang="en-US"/></a:p></dgm:t></dgm:pt>` +
	`<dgm:pt modelId="{B}"><dgm:prSet/><dgm:spPr/><dgm:t><a:bodyPr/><a:p><a:r><a:t>Grade 7:</a:t></a:r><a:br/><a:r><a:t>scientific method</a:t></a:r></a:p></dgm:t></dgm:pt>` +
	`<dgm:pt modelId="{A}"><dgm:prSet/><dgm:spPr/><dgm:t><a:bodyPr/><a:p><a:r><a:t>6</a:t></a:r><a:r><a:t>th grade: basics</a:t></a:r></a:p></dgm:t></dgm:pt>` +
	`<dgm:pt modelId="{C}" type="asst"><dgm:t><a:p><a:r><a:t>lab safety</a:t></a:r></a:p></dgm:t></dgm:pt>` +
	`<dgm:pt modelId="{T1}" type="parTrans" cxnId="{X1}"><dgm:t><a:p><a:endParaRPr/></a:p></dgm:t></dgm:pt>` +
	`<dgm:pt modelId="{T2}" type="sibTrans" cxnId="{X1}"><dgm:t><a:p><a:endParaRPr/></a:p></dgm:t></dgm:pt>` +
	`<dgm:pt modelId="{P1}" type="pres"><dgm:prSet presAssocID="{A}" presName="node"/><dgm:spPr/></dgm:pt>` +
	`<dgm:pt modelId="{E}"><dgm:t><a:p><a:r><a:t>Elective, reached by no connection</a:t></a:r></a:p></dgm:t></dgm:pt>` +
	`</dgm:ptLst><dgm:cxnLst>` +
	`<dgm:cxn modelId="{X2}" srcId="{D}" destId="{B}" srcOrd="1" destOrd="0"/>` +
	`<dgm:cxn modelId="{X1}" srcId="{D}" destId="{A}" srcOrd="0" destOrd="0" parTransId="{T1}" sibTransId="{T2}"/>` +
	`<dgm:cxn modelId="{X3}" srcId="{B}" destId="{C}" srcOrd="0" destOrd="0"/>` +
	`<dgm:cxn modelId="{X4}" type="presOf" srcId="{A}" destId="{P1}" srcOrd="0" destOrd="0"/>` +
	`<dgm:cxn modelId="{X5}" type="presParOf" srcId="{P1}" destId="{A}" srcOrd="0" destOrd="0"/>` +
	`</dgm:cxnLst></dgm:dataModel>`

// smartArtDrawing is the shapes PowerPoint caches beside the data model:
// no part the reader follows, so its text is not read twice.
const smartArtDrawing = `<dsp:drawing xmlns:dsp="http://schemas.microsoft.com/office/drawing/2008/diagram" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dsp:spTree><dsp:sp><dsp:txBody><a:p><a:r><a:t>6th grade: basics</a:t></a:r></a:p></dsp:txBody></dsp:sp></dsp:spTree></dsp:drawing>`

const smartArtWant = "- 6th grade: basics\n- Grade 7: scientific method\n  - lab safety\n- Elective, reached by no connection"

// TestSmartArt: a SmartArt diagram's text (its data part, dgm:relIds
// r:dm) is read, as its text pane shows it, from a slide and from a Word
// document alike; it was lost.
func TestSmartArt(t *testing.T) {
	t.Parallel()
	const dgmRels = `<dgm:relIds xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" r:dm="rId4" r:lo="rId5" r:qs="rId6" r:cs="rId7"/>`
	const relsTail = `<Relationship Id="rId4" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramData" Target="../diagrams/data1.xml"/>` +
		`<Relationship Id="rId5" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramLayout" Target="../diagrams/layout1.xml"/>` +
		`<Relationship Id="rId8" Type="http://schemas.microsoft.com/office/2007/relationships/diagramDrawing" Target="../diagrams/drawing1.xml"/></Relationships>`
	const pns = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	slide := `<p:sld ` + pns + `><p:cSld><p:spTree>` +
		`<p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Curriculum</a:t></a:r></a:p></p:txBody></p:sp>` +
		`<p:graphicFrame><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram">` + dgmRels + `</a:graphicData></a:graphic></p:graphicFrame>` +
		`</p:spTree></p:cSld></p:sld>`
	pptx := zipOf(t,
		"[Content_Types].xml", `<Types><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/></Types>`,
		"_rels/.rels", `<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>`,
		"ppt/presentation.xml", `<p:presentation `+pns+`><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst></p:presentation>`,
		"ppt/_rels/presentation.xml.rels", `<Relationships><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/></Relationships>`,
		"ppt/slides/slide1.xml", slide,
		"ppt/slides/_rels/slide1.xml.rels", `<Relationships>`+relsTail,
		"ppt/diagrams/data1.xml", smartArtData,
		"ppt/diagrams/layout1.xml", `<dgm:layoutDef xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram"><dgm:title val="Basic Process"/></dgm:layoutDef>`,
		"ppt/diagrams/drawing1.xml", smartArtDrawing)
	docx := zipOf(t, "[Content_Types].xml", docxTypes,
		"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" `+pns+`><w:body>`+
			`<w:p><w:r><w:t>Curriculum</w:t></w:r></w:p>`+
			`<w:p><w:r><w:drawing><wp:inline><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram">`+dgmRels+`</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`+
			`</w:body></w:document>`,
		"word/_rels/document.xml.rels", `<Relationships>`+strings.ReplaceAll(relsTail, "../diagrams/", "diagrams/"),
		"word/diagrams/data1.xml", smartArtData,
		"word/diagrams/drawing1.xml", smartArtDrawing)
	for _, tc := range []struct {
		name string
		b    []byte
	}{{"slide.pptx", pptx}, {"report.docx", docx}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.b, Options{Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if want := "Curriculum\n\n" + smartArtWant; !strings.Contains(d.Text, want) {
				t.Errorf("text %q lacks %q", d.Text, want)
			}
			if n := strings.Count(d.Text, "basics"); n != 1 {
				t.Errorf("text %q: %d times the first node, want once", d.Text, n)
			}
			if strings.Contains(d.Text, "Basic Process") {
				t.Errorf("text %q holds the layout's name", d.Text)
			}
		})
	}
}

// FuzzSmartArt fuzzes a SmartArt data part, read through a Word document
// that shows the diagram.
func FuzzSmartArt(f *testing.F) {
	f.Add(smartArtData)
	f.Add(`<dgm:dataModel xmlns:dgm="d" xmlns:a="a"><dgm:ptLst><dgm:pt modelId="1" type="doc"/><dgm:pt modelId="2"><dgm:t><a:p><a:r><a:t>x</a:t></a:r></a:p></dgm:t></dgm:pt></dgm:ptLst><dgm:cxnLst><dgm:cxn srcId="1" destId="2"/><dgm:cxn srcId="2" destId="1"/><dgm:cxn srcId="2" destId="2"/></dgm:cxnLst></dgm:dataModel>`)
	f.Fuzz(func(t *testing.T, data string) {
		fuzzRead(t, "docx", zipWith(t, zip.Store, "[Content_Types].xml", docxTypes,
			"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" xmlns:r="`+relNS+`"><w:body><w:p><w:r><w:drawing><dgm:relIds r:dm="d"/></w:drawing></w:r></w:p></w:body></w:document>`,
			"word/_rels/document.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="d" Type="`+relNS+`/diagramData" Target="diagrams/data1.xml"/></Relationships>`,
			"word/diagrams/data1.xml", data))
	})
}
