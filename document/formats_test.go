package document

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportText is what report.fodt says, in order, as the DOCX, ODT and RTF
// made from it must read: header, body with a footnote, bullet and
// numbered lists, a table followed by a paragraph, the footnote, footer.
var reportText = []string{
	"Acme Corporation confidential header",
	"The supplier Globex delivered widgets in March.[1] Payment is due",
	"- First item: invoice number INV-2041\n- Second item",
	"Terms:\n\n1. Pay within thirty days\n2. Keep the receipt\n\n",
	"Product | Quantity | Price\nWidget | 10 | 100.00\nGadget | 5 | 50.00\n\nSigned by",
	"[1] Delivery dates were confirmed by the warehouse.",
	"Footer line with registration number 12345",
}

// sheetText is what sheet.fods holds, as the XLSX and ODS made from it
// must read.
var sheetText = []string{
	"Sheet: Invoices\nA1: Number | Customer | Amount | Date\nA2: INV-1 | Globex | 1250.5 | 2026-03-14",
	"Sheet: Customers\nA1: Name | City\nA2: Globex | Springfield",
}

// TestFormatsFixtures reads each fixture (made with libreoffice, pandoc or
// by hand, see testdata/formats/README.md) by content alone and checks the
// text, the pages and the metadata each format promises.
func TestFormatsFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		format string
		want   []string // substrings of the text, in order
		pages  []string // page labels; nil: no pages
		title  string
		kids   []string // attachments: "name format"
	}{
		{"report.docx", "docx", reportText, nil, "Quarterly Invoice Report", nil},
		{"sheet.xlsx", "xlsx", sheetText, []string{"Invoices", "Customers"}, "", nil},
		// openpyxl writes formulas without cached values (<v></v>), strings
		// inline, a hidden sheet; XlsxWriter a merged title, formats with
		// [$€-407], a formula total given its value and one left at 0.
		{"openpyxl-invoice.xlsx", "xlsx", []string{
			"A1: Rechnung Nr. 2026-0417 für Müller & Söhne GmbH\nA2: Datum | 2026-03-15",
			"A5: 1 | Beratung Zürich | 12 | 145.50 € | =C5*D5",
			"B8: Zwischensumme |  |  | =SUM(E5:E7)\nB9: Rabatt |  |  | 7.5%\nB10: Gesamtbetrag |  |  | =E8*(1-E9)",
			"A2: Bankverbindung | IBAN DE89", "Marge Ångström-Projekt",
		}, []string{"Rechnung", "Zahlungsbedingungen", "Intern"}, "", nil},
		{"xlsxwriter-report.xlsx", "xlsx", []string{
			"A1: Quartalsbericht Q1 2026 – Région Île-de-France\nA2: Filiale | Umsatz | Anteil | Stichtag\nA3: Paris Opéra | 184,250.75 € | 41.20% | 2026-03-31",
			"A6: 0 | 447,602.95 € | 0.00%", "A3: Kundenzufriedenheit | 91.80%\nA4: Zielerreichung | TRUE\nA5: Nächste Prüfung | 2026-06-30 09:30:00",
		}, []string{"Quartalsbericht", "Kennzahlen"}, "", nil},
		// python-docx: Word's default template, a table with a merged cell.
		{"python-docx-invoice.docx", "docx", []string{
			"Müller & Söhne GmbH · Königsallee 12", "Rechnung 2026-0417\n\nSehr geehrte Frau Dvořáková,",
			"Pos. | Leistung | Stunden | Betrag\n1 | Analyse Lagerprozesse Brno | 12 | 1.746,00 €", "Summe netto | 3.201,00 €",
			"Geschäftsführer: Jörg Brückner",
		}, nil, "", nil},
		{"report.odt", "odt", reportText, nil, "Quarterly Invoice Report", nil},
		{"sheet.ods", "ods", sheetText, []string{"Invoices", "Customers"}, "", nil},
		{"slides.pptx", "pptx", []string{
			"Slide 1\n\nSupplier Review",
			"Slide 2\n\nRevenue grew\n\nGlobex ordered 400 widgets\nInitech renewed the contract",
			"Notes:\nMention the late delivery penalty of 200 EUR.",
			"Slide 3", "Sign the renewal before the end of April.", "Notes:\nAsk legal about clause seven.",
			"Slide 4\n\nPrices\n\nProduct | Price\nWidget | 100\nGadget | 50",
		}, []string{"", "", "", ""}, "Supplier Review", nil},
		{"report.rtf", "rtf", reportText, nil, "Quarterly Invoice Report", nil},
		{"book.epub", "epub", []string{
			"The Widget Handbook",
			"Chapter one\n\nWidgets are assembled in Springfield",
			"Chapter two\n\nEach widget carries a serial number",
		}, []string{"The Widget Handbook", "Chapter one", "Chapter two"}, "The Widget Handbook", nil},
		{"table.tsv", "csv", []string{
			"A1: name | city | amount\nA2: Globex | Springfield | 1,250.00\nA3: Initech | Austin | 99",
		}, []string{""}, "", nil},
		{"page.html", "html", []string{
			"Rechnung 42",
			"der Betrag ist 1.250,00 € für Café-Zubehör.\nVielen Dank.",
			"- Widgets\n- Gadgets\n  - Small gadgets\n- Tools\n\n",
			"1. Pay within 30 days\n2. Keep the receipt",
			"Item | Qty | Price\nWidget | 10 | 100,00",
			"IBAN  DE89 3704\nBIC   COBADEFFXXX",
		}, nil, "Rechnung 42", nil},
		{"invoice.eml", "eml", []string{
			"From: Jörg Müller <joerg@globex.example>\nTo: Accounts <ap@acme.example>, bob@acme.example\nCc: audit@acme.example",
			"Subject: Rechnung INV-2041 für März",
			"please find attached invoice INV-2041 over 1.250,00 EUR",
			"Regards,\nJörg",
		}, nil, "Rechnung INV-2041 für März", []string{"Positionen März.xlsx xlsx", "attachment-2.eml eml"}},
		{"box.mbox", "mbox", []string{
			"message-1.eml: From: news@initech.example | Subject: Newsletter – April",
			"message-2.eml: From: warehouse@globex.example | Subject: Delivery confirmed",
		}, nil, "", []string{"message-1.eml eml", "message-2.eml eml"}},
		{"memo.tnef", "tnef", []string{
			"From: Grace Hopper <grace@example.com>\nTo: Ada Lovelace <ada@example.com>\nCc: Accounts <accounts@example.com>",
			"Subject: Pump service in Zürich", "the pump in Zürich was serviced on Friday",
		}, nil, "Pump service in Zürich", []string{"Minutes of the pump meeting.txt text", "Invoice 4711 (pump).pdf pdf"}},
		{"memo-tnef.eml", "eml", []string{"Subject: Pump service in Zürich", "the pump in Zürich was serviced on Friday"},
			nil, "Pump service in Zürich", []string{"Minutes of the pump meeting.txt text", "Invoice 4711 (pump).pdf pdf"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			// No name: the content alone must tell the format.
			b, err := os.ReadFile(filepath.Join("testdata", "formats", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			d, err := ReadBytes(t.Context(), b, Options{})
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if d.Format != tc.format {
				t.Errorf("format %q, want %q", d.Format, tc.format)
			}
			rest := d.Text
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("text lacks %q (in order); text:\n%s", w, d.Text)
				}
				rest = rest[i+len(w):]
			}
			var labels []string
			for i, p := range d.Pages {
				if p.Number != i+1 || p.Start > p.End || p.End > len(d.Text) || (i > 0 && p.Start < d.Pages[i-1].End) {
					t.Errorf("page %d out of order: %+v", i, p)
				}
				labels = append(labels, p.Label)
			}
			if strings.Join(labels, ",") != strings.Join(tc.pages, ",") {
				t.Errorf("pages %q, want %q", labels, tc.pages)
			}
			for i, p := range d.Pages {
				if tc.format == "pptx" && !strings.HasPrefix(d.Text[p.Start:p.End], fmt.Sprintf("Slide %d\n", i+1)) {
					t.Errorf("page %d is not slide %d: %q", i+1, i+1, d.Text[p.Start:p.End])
				}
				if tc.format == "xlsx" || tc.format == "ods" {
					if !strings.HasPrefix(d.Text[p.Start:p.End], "Sheet: "+tc.pages[i]) {
						t.Errorf("page %d does not start with its sheet: %q", i+1, d.Text[p.Start:p.End])
					}
				}
			}
			var kids []string
			for _, c := range d.Attachments {
				if c.Err != nil {
					t.Errorf("attachment %s: %v", c.Name, c.Err)
				}
				kids = append(kids, c.Name+" "+c.Format)
			}
			if strings.Join(kids, ",") != strings.Join(tc.kids, ",") {
				t.Errorf("attachments %q, want %q", kids, tc.kids)
			}
			for _, drop := range []string{"script text", "About us", "Related offers", "Search the site", "Copyright Globex", "site banner", "logo1"} {
				if strings.Contains(d.Text, drop) {
					t.Errorf("text keeps page chrome %q", drop)
				}
			}
			if d.Meta.Title != tc.title {
				t.Errorf("title %q, want %q", d.Meta.Title, tc.title)
			}
		})
	}
}

