package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
	"github.com/nats-io/nats.go/jetstream"
)

// bodyRecorder keeps the body of every request it forwards.
type bodyRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (r *bodyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		r.mu.Lock()
		r.seen = append(r.seen, string(b))
		r.mu.Unlock()
	}
	return r.base.RoundTrip(req)
}

func (r *bodyRecorder) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestNativePDFThroughWorker: a PDF submitted with input native travels as
// a reference to its original in the object store (not its bytes), and a
// real worker sends it whole, as an OpenAI file part, to a model that reads
// PDFs; the simulator answers from its text layer and the result is valid.
// The same PDF for a model that reads no PDFs is dead-lettered naming the
// remedies, before any call. A PDF whose page 2 is a JBIG2 scan the reader
// cannot decode goes whole to the model that reads PDFs with input auto.
func TestNativePDFThroughWorker(t *testing.T) {
	ctx := t.Context()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv := sim.New(fleettest.CleanProfile(), sim.WithSeed(3))
	defer srv.Close()
	rec := &bodyRecorder{base: srv.Transport()}
	hc := &http.Client{Transport: rec}

	pdf, err := os.ReadFile("../../examples/documents/invoice-two-pages.pdf")
	if err != nil {
		t.Fatal(err)
	}
	sub := submit.New(js, st)
	sc, ref := registerInvoice(t, sub)
	// A JBIG2 scan on page 2, which the reader cannot decode: with input
	// auto it goes whole to the model that reads PDFs.
	jbig2, err := os.ReadFile("../../document/testdata/unreadable/jbig2-page.pdf")
	if err != nil {
		t.Fatal(err)
	}
	const pool = "docs"
	r := &intake.Reader{WholePDF: true}
	for _, d := range []struct {
		id, provider, input string
		pdf                 []byte
	}{
		{"reads-pdf", "openai:gpt-4o", "native", pdf},
		{"reads-no-pdf", "openai:gpt-4", "native", pdf},
		{"jbig2-auto", "openai:gpt-4o", "", jbig2},
	} {
		model, _, err := submit.ResolveProvider(d.provider)
		if err != nil {
			t.Fatal(err)
		}
		job := submit.Job{Schema: ref, Provider: d.provider, Model: model, Pool: pool, Run: "native",
			Options: jobs.Options{Input: d.input}}
		sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
			return r.ReadBytes(ctx, d.id, d.id+".pdf", d.pdf, fn)
		}, nil)
		if err != nil || sum.Queued != 1 {
			t.Fatalf("submit %s: %+v, %v", d.id, sum, err)
		}
	}
	// The jobs carry the original by reference.
	stream, err := js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		env, err := jobs.DecodeEnvelope(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if env.Original == nil || env.Original.Name != jobs.HashBytes(pdf) || env.Options.Input != "native" || len(msg.Data) >= len(pdf) {
			t.Fatalf("job %d: original %+v, input %q, %d bytes; want a reference to the PDF's sha256, input native and fewer bytes than the PDF's %d",
				seq, env.Original, env.Options.Input, len(msg.Data), len(pdf))
		}
	}

	runWorkerUntilSettled(t, js, st, hc, "native-worker", pool, 2, 3)

	for _, tc := range []struct{ doc, status, reason string }{
		{"reads-pdf", "ok", ""},
		{"jbig2-auto", "ok", ""},
		{"reads-no-pdf", "fatal", "--input text"},
	} {
		var status, reason string
		if err := st.Pool().QueryRow(ctx, `SELECT status, coalesce(reason, '') FROM jobs WHERE document_id = $1`, tc.doc).Scan(&status, &reason); err != nil {
			t.Fatal(err)
		}
		if status != tc.status || !strings.Contains(reason, tc.reason) || tc.reason != "" && !strings.Contains(reason, "reads no PDFs") {
			t.Errorf("%s: status %q, reason %q; want %q naming %q", tc.doc, status, reason, tc.status, tc.reason)
		}
	}
	for _, id := range []string{"reads-pdf", "jbig2-auto"} {
		var value []byte
		if err := st.Pool().QueryRow(ctx, `SELECT value::text FROM results WHERE document_id = $1`, id).Scan(&value); err != nil {
			t.Fatal(err)
		}
		if v, err := sc.ValidateJSON(value); err != nil || len(v) > 0 {
			t.Errorf("%s: result %s: %v %v", id, value, v, err)
		}
	}
	bodies := rec.bodies()
	if len(bodies) < 2 {
		t.Fatalf("%d requests reached the simulator, want one per document sent", len(bodies))
	}
	for _, b := range bodies {
		if !strings.Contains(b, `"model":"gpt-4o"`) {
			t.Errorf("a request for another model than gpt-4o reached the simulator: %.200s", b)
		}
		if !strings.Contains(b, `"type":"file"`) || !strings.Contains(b, `"file_data":"data:application/pdf;base64,`) {
			t.Errorf("request without the PDF as a file part: %.300s", b)
		}
	}
}

