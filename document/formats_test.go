package document

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	}{
		{"report.docx", "docx", []string{
			"Acme Corporation confidential header",
			"The supplier Globex delivered widgets in March.[1] Payment is due",
			"- First item: invoice number INV-2041\n- Second item",
			"Product | Quantity | Price\nWidget | 10 | 100.00\nGadget | 5 | 50.00",
			"[1] Delivery dates were confirmed by the warehouse.",
			"Footer line with registration number 12345",
		}, nil, "Quarterly Invoice Report"},
		{"sheet.xlsx", "xlsx", []string{
			"Sheet: Invoices\nA1: Number | Customer | Amount | Date\nA2: INV-1 | Globex | 1250.5 | 2026-03-14",
			"Sheet: Customers\nA1: Name | City\nA2: Globex | Springfield",
		}, []string{"Invoices", "Customers"}, ""},
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
				if tc.format == "xlsx" || tc.format == "ods" {
					if !strings.HasPrefix(d.Text[p.Start:p.End], "Sheet: "+tc.pages[i]) {
						t.Errorf("page %d does not start with its sheet: %q", i+1, d.Text[p.Start:p.End])
					}
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
