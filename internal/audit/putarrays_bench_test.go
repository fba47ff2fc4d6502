package audit

import (
	"fmt"
	"testing"
)

// BenchmarkPutDocumentsEncode is the Go work per document of what submit
// asks of the audit store for a batch of 500, without the round trips:
// encoding the lookups' arrays (LookUpSubmitted), checking the documents
// and encoding the six arrays that store them (PutDocuments). For
// instruction counts run it under callgrind at N and 2N.
func BenchmarkPutDocumentsEncode(b *testing.B) {
	const batch = 500
	docs := make([]Document, batch)
	ids, keys := make([]string, batch), make([]TextKey, batch)
	for i := range docs {
		h := HashText(fmt.Sprint(i))
		docs[i] = Document{ID: fmt.Sprintf("doc-%07d", i), Hash: h, Source: "bench",
			Text: fmt.Sprintf("INVOICE INV-%06d\nFrom: Vendor %d GmbH\nItems: %d x widget\nTotal due: %d.00 EUR\n", i, i%97, 1+i%5, 10+i)}
		ids[i], keys[i] = h[:32], TextKey{DocumentID: docs[i].ID, ContentHash: h}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		m := min(batch, b.N-n)
		a := getPutArrays()
		a.encodeLookUp(ids[:m], keys[:m])
		a.release()
		idx, bad := checkDocuments(docs[:m])
		if len(bad) > 0 {
			b.Fatal(bad)
		}
		a = getPutArrays()
		a.encode(docs, idx)
		a.release()
	}
}
