package submit_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/extractq/extractq/internal/docfake"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// TestSubmitDocuments checks that a document a format reader made travels
// with its original (in the object store, by its hash, which is also the
// job's identity), its reader, its pages and its scans, and that the same
// original submitted again is the same job.
func TestSubmitDocuments(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	original := []byte(docfake.PDF + "One.\f[scan]")
	read := func() []submit.Doc {
		var out []submit.Doc
		r := intake.Reader{Native: true}
		path := t.TempDir() + "/scan.pdf"
		if err := os.WriteFile(path, original, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := r.Read(ctx, []string{path}, func(d intake.Doc) error {
			d.ID = "scan"
			out = append(out, d)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if sum := e.submit(t, read()); sum.Queued != 1 {
		t.Fatalf("summary %+v, want 1 queued", sum)
	}
	st, err := e.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var env jobs.Envelope
	if err := json.Unmarshal(msg.Data, &env); err != nil {
		t.Fatal(err)
	}
	hash := jobs.HashBytes(original)
	if env.Original == nil || env.OriginalHash != hash || env.DocumentHash != hash || env.Reader != "fakepdf/7" ||
		len(env.Pages) != 2 || env.Pages[1] != (jobs.Page{N: 2, Start: 4, End: 4}) || len(env.Scanned) != 1 || env.Scanned[0] != 2 {
		t.Fatalf("envelope %+v, want the original by hash, the reader, two pages and page 2 scanned", env)
	}
	got, err := jobs.NewDocuments(e.js).Original(ctx, &env)
	if err != nil || string(got) != string(original) {
		t.Errorf("original in the object store = %q, %v", got, err)
	}
	d, err := e.store.Document(ctx, "scan")
	if err != nil || d.Text != "One." {
		t.Errorf("stored document = %+v, %v; want its text", d, err)
	}
	if sum := e.submit(t, read()); sum.Queued != 0 || sum.Duplicates != 1 {
		t.Errorf("the same original again: %+v, want one duplicate", sum)
	}
}
