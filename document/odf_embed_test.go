package document

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/cfb"
	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// zipPart is one part of a zip's bytes.
func zipPart(t testing.TB, b []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	v, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// recfb is a copy of a compound file fixture with streams added
// (a nil value leaves a stream out).
func recfb(t testing.TB, name string, change map[string][]byte) []byte {
	t.Helper()
	b := fixture(t, name)
	f, err := cfb.Open(bytes.NewReader(b), int64(len(b)), cfb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var s []cfbtest.Stream
	for _, e := range f.Entries() {
		if e.Type != cfb.TypeStream {
			continue
		}
		if _, ok := change[e.Path]; ok {
			continue
		}
		d, err := f.Read(e)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, cfbtest.Stream{Path: e.Path, Data: d})
	}
	for p, d := range change {
		if d != nil {
			s = append(s, cfbtest.Stream{Path: p, Data: d})
		}
	}
	return cfbtest.Build(s, cfbtest.Options{})
}

// TestSlimPPTFixture writes embedded-ods.ppt from LibreOffice's export
// named by EXTRACTQ_SLIM_PPT, without its SummaryInformation stream (a
// 440 KB thumbnail), as slides.ppt was made.
func TestSlimPPTFixture(t *testing.T) {
	in := os.Getenv("EXTRACTQ_SLIM_PPT")
	if in == "" {
		t.Skip("set EXTRACTQ_SLIM_PPT to LibreOffice's embedded-ods.ppt to rewrite the fixture")
	}
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cfb.Open(bytes.NewReader(b), int64(len(b)), cfb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var s []cfbtest.Stream
	for _, e := range f.Entries() {
		if e.Type != cfb.TypeStream || e.Path == "\x05SummaryInformation" {
			continue
		}
		d, err := f.Read(e)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, cfbtest.Stream{Path: e.Path, Data: d})
	}
	if err := os.WriteFile(filepath.Join("testdata", "formats", "embedded-ods.ppt"), cfbtest.Build(s, cfbtest.Options{}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedObjectsODFAndLegacy: a Calc table in a Writer report (and
// a Writer memo on a sheet, a table on a slide) is a child document read
// by its own format, in the OpenDocument files LibreOffice writes and in
// their Word, Excel and PowerPoint 97-2003 exports; previews are not
// children, nor are objects of no kind read (charts, formulas, equations).
func TestEmbeddedObjectsODFAndLegacy(t *testing.T) {
	t.Parallel()
	// The cells of budget.csv, as embedded-ods.fodt and .fodp hold them.
	budget := []string{"Sheet: Budget", "A1: Item | Q1 | Q2", "A2: Servers | 1200 | 1350", "Travel | 310 | 95"}
	memo := []string{"Memo: travel is capped at 400 per quarter.", "Approved by Maren Olsson."}
	report := []string{"Budget report", "The quarterly budget follows.", "Travel fell in the second quarter."}
	// embedded-chart.fodt's data table as LibreOffice 7.4 keeps it (its
	// import drops the row labels).
	chartCells := []string{"Sheet: local-table", "B1: Q1 | Q2", "B2: 1200 | 1350", "B3: 310 | 95"}

	odt := fixture(t, "embedded-ods.odt")
	manifest := string(zipPart(t, odt, "META-INF/manifest.xml"))
	content := string(zipPart(t, odt, "content.xml"))
	// withObjects is the report with more manifest entries, frames after
	// the table's in the body, and more parts.
	withObjects := func(entries, frames string, parts map[string][]byte) []byte {
		parts["META-INF/manifest.xml"] = []byte(strings.Replace(manifest, "</manifest:manifest>", entries+"</manifest:manifest>", 1))
		parts["content.xml"] = []byte(strings.Replace(content, "</draw:frame>", "</draw:frame>"+frames, 1))
		return rezip(t, "embedded-ods.odt", parts)
	}
	frame := func(elem, href string) string {
		return `<draw:frame draw:name="` + href + `"><draw:` + elem + ` xlink:href="./` + href + `" xlink:type="simple"/></draw:frame>`
	}
	entry := func(p, mt string) string {
		return `<manifest:file-entry manifest:full-path="` + p + `" manifest:media-type="` + mt + `"/>`
	}
	csv := []byte("code,rate\nEUR,1.08\nGBP,0.86\n")
	chart := `<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:chart><table:table table:name="local-table"><table:table-row><table:table-cell><text:p>9</text:p></table:table-cell></table:table-row></table:table></office:chart></office:body></office:document-content>`

	type child = wantChild
	cases := []struct {
		name     string
		file     string
		b        []byte
		body     []string
		children []child
	}{
		{name: "a Calc table in a Writer report", file: "r.odt", b: odt, body: report,
			children: []child{{name: "Object 1.ods", format: "ods", text: budget}}},
		{name: "a Writer memo on a Calc sheet", file: "s.ods", b: fixture(t, "embedded-odt.ods"), body: []string{"Sheet: Costs", "A1: Travel | 310"},
			children: []child{{name: "Object 1.odt", format: "odt", text: memo}}},
		{name: "a Calc table on an Impress slide", file: "p.odp", b: fixture(t, "embedded-ods.odp"), body: []string{"Slide 1", "Quarterly budget"},
			children: []child{{name: "Object 1.ods", format: "ods", text: budget}}},
		{name: "the report as a Word .doc (ObjectPool)", file: "r.doc", b: fixture(t, "embedded-ods.doc"), body: report,
			children: []child{{name: "_2147483647.xls", format: "ole", text: budget}}},
		{name: "the sheet as an Excel .xls (MBD storage)", file: "s.xls", b: fixture(t, "embedded-odt.xls"), body: []string{"Sheet: Costs", "A1: Travel | 310"},
			children: []child{{name: "MBD5CAE24AC.doc", format: "ole", text: memo}}},
		{name: "the slide as a PowerPoint .ppt (ExOleObjStg)", file: "p.ppt", b: fixture(t, "embedded-ods.ppt"), body: []string{"Slide 1", "Quarterly budget"},
			children: []child{{name: "Object 1.xls", format: "ole", text: budget}}},
		{name: "an OLE object in an ODF file (a Packager file)", file: "o.odt", b: withObjects(entry("Object 2", odfOLEObject), frame("object-ole", "Object 2"), map[string][]byte{
			"Object 2": cfbtest.Build([]cfbtest.Stream{{Path: "\x01Ole10Native", Data: ole10Native("rates.csv", `C:\rates.csv`, csv)}}, cfbtest.Options{}),
		}), body: report, children: []child{{name: "Object 1.ods", format: "ods", text: budget}, {name: "rates.csv", format: "csv", text: []string{"EUR", "0.86"}}}},
		{name: "a legacy workbook as an OLE object in an ODF file", file: "x.odt", b: withObjects(entry("Object 2", odfOLEObject), frame("object-ole", "Object 2"), map[string][]byte{
			"Object 2": fixture(t, "embedded-odt.xls"),
		}), body: report, children: []child{{name: "Object 1.ods", format: "ods", text: budget},
			{name: "Object 2.xls", format: "ole", text: []string{"A1: Travel | 310"}, children: []string{"MBD5CAE24AC.doc"}}}},
		{name: "a memo nested in the embedded table", file: "n.odt", b: withObjects(entry("Object 1/Object 9/", "application/vnd.oasis.opendocument.text"), "", map[string][]byte{
			"Object 1/content.xml": []byte(strings.Replace(string(zipPart(t, odt, "Object 1/content.xml")), `<table:table-row`,
				`<table:shapes>`+frame("object", "Object 9")+`</table:shapes><table:table-row`, 1)),
			"Object 1/Object 9/content.xml": zipPart(t, fixture(t, "embedded-odt.ods"), "Object 1/content.xml"),
		}), body: report, children: []child{{name: "Object 1.ods", format: "ods", text: budget, children: []string{"Object 9.odt"}}}},
		// A Writer chart keeps its numbers only in its own data table.
		{name: "a chart in a Writer report (its data table)", file: "ch.odt", b: fixture(t, "embedded-chart.odt"), body: []string{"Quarterly spending, as a chart:"},
			children: []child{{name: "Object 1.odc", format: "ods", text: chartCells}}},
		// LibreOffice's .doc export of that report: no Office chart to make
		// of it, the chart's ODF package in a "package_stream".
		{name: "the chart report as a Word .doc (package_stream)", file: "ch.doc", b: fixture(t, "embedded-chart.doc"), body: []string{"Quarterly spending, as a chart:"},
			children: []child{{name: "_2147483647.ods", format: "ods", text: chartCells}}},
		{name: "a hand-written chart is a child, a formula is none", file: "c.odt", b: withObjects(
			entry("Object 3/", odfChart)+entry("Object 4/", "application/vnd.oasis.opendocument.formula"),
			frame("object", "Object 3")+frame("object", "Object 4"), map[string][]byte{
				"Object 3/content.xml": []byte(chart),
				"Object 4/content.xml": []byte(`<?xml version="1.0"?><math xmlns="http://www.w3.org/1998/Math/MathML"><mi>x</mi></math>`),
			}), body: report, children: []child{{name: "Object 1.ods", format: "ods", text: budget}, {name: "Object 3.odc", format: "ods", text: []string{"A1: 9"}}}},
		// A Calc chart's numbers are the sheet's, read already.
		{name: "a chart on a Calc sheet is no child", file: "cs.ods", b: rezip(t, "embedded-odt.ods", map[string][]byte{
			"META-INF/manifest.xml": []byte(strings.Replace(string(zipPart(t, fixture(t, "embedded-odt.ods"), "META-INF/manifest.xml")),
				"</manifest:manifest>", entry("Object 3/", odfChart)+"</manifest:manifest>", 1)),
			"content.xml": []byte(strings.Replace(string(zipPart(t, fixture(t, "embedded-odt.ods"), "content.xml")),
				"<table:shapes>", "<table:shapes>"+frame("object", "Object 3"), 1)),
			"Object 3/content.xml": []byte(chart),
		}), body: []string{"Sheet: Costs", "A1: Travel | 310"}, children: []child{{name: "Object 1.odt", format: "odt", text: memo}}},
		// LibreOffice 7.4's import of embedded-xlsx.docx: the workbook made
		// a Calc object, the original kept as "Obj100" for export, which
		// the body does not point to: one child, not two.
		{name: "LibreOffice's import of a Word report's workbook", file: "lo.odt", b: fixture(t, "libreoffice-embedded-xlsx.odt"),
			body:     []string{"Budget report: the quarters are in the table below.", "Travel fell in the second quarter."},
			children: []child{{name: "Object 1.ods", format: "ods", text: append([]string{"Sheet: budget"}, budget[1:]...)}}},
		{name: "an object the body does not point to is no child", file: "u.odt", b: withObjects(entry("Object 2", odfOLEObject), "", map[string][]byte{
			"Object 2": fixture(t, "embedded-odt.xls"),
		}), body: report, children: []child{{name: "Object 1.ods", format: "ods", text: budget}}},
		{name: "an equation in the ObjectPool is no child", file: "e.doc", b: recfb(t, "embedded-ods.doc", map[string][]byte{
			"ObjectPool/_1/Equation Native": []byte("\x1c\x00\x00\x00\x02\x00"),
		}), body: report, children: []child{{name: "_2147483647.xls", format: "ole", text: budget}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.b, Options{Name: tc.file, KeepEmbedded: true})
			if err != nil {
				t.Fatal(err)
			}
			inOrder(t, d.Text, tc.body...)
			checkChildren(t, d, tc.children)
		})
	}
}

// TestEmbeddedObjectsLimits: the embedded objects of ODF and legacy files
// count as attachments and nest within MaxDepth.
func TestEmbeddedObjectsLimits(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"embedded-ods.odt", "embedded-odt.ods", "embedded-ods.doc", "embedded-odt.xls", "embedded-ods.ppt", "embedded-chart.odt"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fixture(t, name)
			// The file, its object and b.txt: the third is past the limit.
			if _, err := ReadBytes(t.Context(), zipOf(t, name, string(b), "b.txt", "x"), Options{Limits: Limits{MaxAttachments: 2}}); !isErr(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxAttachments") {
				t.Fatalf("past MaxAttachments: got %v, want ErrTooLarge naming it", err)
			}
			d, err := ReadBytes(t.Context(), zipOf(t, name, string(b)), Options{Limits: Limits{MaxDepth: 1}, KeepEmbedded: true})
			if err != nil {
				t.Fatal(err)
			}
			r := d.Attachments[0]
			if r.Err != nil || len(r.Attachments) != 1 || !isErr(r.Attachments[0].Err, ErrTooLarge) {
				t.Fatalf("the object two levels down with MaxDepth 1: %+v", r)
			}
		})
	}
}
