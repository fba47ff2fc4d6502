package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

func TestAnnounceDoneOnceEveryJobIsFinal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if _, err := announceDone(ctx, js, "nightly", waitResult{Total: 1, Done: 1}); err != nil {
		t.Fatalf("without the events stream: %v, want nothing done", err)
	}
	if err := events.Ensure(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	for _, res := range []waitResult{
		{Total: 3, Done: 1, Unfinished: 2, TimedOut: true},
		{Total: 3, Done: 2, Unfinished: 1, Interrupted: true},
		{Total: 3, Done: 2, Failed: 1},
		{Total: 3, Done: 2, Failed: 1}, // re-attached: de-duplicated
	} {
		if _, err := announceDone(ctx, js, "nightly", res); err != nil {
			t.Fatal(err)
		}
	}
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d events, want one done", info.State.Msgs)
	}
	m, err := s.GetLastMsgForSubject(ctx, events.Subject("nightly", events.KindDone))
	if err != nil {
		t.Fatal(err)
	}
	var e events.Event
	if err := json.Unmarshal(m.Data, &e); err != nil || e.Total != 3 || e.OK != 2 || e.Failed != 1 {
		t.Fatalf("done event %s (%v), want totals 3/2/1", m.Data, err)
	}
}

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
		{"no --wait", []string{"--webhook", hook}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), "", 0, "add --wait"},
		{"not http", []string{"--wait", "--webhook", "ftp://x/y"}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), "", 0, "http:// or https://"},
		{"timeout without webhook", []string{"--wait", "--webhook-timeout", "1m"}, env(), "", 0, "--webhook-timeout bounds --webhook"},
		{"timeout zero", []string{"--wait", "--webhook", hook, "--webhook-timeout", "0s"}, env("EXTRACTQ_WEBHOOK_SECRET", "s"), "", 0, "must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := newSubmitCmd()
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			var f submitFlags
			f.wait, _ = cmd.Flags().GetBool("wait")
			f.webhook, _ = cmd.Flags().GetString("webhook")
			f.webhookTimeout = 2 * time.Minute
			if v := cmd.Flag("webhook-timeout"); v.Changed {
				f.webhookTimeout, _ = time.ParseDuration(v.Value.String())
			}
			s, err := webhookSender(cmd.Flags(), &f, c.getenv)
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
