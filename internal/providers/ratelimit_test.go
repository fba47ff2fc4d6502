package providers

import (
	"net/http"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

func TestParseRateLimit(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		hdr  map[string]string
		want llm.RateLimit
	}{
		{"none", nil, llm.RateLimit{}},
		{"retry-after seconds", map[string]string{"Retry-After": "20"}, llm.RateLimit{RetryAfter: 20 * time.Second}},
		{"retry-after fractional seconds", map[string]string{"Retry-After": "1.5"}, llm.RateLimit{RetryAfter: 1500 * time.Millisecond}},
		{"retry-after http date", map[string]string{"Retry-After": "Sun, 22 Nov 2026 03:00:30 GMT"}, llm.RateLimit{RetryAfter: 30 * time.Second}},
		{"retry-after date in the past", map[string]string{"Retry-After": "Sun, 22 Nov 2026 02:59:00 GMT"}, llm.RateLimit{}},
		{"retry-after-ms wins", map[string]string{"Retry-After": "2", "retry-after-ms": "1234"}, llm.RateLimit{RetryAfter: 1234 * time.Millisecond}},
		{"retry-after absurd is capped", map[string]string{"Retry-After": "99999999999999999999"}, llm.RateLimit{RetryAfter: maxHeaderWait}},
		{"retry-after negative ignored", map[string]string{"Retry-After": "-5"}, llm.RateLimit{}},
		{"retry-after garbage ignored", map[string]string{"Retry-After": "soon"}, llm.RateLimit{}},
		{"retry-after NaN ignored", map[string]string{"Retry-After": "NaN"}, llm.RateLimit{}},
		{"retry-after Inf ignored", map[string]string{"Retry-After": "+Inf"}, llm.RateLimit{}},
		{"bad ms falls back to seconds", map[string]string{"Retry-After": "3", "retry-after-ms": "x"}, llm.RateLimit{RetryAfter: 3 * time.Second}},
		{
			"openai full",
			map[string]string{
				"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499", "x-ratelimit-reset-requests": "120ms",
				"x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "29000", "x-ratelimit-reset-tokens": "6m0s",
			},
			llm.RateLimit{LimitRequests: 500, RemainingRequests: 499, ResetRequests: 120 * time.Millisecond, HasRequests: true,
				LimitTokens: 30000, RemainingTokens: 29000, ResetTokens: 6 * time.Minute, HasTokens: true},
		},
		{
			"openai composite duration",
			map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1h2m3.5s"},
			llm.RateLimit{ResetTokens: time.Hour + 2*time.Minute + 3500*time.Millisecond, HasTokens: true},
		},
		{
			"openai remaining zero is reported",
			map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"},
			llm.RateLimit{ResetRequests: time.Second, HasRequests: true},
		},
		{
			"openai bare seconds reset",
			map[string]string{"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "2.5"},
			llm.RateLimit{RemainingRequests: 3, ResetRequests: 2500 * time.Millisecond, HasRequests: true},
		},
		{
			"openai malformed values ignored",
			map[string]string{
				"x-ratelimit-limit-requests": "lots", "x-ratelimit-remaining-requests": "-1", "x-ratelimit-reset-requests": "6 minutes",
				"x-ratelimit-limit-tokens": "1e9", "x-ratelimit-remaining-tokens": "12", "x-ratelimit-reset-tokens": "-3s",
			},
			llm.RateLimit{RemainingTokens: 12, HasTokens: true},
		},
		{
			"openai overflowing count ignored",
			map[string]string{"x-ratelimit-remaining-tokens": "999999999999999999999999"},
			llm.RateLimit{},
		},
		{
			"anthropic requests and tokens",
			map[string]string{
				"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
				"anthropic-ratelimit-requests-reset": "2026-11-22T03:00:10Z",
				"anthropic-ratelimit-tokens-limit":   "80000", "anthropic-ratelimit-tokens-remaining": "70000",
				"anthropic-ratelimit-tokens-reset": "2026-11-22T03:01:00.5Z",
				"retry-after":                      "7",
			},
			llm.RateLimit{RetryAfter: 7 * time.Second, LimitRequests: 50, RemainingRequests: 49, ResetRequests: 10 * time.Second, HasRequests: true,
				LimitTokens: 80000, RemainingTokens: 70000, ResetTokens: 60500 * time.Millisecond, HasTokens: true},
		},
		{
			"anthropic input/output: most restrictive binds",
			map[string]string{
				"anthropic-ratelimit-input-tokens-limit": "40000", "anthropic-ratelimit-input-tokens-remaining": "39000",
				"anthropic-ratelimit-input-tokens-reset":  "2026-11-22T03:00:01Z",
				"anthropic-ratelimit-output-tokens-limit": "8000", "anthropic-ratelimit-output-tokens-remaining": "100",
				"anthropic-ratelimit-output-tokens-reset": "2026-11-22T03:00:05+00:00",
			},
			llm.RateLimit{LimitTokens: 8000, RemainingTokens: 100, ResetTokens: 5 * time.Second, HasTokens: true},
		},
		{
			"anthropic reset in another zone",
			map[string]string{"anthropic-ratelimit-requests-remaining": "1", "anthropic-ratelimit-requests-reset": "2026-11-22T04:00:02+01:00"},
			llm.RateLimit{RemainingRequests: 1, ResetRequests: 2 * time.Second, HasRequests: true},
		},
		{
			"anthropic malformed reset ignored",
			map[string]string{"anthropic-ratelimit-requests-remaining": "5", "anthropic-ratelimit-requests-reset": "tomorrow", "anthropic-ratelimit-requests-limit": ""},
			llm.RateLimit{RemainingRequests: 5, HasRequests: true},
		},
		{
			"anthropic past reset is now",
			map[string]string{"anthropic-ratelimit-tokens-remaining": "5", "anthropic-ratelimit-tokens-reset": "2020-01-01T00:00:00Z"},
			llm.RateLimit{RemainingTokens: 5, HasTokens: true},
		},
		{
			"openai headers win over anthropic ones",
			map[string]string{"x-ratelimit-remaining-requests": "7", "anthropic-ratelimit-requests-remaining": "9"},
			llm.RateLimit{RemainingRequests: 7, HasRequests: true},
		},
		{"empty values", map[string]string{"Retry-After": "", "x-ratelimit-remaining-requests": " "}, llm.RateLimit{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.hdr {
				h.Set(k, v)
			}
			if got := parseRateLimit(h, now); got != tc.want {
				t.Errorf("parseRateLimit:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseRateLimit checks that no header value crashes the parser or
// yields a negative or unbounded wait.
func FuzzParseRateLimit(f *testing.F) {
	for _, s := range []string{"20", "6m0s", "2026-11-22T03:00:10Z", "Sun, 22 Nov 2026 03:00:30 GMT", "-1", "1e400", "NaN", ""} {
		f.Add(s)
	}
	keys := []string{"Retry-After", "retry-after-ms", "x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens",
		"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-requests-remaining"}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		for _, k := range keys {
			h.Set(k, v)
		}
		rl := parseRateLimit(h, time.Unix(1_700_000_000, 0))
		for _, d := range []time.Duration{rl.RetryAfter, rl.ResetRequests, rl.ResetTokens} {
			if d < 0 || d > maxHeaderWait {
				t.Fatalf("wait %v out of [0, %v] for %q", d, maxHeaderWait, v)
			}
		}
		if rl.RemainingRequests < 0 || rl.RemainingTokens < 0 {
			t.Fatalf("negative remaining for %q", v)
		}
	})
}

// TestRateLimitHeadersCanonical guards header(): it finds only keys
// written in canonical form, as the transport stores them.
func TestRateLimitHeadersCanonical(t *testing.T) {
	t.Parallel()
	for _, k := range parsedRateLimitKeys() {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("header key %q is not canonical: want %q", k, c)
		}
	}
}

// parsedRateLimitKeys are the header keys parseRateLimit looks up.
func parsedRateLimitKeys() []string {
	keys := []string{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests",
		"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens",
		"Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset",
		"Retry-After-Ms", "Retry-After"}
	for _, b := range anthropicTokenBuckets {
		keys = append(keys, b[:]...)
	}
	return keys
}
