package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
	fleetlib "github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/worker/workertest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestDLQResubmitPassword: `extractq dlq resubmit` of the dead letter of
// an encrypted PDF whose text neither the letter nor the audit holds
// reads its original again, which needs the password: without one it is
// refused naming --password and --password-file; with --password-file it
// is queued, and the password is in neither the output, the job nor the
// help.
func TestDLQResubmitPassword(t *testing.T) {
	ctx := t.Context()
	f := workertest.New(t)
	pdf, err := os.ReadFile(filepath.Join("..", "..", "document", "testdata", "encrypted-secret.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := document.ReadBytes(ctx, pdf, document.Options{Name: "locked.pdf", Password: "secret"})
	if err != nil || !doc.Locked {
		t.Fatalf("read with the password: locked %v, %v", doc != nil && doc.Locked, err)
	}
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := fleetlib.NewClient(f.JS, f.Store.Pool())
	sum, err := c.Submit(ctx, fleetlib.Job{Schema: sc, SchemaName: "invoice", Provider: "sim:clean", Run: "r"},
		slices.Values([]fleetlib.Document{{ID: "locked", Source: "locked.pdf", Text: doc.Text, Document: doc, Original: pdf, WithPassword: doc.Locked}}))
	if err != nil || sum.Queued != 1 {
		t.Fatalf("submit: %+v, %v", sum, err)
	}
	stream, err := f.JS.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env, err := jobs.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	// The letter of a document the audit has no text of, trimmed of its own.
	env.DocumentID, env.Text, env.TextRef = "gone", "", nil
	env.JobID = jobs.MsgID(env.DocumentID, env.DocumentHash, env.Schema.Fingerprint, env.Model, "")
	if _, err := jobs.NewDLQ(f.JS).Publish(ctx, &jobs.DeadLetter{Job: *env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--nats-url", f.NATSURL, "--database-url", f.DatabaseURL}

	code, out, errOut := runRoot(t, "", append([]string{"dlq", "resubmit"}, conn...)...)
	if code != 1 || !strings.Contains(out, "give its password with --password or --password-file") {
		t.Fatalf("without the password: exit %d, %s%s; want 1 naming --password", code, out, errOut)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runRoot(t, "", append([]string{"dlq", "resubmit", "--password-file", pw}, conn...)...)
	if code != 0 || !strings.Contains(out, "queued 1") || !strings.Contains(out, "removed from the DLQ 1") {
		t.Fatalf("with --password-file: exit %d, %s%s; want it queued", code, out, errOut)
	}
	if strings.Contains(out+errOut, "secret") {
		t.Errorf("the output shows the password: %s%s", out, errOut)
	}
	again, err := stream.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(again.Data), `"gone"`) || strings.Contains(string(again.Data), "secret") {
		t.Errorf("queued job %s: want gone's, without the password", again.Data)
	}
	code, out, _ = runRoot(t, "", "dlq", "resubmit", "--help")
	if code != 0 || !strings.Contains(out, "--password-file FILE") || !strings.Contains(out, "--password string") {
		t.Errorf("help: exit %d, %s; want --password and --password-file", code, out)
	}
}
