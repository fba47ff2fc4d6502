package submit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// slowProxy stands between a client and NATS and holds back what the
// server sends (the publish acks among it): each chunk by delay, or all of
// it while held.
type slowProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	held   atomic.Bool
}

func newSlowProxy(t *testing.T, target string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: strings.TrimPrefix(target, "nats://"), delay: delay}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Go(func() { io.Copy(s, c); s.Close() })
			wg.Go(func() { p.slowCopy(c, s); c.Close() })
		}
	})
	return p
}

func (p *slowProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// slowCopy forwards src to dst, each chunk delay after it was read, and
// nothing while the proxy is held.
func (p *slowProxy) slowCopy(dst io.WriteCloser, src io.Reader) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	ch := make(chan chunk, 1<<16)
	go func() {
		defer close(ch)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				ch <- chunk{time.Now(), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at.Add(p.delay)))
		for p.held.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

// stallEnv is a submitter whose NATS connection goes through a slowProxy,
// with at most two publishes awaiting their acks.
func stallEnv(t *testing.T, delay, stall time.Duration) (*submit.Submitter, *slowProxy, submit.Job) {
	t.Helper()
	srv := jobstest.Server(t)
	_, direct := jobstest.Connect(t, srv)
	if err := jobs.EnsureStreams(t.Context(), direct); err != nil {
		t.Fatal(err)
	}
	proxy := newSlowProxy(t, srv, delay)
	nc, err := nats.Connect(proxy.URL(), nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := audittest.Store(t)
	sub := submit.New(js, st, submit.WithBatch(4), submit.WithStallTimeout(stall))
	e := &env{js: direct, store: st, sub: sub}
	job := e.job(e.register(t, `{"type":"object","properties":{"a":{"type":"string"}}}`))
	return sub, proxy, job
}

func submitDocs(ctx context.Context, sub *submit.Submitter, job submit.Job, in []submit.Doc) (submit.Summary, error) {
	return sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for _, d := range in {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}

// TestSubmitSlowAcksSlowItDown: acks that take longer than the client's
// default stall wait (200ms) but keep arriving slow the submission down
// and never fail it. Before, every publish that waited more than 200ms for
// room was rejected as "stalled".
func TestSubmitSlowAcksSlowItDown(t *testing.T) {
	t.Parallel()
	sub, _, job := stallEnv(t, 400*time.Millisecond, 20*time.Second)
	in := docs(12)
	sum, err := submitDocs(t.Context(), sub, job, in)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queued != len(in) || len(sum.Rejected) != 0 {
		t.Fatalf("%+v, want all %d queued", sum, len(in))
	}
	// Two pending at most, 400ms per ack round trip: about 2.4s.
	if sum.Elapsed < time.Second {
		t.Errorf("took %s: the acks were not slowed down", sum.Elapsed)
	}
}

// TestSubmitStallFails: when no ack arrives for the stall timeout the
// submission fails with ErrPublishStalled, saying what to do, and returns
// promptly.
func TestSubmitStallFails(t *testing.T) {
	t.Parallel()
	sub, proxy, job := stallEnv(t, 0, 700*time.Millisecond)
	proxy.held.Store(true)
	defer proxy.held.Store(false)
	start := time.Now()
	sum, err := submitDocs(t.Context(), sub, job, docs(12))
	if !errors.Is(err, submit.ErrPublishStalled) {
		t.Fatalf("err = %v, want ErrPublishStalled (summary %+v)", err, sum)
	}
	if !strings.Contains(err.Error(), "submit again") || !strings.Contains(err.Error(), "700ms") {
		t.Errorf("the error does not say what to do: %v", err)
	}
	if sum.Queued != 0 {
		t.Errorf("%d counted queued without an ack", sum.Queued)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the stalled submission returned after %s", d)
	}
}
