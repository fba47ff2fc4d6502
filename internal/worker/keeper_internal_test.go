package worker

import (
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
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
			k := &keeper{set: &keepers{}, every: every, last: tc.last, gap: tc.gap}
			if got := k.lapsed(); got != tc.want {
				t.Errorf("lapsed() = %v, want %v", got, tc.want)
			}
		})
	}
}

// progressMsg counts in-progress acks; the rest of jetstream.Msg is not used.
type progressMsg struct {
	jetstream.Msg
	acks atomic.Int32
}

func (m *progressMsg) InProgress() error { m.acks.Add(1); return nil }

// BenchmarkKeepAlive is a job's keep-alive started and stopped before its
// first in-progress ack is due: what nearly every document costs.
func BenchmarkKeepAlive(b *testing.B) {
	w := &Worker{consumer: jobs.ConsumerSettings{AckWait: 30 * time.Second}}
	d := &delivery{msg: &progressMsg{}, log: slog.New(slog.DiscardHandler)}
	b.ReportAllocs()
	for b.Loop() {
		d.started = time.Now()
		w.keepAlive(d).stop()
	}
}

// TestKeepersShareOneTimer: jobs of workers with different progress
// intervals, started at different times, each get an in-progress ack about
// every interval (never three intervals without one), and none after stop.
func TestKeepersShareOneTimer(t *testing.T) {
	s := &keepers{}
	log := slog.New(slog.DiscardHandler)
	var ks [3]keeper
	var msgs [3]progressMsg
	for i, every := range []time.Duration{40 * time.Millisecond, 100 * time.Millisecond, 40 * time.Millisecond} {
		ks[i] = keeper{msg: &msgs[i], log: log, every: every, last: time.Now()}
		s.start(&ks[i])
		time.Sleep(15 * time.Millisecond)
	}
	ks[2].stop() // before its first ack was due
	time.Sleep(500 * time.Millisecond)
	for i := range ks {
		ks[i].stop()
	}
	sent := [3]int32{msgs[0].acks.Load(), msgs[1].acks.Load(), msgs[2].acks.Load()}
	time.Sleep(150 * time.Millisecond)
	for i := range ks {
		if got := msgs[i].acks.Load(); got != sent[i] {
			t.Errorf("job %d: %d in-progress acks after stop", i, got-sent[i])
		}
		if ks[i].gap >= 3*ks[i].every {
			t.Errorf("job %d lapsed: longest gap between in-progress acks %v, every %v", i, ks[i].gap, ks[i].every)
		}
	}
	if sent[0] < 5 || sent[1] < 2 || sent[2] != 0 {
		t.Errorf("in-progress acks sent = %v, want at least 5 (every 40ms), 2 (every 100ms), none (stopped at once)", sent)
	}
	if len(s.jobs) != 0 {
		t.Errorf("%d keepers left in the set after stop", len(s.jobs))
	}
}

// TestKeepAliveAllocs: a job's keep-alive, started and stopped, allocates
// nothing (it was a keeper and a timer per job: 3 allocations).
func TestKeepAliveAllocs(t *testing.T) {
	w := &Worker{consumer: jobs.ConsumerSettings{AckWait: 30 * time.Second}}
	d := &delivery{msg: &progressMsg{}, log: slog.New(slog.DiscardHandler), started: time.Now()}
	if n := testing.AllocsPerRun(100, func() { w.keepAlive(d).stop() }); n != 0 {
		t.Errorf("keep-alive start and stop: %v allocations, want 0", n)
	}
}
