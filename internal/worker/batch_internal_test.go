package worker

import (
	"errors"
	"testing"

	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/llm"
)

// TestPollHealth: a batch pool's poll results drive its poll circuit: a
// refused key or a spent quota opens it at once with that reason, other
// failures only once they are Failures in a row (an outage), and an
// answered poll closes it.
func TestPollHealth(t *testing.T) {
	t.Parallel()
	auth := &llm.Error{Class: llm.ClassAuth, Status: 401, Message: "bad key"}
	quota := &llm.Error{Class: llm.ClassQuota, Status: 429, Message: "quota spent"}
	server := &llm.Error{Class: llm.ClassServer, Status: 500, Message: "oops"}
	tests := []struct {
		name  string
		polls []error
		state ratelimit.CircuitState
		why   string
	}{
		{name: "answered", polls: []error{nil}, state: ratelimit.CircuitClosed},
		{name: "key refused", polls: []error{auth}, state: ratelimit.CircuitOpen, why: ratelimit.PauseKey},
		{name: "key refused again", polls: []error{auth, auth}, state: ratelimit.CircuitOpen, why: ratelimit.PauseKey},
		{name: "quota spent", polls: []error{quota}, state: ratelimit.CircuitOpen, why: ratelimit.PauseQuota},
		{name: "one server error", polls: []error{server}, state: ratelimit.CircuitClosed},
		{name: "server errors in a row", polls: []error{server, errors.New("connection reset")}, state: ratelimit.CircuitOpen, why: ratelimit.PauseOutage},
		{name: "server errors with an answer between", polls: []error{server, nil, server}, state: ratelimit.CircuitClosed},
		{name: "answered after a refused key", polls: []error{auth, nil}, state: ratelimit.CircuitClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := ratelimit.NewBreaker("p", PollCircuitReason, ratelimit.BreakerSettings{Failures: 2}, ratelimit.WithPauseReason(ratelimit.PauseOutage))
			report := pollHealth(c)
			for _, err := range tc.polls {
				report(err)
			}
			if s := c.Snapshot(); c.State() != tc.state || s.PauseReason != tc.why {
				t.Errorf("after %v: %s, paused for %q; want %s, %q", tc.polls, s.State, s.PauseReason, tc.state, tc.why)
			}
		})
	}
}
