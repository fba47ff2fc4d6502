package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/docfake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// docEngine records what the worker hands a DocumentEngine.
type docEngine struct {
	mu        sync.Mutex
	docs      map[string]*document.Document
	originals map[string][]byte
	texts     map[string]string
}

func (e *docEngine) Extract(_ context.Context, _ llm.Provider, text string, _ *schema.Schema, _ jobs.Options) (*llm.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.texts[text] = text
	return ok(), nil
}

func (e *docEngine) ExtractDocument(_ context.Context, _ llm.Provider, doc *document.Document, original []byte, _ *schema.Schema, _ jobs.Options) (*llm.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.docs[doc.Text], e.originals[doc.Text] = doc, original
	return ok(), nil
}

// TestDocumentJobs checks what a job a format reader made reaches the
// engine with: its pages from the envelope, the original read again for a
// scan's pictures, plain text as before; an original no reader reads is
// dead-lettered. A job whose original is read again keeps the text submit
// stored (an inlined attachment, OCR text) and its pages, pictures going
// by page number, also when the re-read counts its pages differently.
func TestDocumentJobs(t *testing.T) {
	e := &docEngine{docs: map[string]*document.Document{}, originals: map[string][]byte{}, texts: map[string]string{}}
	f := startEngine(t, e, fastSettings(3))
	ctx := context.Background()
	sch, _ := schema.Compile([]byte(`{"type":"object"}`))
	publish := func(id, text string, original []byte, describe func(*jobs.Envelope)) {
		t.Helper()
		env := &jobs.Envelope{DocumentID: id, Provider: "fake:m", Model: "m", Pool: pool, Run: "r",
			Schema: jobs.SchemaRef{Name: "s", Version: 1, Fingerprint: sch.Fingerprint()}, SubmittedAt: time.Now()}
		if original != nil {
			ref, hash, err := f.pub.PutOriginal(ctx, original)
			if err != nil {
				t.Fatal(err)
			}
			env.Original, env.OriginalHash = ref, hash
		}
		describe(env)
		if _, err := f.pub.Publish(ctx, env, text); err != nil {
			t.Fatal(err)
		}
		if original != nil && env.DocumentHash != jobs.HashBytes(original) {
			t.Errorf("%s: document hash %s, want the original's", id, env.DocumentHash)
		}
	}
	publish("paged", "One.Two.", []byte(docfake.PDF+"One.\fTwo."), func(env *jobs.Envelope) {
		env.Reader = "fakepdf/7"
		env.Pages = []jobs.Page{{N: 1, Start: 0, End: 4}, {N: 2, Start: 4, End: 8, Label: "ii"}}
	})
	publish("scan", "Cover.", []byte(docfake.PDF+"Cover.\f[scan]"), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakepdf/7", []int{2}
		env.Pages = []jobs.Page{{N: 1, Start: 0, End: 6}, {N: 2, Start: 6, End: 6}}
	})
	publish("garbled", "", []byte("\x00\x01 no reader reads this"), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakepdf/7", []int{1}
	})
	// What submit stored and a plain re-read does not make: an attachment
	// inlined, OCR text, a page count of another reader version.
	const inlined = "Body.\n\n--- attachment note.txt ---\n\nPaid in full."
	publish("native-inline", inlined, []byte(docfake.PDF+"Body."), func(env *jobs.Envelope) {
		env.Reader, env.Options.Input = "fakepdf/7", "native"
		env.Pages = []jobs.Page{{N: 1, Start: 0, End: 5}}
	})
	const ocred = "Front.\n\nTotal 42 EUR"
	publish("ocr", ocred, []byte(docfake.PDF+"Front.\f[scan]\f[scan]"), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakepdf/7", []int{3}
		env.Pages = []jobs.Page{{N: 1, Start: 0, End: 6}, {N: 2, Start: 8, End: 20}, {N: 3, Start: 20, End: 20}}
	})
	publish("mismatch", "A.B.", []byte(docfake.PDF+"A.\f[scan]"), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakepdf/6", []int{3}
		env.Pages = []jobs.Page{{N: 1, Start: 0, End: 2}, {N: 2, Start: 2, End: 4}, {N: 3, Start: 4, End: 4}}
	})
	publish("nopages", "X. and more", []byte(docfake.PDF+"X.\f[scan]"), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakepdf/7", []int{2}
	})
	const mail = "Body\n\n--- attachment scan.pdf ---\n\n"
	publish("mail-inline", mail, []byte(docfake.Mail+"Body\n--- scan.pdf\n"+docfake.PDF+"[scan]"), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakemail/2", []int{1}
		env.Pages = []jobs.Page{{N: 1, Start: len(mail), End: len(mail), Label: "scan.pdf"}}
	})
	// Recorded as inlined at submit (its metadata), read again by a newer
	// reader that finds b.pdf too: the page count no longer says so.
	const recorded = "Body\n\n--- attachment a.pdf ---\n\n"
	publish("mail-recorded", recorded, []byte(docfake.Mail+"Body\n--- a.pdf\n"+docfake.PDF+"[scan]\n--- b.pdf\n"+docfake.PDF+"Later."), func(env *jobs.Envelope) {
		env.Reader, env.Scanned = "fakemail/2", []int{1}
		env.Metadata = json.RawMessage(`{"format":"eml","attachments":"inline"}`)
		env.Pages = []jobs.Page{{N: 1, Start: len(recorded), End: len(recorded), Label: "a.pdf"}}
	})
	// An original that opens only with the password given at submit: its
	// pages' pictures travel with the job, and the original is not read;
	// an older envelope without them is dead-lettered saying why.
	const locked = docfake.PDF + "PASSWORD s3cret\nSealed.\f[scan]"
	pics, err := f.pub.PutPictures(ctx, jobs.HashBytes([]byte(locked)), []jobs.PagePicture{{N: 2, MediaType: "image/png", Data: docfake.ScanPicture, Width: 1, Height: 1, PageWidth: 612, PageHeight: 792}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"locked", "locked-native", "locked-old"} {
		publish(id, id+".", []byte(locked), func(env *jobs.Envelope) {
			env.Reader, env.Scanned = "fakepdf/7", []int{2}
			env.Pages = []jobs.Page{{N: 1, Start: 0, End: len(id) + 1}, {N: 2, Start: len(id) + 1, End: len(id) + 1}}
			if id != "locked-old" {
				env.Pictures = pics
			}
			if id == "locked-native" { // resubmitted so: it cannot go whole
				env.Options.Input = "native"
			}
		})
	}
	publish("plain", "plain text", nil, func(*jobs.Envelope) {})
	// Longer than the object store's read timeout (30 s): under a loaded
	// -race run one read of an original was seen to stall that long, and
	// the job's next delivery then settles it.
	waitForWithin(t, time.Minute, "every job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })

	e.mu.Lock()
	defer e.mu.Unlock()
	if d := e.docs["One.Two."]; d == nil || len(d.Pages) != 2 || d.Pages[1].Label != "ii" || e.originals["One.Two."] != nil {
		t.Errorf("paged job: document %+v, original %q; want its two pages from the envelope and no original fetched", d, e.originals["One.Two."])
	}
	if d := e.docs["Cover."]; d == nil || len(d.Scanned()) != 1 || !strings.HasPrefix(string(e.originals["Cover."]), docfake.PDF) {
		t.Errorf("scan job: document %+v; want the original read again, with page 2's picture", d)
	}
	if d := e.docs[inlined]; d == nil || d.MediaType != "application/pdf" || len(d.Pages) != 1 || d.Pages[0].Width != 612 ||
		string(e.originals[inlined]) != docfake.PDF+"Body." {
		t.Errorf("native job: document %+v, original %q; want the stored text with the inlined attachment, the original and its format", d, e.originals[inlined])
	}
	if d := e.docs[ocred]; d == nil || len(d.Pages) != 3 || d.Pages[1].Start != 8 || d.Pages[1].Image == nil || d.Pages[2].Image == nil {
		t.Errorf("OCR job: document %+v; want the stored text with its OCR text, and pages 2 and 3 with their pictures", d)
	}
	if d := e.docs["A.B."]; d == nil || len(d.Pages) != 3 || d.Pages[1].Image == nil || d.Pages[2].Image != nil || d.Pages[2].End != 4 {
		t.Errorf("mismatched job: document %+v; want the stored text and pages, page 2's picture by its number", d)
	}
	if d := e.docs["X. and more"]; d == nil || len(d.Pages) != 0 {
		t.Errorf("job without pages: document %+v; want the stored text and no pages of another text", d)
	}
	if d := e.docs[mail]; d == nil || len(d.Pages) != 1 || d.Pages[0].Image == nil || d.Pages[0].Label != "scan.pdf" {
		t.Errorf("inlined mail job: document %+v; want the attached scan's picture on its inlined page", d)
	}
	if d := e.docs[recorded]; d == nil || len(d.Pages) != 1 || d.Pages[0].Image == nil || d.Pages[0].Label != "a.pdf" {
		t.Errorf("mail job recorded inline: document %+v; want a.pdf's picture on its inlined page though the re-read has a page more", d)
	}
	for _, text := range []string{"locked.", "locked-native."} {
		if d := e.docs[text]; d == nil || len(d.Pages) != 2 || d.Pages[1].Image == nil || string(d.Pages[1].Image.Data) != string(docfake.ScanPicture) ||
			d.Pages[1].Width != 612 || d.Pages[0].Image != nil || e.originals[text] != nil {
			t.Errorf("%s job: document %+v, original %q; want page 2's picture from the job's stored pictures and no original", text, d, e.originals[text])
		}
	}
	if _, ok := e.texts["plain text"]; !ok || len(e.docs) != 10 {
		t.Errorf("plain job: texts %v, documents %d; want plain text through Extract, as before", e.texts, len(e.docs))
	}
	reasons := map[string]string{}
	for _, l := range f.letters(t) {
		reasons[l.Job.DocumentID] = l.Reason
	}
	if len(reasons) != 2 || !strings.Contains(reasons["garbled"], "cannot be read") ||
		!strings.Contains(reasons["locked-old"], "jobs carry no password, so submit it again with this build") {
		t.Errorf("letters %v, want one for the garbled original saying it cannot be read, one for the locked one without pictures saying why", reasons)
	}
}
