package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestResubmitFromDLQPassword: `submit resubmit --from-dlq` reads the
// original of a dead letter whose text the audit does not store with the
// password from $EXTRACTQ_DOCUMENT_PASSWORD as well as from --password
// or --password-file (it read the environment only with --reread); the
// two flags together are a usage error.
func TestResubmitFromDLQPassword(t *testing.T) {
	st, dbURL := audittest.Store(t)
	natsURL := migratedServer(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	_, js := jobstest.Connect(t, natsURL)
	ctx := t.Context()

	pdf, err := os.ReadFile(filepath.Join("..", "..", "document", "testdata", "encrypted-secret.pdf"))
	must(t, err)
	doc, err := document.ReadBytes(ctx, pdf, document.Options{Name: "locked.pdf", Password: "secret"})
	must(t, err)
	sc, err := schema.Compile([]byte(fleettest.Schema))
	must(t, err)
	sum, err := fleet.NewClient(js, st.Pool()).Submit(ctx, fleet.Job{Schema: sc, SchemaName: "invoice", Provider: "sim:clean", Run: "r"},
		slices.Values([]fleet.Document{{ID: "locked", Source: "locked.pdf", Text: doc.Text, Document: doc, Original: pdf, WithPassword: doc.Locked}}))
	if err != nil || sum.Queued != 1 {
		t.Fatalf("submit: %+v, %v", sum, err)
	}
	stream, err := js.Stream(ctx, jobs.JobsStream)
	must(t, err)
	msg, err := stream.GetMsg(ctx, 1)
	must(t, err)
	env, err := jobs.DecodeEnvelope(msg.Data)
	must(t, err)
	env.DocumentID, env.Text, env.TextRef = "gone", "", nil // the audit has no text of it
	env.JobID = jobs.MsgID(env.DocumentID, env.DocumentHash, env.Schema.Fingerprint, env.Model, "")
	_, err = jobs.NewDLQ(js).Publish(ctx, &jobs.DeadLetter{Job: *env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}, WorkerID: "w"})
	must(t, err)

	pw := filepath.Join(t.TempDir(), "pw")
	must(t, os.WriteFile(pw, []byte("secret\n"), 0o600))
	if code, _, errOut := runSubmitCmd(t, "", "resubmit", "--from-dlq", "--password", "secret", "--password-file", pw); code != 2 || !strings.Contains(errOut, "not both") {
		t.Errorf("both flags: exit %d, %s; want a usage error", code, errOut)
	}
	t.Setenv("EXTRACTQ_DOCUMENT_PASSWORD", "secret")
	code, out, errOut := runSubmitCmd(t, "", "resubmit", "--from-dlq", "--json")
	var got fleet.Resubmitted
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Queued != 1 || len(got.Rejected) != 0 {
		t.Fatalf("resubmit --from-dlq with the password in the environment: exit %d, %s%s; want gone queued", code, out, errOut)
	}
	if strings.Contains(out+errOut, "secret") {
		t.Errorf("the output shows the password: %s%s", out, errOut)
	}
}
