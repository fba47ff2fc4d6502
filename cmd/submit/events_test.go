package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/webhook"
)

func TestWebhookSender(t *testing.T) {
	t.Parallel()
	const hook = "https://alice:pw-hidden@hooks.example.com/extractq?token=tok-hidden"
	env := func(vars ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(vars); i += 2 {
				if vars[i] == k {
					return vars[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name    string
		args    []string
		getenv  func(string) string
		url     string // the sender's URL, "" for none
		timeout time.Duration
		usage   string // the usage error, "" for none
	}{
		{"none", []string{"--wait"}, env(), "", 0, ""},
		{"flag", []string{"--wait", "--webhook", hook}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), hook, 2 * time.Minute, ""},
		{"env", []string{"--wait", "--webhook-timeout", "30s"}, env("EXTRACTQ_WEBHOOK_URL", hook, "EXTRACTQ_WEBHOOK_SECRET", "s"), hook, 30 * time.Second, ""},
		{"env without --wait is not used", nil, env("EXTRACTQ_WEBHOOK_URL", hook), "", 0, ""},
		{"no secret", []string{"--wait", "--webhook", hook}, env(), "", 0, "EXTRACTQ_WEBHOOK_SECRET"},
		{"flag without --wait: registered with the run", []string{"--webhook", hook}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), hook, 2 * time.Minute, ""},
		{"no secret without --wait", []string{"--webhook", hook}, env(), "", 0, "EXTRACTQ_WEBHOOK_SECRET"},
		{"events done and dead letters", []string{"--webhook", hook, "--webhook-events", "done,dead_letter"}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), hook, 2 * time.Minute, ""},
		{"unknown event", []string{"--webhook", hook, "--webhook-events", "done,result"}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), "", 0, `--webhook-events "result"`},
		{"events without webhook", []string{"--webhook-events", "done"}, env(), "", 0, "--webhook-events shape --webhook"},
		{"not http", []string{"--wait", "--webhook", "ftp://x/y"}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), "", 0, "http:// or https://"},
		{"timeout without webhook", []string{"--wait", "--webhook-timeout", "1m"}, env(), "", 0, "--webhook-timeout and --webhook-events shape --webhook"},
		{"timeout zero", []string{"--wait", "--webhook", hook, "--webhook-timeout", "0s"}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), "", 0, "must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := newSubmitCmd()
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			var h webhookFlags
			wait, _ := cmd.Flags().GetBool("wait")
			h.url, _ = cmd.Flags().GetString("webhook")
			h.events, _ = cmd.Flags().GetStringSlice("webhook-events")
			h.timeout = 2 * time.Minute
			if v := cmd.Flag("webhook-timeout"); v.Changed {
				h.timeout, _ = time.ParseDuration(v.Value.String())
			}
			s, err := webhookSender(cmd.Flags(), &h, wait, c.getenv)
			if c.usage != "" {
				if cli.Code(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), c.usage) {
					t.Fatalf("error %v (exit %d), want a usage error naming %q", err, cli.Code(err), c.usage)
				}
				if strings.Contains(err.Error(), "hidden") {
					t.Errorf("error leaks the URL's credentials: %v", err)
				}
				return
			}
			switch {
			case err != nil:
				t.Fatal(err)
			case c.url == "" && s != nil:
				t.Fatalf("sender to %s, want none", s.URL)
			case c.url != "" && (s == nil || s.URL != c.url || s.Timeout != c.timeout || string(s.Secret) != "s"):
				t.Fatalf("sender %+v, want one to %s within %s", s, c.url, c.timeout)
			}
		})
	}
}