func TestFormatCell(t *testing.T) {
	t.Parallel()
	tests := []struct{ v, code, want string }{
		{"1250.5", "", "1250.5"},
		{"0.30000000000000004", "General", "0.3"},
		{"1234567.891", "#,##0.00", "1,234,567.89"},
		{"0.256", "0.0%", "25.6%"},
		{"-1234", "#,##0;(#,##0)", "(1,234)"},
		{"-1234", "#,##0", "-1,234"},
		{"46095", "yyyy-mm-dd", "2026-03-14"},
		{"46095.5", "dd/mm/yyyy hh:mm", "2026-03-14 12:00:00"},
		{"0.75", "h:mm", "18:00:00"},
		{"12.5", `"$"#,##0.00`, "$12.50"},
		{"12.5", `#,##0.00 [$€-407]`, "12.50 €"},
		{"abc", "0.00", "abc"},
	}
	for _, tc := range tests {
		if got := formatCell(tc.v, tc.code, false); got != tc.want {
			t.Errorf("formatCell(%q, %q) = %q, want %q", tc.v, tc.code, got, tc.want)
		}
	}
}

// isErr reports whether err is a *Error wrapping target.
func isErr(err, target error) bool {
	var de *Error
	return errors.As(err, &de) && errors.Is(err, target)
}

