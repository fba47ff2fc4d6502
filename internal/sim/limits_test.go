package sim

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests step by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestRequestRateLimit(t *testing.T) {
	_, raw := invoiceSchema(t)
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := New(mustProfile(t, "rate_limits: {requests_per_minute: 2}"), WithClock(clock.now))

	type want struct {
		status    int
		remaining string
		retry     string // Retry-After, "" for none
	}
	steps := []struct {
		advance time.Duration
		want    want
	}{
		{0, want{200, "1", ""}},
		{0, want{200, "0", ""}},
		{0, want{429, "0", "30"}}, // one request refills in 60s/2
		{20 * time.Second, want{429, "0", "10"}},
		{10 * time.Second, want{200, "0", ""}},
	}
	for i, st := range steps {
		clock.advance(st.advance)
		resp, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
		h := resp.Header
		if resp.StatusCode != st.want.status {
			t.Fatalf("step %d: status %d, want %d: %s", i, resp.StatusCode, st.want.status, body)
		}
		if got := h.Get("x-ratelimit-limit-requests"); got != "2" {
			t.Errorf("step %d: x-ratelimit-limit-requests %q", i, got)
		}
		if got := h.Get("x-ratelimit-remaining-requests"); got != st.want.remaining {
			t.Errorf("step %d: x-ratelimit-remaining-requests %q, want %q", i, got, st.want.remaining)
		}
		if got := h.Get("anthropic-ratelimit-requests-remaining"); got != st.want.remaining {
			t.Errorf("step %d: anthropic-ratelimit-requests-remaining %q, want %q", i, got, st.want.remaining)
		}
		if reset, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset")); err != nil || reset.Before(clock.now()) {
			t.Errorf("step %d: anthropic-ratelimit-requests-reset %q (%v)", i, h.Get("anthropic-ratelimit-requests-reset"), err)
		}
		if _, err := time.ParseDuration(h.Get("x-ratelimit-reset-requests")); err != nil {
			t.Errorf("step %d: x-ratelimit-reset-requests %q: %v", i, h.Get("x-ratelimit-reset-requests"), err)
		}
		if got := h.Get("Retry-After"); got != st.want.retry {
			t.Errorf("step %d: Retry-After %q, want %q", i, got, st.want.retry)
		}
		if st.want.status == 429 {
			m := obj(t, body)
			if dig(m, "error", "code") != "rate_limit_exceeded" || dig(m, "error", "type") != "requests" {
				t.Errorf("step %d: 429 body %s", i, body)
			}
		}
	}
	if st := s.Stats(); st.RateLimited != 2 || st.ByStatus[429] != 2 || st.ByStatus[200] != 3 {
		t.Errorf("stats = %+v", st)
	}
}

func TestTokenRateLimitAcrossRoutes(t *testing.T) {
	_, raw := invoiceSchema(t)
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := New(mustProfile(t, "rate_limits: {tokens_per_minute: 1500}"), WithClock(clock.now))
	prompt := promptWithSchema(raw, testDoc)

	resp, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
	if resp.StatusCode != 200 {
		t.Fatalf("first request: %d %s", resp.StatusCode, body)
	}
	used := int(dig(obj(t, body), "usage", "total_tokens").(float64))
	if got := resp.Header.Get("x-ratelimit-remaining-tokens"); got != strconv.Itoa(1500-used) {
		t.Errorf("x-ratelimit-remaining-tokens %q, want %d", got, 1500-used)
	}
	// Each request costs about 660 tokens: the second fits, the third
	// does not, whatever route it takes.
	resp, _ = call(t, s, "/api/chat", map[string]any{"model": "m", "stream": false, "messages": []any{map[string]any{"role": "user", "content": prompt}}})
	if resp.StatusCode != 200 {
		t.Fatalf("second request: %d", resp.StatusCode)
	}
	tests := []struct {
		path  string
		body  any
		check func(map[string]any) bool
	}{
		{"/v1/messages", map[string]any{"model": "c", "max_tokens": 4096, "messages": []any{map[string]any{"role": "user", "content": prompt}}},
			func(m map[string]any) bool { return dig(m, "error", "type") == "rate_limit_error" }},
		{"/v1beta/models/g:generateContent", map[string]any{"contents": []any{map[string]any{"parts": []any{map[string]any{"text": prompt}}}}},
			func(m map[string]any) bool {
				return dig(m, "error", "status") == "RESOURCE_EXHAUSTED" && dig(m, "error", "details", 0, "retryDelay") != nil
			}},
		{"/v1/chat/completions", openAIChat(raw, testDoc),
			func(m map[string]any) bool { return dig(m, "error", "type") == "tokens" }},
	}
	for _, tt := range tests {
		resp, body := call(t, s, tt.path, tt.body)
		if resp.StatusCode != http.StatusTooManyRequests || !tt.check(obj(t, body)) {
			t.Errorf("%s: status %d body %s, want a 429 in the API's shape", tt.path, resp.StatusCode, body)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
			t.Errorf("%s: Retry-After %q", tt.path, resp.Header.Get("Retry-After"))
		}
	}
}

func TestRequestLargerThanTheTokenBudget(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(mustProfile(t, "rate_limits: {tokens_per_minute: 100}"))
	resp, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" {
		t.Errorf("status %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestNoRateLimitHeadersWithoutLimits(t *testing.T) {
	_, raw := invoiceSchema(t)
	resp, _ := call(t, New(builtins["clean"]), "/v1/chat/completions", openAIChat(raw, testDoc))
	for k := range resp.Header {
		if len(k) > 11 && (k[:11] == "X-Ratelimit" || k[:11] == "Anthropic-R") {
			t.Errorf("unexpected header %s without limits", k)
		}
	}
}
