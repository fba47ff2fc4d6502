package document

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRead reads each fixture by content (detection included), as a
// worker does; bytes/s is the input's size.
func BenchmarkRead(b *testing.B) {
	for _, name := range []string{"report.docx", "report.odt", "report.rtf", "sheet.xlsx", "sheet.ods", "slides.pptx", "book.epub", "page.html", "invoice.eml", "table.tsv"} {
		in, err := os.ReadFile(filepath.Join("testdata", "formats", name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadBytes(b.Context(), in, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
