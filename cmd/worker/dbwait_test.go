package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
)

// TestRunWaitsForTheAuditDatabase: a worker started while its audit
// database does not answer yet (Postgres restarting) waits for it and
// starts when it comes back. Before, it exited 3 at once (the chaos soak
// saw it 2–5 times a run), into its supervisor's growing restart back-off.
func TestRunWaitsForTheAuditDatabase(t *testing.T) {
	natsURL := jobstest.Server(t)
	dbURL := testenv.Database(t)
	migrate := newMigrateCmd()
	migrate.SetArgs([]string{"--nats-url", natsURL, "--database-url", dbURL, "--log-level", "error", "--pool", clusterPool})
	migrate.SetErr(io.Discard)
	if err := migrate.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("worker migrate: %v", err)
	}

	// The worker is pointed at an address where nothing listens yet; a
	// proxy to the real server opens there 1.5 s later.
	proxyAddr := freeAddr(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	pgAddr := u.Host
	u.Host = proxyAddr
	const down = 1500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go proxyAfter(ctx, down, proxyAddr, pgAddr)

	base, ran := startRun(t, natsURL, u.String(), "waits-for-pg")
	took := waitReady(t, "waits-for-pg", base, ran, 30*time.Second)
	if took < down {
		t.Errorf("ready after %s, before the database answered (%s)", took, down)
	}
	t.Logf("worker ready %s after its start, the database down for the first %s", took.Round(10*time.Millisecond), down)
}

// proxyAfter waits delay, then forwards TCP connections on addr to target
// until ctx ends. A failure to listen leaves the worker without its
// database: the test then fails waiting for it to be ready.
func proxyAfter(ctx context.Context, delay time.Duration, addr, target string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(delay):
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return
	}
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var d net.Dialer
			s, err := d.DialContext(ctx, "tcp", target)
			if err != nil {
				return
			}
			defer s.Close()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			_, _ = io.Copy(c, s)
		}()
	}
}