// TestEMLDetails checks what the fixture test cannot see at once: the
// e-mail metadata, the attached message's own text, a mailbox's ">From "
// unquoting, and an HTML-only message converted.
func TestEMLDetails(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "invoice.eml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := d.Meta
	if m.From != "Jörg Müller <joerg@globex.example>" || len(m.To) != 2 || m.MessageID != "inv2041@globex.example" || m.Date.Year() != 2026 {
		t.Errorf("metadata %+v", m)
	}
	if strings.Contains(d.Text, "<b>") {
		t.Errorf("plain part not preferred: %q", d.Text)
	}
	if len(d.Attachments) != 2 || !strings.Contains(d.Attachments[0].Text, "A2: INV-1 | Globex | 1250.5") {
		t.Fatalf("attached workbook not read: %+v", d.Attachments)
	}
	box, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "box.mbox"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := box.Attachments[1].Text; !strings.Contains(got, "\nFrom now on deliveries") {
		t.Errorf("mboxrd quoting kept: %q", got)
	}
	if got := box.Attachments[0].Text; !strings.Contains(got, "April news\n\nInitech opened an office in Austin.\n\nQ1 | 12") {
		t.Errorf("HTML-only message: %q", got)
	}
}

// TestZipArchive: a plain zip yields one child document per file, each
// read by its own format.
func TestZipArchive(t *testing.T) {
	t.Parallel()
	docx := fixture(t, "report.docx")
	z := zipOf(t, "invoices/report.docx", string(docx), "rates.csv", "code,rate\nEUR,1.08\nGBP,0.86\n")
	d, err := ReadBytes(t.Context(), z, Options{Name: "batch.zip"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "zip" || len(d.Attachments) != 2 {
		t.Fatalf("format %s, %d attachments", d.Format, len(d.Attachments))
	}
	if c := d.Attachments[0]; c.Format != "docx" || !strings.Contains(c.Text, "Globex delivered widgets") {
		t.Errorf("first child %s: %v %q", c.Format, c.Err, c.Text)
	}
	if c := d.Attachments[1]; c.Format != "csv" || !strings.Contains(c.Text, "A2: EUR | 1.08") {
		t.Errorf("second child %s: %v %q", c.Format, c.Err, c.Text)
	}
}

// TestEMLHeaderEncodings: encoded words in any charset, and raw 8-bit
// headers (UTF-8 or Latin-1) all end as UTF-8.
func TestEMLHeaderEncodings(t *testing.T) {
	t.Parallel()
	tests := []struct{ header, want string }{
		{"=?iso-8859-1?q?Caf=E9?=", "Café"},
		{"=?utf-8?b?w5xiZXJ3ZWlzdW5n?=", "Überweisung"},
		{"=?windows-1251?q?=CF=F0=E8=E2=E5=F2?=", "Привет"},
		{"raw \xc3\xbcber", "raw über"},
		{"raw \xfcber", "raw über"},
	}
	for _, tc := range tests {
		msg := "From: a@example.com\r\nSubject: " + tc.header + "\r\nDate: Mon, 02 Mar 2026 10:00:00 +0000\r\n\r\nbody\r\n"
		d, err := ReadBytes(t.Context(), []byte(msg), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Meta.Subject != tc.want || !strings.Contains(d.Text, "Subject: "+tc.want) {
			t.Errorf("%q: subject %q", tc.header, d.Meta.Subject)
		}
	}
}

// TestSniffCSV: tables are told from prose by content.
func TestSniffCSV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"a,b,c\n1,2,3\n", true},
		{"name\tcity\nAda\tLondon\n", true},
		{"version,codename,series,created,release,eol,eol-lts,eol-elts\n4.10,Warty Warthog,warty,2004-03-20,2004-10-20,2006-04-30\n5.04,Hoary Hedgehog,hoary,2004-10-20,2005-04-08,2006-10-31\n6.06 LTS,Dapper Drake,dapper,2005-04-08,2006-06-01,2009-07-14,2011-06-01\n", true},
		{"Dear Ada, thank you for the widgets.\nWe paid, as agreed, on Monday.\n", false},
		{"Dear Ada, thank you for the widgets we ordered last spring.\nWe paid the invoice, as agreed with your office, on Monday.\nThe rest, as you know, follows in May.\n", false},
		{"just one line, with a comma\n", false},
		{"no delimiters here\nnor here\n", false},
		// Excel's CSV on Western Windows: Windows-1252 (Ä, €), read as such.
		{"Artikel;Menge;Preis\r\nWidget \xc4;40;12,50 \x80\r\nGadget \xd6;3;99,00 \x80\r\n", true},
		{"Dear Ada, thank you for the widgets.\nWe paid, as agreed, on Monday \xe0 Paris.\n", false},
		{"a,b\x01,c\n1,2,3\n\xff", false}, // control bytes: binary, not a legacy text
	}
	for _, tc := range tests {
		if _, got := sniffCSV([]byte(tc.in)); got != tc.want {
			t.Errorf("sniffCSV(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestPPTXNestedTable: a table inside a table cell is that cell's text;
// the outer table keeps its rows.
func TestPPTXNestedTable(t *testing.T) {
	t.Parallel()
	const ns = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	cell := func(s string) string {
		return `<a:tc><a:txBody><a:p><a:r><a:t>` + s + `</a:t></a:r></a:p></a:txBody></a:tc>`
	}
	inner := `<a:tc><a:txBody><a:p/></a:txBody><a:tbl><a:tr>` + cell("x") + cell("y") + `</a:tr></a:tbl></a:tc>`
	slide := `<p:sld ` + ns + `><p:cSld><p:spTree><p:graphicFrame><a:graphic><a:graphicData><a:tbl>` +
		`<a:tr>` + cell("Product") + cell("Price") + `</a:tr><a:tr>` + cell("Widget") + inner + `</a:tr><a:tr>` + cell("Gadget") + cell("50") + `</a:tr>` +
		`</a:tbl></a:graphicData></a:graphic></p:graphicFrame></p:spTree></p:cSld></p:sld>`
	b := zipOf(t,
		"[Content_Types].xml", `<Types><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/></Types>`,
		"_rels/.rels", `<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>`,
		"ppt/presentation.xml", `<p:presentation `+ns+`><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst></p:presentation>`,
		"ppt/_rels/presentation.xml.rels", `<Relationships><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/></Relationships>`,
		"ppt/slides/slide1.xml", slide)
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Product | Price\nWidget | x y\nGadget | 50"; !strings.Contains(d.Text, want) {
		t.Errorf("text %q lacks %q", d.Text, want)
	}
}

// TestHTMLMainContent: what the reader keeps and drops of a page.
func TestHTMLMainContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		keep, drop []string
	}{
		{"menu as content", `<div class="menu"><p>Soup of the day 5 EUR</p><p>Apple pie 4 EUR</p></div>`, []string{"Soup of the day 5 EUR", "Apple pie"}, nil},
		{"share bar", `<p>Order 42 shipped.</p><div class="share"><a href="#">Twitter</a> <a href="#">Facebook</a></div>`, []string{"Order 42 shipped."}, []string{"Twitter"}},
		{"small article", `<p>Invoice total 1,250.00 EUR due 13 April.</p><p>Bank: Globex Bank, IBAN DE89 3704.</p><article><p>Tip</p></article>`, []string{"Invoice total", "IBAN DE89 3704", "Tip"}, nil},
		{"main article", `<div><a href="/">Home</a> <a href="/x">Products</a> about the site</div><article><header><h1>Widget recall</h1></header><p>` + strings.Repeat("All widgets of batch 7 are recalled. ", 5) + `</p></article>`, []string{"Widget recall", "batch 7"}, []string{"Products"}},
		{"hidden", `<p>Visible text</p><p hidden>secret one</p><div style="display: none">secret two</div><span aria-hidden="true">secret three</span>`, []string{"Visible text"}, []string{"secret"}},
		{"layout table", `<table><tr><td><h2>Invoice 7</h2><table><tr><td>Widget</td><td>10</td></tr><tr><td>Gadget</td><td>5</td></tr></table></td></tr><tr><td><p>Thanks</p></td></tr></table>`, []string{"Invoice 7\n\nWidget | 10\nGadget | 5\n\nThanks"}, nil},
		{"page chrome", `<header>Site banner</header><nav>Home About</nav><p>Body text</p><aside>Ads here</aside><footer>Imprint</footer><script>var x</script>`, []string{"Body text"}, []string{"Site banner", "Home About", "Ads here", "Imprint", "var x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), []byte("<!doctype html><html><body>"+tc.body+"</body></html>"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keep {
				if !strings.Contains(d.Text, k) {
					t.Errorf("dropped %q: %q", k, d.Text)
				}
			}
			for _, k := range tc.drop {
				if strings.Contains(d.Text, k) {
					t.Errorf("kept %q: %q", k, d.Text)
				}
			}
		})
	}
}

