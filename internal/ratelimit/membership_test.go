package ratelimit

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startNATS runs an embedded JetStream server in a temp dir; it fails the
// test, never skips, when the server cannot start.
func startNATS(t *testing.T) *server.Server { return startNATSOn(t, -1) }

// startNATSOn starts it on a given port (-1: any free one).
func startNATSOn(t *testing.T, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("embedded nats-server: %v", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("embedded nats-server not ready after 10s")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// connect opens a connection of its own (closing it is a worker's death)
// that gives up at once when the server is gone.
func connect(t *testing.T, s *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

const testTTL = 1200 * time.Millisecond // beats every 400ms

func join(t *testing.T, js jetstream.JetStream, worker string, pools ...*Pool) *Membership {
	t.Helper()
	m, err := StartMembership(context.Background(), js, worker, pools, WithTTL(testTTL), WithMembershipLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func waitMembers(t *testing.T, p *Pool, n int, src ShareSource, why string) {
	t.Helper()
	eventually(t, func() bool { s := p.Snapshot(); return s.Members == n && s.ShareSource == src },
		"%s: pool of the first worker should see %d members (%s); snapshot %+v", why, n, src, p.Snapshot())
}

func TestMembershipRebalances(t *testing.T) {
	srv := startNATS(t)
	limits := Limits{Concurrency: 60, RPM: 6000}
	newPool := func() *Pool { return NewPool("openai:gpt-4o-mini", limits, WithLogger(quiet())) }
	other := NewPool("ollama:llama3.1:8b", Limits{Concurrency: 4}, WithLogger(quiet()))

	_, jsA := connect(t, srv)
	a := newPool()
	join(t, jsA, "worker-a", a, other)
	if s := a.Snapshot(); s.Members != 1 || s.ShareSource != ShareFleet || s.Share.RPM != 6000 || !s.JoiningUntil.IsZero() {
		t.Fatalf("alone: snapshot %+v, want the whole limit from the fleet bucket, and no hold", s)
	}

	// Join: a second and a third worker. A newcomer that finds peers holds
	// its calls for an interval and a fifth (testTTL/3 * 1.2), until they
	// have counted it.
	_, jsB := connect(t, srv)
	b := newPool()
	mb := join(t, jsB, "worker-b", b)
	if s := b.Snapshot(); s.JoiningUntil.IsZero() || time.Until(s.JoiningUntil) > testTTL/3*6/5 {
		t.Fatalf("newcomer: snapshot %+v, want a hold of at most %v", s, testTTL/3*6/5)
	}
	ncC, jsC := connect(t, srv)
	c := newPool()
	mc := join(t, jsC, "worker-c", c)
	waitMembers(t, a, 3, ShareFleet, "join")
	if s := c.Snapshot(); s.Members != 3 || s.Share.RPM != 2000 || s.Share.Concurrency != 20 {
		t.Fatalf("newest worker: snapshot %+v, want a third of the limits", s)
	}
	if s := other.Snapshot(); s.Members != 1 {
		t.Fatalf("a pool nobody else runs: members %d, want 1", s.Members)
	}

	// Leave: a clean stop removes its key at once.
	mb.Stop()
	waitMembers(t, a, 2, ShareFleet, "leave")

	// Death: the connection drops, no goodbye; the key expires with the TTL.
	ncC.Close()
	waitMembers(t, a, 1, ShareFleet, "death")
	if s := a.Snapshot(); s.Share.RPM != 6000 || s.EffectiveConcurrency != 60 {
		t.Fatalf("after the others left: snapshot %+v, want the whole limit back", s)
	}
	mc.Stop() // its own goroutine, failing since the close, must still end
}

func TestMembershipFallback(t *testing.T) {
	srv := startNATS(t)
	_, jsA := connect(t, srv)
	_, jsB := connect(t, srv)
	a := NewPool("anthropic:claude-haiku-4-5", Limits{Concurrency: 8, TPM: 90000}, WithLogger(quiet()))
	b := NewPool("anthropic:claude-haiku-4-5", Limits{Concurrency: 8, TPM: 90000}, WithLogger(quiet()))
	join(t, jsA, "a", a)
	join(t, jsB, "b", b)
	waitMembers(t, a, 2, ShareFleet, "two workers")

	srv.Shutdown()
	// Last seen 2, so assume 3: a newcomer may have joined unseen.
	waitMembers(t, a, 3, ShareFallback, "bucket gone")
	if s := a.Snapshot(); s.Share.TPM != 30000 {
		t.Fatalf("fallback share: %+v, want TPM 30000", s)
	}
}

// TestMembershipRecovers: after the server comes back (without the bucket:
// memory storage), the membership creates the bucket again and leaves the
// fallback by itself.
func TestMembershipRecovers(t *testing.T) {
	srv := startNATS(t)
	port := srv.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool("gemini:gemini-2.5-flash", Limits{Concurrency: 4, RPM: 100}, WithLogger(quiet()))
	join(t, js, "w", p)
	waitMembers(t, p, 1, ShareFleet, "alone")
	srv.Shutdown()
	srv.WaitForShutdown()
	waitMembers(t, p, 2, ShareFallback, "server down")
	startNATSOn(t, port)
	waitMembers(t, p, 1, ShareFleet, "server back")
}

func TestMembershipFallbackWithoutHistory(t *testing.T) {
	tests := []struct {
		name     string
		expected int
		want     int
	}{
		{"never the whole limit", 0, 2},
		{"expected fleet size wins", 5, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startNATS(t)
			_, js := connect(t, srv)
			srv.Shutdown()
			p := NewPool("openai:gpt-4o", Limits{Concurrency: 10, RPM: 1000}, WithLogger(quiet()))
			m, err := StartMembership(context.Background(), js, "w", []*Pool{p}, WithTTL(testTTL), WithExpectedMembers(tc.expected), WithMembershipLogger(quiet()))
			if err != nil {
				t.Fatalf("an unreachable bucket must not fail the start: %v", err)
			}
			defer m.Stop()
			// The first round runs before StartMembership returns.
			if s := p.Snapshot(); s.Members != tc.want || s.ShareSource != ShareFallback {
				t.Fatalf("snapshot %+v, want %d members from the fallback", s, tc.want)
			}
		})
	}
}

func TestStartMembershipRefusesBadArguments(t *testing.T) {
	srv := startNATS(t)
	_, js := connect(t, srv)
	p := NewPool("openai:a", Limits{Concurrency: 1}, WithLogger(quiet()))
	tests := []struct {
		name   string
		worker string
		pools  []*Pool
	}{
		{"no worker", " ", []*Pool{p}},
		{"no pools", "w", nil},
		{"pool twice", "w", []*Pool{p, p}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if m, err := StartMembership(context.Background(), js, tc.worker, tc.pools); err == nil {
				m.Stop()
				t.Fatal("want an error")
			}
		})
	}
}
