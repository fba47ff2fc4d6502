package worker

import (
	"testing"
	"time"
)

// TestKeeperLapsed: a delivery whose in-progress acks could not be sent
// for three progress intervals (the ack wait) may have a twin on another
// worker (TestTwinDeliveriesEndOnce); one kept alive may not.
func TestKeeperLapsed(t *testing.T) {
	t.Parallel()
	const every = time.Minute // far above any scheduling delay of a loaded machine
	now := time.Now()
	for _, tc := range []struct {
		name string
		last time.Time
		gap  time.Duration
		want bool
	}{
		{"kept alive", now, every, false},
		{"stopped since its last ack", now.Add(-4 * every), every, true},
		{"stopped once, awake again", now, 5 * every, true},
		{"just under the ack wait", now.Add(-2 * every), 2 * every, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := &keeper{every: every, last: tc.last, gap: tc.gap}
			if got := k.lapsed(); got != tc.want {
				t.Errorf("lapsed() = %v, want %v", got, tc.want)
			}
		})
	}
}
