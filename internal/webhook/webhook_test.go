package webhook_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/webhook"
)

var secret = []byte("s3cret")

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"kind":"done","run":"nightly"}`)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := webhook.Sign(secret, ts, body)
	for _, c := range []struct {
		name   string
		secret []byte
		ts     string
		body   []byte
		at     time.Time
		want   error
	}{
		{"right secret", secret, ts, body, now, nil},
		{"within tolerance", secret, ts, body, now.Add(4 * time.Minute), nil},
		{"other secret", []byte("other"), ts, body, now, webhook.ErrBadSignature},
		{"body changed", secret, ts, []byte(`{"kind":"done","run":"other"}`), now, webhook.ErrBadSignature},
		{"timestamp changed", secret, strconv.FormatInt(now.Unix()+600, 10), body, now, webhook.ErrBadSignature},
		{"replayed later", secret, ts, body, now.Add(6 * time.Minute), webhook.ErrStale},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := webhook.Verify(c.secret, sig, c.ts, c.body, c.at, 5*time.Minute)
			if !errors.Is(err, c.want) {
				t.Errorf("Verify: %v, want %v", err, c.want)
			}
		})
	}
	// What doc/etl.md says is signed, computed independently (its Python
	// snippet): HMAC-SHA256(secret, timestamp + "." + body).
	if want := "sha256=32c42e90bba1e164cce952ed9a74fc5369cb98248d17bc947e9e7435a66c1fb0"; sig != want {
		t.Errorf("signature %q, want %q (the documented format)", sig, want)
	}
}

// fakeClock advances only when the sender sleeps, and records the waits.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

// receiver answers the scripted responses in turn (the last one
// forever) and checks each request's signature with secret.
type receiver struct {
	t       *testing.T
	clock   *fakeClock
	script  []response
	mu      sync.Mutex
	n       int
	ids     map[string]bool
	badSigs int
}

type response struct {
	status     int
	retryAfter string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := webhook.Verify(secret, r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderTimestamp), body, rc.clock.Now(), 5*time.Minute); err != nil {
		rc.badSigs++
	}
	if r.Header.Get(webhook.HeaderEvent) != "done" || r.Method != http.MethodPost || string(body) != `{"kind":"done"}` {
		rc.t.Errorf("request %s event %q body %s", r.Method, r.Header.Get(webhook.HeaderEvent), body)
	}
	if rc.ids == nil {
		rc.ids = map[string]bool{}
	}
	rc.ids[r.Header.Get(webhook.HeaderDelivery)] = true
	resp := rc.script[min(rc.n, len(rc.script)-1)]
	rc.n++
	if resp.retryAfter != "" {
		w.Header().Set("Retry-After", resp.retryAfter)
	}
	w.WriteHeader(resp.status)
}

func TestSendRetries(t *testing.T) {
	t.Parallel()
	store, _ := audittest.Store(t)
	log := webhook.LogFunc(func(ctx context.Context, a webhook.Attempt) error {
		return store.RecordWebhookAttempt(ctx, audit.WebhookAttempt(a))
	})
	for _, c := range []struct {
		name      string
		script    []response
		timeout   time.Duration
		delivered bool
		statuses  []int
		waits     []time.Duration
	}{
		{"503 twice then 200", []response{{503, ""}, {503, ""}, {200, ""}}, 0, true,
			[]int{503, 503, 200}, []time.Duration{500 * time.Millisecond, time.Second}}, // jitter 0: the lower half's start
		{"400 is not retried", []response{{400, ""}, {200, ""}}, 0, false, []int{400}, nil},
		{"301 is not followed or retried", []response{{301, ""}, {200, ""}}, 0, false, []int{301}, nil},
		{"429 Retry-After seconds", []response{{429, "7"}, {200, ""}}, 0, true, []int{429, 200}, []time.Duration{7 * time.Second}},
		{"503 Retry-After date", []response{{503, "Wed, 01 Jan 2031 00:00:42 GMT"}, {200, ""}}, 0, true, []int{503, 200}, []time.Duration{42 * time.Second}},
		{"Retry-After past the limit", []response{{429, "600"}, {200, ""}}, time.Minute, false, []int{429}, nil},
		{"always 500 until the limit", []response{{500, ""}}, 10 * time.Second, false,
			[]int{500, 500, 500, 500, 500}, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)}
			rc := &receiver{t: t, clock: clock, script: c.script}
			srv := httptest.NewServer(rc)
			t.Cleanup(srv.Close)
			run := "run-" + strings.ReplaceAll(c.name, " ", "-")
			s := &webhook.Sender{URL: srv.URL + "/hook", Secret: secret, Timeout: c.timeout, Log: log,
				Now: clock.Now, Sleep: clock.Sleep, Jitter: func() float64 { return 0 }}
			res := s.Send(t.Context(), run, "done", []byte(`{"kind":"done"}`))
			if res.Delivered != c.delivered || res.Attempts != len(c.statuses) || res.LastStatus != c.statuses[len(c.statuses)-1] || res.LogError != "" {
				t.Fatalf("result %+v: want delivered %v after %d tries", res, c.delivered, len(c.statuses))
			}
			if c.delivered != (res.Error == "") {
				t.Errorf("error %q with delivered %v", res.Error, res.Delivered)
			}
			if !slices.Equal(clock.waits, c.waits) {
				t.Errorf("waited %v, want %v", clock.waits, c.waits)
			}
			if rc.badSigs != 0 || len(rc.ids) != 1 || !rc.ids[res.DeliveryID] {
				t.Errorf("%d bad signatures, delivery ids %v (want only %s)", rc.badSigs, rc.ids, res.DeliveryID)
			}
			rows, err := store.WebhookAttempts(t.Context(), run)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(c.statuses) {
				t.Fatalf("log holds %d tries, want %d: %+v", len(rows), len(c.statuses), rows)
			}
			for i, r := range rows {
				if r.Attempt != i+1 || r.StatusCode != c.statuses[i] || r.DeliveryID != res.DeliveryID || r.URL != srv.URL+"/hook" || r.Event != "done" {
					t.Errorf("log row %d: %+v", i, r)
				}
				if ok := r.StatusCode < 300; ok != (r.Error == "") {
					t.Errorf("log row %d: status %d with error %q", i, r.StatusCode, r.Error)
				}
			}
		})
	}
}

// A URL's credentials and query never reach the log, the result or its
// error: neither from a receiver's answer nor from a network error (whose
// *url.Error quotes the URL).
func TestCredentialsNotLeaked(t *testing.T) {
	t.Parallel()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(failing.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, c := range []struct{ name, base string }{{"503", failing.URL}, {"connection refused", closed.URL}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			u, _ := url.Parse(c.base + "/hook?token=tok-SECRET#frag")
			u.User = url.UserPassword("alice", "pw-SECRET")
			var mu sync.Mutex
			var logged []webhook.Attempt
			clock := &fakeClock{now: time.Unix(1_900_000_000, 0)}
			s := &webhook.Sender{URL: u.String(), Secret: secret, Timeout: 3 * time.Second, Now: clock.Now, Sleep: clock.Sleep,
				Log: webhook.LogFunc(func(_ context.Context, a webhook.Attempt) error {
					mu.Lock()
					defer mu.Unlock()
					logged = append(logged, a)
					return nil
				})}
			res := s.Send(t.Context(), "r", "done", []byte(`{}`))
			if res.Delivered || res.Attempts < 2 || len(logged) != res.Attempts {
				t.Fatalf("result %+v, %d logged: want retried and not delivered", res, len(logged))
			}
			texts := []string{res.Error}
			for _, a := range logged {
				texts = append(texts, a.URL, a.Error)
				if a.URL != c.base+"/hook" {
					t.Errorf("logged URL %q, want %q", a.URL, c.base+"/hook")
				}
			}
			for _, s := range texts {
				if strings.Contains(s, "SECRET") || strings.Contains(s, "alice") {
					t.Errorf("credentials leaked: %q", s)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/x", true},
		{"http://127.0.0.1:9/x", true},
		{"ftp://example.com/x", false},
		{"/relative", false},
		{"https://u:pw-SECRET@/nohost", false},
	} {
		err := webhook.Check(c.url)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q): %v", c.url, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Check(%q) leaks the password: %v", c.url, err)
		}
	}
}
