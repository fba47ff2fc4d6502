package submit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
)

// TestSubmitRejectsOnlyBadDocuments: ids and texts the audit database
// cannot store are rejected one by one, with a reason naming the fix,
// before the batch; their neighbours in the same batch are queued. Before,
// Postgres refused the whole batch ("index row requires 10256 bytes",
// "invalid byte sequence for encoding \"UTF8\": 0x00") and every document
// of it was rejected.
func TestSubmitRejectsOnlyBadDocuments(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bad := []struct {
		doc    submit.Doc
		reason string
	}{
		{submit.Doc{ID: strings.Repeat("x", 10<<10), Source: "long", Text: "t"}, "10240 bytes, more than 1024"},
		{submit.Doc{ID: "nul\x00id", Source: "nul-id", Text: "t"}, "control character U+0000"},
		{submit.Doc{ID: "esc\x1b[2Jid", Source: "esc-id", Text: "t"}, "control character U+001B"},
		{submit.Doc{ID: "line\nbreak", Source: "newline-id", Text: "t"}, "control character U+000A"},
		{submit.Doc{ID: "nul-text", Source: "nul-text", Text: "a\x00b"}, "NUL byte at offset 1"},
		{submit.Doc{ID: "nul-meta", Source: "nul-meta", Text: "t", Metadata: json.RawMessage(`{"k":"\u0000"}`)}, `\u0000`},
	}
	// Batches of 3: every bad document shares its batch with good ones.
	var in []submit.Doc
	for i, b := range bad {
		in = append(in, docs(8)[i], b.doc)
	}
	sum := e.submit(t, in)
	if sum.Queued != len(bad) || len(sum.Rejected) != len(bad) {
		t.Fatalf("queued %d, rejected %d: want the %d good documents queued and the %d bad ones rejected", sum.Queued, len(sum.Rejected), len(bad), len(bad))
	}
	reasons := map[string]submit.Rejection{}
	for _, r := range sum.Rejected {
		reasons[r.Source] = r
	}
	for _, b := range bad {
		r := reasons[b.doc.Source]
		if !strings.Contains(r.Reason, b.reason) || !strings.HasPrefix(r.Reason, submit.ErrBadInput.Error()) {
			t.Errorf("%s rejected with %q, want %q", b.doc.Source, r.Reason, b.reason)
		}
		if strings.ContainsAny(r.ID, "\x00\x1b\n") || len(r.ID) > 200 {
			t.Errorf("%s: the rejection's id %q is not printable", b.doc.Source, r.ID)
		}
	}
	if n := e.msgs(t, jobs.JobsStream); n != uint64(len(bad)) {
		t.Errorf("%d jobs on the stream, want %d", n, len(bad))
	}
}

// TestSameTextTwoIDs: identical text under two ids is two jobs, so each id
// gets its result (before, the job id came from the text alone: the second
// id's job was taken for a duplicate of the first and never ran).
func TestSameTextTwoIDs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	twins := []submit.Doc{{ID: "twin-a", Source: "a", Text: "same text"}, {ID: "twin-b", Source: "b", Text: "same text"}}
	sum := e.submit(t, twins)
	if sum.Queued != 2 || sum.Duplicates != 0 || len(sum.JobIDs) != 2 || sum.JobIDs[0] == sum.JobIDs[1] {
		t.Fatalf("submit: queued %d, duplicates %d, jobs %v: want two jobs", sum.Queued, sum.Duplicates, sum.JobIDs)
	}
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for _, env := range e.queued(t, 2) { // the worker: a result per job
		if err := w.Write(ctx, record(env, llm.OutcomeOK, json.RawMessage(`{"a":"`+env.DocumentID+`"}`))); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"twin-a", "twin-b"} {
		h, err := e.store.History(ctx, id)
		if err != nil || len(h.Results) != 1 || !strings.Contains(string(h.Results[0].Value), id) {
			t.Errorf("%s: history %+v, %v: want its own result", id, h, err)
		}
	}
	if again := e.submit(t, twins); again.AlreadyDone != 2 || again.Queued != 0 {
		t.Errorf("second submit: already done %d, queued %d: want both done", again.AlreadyDone, again.Queued)
	}
}

// TestChangedTextIsExtractedAgain: a new text under a known id is queued
// and its result stored next to the earlier text's; the same text again is
// already done.
func TestChangedTextIsExtractedAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for i, text := range []string{"total 10", "total 20 (corrected)"} {
		sum := e.submit(t, []submit.Doc{{ID: "inv", Source: "inv.txt", Text: text}})
		if sum.Queued != 1 {
			t.Fatalf("submit of text %d: queued %d, already done %d: want it queued", i+1, sum.Queued, sum.AlreadyDone)
		}
		envs := e.queued(t, i+1)
		if err := w.Write(ctx, record(envs[i], llm.OutcomeOK, json.RawMessage(`{"a":"`+text+`"}`))); err != nil {
			t.Fatal(err)
		}
	}
	h, err := e.store.History(ctx, "inv")
	if err != nil || len(h.Results) != 2 || len(h.Texts) != 2 {
		t.Fatalf("history: %d results, %d texts, %v: want both", len(h.Results), len(h.Texts), err)
	}
	if again := e.submit(t, []submit.Doc{{ID: "inv", Source: "inv.txt", Text: "total 20 (corrected)"}}); again.AlreadyDone != 1 || again.Queued != 0 {
		t.Errorf("same text again: already done %d, queued %d", again.AlreadyDone, again.Queued)
	}
}

// TestResubmitLetterOfReplacedText: a dead letter whose text is neither in
// the letter nor in the object store, and whose document has a new text
// since, is resubmitted with the text it failed on (kept by the audit).
func TestResubmitLetterOfReplacedText(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.submit(t, []submit.Doc{{ID: "inv", Source: "v1", Text: "old text"}})
	env := e.queued(t, 1)[0]
	env.Text, env.TextRef = "", &jobs.ObjectRef{Bucket: jobs.DocsBucket, Name: "gone"}
	seq, err := jobs.NewDLQ(e.js).Publish(ctx, &jobs.DeadLetter{Job: *env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "x"}, WorkerID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	e.submit(t, []submit.Doc{{ID: "inv", Source: "v2", Text: "new text"}})
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true, Seqs: []uint64{seq}})
	if err != nil || sum.Queued != 1 || len(sum.Rejected) != 0 {
		t.Fatalf("resubmit: %+v, %v: want the letter queued with its own text", sum, err)
	}
	envs := e.queued(t, 3)
	last := envs[2]
	docs := jobs.NewDocuments(e.js)
	text, err := docs.Text(ctx, last)
	if err != nil || text != "old text" || last.DocumentHash != jobs.HashText("old text") {
		t.Errorf("resubmitted job carries %q (%v), hash %.12s: want the old text", text, err, last.DocumentHash)
	}
	if _, err := e.store.DocumentVersion(ctx, "inv", jobs.HashText("nope")); !errors.Is(err, audit.ErrNotFound) {
		t.Errorf("unknown text: %v", err)
	}
}

// queued reads the first n jobs on the job stream.
func (e *env) queued(t *testing.T, n int) []*jobs.Envelope {
	t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jobs.Envelope
	for seq := uint64(1); len(out) < n; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("job %d of %d: %v", len(out)+1, n, err)
		}
		env, err := jobs.DecodeEnvelope(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}
