package main

import (
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/sim"
)

func TestSimServeLimiterFlag(t *testing.T) {
	t.Parallel()
	code, _, stderr := runRoot(t, "", "sim", "serve", "--addr", "127.0.0.1:0", "--profile", "rate-limited", "--limiter", "leaky")
	if code != 2 || !strings.Contains(stderr, "--limiter") || !strings.Contains(stderr, sim.ShapeSlidingWindow) {
		t.Fatalf("exit %d, stderr %q; want a usage error naming --limiter and the shapes", code, stderr)
	}
	tests := []struct {
		rl   sim.RateLimits
		want string
	}{
		{sim.RateLimits{}, ""},
		{sim.RateLimits{RequestsPerMinute: 60}, ", rate limits counted as a token-bucket"},
		{sim.RateLimits{TokensPerMinute: 600, Shape: sim.ShapeSlidingWindow}, ", rate limits counted as a sliding-window"},
	}
	for _, tc := range tests {
		if got := limiterNote(sim.Profile{RateLimits: tc.rl}); got != tc.want {
			t.Errorf("limiterNote(%+v) = %q, want %q", tc.rl, got, tc.want)
		}
	}
}