// TestEncryptedScanThroughWorker: a PDF that opens only with its password
// (testdata/encrypted-scan.pdf, made by make-encrypted-scan.py), whose
// page 2 is a scan, submitted with the password and input auto, travels
// with its page's picture stored at submit; a real worker, which has no
// password, shows that picture to a model that reads images and the
// result is valid. Submitted with input native it is refused at submit,
// naming the remedies: no model opens an encrypted PDF.
func TestEncryptedScanThroughWorker(t *testing.T) {
	ctx := t.Context()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv, shown := pictureSim(t) // shown: media types of the pictures the model was shown
	hc := &http.Client{Transport: srv.Transport()}

	pdf, err := os.ReadFile("testdata/encrypted-scan.pdf")
	if err != nil {
		t.Fatal(err)
	}
	sub := submit.New(js, st)
	_, ref := registerInvoice(t, sub)
	const pool, provider = "locked", "openai:gpt-4o"
	model, _, err := submit.ResolveProvider(provider)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		input  string
		r      intake.Reader
		queued int
	}{
		{"native", intake.Reader{Password: "secret", Native: true, NativeInput: true, WholePDF: true}, 0},
		{"", intake.Reader{Password: "secret", Native: true, WholePDF: true}, 1},
	} {
		job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: "locked", Options: jobs.Options{Input: tc.input}}
		sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
			return tc.r.ReadBytes(ctx, "locked-scan", "locked-scan.pdf", pdf, fn)
		}, nil)
		if err != nil || sum.Queued != tc.queued {
			t.Fatalf("submit with input %q: %+v, %v; want %d queued", tc.input, sum, err, tc.queued)
		}
		if tc.queued == 0 && (len(sum.Rejected) != 1 || !strings.Contains(sum.Rejected[0].Reason, "use --input auto") || !strings.Contains(sum.Rejected[0].Reason, "qpdf --decrypt")) {
			t.Errorf("input native: rejected %+v, want it refused naming --input auto and qpdf --decrypt", sum.Rejected)
		}
	}
	stream, err := js.Stream(ctx, jobs.JobsStream)
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
	if env.Pictures == nil || !slices.Equal(env.Scanned, []int{2}) || bytes.Contains(msg.Data, []byte("secret")) {
		t.Fatalf("job %s: want page 2 scanned, its picture stored, and no password", msg.Data)
	}

	runWorkerUntilSettled(t, js, st, hc, "locked-worker", pool, 1, 1)
	var status, reason string
	if err := st.Pool().QueryRow(ctx, `SELECT status, coalesce(reason, '') FROM jobs WHERE document_id = 'locked-scan'`).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if got := shown(); status != "ok" || len(got) == 0 || got[0] != "image/png" {
		t.Errorf("job %s (%s), pictures shown %v; want ok after the model was shown page 2 as a PNG", status, reason, got)
	}
}

// runWorkerUntilSettled runs a worker of one pool of the given name and
// concurrency, its provider the simulator behind hc, until n jobs are
// settled in the audit, then stops it and flushes its audit writer.
func runWorkerUntilSettled(t *testing.T, js jetstream.JetStream, st *audit.Store, hc *http.Client, id, pool string, concurrency, n int) {
	t.Helper()
	ctx := t.Context()
	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, writer, fastEngine(),
		worker.WithID(id),
		worker.WithPools(worker.Pool{Name: pool, Concurrency: concurrency, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: concurrency}, ratelimit.WithLogger(quietLogger()))}),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 10}),
		worker.WithProviders(func(spec string) (llm.Provider, error) {
			return providers.New(spec, providers.WithBaseURL("http://sim.invalid/v1"), providers.WithHTTPClient(hc), providers.WithAPIKey("sk-"+id+"-not-a-key"))
		}),
		worker.WithLogger(quietLogger()), worker.WithPullWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitSettled(t, st, n, 2*time.Minute)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// mailAttaching is an e-mail whose body is body and which attaches the