// The re-attach line printed on a timeout or Ctrl-C keeps a plain webhook
// URL and names the variable instead of one carrying credentials or a token.
func TestReattachHidesWebhookCredentials(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, want string }{
		{"https://hooks.example.com/x", "--webhook https://hooks.example.com/x "},
		{"https://alice:pw-hidden@hooks.example.com/x", `--webhook "$EXTRACTQ_WEBHOOK_URL" `},
		{"https://hooks.example.com/x?token=tok-hidden", `--webhook "$EXTRACTQ_WEBHOOK_URL" `},
	} {
		cmd := newSubmitCmd()
		if err := cmd.ParseFlags([]string{"--wait", "--webhook", c.url}); err != nil {
			t.Fatal(err)
		}
		line := reattach(cmd, []string{"docs"})
		if !strings.Contains(line, c.want) || strings.Contains(line, "hidden") {
			t.Errorf("reattach with %s: %s, want %q in it", c.url, line, c.want)
		}
	}
}

// TestSubmitWithoutWaitIsAnnouncedOnce: a submit without --wait registers
// its webhook and seals the run; a worker's sweeper publishes the run's done
// event and delivers the webhook once, when the last job is final. A second
// submit into the run, with --wait, reopens it: one more done event and one
// more delivery (by the submit or the sweeper, whichever claims it), never
// two.
func TestSubmitWithoutWaitIsAnnouncedOnce(t *testing.T) {
	ctx := context.Background()
	st, js := fleetEnv(t)
	startWorker(t, st, js)
	hookURL, delivered := sweptReceiver(t, st, js)

	schemaFile, docs := invoiceDocs(t)
	submitOnce := func(extra ...string) (string, error) {
		var out, errb bytes.Buffer
		cmd := newSubmitCmd()
		cmd.SetArgs(append([]string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--run", "nightly", "--json", "--webhook", hookURL}, append(extra, docs)...))
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := cmd.ExecuteContext(cctx)
		if leak := out.String() + errb.String(); strings.Contains(leak, "tok-hidden") || strings.Contains(leak, "hook-secret") {
			t.Errorf("the webhook's token or secret leaked:\n%s", leak)
		}
		return out.String(), err
	}
	if out, err := submitOnce(); err != nil {
		t.Fatalf("submit without --wait: %v\n%s", err, out)
	}
	if got := waitDeliveries(delivered, 1); len(got) != 1 || got[0].Total != 3 || got[0].OK != 2 || got[0].Failed != 1 || got[0].Generation != 1 {
		t.Fatalf("deliveries %+v, want one done event: 3 jobs, 2 ok, 1 failed", got)
	}

	// The same run again, one more document, with --wait.
	must(t, os.WriteFile(filepath.Join(docs, "d.txt"), []byte(fleettest.Document(4)), 0o644))
	out, err := submitOnce("--wait")
	if cli.Code(err) != 1 { // c.txt is still a failed document of the run
		t.Fatalf("submit --wait: exit %d (%v), want 1\n%s", cli.Code(err), err, out)
	}
	waitDeliveries(delivered, 2)
	time.Sleep(500 * time.Millisecond) // a third delivery, if any, would come within a few sweeps
	got := delivered()
	if len(got) != 2 || got[1].Total != 4 || got[1].OK != 3 || got[1].Generation != 2 {
		t.Fatalf("deliveries %+v, want a second one: 4 jobs, 3 ok, generation 2", got)
	}
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(events.Subject("nightly", events.KindDone)))
	if err != nil || len(info.State.Subjects) != 1 || info.State.Subjects[events.Subject("nightly", events.KindDone)] != 2 {
		t.Fatalf("done events on the stream: %+v (%v), want 2", info.State.Subjects, err)
	}
}

// TestResubmitReopensTheRun: `submit resubmit --from-dlq` into a run that
// was announced counts the job it queues into the run before the job
// runs and seals the run again: a second done event and webhook, once the
// resubmitted job is final, with the run's counts then (it fails again:
// four jobs, two failed). Before, the resubmission counted nothing and the
// run was never announced again.
func TestResubmitReopensTheRun(t *testing.T) {
	ctx := t.Context()
	st, js := fleetEnv(t)
	startWorker(t, st, js)
	hookURL, delivered := sweptReceiver(t, st, js)
	schemaFile, docs := invoiceDocs(t)
	if code, out, errOut := runSubmitCmd(t, "", "--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--run", "nightly", "--webhook", hookURL, docs); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	if got := waitDeliveries(delivered, 1); len(got) != 1 || got[0].Total != 3 || got[0].Failed != 1 {
		t.Fatalf("deliveries %+v, want one done event: 3 jobs, 1 failed", got)
	}
	// The letter is recorded, then published: resubmit reads the stream.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := js.Stream(ctx, jobs.DLQStream)
		must(t, err)
		info, err := s.Info(ctx)
		must(t, err)
		if info.State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters on %s, want 1", info.State.Msgs, jobs.DLQStream)
		}
		time.Sleep(50 * time.Millisecond)
	}

	code, out, errOut := runSubmitCmd(t, "", "resubmit", "--from-dlq", "--run", "nightly", "--json")
	var sum fleet.Resubmitted
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Queued != 1 ||
		len(sum.Runs) != 1 || sum.Runs[0] != (fleet.SealedRun{Run: "nightly", Queued: 1, Generation: 2}) {
		t.Fatalf("resubmit: exit %d, %s%s; want 1 queued into nightly, sealed as generation 2", code, out, errOut)
	}
	if d, _, err := st.RunDoneState(ctx, "nightly"); err != nil || d.Jobs != 4 || d.Sealed != 2 {
		t.Fatalf("run_done after the resubmission: %+v, %v; want 4 jobs counted, sealed twice", d, err)
	}
	waitDeliveries(delivered, 2)
	time.Sleep(500 * time.Millisecond) // a third delivery, if any, would come within a few sweeps
	got := delivered()
	if len(got) != 2 || got[1].Total != 4 || got[1].OK != 2 || got[1].Failed != 2 || got[1].Generation != 2 {
		t.Fatalf("deliveries %+v, want a second one once the resubmitted job is final: 4 jobs, 2 ok, 2 failed, generation 2", got)
	}
	// Again: nothing is on the DLQ for the run now but the new letter,
	// which a dry run only counts; nothing is sealed.
	code, out, errOut = runSubmitCmd(t, "", "resubmit", "--from-dlq", "--run", "nightly", "--dry-run", "--json")
	if code != 0 || strings.Contains(out, `"runs"`) {
		t.Fatalf("dry run: exit %d, %s%s; want no run sealed", code, out, errOut)
	}
	if d, _, err := st.RunDoneState(ctx, "nightly"); err != nil || d.Sealed != 2 {
		t.Fatalf("run_done after a dry run: %+v, %v; want still sealed twice", d, err)
	}
}

