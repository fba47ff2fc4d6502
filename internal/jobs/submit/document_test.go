package submit_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/docfake"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
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

// TestResubmitDocumentFromDLQ: a dead-lettered job of a document a reader
// made, known by its original's hash, is resubmitted with its text, its
// original and its pages.
func TestResubmitDocumentFromDLQ(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	original := []byte(docfake.PDF + "One.\fTwo.")
	path := filepath.Join(t.TempDir(), "two.pdf")
	if err := os.WriteFile(path, original, 0o644); err != nil {
		t.Fatal(err)
	}
	var in []submit.Doc
	if err := (&intake.Reader{}).Read(ctx, []string{path}, func(d intake.Doc) error {
		d.ID = "two"
		in = append(in, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.submit(t, in)
	st, err := e.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env, err := jobs.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	// A worker gave up on it; the letter trimmed its inline text and its
	// metadata (a letter over the server's max payload).
	meta := env.Metadata
	if len(meta) < 10 {
		t.Fatalf("the job's metadata is %q: the test needs some", meta)
	}
	env.Text, env.Metadata = "", nil
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	e.letter(t, w, env, nil)
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true, Run: "r1"})
	if err != nil || sum.Queued != 1 || len(sum.Rejected) != 0 {
		t.Fatalf("resubmit: %+v, %v; want the document queued again", sum, err)
	}
	msg, err = st.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := jobs.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != "One.Two." || again.DocumentHash != jobs.HashBytes(original) || again.Original == nil || len(again.Pages) != 2 {
		t.Errorf("resubmitted job %+v: want its text, its original's hash, its original and its pages", again)
	}
	var got, want map[string]any
	if err := json.Unmarshal(meta, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again.Metadata, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("resubmitted job's metadata %s (%v), want %s, as submitted (the audit's document has it)", again.Metadata, err, meta)
	}
}

// TestDocumentIdentity: a document a reader made from an original is
// stored under its original's hash, as its jobs and results are keyed, so
// its result matches its document (as exports and the latest-result
// queries join them); a plain text keeps its text's hash; both keep the
// text's own hash in body_hash, and the pages their ranges.
func TestDocumentIdentity(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	original := []byte(docfake.PDF + "One.\fTwo.")
	in := append(readOriginal(t, &intake.Reader{}, original, "two"), submit.Doc{ID: "plain", Source: "plain.txt", Text: "Plain text."})
	if sum := e.submit(t, in); sum.Queued != 2 {
		t.Fatalf("submit: %+v", sum)
	}
	e.processed(t, 2)
	for _, tc := range []struct {
		id, hash, body, pages string
	}{
		{"two", jobs.HashBytes(original), jobs.HashText("One.Two."), "[[0, 4], [4, 8]]"},
		{"plain", jobs.HashText("Plain text."), jobs.HashText("Plain text."), ""},
	} {
		var hash, body, pages string
		var joined int
		if err := e.store.Pool().QueryRow(ctx, `SELECT d.content_hash, d.body_hash, coalesce(d.pages::text, ''),
			(SELECT count(*) FROM results r WHERE r.document_id = d.id AND r.content_hash = d.content_hash)
			FROM documents d WHERE d.id = $1`, tc.id).Scan(&hash, &body, &pages, &joined); err != nil {
			t.Fatal(err)
		}
		if hash != tc.hash || body != tc.body || pages != tc.pages || joined != 1 {
			t.Errorf("%s: content_hash %.12s, body_hash %.12s, pages %q, %d results under its hash; want %.12s, %.12s, %q and 1",
				tc.id, hash, body, pages, joined, tc.hash, tc.body, tc.pages)
		}
	}
}

// TestResubmitDocumentToVersion: a document a reader made, resubmitted
// under a newer schema version, keeps its identity (its original's hash),
// its original and its pages, so its new result is keyed as its document
// is; a plain text stays keyed by its text.
func TestResubmitDocumentToVersion(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	original := []byte(docfake.PDF + "One.\f[scan]")
	in := append(readOriginal(t, &intake.Reader{Native: true}, original, "two"), submit.Doc{ID: "plain", Source: "plain.txt", Text: "Plain text."})
	if sum := e.submit(t, in); sum.Queued != 2 {
		t.Fatalf("submit: %+v", sum)
	}
	e.processed(t, 2)
	e.register(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Schema: "thing", ToVersion: 2, Provider: "openai:gpt-4o-mini", Run: "v2"})
	if err != nil || sum.Queued != 2 {
		t.Fatalf("resubmit: %+v, %v; want both queued", sum, err)
	}
	byID := map[string]*jobs.Envelope{}
	for _, env := range e.queued(t, 4)[2:] {
		byID[env.DocumentID] = env
	}
	if d := byID["two"]; d == nil || d.DocumentHash != jobs.HashBytes(original) || d.Original == nil || d.Reader != "fakepdf/7" ||
		len(d.Pages) != 2 || d.Pages[1] != (jobs.Page{N: 2, Start: 4, End: 4}) || !slices.Equal(d.Scanned, []int{2}) {
		t.Errorf("resubmitted document job %+v: want its original's hash, its original, reader, pages and page 2 as a scan", d)
	}
	if p := byID["plain"]; p == nil || p.DocumentHash != jobs.HashText("Plain text.") || p.Original != nil || p.Pages != nil {
		t.Errorf("resubmitted text job %+v: want the text's hash and nothing more", p)
	}
}

