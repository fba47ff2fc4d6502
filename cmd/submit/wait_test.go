package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/webhook"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// TestSubmitWaitAfterRestart submits with --wait while a worker finishes
// the jobs (one dead-lettered), empties the job stream, and submits the
// same documents again: nothing is queued (the audit has every job final),
// and --wait returns at once with the same exit code.
func TestSubmitWaitAfterRestart(t *testing.T) {
	ctx := context.Background()
	st, js := fleetEnv(t)
	startWorker(t, st, js)
	schemaFile, docs := invoiceDocs(t)
	// The run's webhook: a receiver that answers 503, then 200, then 400,
	// behind a URL with credentials and a token that must not leak.
	var hookMu sync.Mutex
	hookStatuses, hookSigned := []int{503, 200, 400}, 0
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		defer hookMu.Unlock()
		if webhook.Verify([]byte("hook-secret"), r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderTimestamp), body, time.Now(), time.Minute) == nil &&
			strings.Contains(string(body), `"kind":"done"`) && r.URL.Query().Get("token") == "tok-hidden" {
			hookSigned++
		}
		w.WriteHeader(hookStatuses[0])
		hookStatuses = hookStatuses[min(1, len(hookStatuses)-1):]
	}))
	defer receiver.Close()
	hookURL := strings.Replace(receiver.URL, "http://", "http://alice:pw-hidden@", 1) + "/hook?token=tok-hidden"
	t.Setenv("EXTRACTQ_WEBHOOK_SECRET", "hook-secret")
	args := []string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--run", "r", "--wait", "--json", "--webhook", hookURL, docs}

	tests := []struct {
		name                     string
		before                   func(t *testing.T)
		queued, done, doneFailed int
		hook                     webhook.Result // delivered, attempts, last status
	}{
		{name: "first: queued and followed", queued: 3, hook: webhook.Result{Delivered: true, Attempts: 2, LastStatus: 200}},
		{name: "after a restart: nothing queued", before: func(t *testing.T) {
			s, err := js.Stream(ctx, jobs.JobsStream)
			if err != nil {
				t.Fatal(err)
			}
			// Nothing of the first submit is on the stream any more
			// (it was acked anyway); only the audit knows the jobs.
			if err := s.Purge(ctx); err != nil {
				t.Fatal(err)
			}
		}, done: 3, doneFailed: 1, hook: webhook.Result{Attempts: 1, LastStatus: 400}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before(t)
			}
			var out, errb bytes.Buffer
			cmd := newSubmitCmd()
			cmd.SetArgs(args)
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := cmd.ExecuteContext(cctx)
			if got := cli.Code(err); got != 1 || cctx.Err() != nil {
				t.Fatalf("exit %d (%v), want 1 (one document failed)\nstdout: %s\nstderr: %s", got, err, out.String(), errb.String())
			}
			if !strings.Contains(err.Error(), "1 of 3 documents failed") {
				t.Errorf("error %q, want it to count 1 of 3 failed", err)
			}
			var sum struct {
				Queued        int `json:"queued"`
				Duplicates    int `json:"duplicates"`
				AlreadyDone   int `json:"already_done"`
				AlreadyFailed int `json:"already_failed"`
				Wait          struct {
					Total, Done, Failed, Unfinished int
				} `json:"wait"`
				Webhook webhook.Result `json:"webhook"`
			}
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
				t.Fatalf("summary is not JSON: %v\n%s", err, out.String())
			}
			if sum.Queued != tc.queued || sum.Duplicates != 0 || sum.AlreadyDone != tc.done || sum.AlreadyFailed != tc.doneFailed {
				t.Errorf("summary %+v, want %d queued, %d already done (%d failed)", sum, tc.queued, tc.done, tc.doneFailed)
			}
			if sum.Wait.Total != 3 || sum.Wait.Done != 2 || sum.Wait.Failed != 1 || sum.Wait.Unfinished != 0 {
				t.Errorf("--json outcome %+v, want 3 in all, 2 done, 1 failed", sum.Wait)
			}
			// The webhook's failure does not change the exit code (checked above).
			h := sum.Webhook
			if h.Delivered != tc.hook.Delivered || h.Attempts != tc.hook.Attempts || h.LastStatus != tc.hook.LastStatus {
				t.Errorf("--json webhook %+v, want %+v", h, tc.hook)
			}
			if warned := strings.Contains(errb.String(), "webhook was not delivered"); warned == h.Delivered {
				t.Errorf("delivered %v, warned %v:\n%s", h.Delivered, warned, errb.String())
			}
			if leak := out.String() + errb.String() + err.Error(); strings.Contains(leak, "hidden") {
				t.Errorf("the webhook URL's credentials or token leaked:\n%s", leak)
			}
			if !strings.Contains(errb.String(), "\nsubmit: 2 done, 1 failed of 3 in ") && !strings.HasPrefix(errb.String(), "submit: 2 done, 1 failed of 3 in ") {
				t.Errorf("progress does not end with 2 done, 1 failed:\n%s", errb.String())
			}
		})
	}
	tries, err := st.WebhookAttempts(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for _, a := range tries {
		statuses = append(statuses, a.StatusCode)
		if a.URL != receiver.URL+"/hook" || a.Event != "done" {
			t.Errorf("delivery log row %+v: want the URL without credentials or query", a)
		}
	}
	if fmt.Sprint(statuses) != "[503 200 400]" || hookSigned != 3 {
		t.Errorf("delivery log statuses %v, %d signed requests; want [503 200 400], 3", statuses, hookSigned)
	}
	n, err := jobsOnStream(ctx, js)
	if err != nil || n != 0 {
		t.Errorf("%d jobs on the stream after the second submit (%v), want 0", n, err)
	}
}

