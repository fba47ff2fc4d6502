package providers

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// rateLimitKeys are the keys parseRateLimit looks up, with variants it
// does not find (not canonical, cut short) and keys of other fields.
func rateLimitKeys() []string {
	return append(parsedRateLimitKeys(), "x-ratelimit-remaining-requests", "retry-after", "Retry-After-M", "X-Ratelimit", "Date",
		"Content-Type", "Content-Length", "X-Request-Id", "Anthropic-Ratelimit-Tokens-Remainin")
}

// FuzzRateLimitOf checks that rateLimitOf, which skips parseRateLimit for
// a small header without its fields, reads every header as parseRateLimit
// does: each byte of sel adds a field (its key one of rateLimitKeys), its
// value v or a count.
func FuzzRateLimitOf(f *testing.F) {
	f.Add([]byte{0}, "7")
	f.Add([]byte{26, 27, 28}, "20")
	f.Add([]byte{1, 30}, "")
	f.Add([]byte{9, 10, 200, 201}, "Sun, 22 Nov 2026 03:00:30 GMT")
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "2026-11-22T03:00:10Z")
	keys := rateLimitKeys()
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, sel []byte, v string) {
		h := http.Header{}
		for i, b := range sel {
			val := v
			if b >= 128 {
				val = strconv.Itoa(i)
			}
			k := keys[int(b)%len(keys)]
			h[k] = append(h[k], val)
		}
		want := parseRateLimit(h, now)
		if got := rateLimitOf(h, func() time.Time { return now }); got != want {
			t.Fatalf("%q: rateLimitOf %+v, parseRateLimit %+v", h, got, want)
		}
	})
}

// TestRateLimitOfSkipsPlainHeader: a small header without rate-limit
// fields is not looked up field by field and the clock is not read; one
// with any field parseRateLimit reads is parsed.
func TestRateLimitOfSkipsPlainHeader(t *testing.T) {
	read := 0
	clock := func() time.Time { read++; return time.Unix(1_700_000_000, 0) }
	plain := http.Header{"Content-Type": {"application/json"}, "Content-Length": {"476"}, "Date": {"Fri, 27 Nov 2026 13:11:25 GMT"}}
	if rl := rateLimitOf(plain, clock); rl != (parseRateLimit(plain, clock())) || read != 1 {
		t.Fatalf("plain header: %+v, clock read %d times, want once (by the test)", rl, read)
	}
	for _, k := range rateLimitKeys()[:20] {
		h := http.Header{"Date": {"x"}, k: {"7"}}
		if !hasRateLimitField(h) {
			t.Errorf("%s: not seen as a rate-limit field", k)
		}
	}
}
