package submit

import (
	"fmt"
	"testing"

	"github.com/extractq/extractq/internal/jobs"
)

// TestBatchHashes: contentHashes and jobIDs give what jobs.HashText,
// jobs.HashBytes and jobs.MsgID give document by document, in two
// allocations for the whole batch each (two per document before: the
// hash string and the text copied to a []byte for sha256).
func TestBatchHashes(t *testing.T) {
	job := Job{Schema: jobs.SchemaRef{Name: "s", Version: 1, Fingerprint: "fp"}, Model: "m"}
	var docs []Doc
	for i := range 300 {
		d := Doc{ID: fmt.Sprintf("doc-%d", i), Text: fmt.Sprintf("text %d, longer than the 32 bytes a conversion to []byte takes on the stack", i)}
		if i%3 == 0 {
			d.Original = []byte(fmt.Sprintf("%%PDF original %d", i))
		}
		if i%7 == 0 {
			d.Text = ""
		}
		docs = append(docs, d)
	}
	hashes := contentHashes(docs)
	ids := jobIDs(job, docs, hashes)
	if len(hashes) != len(docs) || len(ids) != len(docs) {
		t.Fatalf("%d hashes and %d ids for %d documents", len(hashes), len(ids), len(docs))
	}
	for i, d := range docs {
		want := jobs.HashText(d.Text)
		if d.Original != nil {
			want = jobs.HashBytes(d.Original)
		}
		if hashes[i] != want {
			t.Fatalf("%d: hash %s, want %s", i, hashes[i], want)
		}
		if id := jobs.MsgID(d.ID, want, "fp", "m", ""); ids[i] != id {
			t.Fatalf("%d: job id %s, want %s", i, ids[i], id)
		}
	}
	if allocs := testing.AllocsPerRun(20, func() { jobIDs(job, docs, contentHashes(docs)) }); allocs > 4 {
		t.Fatalf("%.0f allocations for the hashes and ids of %d documents, want 4", allocs, len(docs))
	}
}
