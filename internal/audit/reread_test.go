package audit

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// TestDocumentsForReread: documents whose recorded reader is not current,
// with their latest job of an original, filtered and paged; a recorded
// new reader takes a document out, unless its text changed since.
func TestDocumentsForReread(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	pdf3 := []byte(`{"format":"pdf","reader":"pdf/3","pages":2}`)
	docs := []Document{
		{ID: "p1", Text: "text p1", Metadata: pdf3},
		{ID: "p2", Text: "text p2", Metadata: pdf3},
		{ID: "p3", Text: "text p3", Metadata: pdf3},
		{ID: "p4", Text: "text p4", Metadata: pdf3},                                          // no job
		{ID: "h1", Text: "text h1", Metadata: []byte(`{"format":"html","reader":"html/1"}`)}, // current
		{ID: "t1", Text: "text t1"},                                                          // plain text
	}
	if err := s.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, s)
	rec := func(job, doc, hash, run string, later time.Duration) *Record {
		r := testRecord(job, doc, 1, 1, llm.OutcomeOK)
		r.DocumentHash, r.Run = hash, run
		r.FinishedAt = r.FinishedAt.Add(later)
		return r
	}
	for _, r := range []*Record{
		rec("j1", "p1", "orig-p1", "run1", 0),
		rec("j2a", "p2", "orig-p2-old", "run1", 0),
		rec("j2b", "p2", "orig-p2", "run2", time.Minute),
		rec("j3", "p3", "orig-p3", "run1", 0),
		rec("jh", "h1", "orig-h1", "run1", 0),
		rec("jt", "t1", HashText("text t1"), "run1", 0),
	} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	current := []string{"pdf/4", "html/1"}
	ids := func(cs []RereadCandidate) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	tests := []struct {
		name string
		f    RereadFilter
		want []string
	}{
		{"all", RereadFilter{}, []string{"p1", "p2", "p3"}},
		{"format", RereadFilter{Format: "pdf"}, []string{"p1", "p2", "p3"}},
		{"other format", RereadFilter{Format: "html"}, nil},
		{"run", RereadFilter{Run: "run2"}, []string{"p2"}},
		{"schema", RereadFilter{Schema: "invoice"}, []string{"p1", "p2", "p3"}},
		{"other schema", RereadFilter{Schema: "other"}, nil},
		{"first page", RereadFilter{Limit: 2}, []string{"p1", "p2"}},
		{"next page", RereadFilter{Limit: 2, After: "p2"}, []string{"p3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Current = current
			got, err := s.DocumentsForReread(ctx, tt.f)
			if err != nil || !slices.Equal(ids(got), tt.want) {
				t.Errorf("selected %v, %v; want %v", ids(got), err, tt.want)
			}
		})
	}
	got, err := s.DocumentsForReread(ctx, RereadFilter{Current: current, Run: "run2"})
	if err != nil || len(got) != 1 {
		t.Fatalf("p2: %+v, %v", got, err)
	}
	if c := got[0]; c.OriginalHash != "orig-p2" || c.Reader != "pdf/3" || c.Text != "text p2" || c.SchemaName != "invoice" || c.SchemaVersion != 1 || c.Model != "sim-1" {
		t.Errorf("p2's candidate %+v: want its latest job's original hash, schema and model, its reader and text", c)
	}
	if n, err := s.CountForReread(ctx, RereadFilter{Current: current}); err != nil || n != 3 {
		t.Errorf("count %d, %v; want 3", n, err)
	}
	// p1 read again by pdf/4; p2's reader recorded for a text it no longer has.
	if err := s.SetDocumentReaders(ctx, []string{"p1", "p2"}, []string{HashText("text p1"), HashText("an older text")}, []string{"pdf/4", "pdf/4"}, nil); err != nil {
		t.Fatal(err)
	}
	got, err = s.DocumentsForReread(ctx, RereadFilter{Current: current})
	if err != nil || !slices.Equal(ids(got), []string{"p2", "p3"}) {
		t.Errorf("after recording p1's reader: %v, %v; want p2, p3", ids(got), err)
	}
	if d, err := s.Document(ctx, "p1"); err != nil || string(d.Metadata) != `{"pages": 2, "format": "pdf", "reader": "pdf/4"}` {
		t.Errorf("p1's metadata %s, %v; want the new reader, the rest kept", d.Metadata, err)
	}
}

// TestAttachmentsQueued: the documents under a carrier (id CARRIER#…, at
// any depth) with a job in its run, compared byte-wise whatever the
// database's collation (ids that sort near the prefix under a
// linguistic collation are not under it); KnownDocuments says which ids
// are documents.
func TestAttachmentsQueued(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	for _, r := range [][2]string{
		{"m", "run1"}, {"m#a.pdf", "run1"}, {"m#b.eml", "run1"}, {"m#b.eml#c.pdf", "run1"},
		{"m#other-run.pdf", "run2"}, {"m$", "run1"}, {"ma", "run1"}, {"m-#x", "run1"}, {"M#a.pdf", "run1"},
		{"n#a.pdf", "run2"},
	} {
		rec := testRecord("job-"+r[0], r[0], 1, 1, llm.OutcomeOK)
		rec.Run = r[1]
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		ids, runs []string
		want      map[string][]string
	}{
		{"none", nil, nil, map[string][]string{}},
		{"a carrier", []string{"m"}, []string{"run1"}, map[string][]string{"m": {"m#a.pdf", "m#b.eml", "m#b.eml#c.pdf"}}},
		{"a nested carrier", []string{"m#b.eml"}, []string{"run1"}, map[string][]string{"m#b.eml": {"m#b.eml#c.pdf"}}},
		{"its other run", []string{"m"}, []string{"run2"}, map[string][]string{"m": {"m#other-run.pdf"}}},
		{"two", []string{"m#b.eml", "n"}, []string{"run1", "run2"}, map[string][]string{"m#b.eml": {"m#b.eml#c.pdf"}, "n": {"n#a.pdf"}}},
		{"without attachments", []string{"ma"}, []string{"run1"}, map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.AttachmentsQueued(ctx, tt.ids, tt.runs)
			if err != nil || !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("AttachmentsQueued(%v, %v) = %v, %v; want %v", tt.ids, tt.runs, got, err, tt.want)
			}
		})
	}
	if err := s.PutDocuments(ctx, []Document{{ID: "m", Text: "mail"}, {ID: "m#a.pdf", Text: "invoice"}}); err != nil {
		t.Fatal(err)
	}
	known, err := s.KnownDocuments(ctx, []string{"m", "m#a.pdf", "m#b.eml"})
	if err != nil || !maps.Equal(known, map[string]bool{"m": true, "m#a.pdf": true}) {
		t.Errorf("KnownDocuments: %v, %v; want m and m#a.pdf", known, err)
	}
}