// readOriginal reads original, written to a file, with r as the document id.
func readOriginal(t *testing.T, r *intake.Reader, original []byte, id string) []submit.Doc {
	t.Helper()
	path := filepath.Join(t.TempDir(), id+".pdf")
	if err := os.WriteFile(path, original, 0o644); err != nil {
		t.Fatal(err)
	}
	return readAs(t, r, path, id)
}

// TestResubmitLetterStoredText: a dead letter of a document a reader made
// that no longer carries its text is resubmitted with the text the audit
// stores for its original (OCR text a plain re-read lacks), with the
// letter's pages while they are the audit's, else the audit's; only a
// document the audit has no text of is read again, with a warning naming
// it.
func TestResubmitLetterStoredText(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	// ocred is a document submit read with OCR: page 2, a scan, has text a
	// re-read without OCR does not make.
	ocred := func(id, body, page2 string) submit.Doc {
		original := []byte(docfake.PDF + body + "\f[scan]")
		doc, err := document.ReadBytes(ctx, original, document.Options{Name: id})
		if err != nil {
			t.Fatal(err)
		}
		doc.Text += page2
		doc.Pages[1].End = len(doc.Text)
		return submit.Doc{ID: id, Source: id + ".pdf", Text: doc.Text, Document: doc, Original: original}
	}
	if sum := e.submit(t, []submit.Doc{ocred("ocr", "One.", "Total 42"), ocred("replaced", "Two.", "Total 7")}); sum.Queued != 2 {
		t.Fatalf("submit: %+v", sum)
	}
	// A re-read stored a new text of "replaced" under the same original,
	// with other pages than its letter's.
	const newer = "Two.\n\nTotal 7 EUR"
	if err := e.store.PutDocuments(ctx, []audit.Document{{ID: "replaced", Hash: jobs.HashBytes([]byte(docfake.PDF + "Two.\f[scan]")),
		Source: "replaced.pdf", Text: newer, Pages: []audit.PageRange{{0, 4}, {4, len(newer)}}}}); err != nil {
		t.Fatal(err)
	}
	envs := e.queued(t, 2)
	gone := *envs[0] // a document the audit has no text of
	gone.DocumentID, gone.JobID = "gone", jobs.MsgID("gone", gone.DocumentHash, gone.Schema.Fingerprint, gone.Model, "")
	dlq := jobs.NewDLQ(e.js)
	for _, env := range []*jobs.Envelope{envs[0], envs[1], &gone} {
		env.Text = "" // trimmed from the letter
		if _, err := dlq.Publish(ctx, &jobs.DeadLetter{Job: *env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true, Run: "r1"})
	if err != nil || sum.Queued != 3 || len(sum.Rejected) != 0 {
		t.Fatalf("resubmit: %+v, %v; want three queued", sum, err)
	}
	if len(sum.Warnings) != 1 || sum.Warnings[0].ID != "gone" || !strings.Contains(sum.Warnings[0].Reason, "without OCR") {
		t.Errorf("warnings %+v, want one for gone saying its original was read again without OCR", sum.Warnings)
	}
	byID := map[string]*jobs.Envelope{}
	texts := map[string]string{}
	docs := jobs.NewDocuments(e.js)
	for _, env := range e.queued(t, 5)[2:] {
		byID[env.DocumentID] = env
		if texts[env.DocumentID], err = docs.Text(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id, text string
		pages    []jobs.Page
		scanned  []int
	}{
		{"ocr", "One.Total 42", []jobs.Page{{N: 1, Start: 0, End: 4}, {N: 2, Start: 4, End: 12}}, nil},
		{"replaced", newer, []jobs.Page{{N: 1, Start: 0, End: 4}, {N: 2, Start: 4, End: len(newer)}}, nil},
		{"gone", "One.", []jobs.Page{{N: 1, Start: 0, End: 4}, {N: 2, Start: 4, End: 4}}, []int{2}},
	} {
		env := byID[tc.id]
		if env == nil {
			t.Errorf("%s: not queued again", tc.id)
			continue
		}
		if texts[tc.id] != tc.text || !slices.Equal(env.Pages, tc.pages) || !slices.Equal(env.Scanned, tc.scanned) || env.Original == nil {
			t.Errorf("%s: text %q, pages %+v, scanned %v; want %q, %+v, %v and its original", tc.id, texts[tc.id], env.Pages, env.Scanned, tc.text, tc.pages, tc.scanned)
		}
	}
}

// TestSubmitWithPassword: a document read with a password whose job needs
// its pages' pictures has them stored next to its original and named in
// its job, since a worker cannot read the original again; one without
// such pages, or that opened without the password, has none. A re-read
// with the password does the same, and refuses an encrypted PDF that
// input native would send whole.
func TestSubmitWithPassword(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	const lockedScan = docfake.PDF + "PASSWORD s3cret\nCover.\f[scan]"
	locked := &intake.Reader{Password: "s3cret", Native: true}
	in := readOriginal(t, locked, []byte(lockedScan), "locked-scan")
	in = append(in, readOriginal(t, locked, []byte(docfake.PDF+"PASSWORD s3cret\nOnly text."), "locked-text")...)
	// A scan read with the password that it did not need: its worker
	// reads it again, no pictures are stored.
	in = append(in, readOriginal(t, locked, []byte(docfake.PDF+"Cover.\f[scan]"), "open-scan")...)
	if sum := e.submit(t, in); sum.Queued != 3 {
		t.Fatalf("submit: %+v, want 3 queued", sum)
	}
	docs := jobs.NewDocuments(e.js)
	want := []jobs.PagePicture{{N: 2, MediaType: "image/png", Data: docfake.ScanPicture, Width: 1, Height: 1, PageWidth: 612, PageHeight: 792}}
	checkPictures := func(env *jobs.Envelope, want []jobs.PagePicture) {
		t.Helper()
		if want == nil {
			if env.Pictures != nil {
				t.Errorf("%s: pictures %+v, want none", env.DocumentID, env.Pictures)
			}
			return
		}
		if env.Pictures == nil {
			t.Fatalf("%s: no pictures in the job %+v", env.DocumentID, env)
		}
		got, err := docs.Pictures(ctx, env)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stored pictures %+v, %v; want %+v", env.DocumentID, got, err, want)
		}
	}
	for _, env := range e.queued(t, 3) {
		if env.DocumentID == "locked-scan" {
			checkPictures(env, want)
		} else {
			checkPictures(env, nil)
		}
	}

	// After a reader upgrade, a re-read with the password.
	e.processed(t, 3)
	if _, err := e.store.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"fakepdf/6"'), body = 'Cover!', body_hash = $1 WHERE id = 'locked-scan'`,
		jobs.HashText("Cover!")); err != nil {
		t.Fatal(err)
	}
	native := submit.ResubmitRequest{Reread: true, Reader: "fakepdf", Password: "s3cret", Options: jobs.Options{Input: "native"}}
	sum, err := e.sub.Resubmit(ctx, e.store, native)
	if err != nil || sum.Queued != 0 || len(sum.Rejected) != 1 || sum.Rejected[0].ID != "locked-scan" ||
		!strings.Contains(sum.Rejected[0].Reason, "--input native sends a PDF whole to the model, which cannot open an encrypted PDF") {
		t.Fatalf("re-read, input native: %+v, %v; want locked-scan refused naming the remedies", sum, err)
	}
	sum, err = e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Reread: true, Reader: "fakepdf", Password: "s3cret"})
	if err != nil || sum.Queued != 1 || len(sum.Rejected) != 0 {
		t.Fatalf("re-read: %+v, %v; want locked-scan queued", sum, err)
	}
	envs := e.queued(t, 4)
	if again := envs[3]; again.DocumentID != "locked-scan" || again.Text != "Cover." {
		t.Fatalf("re-read job %+v, want locked-scan's", again)
	} else {
		checkPictures(again, want)
	}

	// Resubmitted under a newer schema version, the stored pictures go
	// with the job.
	e.register(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)
	if sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Schema: "thing", ToVersion: 2, Provider: "openai:gpt-4o-mini", Run: "v2"}); err != nil || sum.Queued != 3 {
		t.Fatalf("resubmit to version 2: %+v, %v; want 3 queued", sum, err)
	}
	for _, env := range e.queued(t, 7)[4:] {
		if env.DocumentID == "locked-scan" {
			checkPictures(env, want)
		} else {
			checkPictures(env, nil)
		}
	}
}