// TestChartSeries: a chart's cached series reach the text with their
// categories, from a Word document and a slide alike.
func TestChartSeries(t *testing.T) {
	t.Parallel()
	chart := `<c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><c:chart><c:title><c:tx><c:rich><a:p><a:r><a:t>Revenue</a:t></a:r></a:p></c:rich></c:tx></c:title><c:plotArea><c:barChart><c:ser>` +
		`<c:tx><c:strRef><c:strCache><c:pt idx="0"><c:v>EUR</c:v></c:pt></c:strCache></c:strRef></c:tx>` +
		`<c:cat><c:strRef><c:strCache><c:pt idx="0"><c:v>Q1</c:v></c:pt><c:pt idx="1"><c:v>Q2</c:v></c:pt></c:strCache></c:strRef></c:cat>` +
		`<c:val><c:numRef><c:numCache><c:pt idx="0"><c:v>1250</c:v></c:pt><c:pt idx="1"><c:v>990.5</c:v></c:pt></c:numCache></c:numRef></c:val></c:ser></c:barChart></c:plotArea></c:chart></c:chartSpace>`
	b := zipOf(t, "[Content_Types].xml", docxTypes,
		"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body><w:p><w:r><w:t>Figures below.</w:t></w:r></w:p><w:p><w:r><w:drawing><c:chart r:id="rId9"/></w:drawing></w:r></w:p></w:body></w:document>`,
		"word/_rels/document.xml.rels", `<Relationships><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/chart" Target="charts/chart1.xml"/></Relationships>`,
		"word/charts/chart1.xml", chart)
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Chart: Revenue\nEUR: Q1 = 1250 | Q2 = 990.5"; !strings.Contains(d.Text, want) {
		t.Errorf("text %q lacks %q", d.Text, want)
	}
}

