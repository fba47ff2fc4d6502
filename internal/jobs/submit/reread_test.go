package submit_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/docfake"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
)

// TestResubmitReread: after a reader upgrade (simulated by recording an
// older reader, and for one document the text it made, in the audit),
// --reread queues a new job for the document whose text changed, with the
// text of today's reader, skips the unchanged one, counts the one whose
// original left the object store as missing, and selects none of the
// re-read ones again.
func TestResubmitReread(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	originals := map[string]string{"changed": "One.\fTwo.", "same": "Three.", "gone": "Four.", "void": "Five."}
	var in []submit.Doc
	dir := t.TempDir()
	for _, id := range []string{"changed", "gone", "same", "void"} {
		path := filepath.Join(dir, id+".pdf")
		if err := os.WriteFile(path, []byte(docfake.PDF+originals[id]), 0o644); err != nil {
			t.Fatal(err)
		}
		in = append(in, readAs(t, &intake.Reader{}, path, id)...)
	}
	if sum := e.submit(t, in); sum.Queued != 4 {
		t.Fatalf("submit: %+v, want 4 queued", sum)
	}
	st := e.processed(t, 4)
	req := submit.ResubmitRequest{Reread: true, Schema: "thing"}
	if sum, err := e.sub.Resubmit(ctx, e.store, req); err != nil || sum.Selected != 0 {
		t.Fatalf("before any upgrade: %+v, %v; want nothing selected", sum, err)
	}

	// The texts were made by fakepdf/6, which read "changed" differently.
	pool := e.store.Pool()
	if _, err := pool.Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"fakepdf/6"')`); err != nil {
		t.Fatal(err)
	}
	// Its page 2 read differently.
	if _, err := pool.Exec(ctx, `UPDATE documents SET body = $1, body_hash = $2, pages = '[[0, 4], [4, 8]]' WHERE id = 'changed'`,
		"One.Two!", jobs.HashText("One.Two!")); err != nil {
		t.Fatal(err)
	}
	obj, err := e.js.ObjectStore(ctx, jobs.DocsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.Delete(ctx, jobs.HashBytes([]byte(docfake.PDF+originals["gone"]))); err != nil {
		t.Fatal(err)
	}
	// "void" now reads as nothing (an original damaged in the store).
	if _, err := obj.PutBytes(ctx, jobs.HashBytes([]byte(docfake.PDF+originals["void"])), []byte(docfake.PDF)); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		req  submit.ResubmitRequest
		want int // selected
	}{
		{"dry run", submit.ResubmitRequest{Reread: true, DryRun: true}, 4},
		{"another run", submit.ResubmitRequest{Reread: true, Run: "nope", DryRun: true}, 0},
		{"another schema", submit.ResubmitRequest{Reread: true, Schema: "other", DryRun: true}, 0},
		{"another reader", submit.ResubmitRequest{Reread: true, Reader: "fakemail", DryRun: true}, 0},
		{"this reader", submit.ResubmitRequest{Reread: true, Reader: "fakepdf", DryRun: true}, 4},
	}
	for _, tt := range tests {
		sum, err := e.sub.Resubmit(ctx, e.store, tt.req)
		if err != nil || sum.Selected != tt.want || sum.Queued != 0 {
			t.Errorf("%s: %+v, %v; want %d selected, none queued", tt.name, sum, err, tt.want)
		}
	}
	if _, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true, Reader: "nosuch"}); err == nil {
		t.Error("an unknown reader: no error")
	}

	sum, err := e.sub.Resubmit(ctx, e.store, req)
	if err != nil {
		t.Fatal(err)
	}
	want := submit.RereadCounts{Reread: 3, Changed: 1, Unchanged: 1, Missing: 1,
		Changes: []submit.PageChanges{{ID: "changed", Pages: []int{2}, Before: 2, After: 2}}}
	if sum.Selected != 4 || sum.Queued != 1 || sum.Reread == nil || !reflect.DeepEqual(*sum.Reread, want) ||
		len(sum.Rejected) != 2 || sum.Rejected[0].ID != "gone" || sum.Rejected[1].ID != "void" {
		t.Fatalf("reread: %+v (%+v), %v; want 4 selected, %+v, gone and void rejected", sum, sum.Reread, err, want)
	}
	msg, err := st.GetMsg(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	again, err := jobs.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	hash := jobs.HashBytes([]byte(docfake.PDF + originals["changed"]))
	if again.DocumentID != "changed" || again.Text != "One.Two." || again.Reader != "fakepdf/7" ||
		again.DocumentHash != hash || again.Original == nil || len(again.Pages) != 2 || again.Schema != e.v1 || again.Run != "r1" {
		t.Errorf("queued job %+v: want the re-read text, reader, original, pages, schema and run", again)
	}
	d, err := e.store.Document(ctx, "changed")
	if err != nil || d.Text != "One.Two." {
		t.Errorf("stored document after the re-read: %+v, %v; want today's text", d, err)
	}

	// Only the rejected ones are selected again; nothing is queued twice.
	sum, err = e.sub.Resubmit(ctx, e.store, req)
	if err != nil || sum.Selected != 2 || sum.Queued != 0 || sum.Reread.Missing != 1 {
		t.Errorf("second reread: %+v (%+v), %v; want only the rejected selected", sum, sum.Reread, err)
	}
	if n := e.msgs(t, jobs.JobsStream); n != 5 {
		t.Errorf("%d jobs on the stream, want 5", n)
	}
}