// PDF pdf as name, base64-encoded as mail clients send it.
func mailAttaching(body, name string, pdf []byte) []byte {
	var b strings.Builder
	b.WriteString("From: billing@acme.example\r\nTo: ap@example.com\r\nSubject: Invoice INV-7\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n")
	b.WriteString("--b0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n")
	b.WriteString("--b0\r\nContent-Type: application/pdf; name=\"" + name + "\"\r\nContent-Disposition: attachment; filename=\"" + name + "\"\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	enc := base64.StdEncoding.EncodeToString(pdf)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--b0--\r\n")
	return []byte(b.String())
}

// TestEncryptedAttachmentInlinedThroughWorker: an e-mail whose attached
// PDF opens only with its password (testdata/encrypted-scan.pdf, page 2 a
// scan), submitted with the password, --attachments inline and --input
// native: an e-mail is never sent whole, so it goes as its text with the
// PDF's pages' pictures, stored at submit since the attachment needed the
// password. A real worker, which has no password and would read the mail
// again without the PDF, shows page 2's picture to the model from the
// stored pictures, and the result is valid. An e-mail attaching a PDF
// that opens without a password has no pictures stored.
func TestEncryptedAttachmentInlinedThroughWorker(t *testing.T) {
	ctx := t.Context()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	srv, shown := pictureSim(t) // shown: media types of the pictures the model was shown
	rec := &bodyRecorder{base: srv.Transport()}
	hc := &http.Client{Transport: rec}

	pdf, err := os.ReadFile("testdata/encrypted-scan.pdf")
	if err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadFile("../../examples/documents/invoice-scan.pdf")
	if err != nil {
		t.Fatal(err)
	}
	sub := submit.New(js, st)
	_, ref := registerInvoice(t, sub)
	const pool, provider = "locked-mail", "openai:gpt-4o"
	model, _, err := submit.ResolveProvider(provider)
	if err != nil {
		t.Fatal(err)
	}
	r := intake.Reader{Password: "secret", Native: true, NativeInput: true, WholePDF: true, Attachments: intake.AttachInline}
	job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: "locked-mail", Options: jobs.Options{Input: "native"}}
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		if err := r.ReadBytes(ctx, "locked-mail", "locked-mail.eml", mailAttaching("Please find invoice INV-7 attached.", "inv-7.pdf", pdf), fn); err != nil {
			return err
		}
		return r.ReadBytes(ctx, "open-mail", "open-mail.eml", mailAttaching("Please find the invoice attached.", "scan.pdf", open), fn)
	}, nil)
	if err != nil || sum.Queued != 2 {
		t.Fatalf("submit: %+v, %v; want both mails queued", sum, err)
	}
	stream, err := js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{1: "locked-mail", 2: "open-mail"} {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		env, err := jobs.DecodeEnvelope(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if env.DocumentID != want || bytes.Contains(msg.Data, []byte("secret")) || (env.Pictures != nil) != (want == "locked-mail") {
			t.Fatalf("job %s: want %s, pictures stored only for the mail whose attachment needed the password, and no password", msg.Data, want)
		}
	}

	runWorkerUntilSettled(t, js, st, hc, "locked-mail-worker", pool, 1, 2)
	rows, err := st.Pool().Query(ctx, `SELECT document_id, status, coalesce(reason, '') FROM jobs ORDER BY document_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, reason string
		if err := rows.Scan(&id, &status, &reason); err != nil {
			t.Fatal(err)
		}
		if status != "ok" {
			t.Errorf("job of %s: %s (%s), want ok", id, status, reason)
		}
	}
	if got := shown(); len(got) != 2 || got[0] != "image/png" {
		t.Errorf("pictures shown %v; want each mail's scanned page shown once", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var lockedSeen bool
	for _, b := range rec.seen {
		if strings.Contains(b, `"type":"file"`) {
			t.Errorf("a request sent a file (an e-mail is never sent whole): %.300s", b)
		}
		if strings.Contains(b, "INV-7 attached") {
			lockedSeen = true
			if !strings.Contains(b, "--- attachment inv-7.pdf ---") || !strings.Contains(b, "image_url") {
				t.Errorf("the locked mail's request lacks its attachment's text or page picture: %.600s", b)
			}
		}
	}
	if !lockedSeen {
		t.Errorf("no request of the locked mail reached the simulator")
	}
}