// TestResubmitLetterLocked: a dead letter of a locked scan whose text the
// audit does not store, and whose job named no pictures (an older
// build's), is read again from its original: without the password it is
// refused naming --password and --password-file; with it, its page's
// picture is stored and named in the job, as submit does, and the
// password is in no job; with input native it is refused naming the
// remedies, as submit refuses it.
func TestResubmitLetterLocked(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	const lockedScan = docfake.PDF + "PASSWORD s3cret\nCover.\f[scan]"
	if sum := e.submit(t, readOriginal(t, &intake.Reader{Password: "s3cret", Native: true}, []byte(lockedScan), "locked-scan")); sum.Queued != 1 {
		t.Fatalf("submit: %+v", sum)
	}
	first := e.queued(t, 1)[0]
	if first.Pictures == nil {
		t.Fatalf("submit stored no pictures: %+v", first)
	}
	// As an older build's job: no pictures, none stored.
	objs, err := e.js.ObjectStore(ctx, jobs.DocsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := objs.Delete(ctx, first.Pictures.Name); err != nil {
		t.Fatal(err)
	}
	dlq := jobs.NewDLQ(e.js)
	letter := func(id, input string) {
		env := *first
		env.DocumentID, env.Text, env.TextRef, env.Pictures = id, "", nil, nil // the audit has no text of id
		env.Options.Input = input
		env.JobID = jobs.MsgID(id, env.DocumentHash, env.Schema.Fingerprint, env.Model, "")
		if _, err := dlq.Publish(ctx, &jobs.DeadLetter{Job: env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	letter("gone", "")
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true})
	if err != nil || sum.Queued != 0 || len(sum.Rejected) != 1 || !strings.Contains(sum.Rejected[0].Reason, "give its password with --password or --password-file") {
		t.Fatalf("without the password: %+v, %v; want gone refused naming --password", sum, err)
	}
	letter("gone", "")
	letter("gone-native", "native")
	sum, err = e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true, Password: "s3cret"})
	if err != nil || sum.Queued != 1 || len(sum.Rejected) != 1 || sum.Rejected[0].ID != "gone-native" ||
		!strings.Contains(sum.Rejected[0].Reason, "use --input auto") {
		t.Fatalf("with the password: %+v, %v; want gone queued and gone-native refused naming --input auto", sum, err)
	}
	again := e.queued(t, 2)[1]
	if again.DocumentID != "gone" || again.Pictures == nil {
		t.Fatalf("queued %+v, want gone with its pictures", again)
	}
	got, err := jobs.NewDocuments(e.js).Pictures(ctx, again)
	want := []jobs.PagePicture{{N: 2, MediaType: "image/png", Data: docfake.ScanPicture, Width: 1, Height: 1, PageWidth: 612, PageHeight: 792}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("stored pictures %+v, %v; want %+v", got, err, want)
	}
	if b, err := json.Marshal(again); err != nil || strings.Contains(string(b), "s3cret") {
		t.Errorf("the job holds the password: %s", b)
	}
}

