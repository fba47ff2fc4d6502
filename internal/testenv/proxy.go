package testenv

import (
	"context"
	"io"
	"net"
	"net/url"
	"testing"
	"time"
)

// DatabaseLater is databaseURL on a loopback address where nothing listens
// for the first delay (connections are refused, as while Postgres is down
// or not started yet); then a proxy there forwards every connection to
// databaseURL's server, until the test ends.
func DatabaseLater(t testing.TB, databaseURL string, delay time.Duration) string {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	target := u.Host
	u.Host = ProxyAfter(t, delay, target)
	return u.String()
}

// ProxyAfter returns a free loopback address where, after delay, a proxy
// forwards TCP connections to target until the test ends; until then
// nothing listens there. When the address cannot be listened on after all
// (taken meanwhile), nothing ever answers there: the test then fails
// waiting for the server.
func ProxyAfter(t testing.TB, delay time.Duration, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go proxyAfter(ctx, delay, addr, target)
	return addr
}

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
			stop := context.AfterFunc(ctx, func() { c.Close(); s.Close() })
			defer stop()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			_, _ = io.Copy(c, s)
		}()
	}
}
