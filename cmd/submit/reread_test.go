package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/llm"

	"github.com/nats-io/nats.go/jetstream"
)

// TestResubmitRereadCommand: a real PDF submitted, processed, then said to
// be read by an older PDF reader, is selected by `resubmit --reread`, read
// again and skipped as unchanged; bad flag combinations are usage errors.
func TestResubmitRereadCommand(t *testing.T) {
	st, stream, env := submitProcessed(t, "invoice-07.pdf")
	ctx := t.Context()
	if !strings.HasPrefix(env.Reader, "pdf/") {
		t.Fatalf("the job's reader is %q, want the PDF reader", env.Reader)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--reread", "--dry-run"}, 0, "dry run: 0 would be read again"},
		{[]string{"--reread", "--from-dlq"}, 2, "not both"},
		{[]string{"--reread", "--to-version", "2", "--schema", "x"}, 2, "drop --to-version"},
		{[]string{"--reread", "--reader", "nosuch"}, 2, `unknown reader "nosuch"`},
		{[]string{"--reader", "pdf"}, 2, "--reader needs --reread"},
		{[]string{"--reread", "--ocr", "maybe"}, 2, `--ocr "maybe"`},
	} {
		code, out, errOut := runSubmitCmd(t, "", append([]string{"resubmit"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: exit %d, %s%s; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}

	// The text was made by an older PDF reader.
	_, err := st.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"pdf/0"')`)
	must(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reread", "--reader", "pdf", "--dry-run"}, "dry run: 1 would be read again"},
		{[]string{"--reread", "--reader", "html", "--dry-run"}, "dry run: 0 would be read again"},
		{[]string{"--reread", "--reader", "pdf"}, "selected 1, re-read 1, changed 0 (queued 0, duplicates skipped 0), unchanged 1, missing 0"},
		{[]string{"--reread"}, "selected 0,"},
	} {
		code, out, errOut := runSubmitCmd(t, "", append([]string{"resubmit"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, %s%s; want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	info, err := stream.Info(ctx)
	must(t, err)
	if info.State.Msgs != 1 {
		t.Errorf("%d jobs on the stream after re-reading an unchanged document, want the one submitted", info.State.Msgs)
	}

	// An older reader that read the page differently: the summary names it.
	_, err = st.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"pdf/0"'), body = 'x', body_hash = $1, pages = '[[0, 1]]'`,
		jobs.HashText("x"))
	must(t, err)
	code, out, errOut := runSubmitCmd(t, "", "resubmit", "--reread")
	if code != 0 || !strings.Contains(out, "invoice-07.pdf: pages 1 of 1\n") || !strings.Contains(out, "changed 1 (queued 1,") {
		t.Errorf("reread of a changed page: exit %d, %s%s; want page 1 named", code, out, errOut)
	}
}

// TestResubmitRereadMailAttachmentCommand: an e-mail whose PDF attachment
// its older reader did not find (submitted with the attachment skipped,
// its reader set back to eml/2) is selected by `resubmit --reread`: a dry
// run counts the attachment, the re-read queues it as a document of its
// own though the e-mail's text is unchanged, and a second re-read adds
// nothing.
func TestResubmitRereadMailAttachmentCommand(t *testing.T) {
	st, stream, env := submitProcessed(t, "invoice-mail.eml", "--run", "mails", "--attachments", "skip")
	ctx := t.Context()
	older := func() {
		t.Helper()
		_, err := st.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(metadata, '{reader}', '"eml/2"') WHERE id = $1`, env.DocumentID)
		must(t, err)
	}
	older()
	att := env.DocumentID + "#INV76642.pdf"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--reread", "--dry-run"}, 0, "dry run: 1 would be read again: 0 would be queued, 1 unchanged; attachments: 1 would be added, 0 gone\n"},
		{[]string{"--reread", "--dry-run", "--attachments", "skip"}, 0, "dry run: 1 would be read again: 0 would be queued, 1 unchanged\n"},
		{[]string{"--reread", "--attachments", "merged"}, 2, `--attachments "merged": want separate, inline or skip`},
		{[]string{"--attachments", "skip"}, 2, "--attachments needs --reread"},
		{[]string{"--reread", "--reader", "eml"}, 0, "added " + att + ": an attachment its carrier's older reader did not find\n" +
			"selected 1, re-read 1, changed 0 (queued 0, duplicates skipped 0), unchanged 1, missing 0, not resubmitted 0, attachments added 1, gone 0\n"},
		{[]string{"--reread"}, 0, "selected 0, re-read 0, changed 0 (queued 0, duplicates skipped 0), unchanged 0, missing 0, not resubmitted 0\n"},
	} {
		code, out, errOut := runSubmitCmd(t, "", append([]string{"resubmit"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: exit %d, %s%s; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	info, err := stream.Info(ctx)
	must(t, err)
	if info.State.Msgs != 2 {
		t.Fatalf("%d jobs on the stream, want the e-mail's and its attachment's", info.State.Msgs)
	}
	msg, err := stream.GetMsg(ctx, 2)
	must(t, err)
	got, err := jobs.DecodeEnvelope(msg.Data)
	must(t, err)
	if got.DocumentID != att || !strings.HasPrefix(got.Reader, "pdf/") || got.Original == nil || got.Run != "mails" ||
		got.Schema != env.Schema || got.Provider != env.Provider || !strings.Contains(got.Text, "INV76642") {
		t.Errorf("queued %+v: want the attached PDF read as a document of its own in the e-mail's run", got)
	}

	// Read again once more: the attachment is known, nothing is added.
	older()
	code, out, errOut := runSubmitCmd(t, "", "resubmit", "--reread", "--json")
	if code != 0 || !strings.Contains(out, `"attachments_added": 0`) || !strings.Contains(out, `"unchanged": 1`) {
		t.Errorf("reread once more: exit %d, %s%s; want the e-mail unchanged, no attachment added", code, out, errOut)
	}
	info, err = stream.Info(ctx)
	must(t, err)
	if info.State.Msgs != 2 {
		t.Errorf("%d jobs on the stream after re-reading again, want 2", info.State.Msgs)
	}
}

// TestResubmitRereadInlineCommand: an e-mail submitted with its PDF
// attachment inlined into its text, then said to be read by an older
// e-mail reader, is read again with the attachment inlined, as submit read
// it (the audit records the policy): unchanged, nothing queued, where
// reading it without the attachment would queue it without the invoice's
// text. A document stored before the policy was recorded is held, named
// and counted, until --attachments inline says how it was submitted (which
// the audit then records); and
// a carrier whose reader did improve is queued with the attachment's text
// still inlined.
func TestResubmitRereadInlineCommand(t *testing.T) {
	st, stream, env := submitProcessed(t, "invoice-mail.eml", "--run", "mails", "--attachments", "inline")
	ctx := t.Context()
	const mark = "--- attachment INV76642.pdf ---"
	if !strings.Contains(env.Text, mark) || !strings.Contains(env.Text, "INV76642") {
		t.Fatalf("submitted text %q: want the PDF's text inlined after %q", env.Text, mark)
	}
	// older records the reader eml/2 in the metadata (meta, an expression
	// of it), and sets what set says.
	older := func(meta, set string, args ...any) {
		t.Helper()
		_, err := st.Pool().Exec(ctx, `UPDATE documents SET metadata = jsonb_set(`+meta+`, '{reader}', '"eml/2"')`+set+` WHERE id = $1`,
			append([]any{env.DocumentID}, args...)...)
		must(t, err)
	}
	jobsQueued := func(want uint64) {
		t.Helper()
		info, err := stream.Info(ctx)
		must(t, err)
		if info.State.Msgs != want {
			t.Fatalf("%d jobs on the stream, want %d", info.State.Msgs, want)
		}
	}
	steps := []struct {
		name string
		meta string // the metadata before the command (older), "-" as it is
		args []string
		code int
		want string // in stdout
		warn string // in stderr
	}{
		{"recorded, dry run", "metadata", []string{"--dry-run"}, 0,
			"dry run: 1 would be read again: 0 would be queued, 1 unchanged, 1 with attachments inlined\n", ""},
		{"recorded", "-", nil, 0,
			"selected 1, re-read 1, changed 0 (queued 0, duplicates skipped 0), unchanged 1, missing 0, not resubmitted 0, with attachments inlined 1\n", ""},
		{"recorded, whatever --attachments says", "metadata", []string{"--attachments", "skip"}, 0, "unchanged 1,", ""},
		{"not recorded, dry run", "metadata - 'attachments'", []string{"--dry-run"}, 0,
			"dry run: 1 would be read again: 0 would be queued, 0 unchanged, 1 held\n", "warning: held " + env.DocumentID + ": its stored text has attachments inlined"},
		{"not recorded", "-", nil, 1, "unchanged 0, missing 0, not resubmitted 0, held 1\n", "warning: held " + env.DocumentID},
		{"not recorded, --attachments inline", "-", []string{"--attachments", "inline"}, 0, "unchanged 1, missing 0, not resubmitted 0, with attachments inlined 1\n", ""},
		{"recorded by that re-read", "metadata", nil, 0, "unchanged 1, missing 0, not resubmitted 0, with attachments inlined 1\n", ""},
	}
	for _, tc := range steps {
		if tc.meta != "-" {
			older(tc.meta, "")
		}
		code, out, errOut := runSubmitCmd(t, "", append([]string{"resubmit", "--reread"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) || !strings.Contains(errOut, tc.warn) {
			t.Errorf("%s: exit %d, %s%s; want exit %d, %q and %q", tc.name, code, out, errOut, tc.code, tc.want, tc.warn)
		}
		jobsQueued(1)
	}

	// A better reader: the text the older one made lacks a word of the
	// mail's body; read again, the mail is queued with the invoice still
	// inlined, and its record says so.
	poorer := strings.Replace(env.Text, "INV76642", "", 1)
	older(`jsonb_set(metadata, '{attachments}', '"inline"')`, ", body = $2, body_hash = $3, pages = NULL", poorer, jobs.HashText(poorer))
	code, out, errOut := runSubmitCmd(t, "", "resubmit", "--reread", "--dry-run")
	if want := "dry run: 1 would be read again: 1 would be queued, 0 unchanged, 1 with attachments inlined\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("dry run of an improved carrier: exit %d, %s%s; want %q", code, out, errOut, want)
	}
	code, out, errOut = runSubmitCmd(t, "", "resubmit", "--reread")
	if code != 0 || !strings.Contains(out, "changed 1 (queued 1,") || !strings.Contains(out, "with attachments inlined 1") {
		t.Fatalf("reread of an improved carrier: exit %d, %s%s; want it queued", code, out, errOut)
	}
	jobsQueued(2)
	msg, err := stream.GetMsg(ctx, 2)
	must(t, err)
	got, err := jobs.DecodeEnvelope(msg.Data)
	must(t, err)
	if got.DocumentID != env.DocumentID || got.Text != env.Text || len(got.Pages) != len(env.Pages) || !strings.Contains(string(got.Metadata), `"attachments":"inline"`) {
		t.Errorf("queued %s: text %q, %d pages, metadata %s; want the submitted text %q with the attachment inlined, %d pages, the policy recorded",
			got.DocumentID, got.Text, len(got.Pages), got.Metadata, env.Text, len(env.Pages))
	}
	d, err := st.Document(ctx, env.DocumentID)
	must(t, err)
	if d.Text != env.Text || !strings.Contains(string(d.Metadata), `"attachments": "inline"`) {
		t.Errorf("stored after the re-read: %q, %s; want the inlined text, the policy recorded", d.Text, d.Metadata)
	}
}

// submitProcessed submits one of examples/documents with `submit` (args
// added to its own), then records the job as a worker would have finished
// it: what `resubmit --reread` selects from.
func submitProcessed(t *testing.T, example string, args ...string) (*audit.Store, jetstream.Stream, *jobs.Envelope) {
	t.Helper()
	st, dbURL := audittest.Store(t)
	natsURL := migratedServer(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	ctx := t.Context()
	schemaFile := filepath.Join(t.TempDir(), "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	path, err := filepath.Abs("../../examples/documents/" + example)
	must(t, err)
	submitArgs := append(append([]string{"--schema", schemaFile, "--provider", "sim:clean"}, args...), path)
	if code, out, errOut := runSubmitCmd(t, "", submitArgs...); code != 0 {
		t.Fatalf("submit: exit %d %s%s", code, out, errOut)
	}
	_, js := jobstest.Connect(t, natsURL)
	stream, err := js.Stream(ctx, jobs.JobsStream)
	must(t, err)
	msg, err := stream.GetMsg(ctx, 1)
	must(t, err)
	env, err := jobs.DecodeEnvelope(msg.Data)
	must(t, err)
	w, err := st.NewWriter(ctx)
	must(t, err)
	defer w.Close(ctx)
	must(t, w.Write(ctx, &audit.Record{
		JobID: env.JobID, DocumentID: env.DocumentID, DocumentHash: env.DocumentHash, Run: env.Run,
		SchemaName: env.Schema.Name, SchemaVersion: env.Schema.Version, SchemaFingerprint: env.Schema.Fingerprint,
		Provider: env.Provider, Model: env.Model, Pool: env.Pool, Delivery: 1, WorkerID: "w",
		Attempts: []llm.Attempt{{N: 1, Raw: "{}"}}, Outcome: llm.OutcomeOK, Value: []byte("{}"), Final: true,
	}))
	return st, stream, env
}
