package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/extractq/extractq/internal/sim"
)

// simServer is (*sim.Server).Serve, the simulator's own HTTP/1.1 server
// with net/http behind it. -same-harness builds this bench against an
// older internal/sim, which has no Serve: serveSim then serves Handler
// through net/http, as that revision's bench did, so each side of a
// comparison runs its own simulator's server.
type simServer interface {
	Serve(ctx context.Context, ln net.Listener) error
}

// serveSim serves s on ln until ctx is done.
func serveSim(ctx context.Context, s *sim.Server, ln net.Listener) error {
	if fs, ok := any(s).(simServer); ok {
		return fs.Serve(ctx, ln)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// simOnLoopback serves s on a loopback port; stop shuts it down and waits.
func simOnLoopback(s *sim.Server) (url string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for the simulator: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveSim(ctx, s, ln) }()
	return "http://" + ln.Addr().String(), func() error {
		s.Close() // release requests held by latency or timeouts first
		cancel()
		return <-served
	}, nil
}