// fleetEnv is a migrated audit database and an embedded NATS server with
// the job streams, which submit reaches through its environment.
func fleetEnv(t *testing.T) (*audit.Store, jetstream.JetStream) {
	t.Helper()
	st, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	_, js := jobstest.Connect(t, natsURL)
	must(t, jobs.EnsureStreams(t.Context(), js))
	return st, js
}

// invoiceDocs writes the invoice schema and a folder of three documents,
// the last of which startWorker's engine fails.
func invoiceDocs(t *testing.T) (schemaFile, docs string) {
	t.Helper()
	dir := t.TempDir()
	schemaFile = filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	docs = filepath.Join(dir, "docs")
	must(t, os.MkdirAll(docs, 0o755))
	must(t, os.WriteFile(filepath.Join(docs, "a.txt"), []byte(fleettest.Document(1)), 0o644))
	must(t, os.WriteFile(filepath.Join(docs, "b.txt"), []byte(fleettest.Document(2)), 0o644))
	must(t, os.WriteFile(filepath.Join(docs, "c.txt"), []byte("FAIL "+fleettest.Document(3)), 0o644))
	return schemaFile, docs
}

// startWorker runs a worker of pool openai_gpt-4o-mini on st and js until
// the test ends. Its engine answers every document but one saying FAIL,
// which it dead-letters.
func startWorker(t *testing.T, st *audit.Store, js jetstream.JetStream) {
	t.Helper()
	ctx := context.Background()
	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	engine := worker.EngineFunc(func(_ context.Context, _ llm.Provider, doc string, _ *schema.Schema, _ jobs.Options) (*llm.Result, error) {
		if strings.Contains(doc, "FAIL") {
			return &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid", Attempts: []llm.Attempt{{N: 1, Raw: "{}"}}}, nil
		}
		return &llm.Result{Outcome: llm.OutcomeOK, Value: json.RawMessage(`{"ok":true}`), Attempts: []llm.Attempt{{N: 1, Raw: `{"ok":true}`}}}, nil
	})
	w, err := worker.New(js, writer, engine,
		worker.WithPools(worker.Pool{Name: "openai_gpt-4o-mini", Concurrency: 2}),
		worker.WithPullWait(200*time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		worker.WithProviders(func(string) (llm.Provider, error) { return extractqtest.New(nil), nil }))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	t.Cleanup(func() {
		stopWorker()
		<-ran
		_ = writer.Close(ctx)
	})
}

func jobsOnStream(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	s, err := js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}