// sweptReceiver starts a worker's sweeper (every 100 ms, stopped when the
// test ends) and a webhook receiver that checks each delivery's signature
// and token; it returns the URL to register (with the token) and the done
// events delivered so far.
func sweptReceiver(t *testing.T, st *audit.Store, js jetstream.JetStream) (string, func() []events.Event) {
	t.Helper()
	ctx := context.Background()
	t.Setenv("EXTRACTQ_WEBHOOK_SECRET", "hook-secret")
	if err := events.Ensure(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	sweeper := &events.Sweeper{Store: st, JS: js, ID: "worker-1", Secret: []byte("hook-secret"), Every: 100 * time.Millisecond}
	sctx, stopSweeper := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); _ = sweeper.Run(sctx) }()
	t.Cleanup(func() { stopSweeper(); <-swept })

	var mu sync.Mutex
	var bodies []events.Event
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify([]byte("hook-secret"), r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderTimestamp), body, time.Now(), time.Minute) != nil ||
			r.URL.Query().Get("token") != "tok-hidden" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var e events.Event
		_ = json.Unmarshal(body, &e)
		mu.Lock()
		bodies = append(bodies, e)
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	return receiver.URL + "/hook?token=tok-hidden", func() []events.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]events.Event(nil), bodies...)
	}
}

// waitDeliveries waits up to 30 s until n done events were delivered.
func waitDeliveries(delivered func() []events.Event, n int) []events.Event {
	deadline := time.Now().Add(30 * time.Second)
	for len(delivered()) < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	return delivered()
}