// TestDOCXPageBreaks: the pages Word last rendered (and hard page breaks)
// become the document's pages; a break inside a paragraph ends the page
// after it.
func TestDOCXPageBreaks(t *testing.T) {
	t.Parallel()
	p := func(runs string) string { return `<w:p>` + runs + `</w:p>` }
	r := func(s string) string { return `<w:r><w:t>` + s + `</w:t></w:r>` }
	b := docxOf(t, p(r("Alpha page one."))+
		p(`<w:r><w:lastRenderedPageBreak/><w:t>Bravo page two.</w:t></w:r>`)+
		p(r("Charlie")+`<w:r><w:br w:type="page"/></w:r>`+r("still two."))+
		p(r("Delta page three.")))
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Alpha page one.", "Bravo page two.\n\nCharlie\nstill two.", "Delta page three."}
	if len(d.Pages) != len(want) {
		t.Fatalf("%d pages %+v, want %d; text %q", len(d.Pages), d.Pages, len(want), d.Text)
	}
	for i, p := range d.Pages {
		if got := d.Text[p.Start:p.End]; got != want[i] {
			t.Errorf("page %d = %q, want %q", i+1, got, want[i])
		}
	}
}

// TestODTSoftPageBreaks: LibreOffice's recorded page breaks become pages.
func TestODTSoftPageBreaks(t *testing.T) {
	t.Parallel()
	b := zipOf(t, "mimetype", "application/vnd.oasis.opendocument.text", "content.xml",
		`<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>`+
			`<text:p>First page.</text:p><text:soft-page-break/><text:p>Second page.</text:p><text:p>Long <text:soft-page-break/>paragraph.</text:p><text:p>Third page.</text:p>`+
			`</office:text></office:body></office:document-content>`)
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range d.Pages {
		got = append(got, d.Text[p.Start:p.End])
	}
	if want := []string{"First page.", "Second page.\n\nLong paragraph.", "Third page."}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("pages %q, want %q", got, want)
	}
}