// ocrFake reads every picture as the same text.
type ocrFake struct{}

func (ocrFake) Recognize(context.Context, *document.Image) (string, error) {
	return "Read by OCR.", nil
}

// TestResubmitRereadOCR: a scan submit read by OCR, for a model that reads
// no images, is read by OCR again, so it is unchanged when only the reader
// version moved; read for a model that reads images it is a scan again,
// which is a change.
func TestResubmitRereadOCR(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	// A real scan: the test's PDF reader calls no OCR.
	path := "../../../examples/documents/invoice-scan.pdf"
	if sum := e.submit(t, readAs(t, &intake.Reader{OCR: ocrFake{}}, path, "scan")); sum.Queued != 1 {
		t.Fatalf("submit: %+v", sum)
	}
	st := e.processed(t, 1)
	older := func() {
		t.Helper()
		if _, err := e.store.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"fakepdf/6"')`); err != nil {
			t.Fatal(err)
		}
	}
	older()
	noImages := func(string) bool { return false }
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true, OCR: ocrFake{}, ReadsImages: noImages})
	if err != nil || sum.Reread == nil || sum.Reread.Unchanged != 1 || sum.Queued != 0 {
		t.Fatalf("a model that reads no images: %+v, %v; want the OCR'd scan unchanged", sum, err)
	}
	older()
	images := func(string) bool { return true }
	sum, err = e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true, OCR: ocrFake{}, ReadsImages: images})
	if err != nil || sum.Reread == nil || sum.Reread.Changed != 1 || sum.Queued != 1 {
		t.Fatalf("a model that reads images: %+v, %v; want the scan queued as a picture", sum, err)
	}
	msg, err := st.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := jobs.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(again.Text, "Read by OCR.") || len(again.Scanned) == 0 || !strings.HasPrefix(again.Reader, "pdf/") {
		t.Errorf("queued job %+v: want the scan without OCR, its pages as scans", again)
	}
}

