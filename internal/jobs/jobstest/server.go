// Package jobstest starts an embedded NATS server with JetStream for the
// fleet's tests.
package jobstest

import (
	"fmt"
	"net"
	"strings"
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
}

// StartCluster starts n embedded JetStream servers clustered together, each
// in its own temporary directory, stopped when the test ends, and waits
// until JetStream has a meta leader.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	// Every server routes to every other, so the cluster ports are chosen
	// before any starts.
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	c := &Cluster{}
	for i := range n {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
			}
		}
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
			Cluster: server.ClusterOpts{Name: "extractq-test", Host: "127.0.0.1", Port: ports[i]},
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
	}
	deadline := time.Now().Add(30 * time.Second)
	for !c.hasLeader() {
		if time.Now().After(deadline) {
			tb.Fatal("the embedded JetStream cluster elected no meta leader within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

func (c *Cluster) hasLeader() bool {
	for _, s := range c.Servers {
		if s.Running() && s.JetStreamIsLeader() {
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