// TestEMLDamaged: a damaged message keeps what can be read, with a
// warning, instead of failing whole.
func TestEMLDamaged(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, msg, want string }{
		{"no boundary", "From: a@example.com\r\nSubject: s\r\nContent-Type: multipart/mixed\r\n\r\nInvoice 42 is attached.\r\n", "Invoice 42 is attached."},
		{"truncated", "From: a@example.com\r\nSubject: s\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nInvoice 43 is attached.\r\n--b\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBER", "Invoice 43 is attached."},
		// Python's email test data, msg_14: "a drainbread ISP, which although
		// big and wealthy can't seem to generate standard compliant email".
		{"no subtype", "From: a@example.com\r\nSubject: s\r\nMIME-Version: 1.0\r\nContent-Type: text; charset=us-ascii\r\n\r\nInvoice 44 is due.\r\n", "Invoice 44 is due."},
		{"no subtype in a part", "From: a@example.com\r\nSubject: s\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text; charset=iso-8859-1\r\n\r\nFacture 45, d\xe9j\xe0 pay\xe9e.\r\n--b--\r\n", "Facture 45, déjà payée."},
	}
	for _, tc := range tests {
		d, err := ReadBytes(t.Context(), []byte(tc.msg), Options{Name: tc.name + ".eml"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(d.Text, tc.want) {
			t.Errorf("%s: text %q lacks %q", tc.name, d.Text, tc.want)
		}
		if tc.name == "no boundary" && len(d.Warnings) == 0 {
			t.Errorf("%s: no warning", tc.name)
		}
		if strings.HasPrefix(tc.name, "no subtype") && len(d.Attachments) != 0 {
			t.Errorf("%s: %d attachments, want the body in the message's text", tc.name, len(d.Attachments))
		}
	}
	// A part whose headers cannot be read (a line without a colon) is
	// skipped with a warning; the text and the attachment after it are
	// read. They were lost with it.
	msg := "From: a@example.com\r\nSubject: s\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nSee the attached invoice.\r\n" +
		"--b\r\nContent-Type: image/gif\r\nthis line has no colon\r\n\r\nGIF89a...\r\nmore\r\n\r\n" +
		"--b\r\nContent-Type: text/csv; name=invoice.csv\r\nContent-Disposition: attachment; filename=invoice.csv\r\n\r\nitem,amount\r\nwidgets,46\r\n" +
		"--b--\r\n"
	d, err := ReadBytes(t.Context(), []byte(msg), Options{Name: "broken-part.eml"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Text, "See the attached invoice.") || len(d.Attachments) != 1 || d.Attachments[0].Name != "invoice.csv" ||
		!strings.Contains(d.Attachments[0].Text, "widgets") {
		t.Errorf("text %q, %d attachments; want the body and invoice.csv", d.Text, len(d.Attachments))
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "a part skipped") {
		t.Errorf("warnings %q, want one saying a part was skipped", d.Warnings)
	}
}
