package ratelimit

import (
	"errors"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
	"github.com/nats-io/nats.go/jetstream"
)

func TestHourWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type obs struct {
		after time.Duration
		total int64
		want  int64
	}
	tests := []struct {
		name string
		obs  []obs
	}{
		{"younger than an hour counts everything", []obs{{0, 3, 3}, {30 * time.Minute, 5, 5}, {59 * time.Minute, 9, 9}}},
		{"an hour later the old count drops out", []obs{{0, 3, 3}, {30 * time.Minute, 5, 5}, {61 * time.Minute, 9, 6}, {91 * time.Minute, 9, 4}}},
		{"quiet hour is zero", []obs{{0, 7, 7}, {2 * time.Hour, 7, 0}}},
		{"beats within a minute share one sample", []obs{{0, 1, 1}, {10 * time.Second, 2, 2}, {61 * time.Minute, 4, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var w hourWindow
			for i, o := range tc.obs {
				if got := w.observe(t0.Add(o.after), o.total); got != o.want {
					t.Errorf("observation %d (+%s, total %d): last hour %d, want %d", i, o.after, o.total, got, o.want)
				}
			}
			if len(w.samples) > 62 {
				t.Errorf("%d samples kept, want at most one a minute", len(w.samples))
			}
		})
	}
}

// TestHeartbeatCarriesShareAndPause reads a worker's heartbeat from the
// bucket as status does: its share of the fleet limits, the pause after a
// 429 and the 429 count.
func TestHeartbeatCarriesShareAndPause(t *testing.T) {
	t.Parallel()
	s := startNATS(t)
	_, js := connect(t, s)
	p := NewPool("openai:gpt-4o-mini", Limits{Concurrency: 8, RPM: 600}, WithLogger(quiet()))
	w := p.Wrap(&stub{reply: func(int64, llm.Request) (*llm.Response, error) {
		return nil, throttled(llm.ClassRateLimited, llm.RateLimit{RetryAfter: time.Minute})
	}})
	if _, err := w.Chat(t.Context(), llm.Request{}); err == nil {
		t.Fatal("the stub's 429 did not come through")
	}
	join(t, js, "w1", p)
	join(t, js, "w2", NewPool("openai:gpt-4o-mini", Limits{Concurrency: 8, RPM: 600}, WithLogger(quiet())))

	kv, err := js.KeyValue(t.Context(), DefaultMembersBucket)
	if err != nil {
		t.Fatal(err)
	}
	var got Heartbeat
	// Generous: under a loaded -race suite a heartbeat round can take
	// seconds; the loop ends as soon as w1 has seen w2 and shared by it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, err := kv.Get(t.Context(), keyToken("openai:gpt-4o-mini")+"."+keyToken("w1"))
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatal(err)
		}
		if err == nil {
			if got, err = DecodeHeartbeat(e.Value()); err != nil {
				t.Fatal(err)
			}
			if got.Members == 2 && got.Share.Concurrency != 8 { // w1 has seen w2, and its share followed
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("w1's heartbeat never counted two members with its share halved: %+v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Worker != "w1" || got.Pool != "openai:gpt-4o-mini" {
		t.Errorf("heartbeat names %q / %q, want w1 / openai:gpt-4o-mini", got.Worker, got.Pool)
	}
	if got.Share.Concurrency != 4 || got.Share.RPM != 300 {
		t.Errorf("share %+v, want half of concurrency 8 and 600 rpm", got.Share)
	}
	if !got.Paused || got.PauseReason != PauseRateLimited || !got.PausedUntil.After(time.Now()) {
		t.Errorf("pause = %v %q until %s, want paused for the 429's Retry-After", got.Paused, got.PauseReason, got.PausedUntil)
	}
	if got.RateLimited != 1 || got.RateLimitedHour != 1 {
		t.Errorf("429s %d (hour %d), want 1 and 1", got.RateLimited, got.RateLimitedHour)
	}
}
