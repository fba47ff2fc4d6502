package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/cpustat"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

// countingDialer counts the writes on the connections it dials: each is
// one write syscall of nats.go's flusher, and one read of the server's.
type countingDialer struct{ writes atomic.Int64 }

func (d *countingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &d.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestAckerCoalescesAcks hands over the acks of 64 jobs one at a time, a
// little apart, as the runners of one group commit do, and counts the
// connection's writes until the server has them all: acked in place each
// takes a write; the acker sends them in a few.
func TestAckerCoalescesAcks(t *testing.T) {
	t.Parallel()
	const n = 64
	tests := []struct {
		name      string
		acker     bool
		maxWrites int64
		minWrites int64
	}{
		// The client's flusher may join a few acks of a late loop on a
		// loaded machine: in place stays far above the acker all the same.
		{name: "in place", acker: false, minWrites: n / 4, maxWrites: n + 2},
		{name: "acker", acker: true, minWrites: 1, maxWrites: n / 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dialer := &countingDialer{}
			nc, err := nats.Connect(jobstest.Server(t), nats.SetCustomDialer(dialer))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, err := js.Publish(ctx, "t", fmt.Appendf(nil, "%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			batch, err := c.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var msgs []jetstream.Msg
			for m := range batch.Messages() {
				msgs = append(msgs, m)
			}
			if len(msgs) != n {
				t.Fatalf("fetched %d jobs, want %d", len(msgs), n)
			}

			var a *acker
			if tc.acker {
				// A linger longer than the loop takes on any machine (64
				// sleeps of 200 µs took 0.3 s under CI's load and made 10
				// writes at 50 ms): the count then shows coalescing, not
				// the scheduler. stop sends what is pending at once.
				a = newAcker(nc, 10*time.Second, quietLogger())
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			before := dialer.writes.Load()
			for _, m := range msgs {
				if tc.acker {
					a.add(m, quietLogger())
				} else {
					ackNow(m, quietLogger())
				}
				time.Sleep(200 * time.Microsecond)
			}
			// Both end with a flush (one write: its ping): the acker's stop
			// sends what is pending, then flushes.
			if a != nil {
				a.stop()
			} else if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			writes := dialer.writes.Load() - before
			waitEmpty(t, s)
			if writes < tc.minWrites || writes > tc.maxWrites {
				t.Errorf("%d acks took %d writes, want %d to %d", n, writes, tc.minWrites, tc.maxWrites)
			}
			t.Logf("%d acks, %d writes (one of them the flush's ping)", n, writes)
		})
	}
}

// TestAckerAfterStopAcksInPlace: an ack handed over after stop is sent at
// once, not left in a queue nobody sends.
func TestAckerAfterStopAcksInPlace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	nc, js := jobstest.Connect(t, jobstest.Server(t))
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t", []byte("x")); err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	a := newAcker(nc, time.Hour, quietLogger())
	a.stop()
	a.add(m, quietLogger())
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, s)
}

// waitEmpty waits until the server has processed the acks (it applies
// them on the consumer's goroutine, after reading them) and the work
// queue is empty.
func waitEmpty(t *testing.T, s jetstream.Stream) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := s.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs left on the stream = %d, want 0: every ack reached the server", info.State.Msgs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// BenchmarkAcks prices an ack, the client's and the embedded server's CPU
// together (this process), as the worker sends them: jobs fetched 32 at a
// time and their runners released at once, as by one group commit, each
// acking in place or handing its ack to the acker. It reports the
// process's CPU and the connection's writes per ack; the fetches are
// counted in both.
func BenchmarkAcks(b *testing.B) {
	for _, bc := range []struct {
		name  string
		acker bool
		fetch int
	}{{"in place", false, 32}, {"acker", true, 32}, {"in place fetch 5", false, 5}, {"acker fetch 5", true, 5}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := b.Context()
			dialer := &countingDialer{}
			nc, err := nats.Connect(jobstest.Server(b), nats.SetCustomDialer(dialer))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage})
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				if _, err := js.PublishAsync("t", []byte("job")); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxAckPending: 10000})
			if err != nil {
				b.Fatal(err)
			}
			var a *acker
			if bc.acker {
				a = newAcker(nc, ackLinger, quietLogger())
			}
			log := quietLogger()
			b.ResetTimer()
			cpu, writes := cpustat.Self(), dialer.writes.Load()
			for done := 0; done < b.N; {
				batch, err := c.Fetch(min(bc.fetch, b.N-done), jetstream.FetchMaxWait(5*time.Second))
				if err != nil {
					b.Fatal(err)
				}
				start := make(chan struct{})
				var wg sync.WaitGroup
				for m := range batch.Messages() {
					done++
					wg.Go(func() {
						<-start
						if a != nil {
							a.add(m, log)
						} else {
							ackNow(m, log)
						}
					})
				}
				close(start)
				wg.Wait()
			}
			if a != nil {
				a.stop()
			} else if err := nc.Flush(); err != nil {
				b.Fatal(err)
			}
			for {
				info, err := s.Info(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if info.State.Msgs == 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64((cpustat.Self()-cpu).Nanoseconds())/1e3/n, "cpu-µs/ack")
			b.ReportMetric(float64(dialer.writes.Load()-writes)/n, "writes/ack")
		})
	}
}
