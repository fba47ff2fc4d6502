package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

// electing is a JetStream whose consumer creation answers as a cluster
// without a leader does (a timeout) for its first fails calls, or always
// when fails is negative.
type electing struct {
	jetstream.JetStream
	fails int32
	calls atomic.Int32
}

func (e *electing) CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	if n := e.calls.Add(1); e.fails < 0 || n <= e.fails {
		return nil, context.DeadlineExceeded
	}
	return e.JetStream.CreateOrUpdateConsumer(ctx, stream, cfg)
}

// TestStartConsumer: a worker's start-up waits out a cluster that cannot
// create the pool's consumer yet, uses the consumer `submit` or `worker
// migrate` made when the update keeps failing, gives up only when its
// context ends (saying what it tried), and does not retry a missing stream.
func TestStartConsumer(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name     string
		fails    int32
		existing bool // the pool's consumer exists already
		noStream bool
		within   time.Duration
		calls    int32  // create calls made, 0 to skip
		err      string // "" for success
	}{
		{name: "election over after two tries", fails: 2, within: 30 * time.Second, calls: 3},
		{name: "never answers, consumer exists", fails: -1, existing: true, within: 30 * time.Second, calls: 1},
		{name: "never answers, no consumer", fails: -1, within: 1500 * time.Millisecond, err: "gave up after"},
		{name: "no stream", noStream: true, within: 30 * time.Second, calls: 1, err: "worker migrate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, js := jobstest.Connect(t, jobstest.Server(t))
			if !tc.noStream {
				if err := jobs.EnsureStreams(t.Context(), js, jobs.WithMemoryStorage()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.existing {
				if err := jobs.EnsurePoolConsumer(t.Context(), js, "p", jobs.DefaultConsumerSettings()); err != nil {
					t.Fatal(err)
				}
			}
			e := &electing{JetStream: js, fails: tc.fails}
			ctx, cancel := context.WithTimeout(t.Context(), tc.within)
			defer cancel()
			c, err := jobs.StartConsumer(ctx, e, "p", jobs.ConsumerSettings{AckWait: time.Second, MaxDeliver: 2, MaxAckPending: 10}, quiet)
			switch {
			case tc.err == "" && (err != nil || c == nil):
				t.Fatalf("StartConsumer: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("StartConsumer: %v, want an error saying %q", err, tc.err)
			}
			if tc.calls > 0 && e.calls.Load() != tc.calls {
				t.Errorf("%d create calls, want %d", e.calls.Load(), tc.calls)
			}
			if tc.err == "gave up after" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the error %v does not wrap the last failure", err)
			}
		})
	}
}

// TestEnsurePoolConsumer: submit creates a missing pool consumer with the
// default settings and leaves an existing one (a worker's settings) as is.
func TestEnsurePoolConsumer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if err := jobs.EnsureStreams(ctx, js, jobs.WithMemoryStorage()); err != nil {
		t.Fatal(err)
	}
	if err := jobs.EnsurePoolConsumer(ctx, js, "fresh", jobs.DefaultConsumerSettings()); err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(ctx, jobs.JobsStream, jobs.ConsumerName("fresh"))
	if err != nil || c.CachedInfo().Config.AckWait != jobs.DefaultConsumerSettings().AckWait {
		t.Fatalf("consumer after submit: %v", err)
	}
	worker := jobs.ConsumerSettings{AckWait: 7 * time.Second, MaxDeliver: 2, MaxAckPending: 10}
	if _, err := jobs.EnsureConsumer(ctx, js, "served", worker); err != nil {
		t.Fatal(err)
	}
	if err := jobs.EnsurePoolConsumer(ctx, js, "served", jobs.DefaultConsumerSettings()); err != nil {
		t.Fatal(err)
	}
	c, err = js.Consumer(ctx, jobs.JobsStream, jobs.ConsumerName("served"))
	if err != nil || c.CachedInfo().Config.AckWait != 7*time.Second {
		t.Fatalf("a worker's consumer after submit: %+v, %v; want its ack wait kept", c.CachedInfo().Config, err)
	}
}

// TestWaitJetStream: a server with JetStream answers at once (with or
// without a wait); one without JetStream is ErrNoJetStream at once, which
// no wait cures.
func TestWaitJetStream(t *testing.T) {
	t.Parallel()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	for _, wait := range []time.Duration{0, time.Minute} {
		if err := jobs.WaitJetStream(t.Context(), js, wait); err != nil {
			t.Errorf("wait %s: %v", wait, err)
		}
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	_, plain := jobstest.Connect(t, s.ClientURL())
	start := time.Now()
	if err := jobs.WaitJetStream(t.Context(), plain, time.Minute); !errors.Is(err, jobs.ErrNoJetStream) || time.Since(start) > 10*time.Second {
		t.Errorf("a server without JetStream: %v after %s, want ErrNoJetStream at once", err, time.Since(start))
	}
}
