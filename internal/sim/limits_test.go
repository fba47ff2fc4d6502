package sim

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
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

// limitStep is one request against a limiter: after advancing the clock,
// ask for one request and tokens tokens.
type limitStep struct {
	advance   time.Duration
	tokens    int
	ok        bool
	remaining int           // of the budget under test, after the step
	reset     time.Duration // until the budget is whole again
	retry     time.Duration // on a refusal
}

// TestLimiterShapesAccounting steps each shape's accounting with a fake
// clock. The clock starts 5 s into a wall-clock minute (fixed windows reset
// at 03:05:00, 55 s later).
func TestLimiterShapesAccounting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits RateLimits
		steps  []limitStep
	}{
		{"token bucket: tokens refill continuously", RateLimits{TokensPerMinute: 1000, Shape: ShapeTokenBucket}, []limitStep{
			{0, 600, true, 400, 36 * time.Second, 0},
			{10 * time.Second, 300, true, 266, 44 * time.Second, 0}, // 400 + 10 s of refill
			{0, 600, false, 266, 44 * time.Second, 20 * time.Second},
			{50 * time.Second, 600, true, 400, 36 * time.Second, 0}, // full again: capped at the limit
		}},
		{"sliding window: tokens leave a minute after admission", RateLimits{TokensPerMinute: 1000, Shape: ShapeSlidingWindow}, []limitStep{
			{0, 600, true, 400, time.Minute, 0},
			{10 * time.Second, 300, true, 100, time.Minute, 0},
			{0, 600, false, 100, time.Minute, 50 * time.Second}, // when the 600 leave
			{50*time.Second - time.Millisecond, 600, false, 100, 10*time.Second + time.Millisecond, time.Millisecond},
			{time.Millisecond, 600, true, 100, time.Minute, 0},
			{10 * time.Second, 500, false, 400, 50 * time.Second, 50 * time.Second}, // the 300 left; 100 more must
		}},
		{"fixed window: tokens reset on the minute", RateLimits{TokensPerMinute: 1000, Shape: ShapeFixedWindow}, []limitStep{
			{0, 600, true, 400, 55 * time.Second, 0},
			{10 * time.Second, 300, true, 100, 45 * time.Second, 0},
			{0, 600, false, 100, 45 * time.Second, 45 * time.Second},
			{45*time.Second - time.Millisecond, 600, false, 100, time.Millisecond, time.Millisecond},
			{time.Millisecond, 600, true, 400, time.Minute, 0},
			{60*time.Second - time.Millisecond, 400, true, 0, time.Millisecond, 0},
			{time.Millisecond, 1000, true, 0, time.Minute, 0}, // 1,400 tokens in 1 ms across the boundary
		}},
		// A minute's burst at once, then one more a second later: a token
		// bucket forgives it, the windows do not.
		{"token bucket: burst then continue", RateLimits{RequestsPerMinute: 3, Shape: ShapeTokenBucket}, []limitStep{
			{0, 1, true, 2, 20 * time.Second, 0},
			{0, 1, true, 1, 40 * time.Second, 0},
			{0, 1, true, 0, time.Minute, 0},
			{20 * time.Second, 1, true, 0, time.Minute, 0},
		}},
		{"sliding window: burst then continue", RateLimits{RequestsPerMinute: 3, Shape: ShapeSlidingWindow}, []limitStep{
			{0, 1, true, 2, time.Minute, 0},
			{0, 1, true, 1, time.Minute, 0},
			{0, 1, true, 0, time.Minute, 0},
			{20 * time.Second, 1, false, 0, 40 * time.Second, 40 * time.Second},
			{40 * time.Second, 1, true, 2, time.Minute, 0}, // all three left together
		}},
		{"fixed window: burst then continue", RateLimits{RequestsPerMinute: 3, Shape: ShapeFixedWindow}, []limitStep{
			{0, 1, true, 2, 55 * time.Second, 0},
			{0, 1, true, 1, 55 * time.Second, 0},
			{0, 1, true, 0, 55 * time.Second, 0},
			{20 * time.Second, 1, false, 0, 35 * time.Second, 35 * time.Second},
			{35 * time.Second, 1, true, 2, time.Minute, 0},
		}},
		{"default shape is the token bucket", RateLimits{RequestsPerMinute: 3}, []limitStep{
			{0, 1, true, 2, 20 * time.Second, 0},
			{0, 1, true, 1, 40 * time.Second, 0},
			{0, 1, true, 0, time.Minute, 0},
			{20 * time.Second, 1, true, 0, time.Minute, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			l := newLimiter(tc.limits, now)
			for i, s := range tc.steps {
				now = now.Add(s.advance)
				st, ok := l.take(now, s.tokens)
				rem, reset := st.remReqs, st.resetReqs
				if tc.limits.TokensPerMinute > 0 {
					rem, reset = st.remToks, st.resetTs
				}
				if ok != s.ok || rem != s.remaining || reset != s.reset || st.retryAfter != s.retry {
					t.Fatalf("step %d: ok %v remaining %d reset %v retry %v; want ok %v remaining %d reset %v retry %v",
						i, ok, rem, reset, st.retryAfter, s.ok, s.remaining, s.reset, s.retry)
				}
			}
		})
	}
}

