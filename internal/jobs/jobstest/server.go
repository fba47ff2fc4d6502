// Package jobstest starts an embedded NATS server with JetStream for the
// fleet's tests.
package jobstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server starts an embedded JetStream server in a temporary directory,
// stopped when the test ends, and returns its client URL.
func Server(tb testing.TB) string {
	tb.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tb.TempDir(),
		NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
	})
	if err != nil {
		tb.Fatalf("embedded nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("embedded nats-server did not start within 10s")
	}
	tb.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// Connect connects to url, closed when the test ends.
func Connect(tb testing.TB, url string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatalf("connect to %s: %v", url, err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		tb.Fatalf("jetstream on %s: %v", url, err)
	}
	return nc, js
}

// Cluster is an embedded JetStream cluster on loopback.
type Cluster struct {
	Servers []*server.Server
	// links[i][j] carries server i's routes to server j (nil for i == j).
	links [][]*link
}

// StartCluster starts n embedded JetStream servers clustered together, each
// in its own temporary directory, stopped when the test ends, and waits
// until JetStream has a meta leader. Each server reaches each other one
// through a proxy of its own (the cluster addresses are not advertised),
// so Crash can cut a server off as a crash would.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	// Every server routes to every other through a proxy made before any
	// server starts; each server binds its own cluster port (Port -1), and
	// the proxies to it forward once it is known. Ports chosen ahead (a
	// listener opened and closed) could be taken by another test in the
	// meantime: the server then never listened for routes and
	// ReadyForConnections waited out its deadline.
	c := &Cluster{links: make([][]*link, n)}
	for i := range n {
		c.links[i] = make([]*link, n)
		for j := range n {
			if j != i {
				c.links[i][j] = newLink(tb)
			}
		}
	}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, "nats://"+c.links[i][j].addr())
			}
		}
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
			Cluster: server.ClusterOpts{Name: "extractq-test", Host: "127.0.0.1", Port: -1, NoAdvertise: true},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		})
		if err != nil {
			tb.Fatalf("embedded nats-server %d: %v", i, err)
		}
		go s.Start()
		tb.Cleanup(s.Shutdown)
		c.Servers = append(c.Servers, s)
	}
	for i, s := range c.Servers {
		if !s.ReadyForConnections(30 * time.Second) {
			tb.Fatalf("embedded nats-server %d did not start within 30s", i)
		}
		to := s.ClusterAddr().String()
		for j := range n {
			if j != i {
				c.links[j][i].forwardTo(to)
			}
		}
	}
	// A meta leader is elected by two of three; placing a stream on three
	// replicas needs every server known to it with its stats, which come
	// later, and a route dropped as a duplicate in the first moments
	// (both ends solicit) forgets a server's stats until it sends them
	// again: wait until the leader has known all of them for a second on
	// end, or creating an R3 stream right after start fails with "no
	// suitable peers for placement".
	const settle = time.Second
	deadline := time.Now().Add(30 * time.Second)
	var since time.Time // when the leader last came to know them all
	for {
		switch {
		case !c.allPeersKnown(n):
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= settle:
			return c
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the embedded JetStream cluster had no meta leader that knew all %d servers for %s on end within 30s", n, settle)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Crash takes server s down as a crash or a lost machine would: its
// routes are cut first, so the others hear nothing from it (no leadership
// handed over, as a graceful Shutdown does) and must elect new leaders
// once their election timeouts pass; then it stops.
func (c *Cluster) Crash(s *server.Server) {
	for i, srv := range c.Servers {
		if srv != s {
			continue
		}
		for j := range c.links {
			if c.links[i][j] != nil {
				c.links[i][j].cut()
			}
			if c.links[j][i] != nil {
				c.links[j][i].cut()
			}
		}
	}
	s.Shutdown()
}

// LeaderOf is the name of the server leading stream, as the stream's
// information says. Right after a node of the cluster was lost the
// stream may have no leader for a while (an election, slower on a loaded
// machine): it asks again for up to 30 seconds.
func LeaderOf(tb testing.TB, js jetstream.JetStream, stream string) string {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		leader, err := leaderOf(tb.Context(), js, stream)
		if err == nil && leader != "" {
			return leader
		}
		if time.Now().After(deadline) || tb.Context().Err() != nil {
			tb.Fatalf("the leader of stream %s: %v (none for 30 s)", stream, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func leaderOf(ctx context.Context, js jetstream.JetStream, stream string) (string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return "", err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return "", err
	}
	if info.Cluster == nil {
		return "", errors.New("no cluster information")
	}
	return info.Cluster.Leader, nil
}

// Server is the running server called name; the test fails when none is.
func (c *Cluster) Server(tb testing.TB, name string) *server.Server {
	tb.Helper()
	for _, s := range c.Servers {
		if s.Running() && s.Name() == name {
			return s
		}
	}
	tb.Fatalf("no running server is called %q", name)
	return nil
}

// allPeersKnown: a running server leads the meta group and has the stats
// of n servers with JetStream (what stream placement chooses among).
func (c *Cluster) allPeersKnown(n int) bool {
	for _, s := range c.Servers {
		if s.Running() && s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) >= n {
			return true
		}
	}
	return false
}

// URL is every running server's client URL, comma-separated, as
// nats.Connect takes them.
func (c *Cluster) URL() string {
	var urls []string
	for _, s := range c.Servers {
		if s.Running() {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// link is a TCP proxy from one server's route to another server's cluster
// port, cut by Crash: its listener and every connection through it close.
// It accepts from the start and forwards once forwardTo named the port.
type link struct {
	ln    net.Listener
	known chan struct{} // closed by forwardTo
	gone  chan struct{} // closed by cut
	to    string
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func newLink(tb testing.TB) *link {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := &link{ln: ln, known: make(chan struct{}), gone: make(chan struct{})}
	tb.Cleanup(l.cut)
	go l.serve()
	return l
}

func (l *link) addr() string { return l.ln.Addr().String() }

// forwardTo sets the address the link forwards to, once.
func (l *link) forwardTo(to string) {
	l.to = to
	close(l.known)
}

// serve accepts connections until the link is cut (its listener closes)
// and forwards each.
func (l *link) serve() {
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.forward(in)
	}
}

// forward connects in to the target once it is known; a route accepted
// before its target started waits for it instead of being refused.
func (l *link) forward(in net.Conn) {
	select {
	case <-l.known:
	case <-l.gone:
		in.Close()
		return
	}
	out, err := net.Dial("tcp", l.to)
	if err != nil {
		in.Close()
		return
	}
	if !l.track(in, out) {
		return
	}
	go pipe(in, out)
	pipe(out, in)
}

// track records a proxied pair, or closes it when the link was cut.
func (l *link) track(in, out net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		in.Close()
		out.Close()
		return false
	}
	l.conns = append(l.conns, in, out)
	return true
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dead {
		close(l.gone)
	}
	l.dead = true
	l.ln.Close()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}
