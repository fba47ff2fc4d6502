package http1

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tlsServer starts an httptest TLS server (HTTP/1.1 only, as
// httptest's) and counts the connections it accepts; idle > 0 closes
// connections idle that long, maxVersion (when not 0) caps the TLS
// version it speaks.
func tlsServer(t *testing.T, h http.HandlerFunc, idle time.Duration, maxVersion ...uint16) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	if len(maxVersion) > 0 {
		srv.TLS = &tls.Config{MaxVersion: maxVersion[0]}
	}
	srv.Config.IdleTimeout = idle
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &n
}

// tlsClient trusts srv's certificate only.
func tlsClient(t *testing.T, srv *httptest.Server, tr *Transport) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestTLSKeepAliveReuse(t *testing.T) {
	t.Parallel()
	srv, conns := tlsServer(t, echo, 0)
	hc := tlsClient(t, srv, &Transport{})
	for i := range 10 {
		msg := fmt.Sprintf("call %d", i)
		resp, b := get(t, t.Context(), hc, http.MethodPost, srv.URL+"/x", []byte(msg))
		if resp.StatusCode != 200 || string(b) != msg {
			t.Fatalf("call %d: %d %q", i, resp.StatusCode, b)
		}
		if resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" || !resp.TLS.HandshakeComplete {
			t.Fatalf("call %d: response TLS state %+v, want a complete handshake with ALPN http/1.1", i, resp.TLS)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("10 sequential calls used %d TLS connections, want 1", n)
	}
}

// TestTLSConcurrent: many callers at once, bodies up to a few hundred
// KiB (several TLS records each way), every answer intact.
func TestTLSConcurrent(t *testing.T) {
	t.Parallel()
	srv, conns := tlsServer(t, echo, 0)
	hc := tlsClient(t, srv, &Transport{})
	const workers = 16
	echoConcurrently(t, hc, srv.URL, workers, 12, func(i int) int { return 1 + i*i*300 })
	if n := conns.Load(); n > workers {
		t.Fatalf("%d connections for %d concurrent callers: the pool does not reuse", n, workers)
	}
}

// TestTLSServerClosedIdleConn: the server closes an idle TLS connection
// (close_notify, then FIN); the peek under the TLS layer finds it before
// the request is written, so a body that cannot be replayed goes out once,
// on a fresh connection that resumes the TLS session.
func TestTLSServerClosedIdleConn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version uint16
	}{{"TLS 1.2", tls.VersionTLS12}, {"TLS 1.3", tls.VersionTLS13}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, conns := tlsServer(t, echo, 100*time.Millisecond, tc.version)
			hc := tlsClient(t, srv, &Transport{})
			resp, _ := get(t, t.Context(), hc, http.MethodPost, srv.URL, []byte("first"))
			if resp.TLS.DidResume || resp.TLS.Version != tc.version {
				t.Fatalf("first connection: version %x, resumed %v", resp.TLS.Version, resp.TLS.DidResume)
			}
			time.Sleep(peekIdle + 100*time.Millisecond)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("once")))
			req.ContentLength = 4 // a body that cannot be sent again
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("the closed connection was used: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(b) != "once" || conns.Load() != 2 {
				t.Fatalf("body %q on %d connections, want \"once\" on 2", b, conns.Load())
			}
			if !resp.TLS.DidResume {
				t.Fatal("the re-dial made a full handshake: the session cache is not used")
			}
		})
	}
}

func TestTLSVerification(t *testing.T) {
	t.Parallel()
	srv, _ := tlsServer(t, echo, 0)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, tc := range []struct {
		name, url string
		trust     bool
		want      func(error) bool
	}{
		// httptest's certificate names 127.0.0.1, ::1 and example.com.
		{"unknown authority", srv.URL, false, func(err error) bool { var e x509.UnknownAuthorityError; return errors.As(err, &e) }},
		{"wrong name", "https://localhost:" + port, true, func(err error) bool { var e x509.HostnameError; return errors.As(err, &e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := &Transport{}
			hc := &http.Client{Transport: tr}
			if tc.trust {
				hc = tlsClient(t, srv, tr)
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, tc.url, nil)
			_, err := hc.Do(req)
			var he *Error
			if !errors.As(err, &he) || he.Op != "tls handshake" {
				t.Fatalf("err %v: want *Error in the TLS handshake", err)
			}
			if !tc.want(err) {
				t.Fatalf("err %v: not the x509 error that names the cause", err)
			}
		})
	}
}

// TestTLSHandshakeTimeout: a server that accepts and never answers the
// ClientHello costs TLSHandshakeTimeout, reported as a timeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	t.Parallel()
	url, _ := rawServer(t, func(c net.Conn, _ *bufio.Reader, _ int) {
		_, _ = io.Copy(io.Discard, c) // reads the ClientHello, says nothing
	})
	tr := &Transport{TLSHandshakeTimeout: 100 * time.Millisecond}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https"+strings.TrimPrefix(url, "http"), nil)
	start := time.Now()
	_, err := hc.Do(req)
	var he *Error
	if !errors.As(err, &he) || he.Op != "tls handshake" || !he.Timeout() || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v: want a TLS handshake timeout", err, time.Since(start))
	}
}

// TestTLSCancel: a canceled call over TLS returns at once with the
// context's error, and its connection is not pooled.
func TestTLSCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, 0)
	t.Cleanup(func() { close(release) })
	tr := &Transport{}
	hc := tlsClient(t, srv, tr)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	start := time.Now()
	_, err := hc.Do(req)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v, want context.Canceled promptly", err, time.Since(start))
	}
	tr.mu.Lock()
	idle := len(tr.idle[poolKey(srv.Listener.Addr().String(), true)])
	tr.mu.Unlock()
	if idle != 0 {
		t.Fatal("a canceled call's TLS connection was pooled")
	}
}

// TestPoolKeyAndPorts: default ports by scheme; plain and TLS
// connections to one host:port never share a pool.
func TestPoolKeyAndPorts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host   string
		secure bool
		want   string
	}{
		{"api.openai.com", true, "api.openai.com:443"},
		{"api.openai.com:8443", true, "api.openai.com:8443"},
		{"sim:8080", false, "sim:8080"},
		{"[::1]", true, "[::1]:443"},
		{"[::1]:", false, "[::1]:80"},
	} {
		if got := hostPort(tc.host, tc.secure); got != tc.want {
			t.Errorf("hostPort(%q, %v) = %q, want %q", tc.host, tc.secure, got, tc.want)
		}
	}
	if poolKey("h:1", true) == poolKey("h:1", false) {
		t.Fatal("plain and TLS connections share a pool key")
	}
	if got := serverName("[::1]:443"); got != "::1" {
		t.Fatalf("serverName: %q", got)
	}
}
