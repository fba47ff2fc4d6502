package providers

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/llm"
)

// maxHeaderWait caps any wait a header asks for: a malformed or hostile
// value must not park a worker for years (or overflow a time.Duration).
const maxHeaderWait = 24 * time.Hour

// parseRateLimit reads the rate-limit state of any response: Retry-After
// (seconds or HTTP date) and retry-after-ms, OpenAI's
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} and Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
// {limit,remaining,reset}. A malformed field is ignored, never fatal. now is
// the moment the response arrived, for date-valued headers.
func parseRateLimit(h http.Header, now time.Time) llm.RateLimit {
	var rl llm.RateLimit
	rl.RetryAfter = parseRetryAfter(h, now)

	// OpenAI style (also Groq, Together, xAI, vLLM proxies, the simulator).
	if b, ok := parseBucket(h, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", parseResetDuration, now); ok {
		rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests, rl.HasRequests = b.limit, b.remaining, b.reset, true
	}
	if b, ok := parseBucket(h, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", parseResetDuration, now); ok {
		rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens, rl.HasTokens = b.limit, b.remaining, b.reset, true
	}

	// Anthropic style: resets are RFC 3339 instants.
	if !rl.HasRequests {
		if b, ok := parseBucket(h, "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", parseResetInstant, now); ok {
			rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests, rl.HasRequests = b.limit, b.remaining, b.reset, true
		}
	}
	if !rl.HasTokens {
		// tokens-* is Anthropic's most restrictive bucket; without it, the
		// input or output bucket with the least room left is what binds.
		var best bucket
		found := false
		for i, k := range anthropicTokenBuckets {
			b, ok := parseBucket(h, k[0], k[1], k[2], parseResetInstant, now)
			if !ok {
				continue
			}
			if i == 0 { // tokens-*
				best, found = b, true
				break
			}
			if !found || b.remaining < best.remaining {
				best, found = b, true
			}
		}
		if found {
			rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens, rl.HasTokens = best.limit, best.remaining, best.reset, true
		}
	}
	return rl
}

// rateLimitOf is parseRateLimit(h, now()) for the header of a response
// just arrived. A header of a few fields (the simulator's, a local
// server's) is first looked through once for a field parseRateLimit
// reads: without one, the eight look-ups that would each find nothing
// and the clock are skipped. parseRateLimit reads only keys in canonical
// form, each starting with one of rateLimitPrefixes.
func rateLimitOf(h http.Header, now func() time.Time) llm.RateLimit {
	if len(h) <= maxScannedHeader && !hasRateLimitField(h) {
		return llm.RateLimit{}
	}
	return parseRateLimit(h, now())
}

// maxScannedHeader bounds the header rateLimitOf looks through: beyond a
// handful of fields, the walk costs more than the look-ups it saves.
const maxScannedHeader = 8

// rateLimitPrefixes start every key parseRateLimit looks up.
var rateLimitPrefixes = [...]string{"Retry-After", "X-Ratelimit-", "Anthropic-Ratelimit-"}

// hasRateLimitField reports whether a key of h starts with one of
// rateLimitPrefixes.
func hasRateLimitField(h http.Header) bool {
	for k := range h {
		for _, p := range rateLimitPrefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
	}
	return false
}

// anthropicTokenBuckets are the limit, remaining and reset headers of
// Anthropic's tokens, input-tokens and output-tokens buckets, in that
// order.
var anthropicTokenBuckets = [...][3]string{
	{"Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
	{"Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
	{"Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
}

// header is h.Get(key) for a key written in canonical form: Get
// canonicalizes its key, which allocated a dozen strings per response.
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

type bucket struct {
	limit, remaining int
	reset            time.Duration
}

// parseBucket reads one limit/remaining/reset triple. It reports ok when
// "remaining" parsed, since that is what tells "none left" from "unknown";
// limit and reset are best effort.
func parseBucket(h http.Header, limitKey, remainingKey, resetKey string, reset func(string, time.Time) (time.Duration, bool), now time.Time) (bucket, bool) {
	var b bucket
	rem, ok := parseCount(header(h, remainingKey))
	if !ok {
		return b, false
	}
	b.remaining = rem
	if l, ok := parseCount(header(h, limitKey)); ok {
		b.limit = l
	}
	if d, ok := reset(header(h, resetKey), now); ok {
		b.reset = d
	}
	return b, true
}

// parseCount reads a non-negative integer count.
func parseCount(v string) (int, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 0)
	if err != nil || n < 0 {
		return 0, false
	}
	return int(n), true
}

// parseRetryAfter reads retry-after-ms (milliseconds) or Retry-After
// (delta-seconds or an HTTP date). The millisecond form wins: it is the more
// precise of the two when a server sends both.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if d, ok := parseSeconds(header(h, "Retry-After-Ms"), float64(time.Millisecond)); ok {
		return d
	}
	v := strings.TrimSpace(header(h, "Retry-After"))
	if v == "" {
		return 0
	}
	if d, ok := parseSeconds(v, float64(time.Second)); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampWait(t.Sub(now))
	}
	return 0
}

// parseSeconds reads a non-negative decimal number of units.
func parseSeconds(v string, unit float64) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	if f*unit > float64(maxHeaderWait) {
		return maxHeaderWait, true
	}
	return time.Duration(f * unit), true
}

// parseResetDuration reads OpenAI's reset values: Go-style durations such as
// "6m0s", "1s", "20ms", "1h2m3.5s"; a bare number is taken as seconds, as
// some compatible servers send it.
func parseResetDuration(v string, _ time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, ok := parseSeconds(v, float64(time.Second)); ok {
		return d, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false
	}
	return clampWait(d), true
}

// parseResetInstant reads Anthropic's reset values: RFC 3339 instants.
func parseResetInstant(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, false
	}
	return clampWait(t.Sub(now)), true
}

// clampWait bounds a wait to [0, maxHeaderWait]; an instant in the past means
// "now".
func clampWait(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d > maxHeaderWait:
		return maxHeaderWait
	}
	return d
}