// TestFillLimits: a filled budget admits traffic at exactly the limit and
// nothing faster, whatever the shape, and a fixed window has used the part
// of the limit its minute has run.
func TestFillLimits(t *testing.T) {
	t.Parallel()
	for _, shape := range LimiterShapes() {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			// 30 s into a minute, so the fixed window has used half.
			now := time.Date(2026, 1, 2, 3, 4, 30, 0, time.UTC)
			l := newLimiter(RateLimits{RequestsPerMinute: 60, TokensPerMinute: 6000, Shape: shape}, now)
			l.fill(now)
			st := l.peek(now)
			wantRem := 0
			if shape == ShapeFixedWindow {
				wantRem = 30
			}
			if st.remReqs != wantRem || st.remToks != wantRem*100 {
				t.Fatalf("after fill: remaining %d requests and %d tokens, want %d and %d", st.remReqs, st.remToks, wantRem, wantRem*100)
			}
			if shape == ShapeFixedWindow {
				return
			}
			// One request of 100 tokens a second is exactly the limit: each
			// fits when it is due, never a millisecond before.
			for i := range 90 {
				now = now.Add(time.Second - time.Millisecond)
				if _, ok := l.take(now, 100); ok {
					t.Fatalf("request %d admitted a millisecond early", i)
				}
				now = now.Add(time.Millisecond)
				if st, ok := l.take(now, 100); !ok {
					t.Fatalf("request %d refused at the limit's pace: %+v", i, st)
				}
			}
		})
	}
}

func TestSlidingWindowOverHTTP(t *testing.T) {
	t.Parallel()
	_, raw := invoiceSchema(t)
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := New(mustProfile(t, "rate_limits: {requests_per_minute: 2, shape: sliding-window}"), WithClock(clock.now))
	steps := []struct {
		advance   time.Duration
		status    int
		remaining string
		reset     string // x-ratelimit-reset-requests
		retry     string // Retry-After
		retryMs   string
	}{
		{0, 200, "1", "1m0s", "", ""},
		{10 * time.Second, 200, "0", "1m0s", "", ""},
		{0, 429, "0", "1m0s", "50", "50000"},
		{49*time.Second + 500*time.Millisecond, 429, "0", "10.5s", "1", "500"},
		{500 * time.Millisecond, 200, "0", "1m0s", "", ""},
	}
	for i, st := range steps {
		clock.advance(st.advance)
		resp, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
		h := resp.Header
		got := []string{strconv.Itoa(resp.StatusCode), h.Get("x-ratelimit-remaining-requests"), h.Get("x-ratelimit-reset-requests"), h.Get("Retry-After"), h.Get("Retry-After-Ms")}
		want := []string{strconv.Itoa(st.status), st.remaining, st.reset, st.retry, st.retryMs}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: status, remaining, reset, Retry-After, Retry-After-Ms = %q, want %q: %s", i, got, want, body)
		}
		if reset, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset")); err != nil || reset.Sub(clock.now()) > time.Minute || reset.Before(clock.now().Add(-time.Second)) {
			t.Errorf("step %d: anthropic-ratelimit-requests-reset %q (%v)", i, h.Get("anthropic-ratelimit-requests-reset"), err)
		}
	}
	if st := s.Stats(); st.RateLimited != 2 || st.ByStatus[200] != 3 {
		t.Errorf("stats = %+v", st)
	}
}

func TestLimiterShapeProfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		yaml    string
		wantErr string
	}{
		{"rate_limits: {requests_per_minute: 5, shape: fixed-window}", ""},
		{"rate_limits: {requests_per_minute: 5, shape: token-bucket}", ""},
		{"rate_limits: {requests_per_minute: 5, shape: leaky}", "rate_limits.shape"},
	}
	for _, tc := range tests {
		_, err := ParseProfile([]byte(tc.yaml))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidProfile)):
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.wantErr)
		}
	}
}