// readAs reads the file at path with r as the document id.
func readAs(t *testing.T, r *intake.Reader, path, id string) []submit.Doc {
	t.Helper()
	var out []submit.Doc
	if err := r.Read(t.Context(), []string{path}, func(d intake.Doc) error {
		d.ID = id
		out = append(out, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// processed records the first n jobs on the job stream as extracted, as a
// worker would, and returns the stream.
func (e *env) processed(t *testing.T, n uint64) jetstream.Stream {
	t.Helper()
	ctx := t.Context()
	st, err := e.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	for seq := uint64(1); seq <= n; seq++ {
		msg, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		env, err := jobs.DecodeEnvelope(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(ctx, record(env, llm.OutcomeOK, []byte(`{"a":"x"}`))); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestResubmitRereadAttachment: an e-mail's attachment is a document of its
// own with its own original (its bytes, by their hash), so a re-read reads
// it again by itself, without its carrier, and says which page changed.
func TestResubmitRereadAttachment(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mail.eml")
	if err := os.WriteFile(path, []byte("FAKEMAIL\n  \n--- invoice.fpdf\n"+docfake.PDF+"Invoice 42\fTotal 9.50"), 0o644); err != nil {
		t.Fatal(err)
	}
	var in []submit.Doc
	if err := (&intake.Reader{}).Read(ctx, []string{path}, func(d intake.Doc) error {
		in = append(in, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The carrier's body is empty: the attachment is the only document.
	if len(in) != 1 || !strings.HasSuffix(in[0].ID, "mail.eml#invoice.fpdf") || in[0].Original == nil {
		t.Fatalf("read %+v, want the attachment with its own bytes", in)
	}
	id, hash := in[0].ID, jobs.HashBytes(in[0].Original)
	if sum := e.submit(t, in); sum.Queued != 1 {
		t.Fatalf("submit: %+v", sum)
	}
	st := e.processed(t, 1)
	if _, err := e.store.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"fakepdf/6"'),
		body = 'Invoice 42Total 9.5O', body_hash = $1`, jobs.HashText("Invoice 42Total 9.5O")); err != nil {
		t.Fatal(err)
	}
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true})
	if err != nil || sum.Queued != 1 || sum.Reread == nil || len(sum.Reread.Changes) != 1 ||
		!reflect.DeepEqual(sum.Reread.Changes[0], submit.PageChanges{ID: id, Pages: []int{2}, Before: 2, After: 2}) {
		t.Fatalf("reread: %+v (%+v), %v; want the attachment queued, page 2 changed", sum, sum.Reread, err)
	}
	msg, err := st.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := jobs.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if again.DocumentID != id || again.DocumentHash != hash || again.Original == nil || again.Text != "Invoice 42Total 9.50" {
		t.Errorf("queued job %+v: want the attachment read again from its own original", again)
	}
}

// TestResubmitRereadAttachmentsGained: a carrier read again by a newer
// reader that yields attachments the audit does not know as documents (its
// older reader did not find them) has them stored and queued as submit
// would have, even though its own text did not change; a dry run only
// counts them; attachments queued with it that it no longer yields are
// counted and named as gone, and kept; a second re-read queues nothing.
func TestResubmitRereadAttachmentsGained(t *testing.T) {
	t.Parallel()
	mail := []byte(docfake.Mail + "Hello, two invoices attached.\n--- a.fpdf\n" + docfake.PDF + "Invoice A\n--- b.fpdf\n" + docfake.PDF + "Invoice B")
	old := []byte(docfake.PDF + "Invoice C")
	tests := []struct {
		name string
		// submitted: which of the carrier's documents the older reader
		// made (by id suffix: "" is the carrier).
		submitted []string
		// processed: the jobs a worker finished (the carrier's is first).
		processed uint64
		// sql simulates the older reader further ($1: the carrier's id).
		sql       string
		wantAdded []string // by id suffix
		wantGone  []string
		wantMsgs  uint64 // new jobs on the stream
	}{
		{name: "older reader found none", submitted: []string{""}, processed: 1,
			wantAdded: []string{"#a.fpdf", "#b.fpdf"}, wantMsgs: 2},
		{name: "older reader found one", submitted: []string{"", "#a.fpdf"}, processed: 2,
			wantAdded: []string{"#b.fpdf"}, wantMsgs: 1},
		{name: "older reader found another", submitted: []string{"", "#c.fpdf"}, processed: 2,
			wantAdded: []string{"#a.fpdf", "#b.fpdf"}, wantGone: []string{"#c.fpdf"}, wantMsgs: 2},
		// Its job still queued: queued again it is the stream's duplicate.
		{name: "document row removed", submitted: []string{"", "#a.fpdf", "#b.fpdf"}, processed: 1,
			sql:       `DELETE FROM documents WHERE id = $1 || '#b.fpdf'`,
			wantAdded: []string{"#b.fpdf"}, wantMsgs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "mail.eml")
			if err := os.WriteFile(path, mail, 0o644); err != nil {
				t.Fatal(err)
			}
			var carrier string
			var in []submit.Doc
			for _, d := range readAs(t, &intake.Reader{}, path, "") {
				if d.Err != nil {
					t.Fatal(d.Err)
				}
				if carrier == "" {
					carrier = d.Source
				}
				d.ID = d.Source
				in = append(in, d)
			}
			in = append(in, submit.Doc{ID: carrier + "#c.fpdf", Source: carrier + "#c.fpdf", Text: "Invoice C", Original: old,
				Metadata: []byte(`{"format":"fakepdf","reader":"fakepdf/7"}`)})
			var sub []submit.Doc
			for _, d := range in {
				if slices.Contains(tt.submitted, strings.TrimPrefix(d.ID, carrier)) {
					sub = append(sub, d)
				}
			}
			if sum := e.submit(t, sub); sum.Queued != len(tt.submitted) {
				t.Fatalf("submit: %+v, want %d queued", sum, len(tt.submitted))
			}
			st := e.processed(t, tt.processed)
			// The carrier was read by the older fakemail/1.
			pool := e.store.Pool()
			if _, err := pool.Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"fakemail/1"') WHERE id = $1`, carrier); err != nil {
				t.Fatal(err)
			}
			if tt.sql != "" {
				if _, err := pool.Exec(ctx, tt.sql, carrier); err != nil {
					t.Fatal(err)
				}
			}
			ids := func(suffixes []string) []string {
				var out []string
				for _, s := range suffixes {
					out = append(out, carrier+s)
				}
				return out
			}
			before := e.msgs(t, jobs.JobsStream)

			dry, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true, DryRun: true})
			if err != nil || dry.Selected != 1 || dry.Reread == nil || dry.Reread.AttachmentsAdded != len(tt.wantAdded) ||
				!slices.Equal(dry.Reread.Added, ids(tt.wantAdded)) || !slices.Equal(dry.Reread.Gone, ids(tt.wantGone)) {
				t.Fatalf("dry run: %+v (%+v), %v; want 1 selected, %v added, %v gone", dry, dry.Reread, err, tt.wantAdded, tt.wantGone)
			}
			skip, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true, DryRun: true, Attachments: intake.AttachSkip})
			if err != nil || skip.Reread.AttachmentsAdded != 0 || skip.Reread.AttachmentsGone != 0 {
				t.Errorf("dry run, attachments skipped: %+v, %v; want no attachment counted", skip.Reread, err)
			}
			if n := e.msgs(t, jobs.JobsStream); n != before {
				t.Fatalf("%d jobs on the stream after dry runs, want %d", n, before)
			}

			sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true})
			if err != nil || sum.Selected != 1 || sum.Reread == nil || sum.Reread.Unchanged != 1 || sum.Queued != 0 || len(sum.Rejected) != 0 ||
				sum.Reread.AttachmentsAdded != len(tt.wantAdded) || !slices.Equal(sum.Reread.Added, ids(tt.wantAdded)) ||
				sum.Reread.AttachmentsGone != len(tt.wantGone) || !slices.Equal(sum.Reread.Gone, ids(tt.wantGone)) {
				t.Fatalf("reread: %+v (%+v), %v; want the carrier unchanged, %v added, %v gone", sum, sum.Reread, err, tt.wantAdded, tt.wantGone)
			}
			if n := e.msgs(t, jobs.JobsStream); n != before+tt.wantMsgs {
				t.Fatalf("%d jobs on the stream, want %d", n, before+tt.wantMsgs)
			}
			// Each new job is the one submit would have queued.
			for seq := before + 1; seq <= before+tt.wantMsgs; seq++ {
				msg, err := st.GetMsg(ctx, seq)
				if err != nil {
					t.Fatal(err)
				}
				got, err := jobs.DecodeEnvelope(msg.Data)
				if err != nil {
					t.Fatal(err)
				}
				var want *submit.Doc
				for i := range in {
					if in[i].ID == got.DocumentID {
						want = &in[i]
					}
				}
				if want == nil || !slices.Contains(ids(tt.wantAdded), got.DocumentID) {
					t.Fatalf("queued %q, want one of %v", got.DocumentID, ids(tt.wantAdded))
				}
				hash := jobs.HashBytes(want.Original)
				if got.DocumentHash != hash || got.Original == nil || got.Original.Name != hash || got.Text != want.Text ||
					got.Reader != "fakepdf/7" || got.Schema != e.v1 || got.Run != "r1" || got.Provider != "openai:gpt-4o-mini" ||
					got.Resubmission != "" || got.JobID != jobs.MsgID(got.DocumentID, hash, e.v1.Fingerprint, "gpt-4o-mini", "") {
					t.Errorf("queued job %+v: want the attachment as submit queues it", got)
				}
				if _, err := jobs.NewDocuments(e.js).Original(ctx, got); err != nil {
					t.Errorf("the original of %s: %v", got.DocumentID, err)
				}
			}
			for _, id := range append(ids(tt.wantAdded), ids(tt.wantGone)...) {
				if d, err := e.store.Document(ctx, id); err != nil || d.Text == "" {
					t.Errorf("document %s in the audit: %+v, %v; want it stored (added) or kept (gone)", id, d, err)
				}
			}

			// Nothing is selected again; selected again, nothing is added.
			again, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true})
			if err != nil || again.Selected != 0 || again.Reread.AttachmentsAdded != 0 {
				t.Errorf("second reread: %+v (%+v), %v; want nothing selected", again, again.Reread, err)
			}
			if _, err := pool.Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"fakemail/1"') WHERE id = $1`, carrier); err != nil {
				t.Fatal(err)
			}
			again, err = e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true})
			if err != nil || again.Selected != 1 || again.Reread.AttachmentsAdded != 0 || again.Queued != 0 {
				t.Errorf("reread once more: %+v (%+v), %v; want no attachment added", again, again.Reread, err)
			}
			if n := e.msgs(t, jobs.JobsStream); n != before+tt.wantMsgs {
				t.Errorf("%d jobs on the stream after re-reading twice, want %d", n, before+tt.wantMsgs)
			}
		})
	}
}