// TestResubmitLetterInlined: a dead letter of a carrier submitted with
// --attachments inline, whose text neither it nor the audit has, is read
// again with its attachments inlined when its metadata records so (the
// text and pages submit made, the attachment's page after the carrier's),
// and its warning names only OCR as missing; a letter whose metadata
// records nothing (an older job) has its carrier read alone, as before.
func TestResubmitLetterInlined(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	mail := []byte(docfake.Mail + "Hello.\n--- invoice.fpdf\n" + docfake.PDF + "Invoice 42")
	in := readOriginal(t, &intake.Reader{Attachments: intake.AttachInline}, mail, "mail")
	if len(in) != 1 || !intake.Inlined(in[0].Metadata) || !strings.Contains(in[0].Text, "Invoice 42") || len(in[0].Document.Pages) != 1 {
		t.Fatalf("read %+v, want one document recording its attachment inlined, with its text and page", in)
	}
	inlined := in[0].Text
	if sum := e.submit(t, in); sum.Queued != 1 {
		t.Fatalf("submit: %+v", sum)
	}
	first := e.queued(t, 1)[0]
	dlq := jobs.NewDLQ(e.js)
	tests := []struct {
		id       string // the audit has no text of it
		meta     json.RawMessage
		text     string
		pages    []jobs.Page
		warnings string
	}{
		{"gone-inline", first.Metadata, inlined, first.Pages, "its attachments inlined, as its metadata records"},
		{"gone-old", json.RawMessage(`{"format":"fakemail"}`), "Hello.", nil, "without OCR or attachments inlined"},
	}
	for _, tt := range tests {
		env := *first
		env.DocumentID, env.Text, env.TextRef, env.Metadata = tt.id, "", nil, tt.meta
		env.JobID = jobs.MsgID(tt.id, env.DocumentHash, env.Schema.Fingerprint, env.Model, "")
		if _, err := dlq.Publish(ctx, &jobs.DeadLetter{Job: env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true})
	if err != nil || sum.Queued != 2 || len(sum.Rejected) != 0 || len(sum.Warnings) != 2 {
		t.Fatalf("resubmit: %+v, %v; want both queued, each with a warning", sum, err)
	}
	warnings := map[string]string{}
	for _, w := range sum.Warnings {
		warnings[w.ID] = w.Reason
	}
	byID := map[string]*jobs.Envelope{}
	for _, env := range e.queued(t, 3)[1:] {
		byID[env.DocumentID] = env
	}
	docs := jobs.NewDocuments(e.js)
	for _, tt := range tests {
		env := byID[tt.id]
		if env == nil {
			t.Errorf("%s: not queued again", tt.id)
			continue
		}
		text, err := docs.Text(ctx, env)
		if err != nil || text != tt.text || !slices.Equal(env.Pages, tt.pages) || !strings.Contains(warnings[tt.id], tt.warnings) {
			t.Errorf("%s: text %q (%v), pages %+v, warning %q; want %q, %+v, a warning saying %q", tt.id, text, err, env.Pages, warnings[tt.id], tt.text, tt.pages, tt.warnings)
		}
	}
}
