// Package jobstest starts an embedded NATS server with JetStream for the
// fleet's tests.
package jobstest

import (
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
