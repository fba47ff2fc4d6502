package console

import (
	"html"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/llm"
)

// TestRecordedLetterBeingPublished: a dead letter the audit recorded and
// the worker has not yet published (sequence 0, migration 015) is linked
// from the list and the document's page to its record, shown with a note
// that it is being published, without a resubmit form; once its sequence
// is set the same link leads to the letter. Before, the link was
// /dlq/letter?seq=0: a 404.
func TestRecordedLetterBeingPublished(t *testing.T) {
	t.Parallel()
	st, _ := audittest.Store(t)
	_, js := jobstest.Connect(t, jobstest.Server(t))
	ctx := t.Context()
	w, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	now := time.Now().UTC()
	reason := "still invalid <after> 2 attempts"
	if err := w.Write(ctx, &audit.Record{
		JobID: "job-rec", DocumentID: "doc-rec", DocumentHash: audit.HashText("Invoice 7"), Run: "rec",
		SchemaName: "invoice", SchemaVersion: 1, SchemaFingerprint: "fp1",
		Provider: "sim:sloppy", Model: "sim:sloppy", Pool: "sim_sloppy", Delivery: 1, WorkerID: "w-rec",
		StartedAt: now, FinishedAt: now.Add(time.Second), Outcome: llm.OutcomeExhausted, Reason: reason, Final: true,
		Attempts: []llm.Attempt{
			{N: 1, Raw: `{"currency":"XYZ"}`, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10}},
			{N: 2, Raw: `{"currency":"XYZ!"}`, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 12}},
		},
		DeadLetter: &audit.DeadLetter{Stream: jobs.DLQStream, Seq: 0, Reason: reason},
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: st, JS: js, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), AllowWrites: true, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv)
	c.login()
	link := `/dlq/letter?document=doc-rec&amp;job=job-rec`
	for _, page := range []string{"/dlq", "/document?id=doc-rec"} {
		code, body, _ := c.get(page)
		if code != http.StatusOK || !strings.Contains(body, link) || strings.Contains(body, "seq=0") {
			t.Errorf("%s: %d, want a link %s to the recorded letter and none to seq 0\n%s", page, code, link, body)
		}
	}
	code, body, _ := c.get(html.UnescapeString(link))
	switch {
	case code != http.StatusOK:
		t.Fatalf("the recorded letter: %d, want 200\n%s", code, body)
	case !strings.Contains(body, `id="letter-publishing"`) || !strings.Contains(body, html.EscapeString(reason)):
		t.Errorf("the recorded letter's page lacks the note or the reason:\n%s", body)
	case strings.Count(body, `<div class="attempt`) != 2 || !strings.Contains(body, "220 + 22"):
		t.Errorf("the recorded letter's page lacks its 2 attempts or their tokens:\n%s", body)
	case strings.Contains(body, `id="resubmit-one"`):
		t.Error("a letter not yet on the stream offers resubmission")
	}
	if code, _, _ := c.get("/dlq/letter?job=nosuch&document=doc-rec"); code != http.StatusNotFound {
		t.Errorf("a job without a dead letter: %d, want 404", code)
	}

	if err := st.SetDeadLetterSeq(ctx, "job-rec", 7); err != nil {
		t.Fatal(err)
	}
	code, _, hdr := c.get(html.UnescapeString(link))
	if code != http.StatusSeeOther || hdr.Get("Location") != "/dlq/letter?seq=7" {
		t.Errorf("once published: %d to %q, want a redirect to /dlq/letter?seq=7", code, hdr.Get("Location"))
	}
}
