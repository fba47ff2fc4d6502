package document_test

import (
	"fmt"
	"testing"

	"github.com/extractq/extractq/document"
)

// BenchmarkPDF reads generated PDFs of a few lines a page; pages/s is the
// figure (run with -cpu 1 for one core). bench/documents measures real
// PDFs.
func BenchmarkPDF(b *testing.B) {
	for _, n := range []int{1, 100} {
		pages := make([]genPage, n)
		for i := range pages {
			pages[i] = genPage{shows: append(lines(50, 700, "A paragraph of running text on the page,", "with a second line that ends in a hyphen-", "ated word and a third line."), lines(330, 700, "The right column comes second", "in reading order although it is", "drawn first in the content.")...)}
		}
		pdf := makePDF(pages)
		b.Run(fmt.Sprintf("pages=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(pdf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := document.ReadBytes(b.Context(), pdf, document.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
