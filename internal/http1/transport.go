// Package http1 is a lean HTTP/1.1 http.RoundTripper for model servers:
// hosted APIs over https (OpenAI, Anthropic, Gemini) and in-cluster
// vLLM, Ollama, LiteLLM or the simulator over plain http.
//
// net/http's Transport runs two goroutines per connection (readLoop and
// writeLoop) and hands every request and response between them and the
// caller over channels and selects; for a short JSON exchange on loopback
// that hand-off costs more CPU than the bytes. Here the calling goroutine
// writes the request and reads the response on a pooled keep-alive
// connection, and nothing else runs: no goroutine per connection, none in
// the background. Idle connections are reaped lazily, when the pool is
// next used or by CloseIdleConnections.
//
// https is HTTP/1.1 over crypto/tls on the same connection (ALPN offers
// only http/1.1). What it does not do: HTTP/2, proxies, upgrades (101),
// Expect: 100-continue waits, sending the body while the response arrives
// (the request is written whole, then the response read). A request it
// cannot send (a scheme other than http and https) goes to Fallback when
// one is set.
// Because no goroutine watches an idle connection, a connection is
// checked with a non-blocking peek when it is taken from the pool; stale
// connections are retried by net/http's rules (see RoundTrip).
package http1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// MaxHeaderBytes bounds the status line and headers of one response (and
// of each 1xx response before it), as net/http's server bounds a
// request's by default: a runaway or hostile server cannot make the
// client buffer more. Beyond it the call fails with ErrHeaderTooLarge.
const MaxHeaderBytes = 1 << 20

// max1xx bounds the informational responses skipped before the final
// one, as net/http does (5).
const max1xx = 5

// maxDrain is the most of an unread body Body.Close discards, from what is
// already buffered, to keep the connection; a larger rest closes it.
const maxDrain = 4 << 10

// bufSize is the size of a connection's read and write buffers: a chat
// request of a few KiB goes out in one write, and a response's headers
// and a short body come in with one read.
const bufSize = 8 << 10

// peekIdle is how long a connection must have been idle before it is
// peeked at (alive) when taken from the pool. Servers close idle
// connections after seconds (uvicorn, Node and Apache after 5, nginx after
// 75); a fleet's connections are idle for microseconds between calls, and
// the peek's system call was 2% of a worker's CPU. A connection a server
// closed sooner (a restart) fails its next call as it would in net/http's
// own race window: retried when retryable allows, else an error the
// caller retries.
const peekIdle = time.Second

// Defaults of the zero Transport's fields.
const (
	DefaultDialTimeout         = 30 * time.Second
	DefaultKeepAlive           = 30 * time.Second
	DefaultMaxIdleConnsPerHost = 256
	DefaultIdleConnTimeout     = 90 * time.Second
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// ErrHeaderTooLarge: the response's status line and headers exceed
// MaxHeaderBytes. The server is broken or hostile; the connection is closed.
var ErrHeaderTooLarge = errors.New("http1: the response header exceeds MaxHeaderBytes (1 MiB); the server is misbehaving")

// ErrUnsupported: the request needs something this transport does not do
// (a scheme other than http and https) and no Fallback is set. Use
// net/http's Transport for it.
var ErrUnsupported = errors.New("http1: unsupported request; use net/http's Transport (set Transport.Fallback)")

// ErrNoHTTP1: the server refused the TLS handshake because it does not
// speak HTTP/1.1 (its ALPN answered no_application_protocol: an
// HTTP/2-only endpoint). With a Fallback set, the request and every later
// one to that host go to the Fallback instead; without one, use net/http's
// Transport for the host.
var ErrNoHTTP1 = errors.New("http1: the server does not speak HTTP/1.1 over TLS (it answered the ALPN offer with no_application_protocol); use net/http's Transport for it (set Transport.Fallback)")

// ErrBodyLength: the request body's length differs from its ContentLength.
var ErrBodyLength = errors.New("http1: the request body's length differs from ContentLength; set ContentLength to the body's length or to -1 (sent chunked)")

// Error is a failed exchange: what was being done (Op), with which
// host:port, and why. Err is the context's error when the request's
// context ended, so errors.Is(err, context.Canceled) and
// errors.Is(err, context.DeadlineExceeded) hold; else the i/o or protocol
// error (io.ErrUnexpectedEOF for a body cut short, a *net.OpError for a
// refused or reset connection, ErrHeaderTooLarge, ...).
type Error struct {
	Op   string // "dial", "tls handshake", "write request", "read response header", "read response body"
	Addr string
	Err  error
}

func (e *Error) Error() string { return "http1: " + e.Op + " " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the cause is a timeout (a deadline, a dial
// timeout), as net.Error's Timeout does; http.Client's *url.Error asks it.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// Temporary is Timeout, for net.Error.
func (e *Error) Temporary() bool { return e.Timeout() }

var _ net.Error = (*Error)(nil)

// Transport is an http.RoundTripper for HTTP/1.1, plain or over TLS. The zero value is
// ready to use; a Transport must not be copied after first use. It is safe
// for concurrent use.
type Transport struct {
	// DialTimeout bounds a connection's dial (DefaultDialTimeout when 0).
	DialTimeout time.Duration
	// KeepAlive is the TCP keep-alive period (DefaultKeepAlive when 0,
	// negative disables).
	KeepAlive time.Duration
	// MaxIdleConnsPerHost caps the idle connections kept per host:port
	// (DefaultMaxIdleConnsPerHost when 0, negative keeps none).
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes a connection idle for longer, when the pool
	// is next used (DefaultIdleConnTimeout when 0).
	IdleConnTimeout time.Duration
	// DisableCompression stops the transport from asking for gzip. As
	// net/http's, it otherwise sends Accept-Encoding: gzip when the request
	// has none and decompresses a gzip response transparently.
	DisableCompression bool
	// TLSClientConfig configures https connections; nil is crypto/tls's
	// defaults, as net/http's: the system's roots (SSL_CERT_FILE and
	// SSL_CERT_DIR are honoured). It is cloned; ServerName is set from the
	// URL's host when empty, NextProtos is always http/1.1 alone, and a
	// session cache is added when it has none, so that a re-dial resumes
	// the session.
	TLSClientConfig *tls.Config
	// TLSHandshakeTimeout bounds a TLS handshake
	// (DefaultTLSHandshakeTimeout when 0).
	TLSHandshakeTimeout time.Duration
	// Fallback, when set, takes the requests this transport does not do:
	// a scheme other than http and https, and https to a host that refused
	// HTTP/1.1 in the handshake (ErrNoHTTP1), from then on.
	Fallback http.RoundTripper

	mu     sync.Mutex
	idle   map[string][]*conn // per scheme and host:port (poolKey), most recently used last
	dialer *net.Dialer
	tlsCfg *tls.Config // TLSClientConfig prepared once (tlsConfig)
	noH1   sync.Map    // host:port of https servers that refused HTTP/1.1, sent to Fallback
}

// conn is one keep-alive connection. Only the goroutine that holds it
// uses it; a context's AfterFunc may set its deadline concurrently.
type conn struct {
	nc     net.Conn // a *tls.Conn for https
	addr   string
	key    string // the pool's key (poolKey)
	br     *bufio.Reader
	bw     *bufio.Writer
	tp     textproto.Reader
	limit  int64 // bytes Read may still return; MaxHeaderBytes while reading headers
	nread  int64 // bytes read since the request was written
	nwrite int64 // bytes written since the request began
	reused bool
	idleAt time.Time
	// abort makes a blocked Read or Write return (a past deadline): the
	// cancellation hook of each exchange, made once per connection.
	abort func()

	// A non-blocking peek at the socket (peek_unix.go), prepared once.
	rc      syscall.RawConn
	peekFn  func(fd uintptr) bool
	peekBuf [1]byte
	peekN   int
	peekErr error
}

// connWriter counts what reaches the socket: a request none of whose
// bytes were written can always be sent again.
type connWriter struct{ c *conn }

func (w connWriter) Write(p []byte) (int, error) {
	n, err := w.c.nc.Write(p)
	w.c.nwrite += int64(n)
	return n, err
}

// Read counts and limits what the buffered reader takes from the socket.
func (c *conn) Read(p []byte) (int, error) {
	if c.limit <= 0 {
		return 0, ErrHeaderTooLarge
	}
	if int64(len(p)) > c.limit {
		p = p[:c.limit]
	}
	n, err := c.nc.Read(p)
	c.limit -= int64(n)
	c.nread += int64(n)
	return n, err
}

const noLimit = 1<<63 - 1

// aLongTimeAgo is a deadline in the past: it makes a blocked Read or
// Write return at once.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip sends req and returns its response; the caller reads the body
// to EOF and closes it to give the connection back to the pool. The
// request's context bounds the whole exchange, body included.
//
// A connection taken from the pool may have been closed by the server
// while idle (its keep-alive timeout). A peek at the socket finds that
// before the request is written (alive, for connections idle peekIdle or
// more), and another connection is used.
// Should the server close it in the instant between, the request is sent
// again once on a fresh connection if retryable says so (net/http's
// rules), with its body from req.GetBody; a failure after any byte of the
// response arrived is never retried.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		if t.Fallback != nil && req.URL != nil {
			return t.Fallback.RoundTrip(req)
		}
		closeReqBody(req)
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, schemeOf(req))
	}
	secure := req.URL.Scheme == "https"
	addr := hostPort(req.URL.Host, secure)
	if secure && t.Fallback != nil {
		if _, ok := t.noH1.Load(addr); ok {
			return t.Fallback.RoundTrip(req)
		}
	}
	cl, err := outgoingLength(req)
	if err != nil {
		closeReqBody(req)
		return nil, err
	}
	rh, err := validHeaders(req)
	if err != nil {
		closeReqBody(req)
		return nil, err
	}
	ctx := req.Context()
	body := req.Body
	for attempt := 0; ; attempt++ {
		var c *conn
		if attempt == 0 {
			c, err = t.getConn(ctx, addr, secure)
		} else {
			c, err = t.dial(ctx, addr, secure) // the retry goes out on a fresh connection
		}
		if err != nil {
			if attempt == 0 && t.Fallback != nil && errors.Is(err, ErrNoHTTP1) {
				// Nothing of the request was sent: the Fallback sends it whole.
				t.noH1.Store(addr, struct{}{})
				return t.Fallback.RoundTrip(req)
			}
			closeBody(body)
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req, body, cl, rh)
		if err == nil {
			return resp, nil
		}
		if attempt > 0 || errors.Is(err, ErrBodyLength) || !retryable(ctx, req, c) {
			return nil, err
		}
		// A stale keep-alive connection: send it again on a fresh one.
		if body != nil && body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			if body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("http1: replaying the request body after a stale connection failed: %w", err)
			}
		}
	}
}

// SentItself reports whether RoundTrip sends req itself, not through
// Fallback. When it does, RoundTrip has written (and replayed, on a stale
// connection) the whole request body and closed it by the time it
// returns, error or not: a caller may then reuse the body's bytes. Asked
// after RoundTrip returned, a false may also mean the host has since been
// found to refuse HTTP/1.1.
func (t *Transport) SentItself(req *http.Request) bool {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return false
	}
	if req.URL.Scheme == "https" && t.Fallback != nil {
		if _, ok := t.noH1.Load(hostPort(req.URL.Host, true)); ok {
			return false
		}
	}
	return true
}

// retryable reports whether a request that failed on c may be sent again
// on a fresh connection, by net/http's rules (shouldRetryRequest): only on
// a reused connection, and only when nothing of the request was written
// or the request is idempotent (GET, HEAD, OPTIONS, TRACE, or an
// Idempotency-Key header) and nothing of the response came back. A POST
// the server may have received is not sent twice: it fails, and the
// caller's own retry policy decides. (A connection the server closed
// while idle is found before use: see alive.)
func retryable(ctx context.Context, req *http.Request, c *conn) bool {
	if !c.reused || c.nread > 0 || ctx.Err() != nil {
		return false
	}
	if c.nwrite == 0 {
		return true
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, ok := req.Header["Idempotency-Key"]
	if !ok {
		_, ok = req.Header["X-Idempotency-Key"]
	}
	return ok
}

// CloseIdleConnections closes the idle connections of every host.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			_ = c.nc.Close()
		}
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func schemeOf(req *http.Request) string {
	if req.URL == nil {
		return "no URL"
	}
	if req.URL.Host == "" {
		return "no host in URL"
	}
	return "scheme " + req.URL.Scheme
}

// hostPort adds the scheme's default port (80, or 443 when secure) to a
// URL's host.
func hostPort(host string, secure bool) string {
	port := "80"
	if secure {
		port = "443"
	}
	if i := strings.LastIndexByte(host, ':'); i > strings.LastIndexByte(host, ']') {
		if i == len(host)-1 {
			return host + port
		}
		return host
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}

// poolKey keeps plain and TLS connections to one host:port apart.
func poolKey(addr string, secure bool) string {
	if secure {
		return "https://" + addr
	}
	return addr
}

func closeReqBody(req *http.Request) { closeBody(req.Body) }

func closeBody(b io.ReadCloser) {
	if b != nil {
		_ = b.Close()
	}
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleConnTimeout > 0 {
		return t.IdleConnTimeout
	}
	return DefaultIdleConnTimeout
}

func (t *Transport) maxIdle() int {
	switch {
	case t.MaxIdleConnsPerHost > 0:
		return t.MaxIdleConnsPerHost
	case t.MaxIdleConnsPerHost < 0:
		return 0
	}
	return DefaultMaxIdleConnsPerHost
}

// getConn returns the most recently used idle connection to addr that has
// not timed out, or dials one.
func (t *Transport) getConn(ctx context.Context, addr string, secure bool) (*conn, error) {
	var stale []*conn
	now := time.Now()
	timeout := t.idleTimeout()
	key := poolKey(addr, secure)
	t.mu.Lock()
	cs := t.idle[key]
	// The oldest are first: reap those past the idle timeout.
	n := 0
	for n < len(cs) && now.Sub(cs[n].idleAt) > timeout {
		n++
	}
	if n > 0 {
		stale = append(stale, cs[:n]...)
		cs = append(cs[:0], cs[n:]...)
	}
	var c *conn
	if len(cs) > 0 {
		c = cs[len(cs)-1]
		cs[len(cs)-1] = nil
		cs = cs[:len(cs)-1]
	}
	if t.idle != nil {
		t.idle[key] = cs
	}
	t.mu.Unlock()
	for _, s := range stale {
		_ = s.nc.Close()
	}
	if c == nil {
		return t.dial(ctx, addr, secure)
	}
	if now.Sub(c.idleAt) >= peekIdle && !c.alive() { // closed by the server while idle: try the next one
		_ = c.nc.Close()
		return t.getConn(ctx, addr, secure)
	}
	c.reused = true
	return c, nil
}

func (t *Transport) dial(ctx context.Context, addr string, secure bool) (*conn, error) {
	t.mu.Lock()
	if secure && t.tlsCfg == nil {
		t.tlsCfg = t.tlsConfig()
	}
	tlsCfg := t.tlsCfg
	if t.dialer == nil {
		d := &net.Dialer{Timeout: t.DialTimeout, KeepAlive: t.KeepAlive}
		if d.Timeout == 0 {
			d.Timeout = DefaultDialTimeout
		}
		if d.KeepAlive == 0 {
			d.KeepAlive = DefaultKeepAlive
		}
		t.dialer = d
	}
	d := t.dialer
	t.mu.Unlock()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, &Error{Op: "dial", Addr: addr, Err: err}
	}
	if secure {
		if nc, err = t.handshake(ctx, nc, addr, tlsCfg); err != nil {
			return nil, err
		}
	}
	c := &conn{nc: nc, addr: addr, key: poolKey(addr, secure), limit: noLimit}
	c.br = bufio.NewReaderSize(c, bufSize)
	c.bw = bufio.NewWriterSize(connWriter{c}, bufSize)
	c.tp.R = c.br
	c.abort = func() { _ = nc.SetDeadline(aLongTimeAgo) }
	c.initPeek()
	return c, nil
}

// put gives a connection whose exchange ended cleanly back to the pool.
func (t *Transport) put(c *conn) {
	if c.br.Buffered() > 0 { // bytes nobody asked for: the stream is out of step
		_ = c.nc.Close()
		return
	}
	c.idleAt = time.Now()
	max := t.maxIdle()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	cs := t.idle[c.key]
	if len(cs) < max {
		t.idle[c.key] = append(cs, c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		_ = c.nc.Close()
	}
}

// exchange writes req on c and reads the response header. On error c is
// closed; on success it belongs to the response's body (or is back in the
// pool when there is none).
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request, rb io.ReadCloser, cl int64, rh reqHeader) (*http.Response, error) {
	var stop func() bool
	if ctx.Done() != nil {
		// Cancellation while writing or reading: a past deadline makes
		// the blocked call return; the connection is then never reused.
		stop = context.AfterFunc(ctx, c.abort)
	}
	fail := func(op string, err error) error {
		if stop != nil {
			stop()
		}
		_ = c.nc.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return &Error{Op: op, Addr: c.addr, Err: err}
	}
	c.nread, c.nwrite = 0, 0
	gzip := !t.DisableCompression && req.Method != http.MethodHead && rh.acceptEncoding == "" && rh.rangeValue == ""
	err := writeRequest(c.bw, req, rb, cl, gzip, rh)
	closeBody(rb)
	if err != nil {
		return nil, fail("write request", err)
	}
	c.limit = MaxHeaderBytes
	var resp *http.Response
	var fr *frame
	box := new(exchangeBox) // the response, its body and frame in one allocation
	for n1xx := 0; ; n1xx++ {
		resp, fr, err = readResponseInto(&c.tp, req.Method, box)
		if err != nil {
			return nil, fail("read response header", err)
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n1xx == max1xx {
			return nil, fail("read response header", errors.New("too many 1xx informational responses"))
		}
		c.limit = MaxHeaderBytes // each 1xx has its own budget, as in net/http
	}
	c.limit = noLimit
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return nil, fail("read response header", errors.New("101 Switching Protocols: upgrades are not supported"))
	}
	resp.Request = req
	if tc, ok := c.nc.(*tls.Conn); ok { // as net/http reports it
		st := tc.ConnectionState()
		resp.TLS = &st
	}
	keep := !resp.Close && !req.Close && !hasToken(rh.connection, "close")
	if fr == nil {
		resp.Body = http.NoBody
		t.release(c, stop, keep)
		return resp, nil
	}
	b := &box.body
	*b = body{t: t, c: c, fr: fr, ctx: ctx, stop: stop, keep: keep, nc: c.nc}
	resp.Body = b
	// "GZIP" too: net/http compares without case (and only the first value).
	if gzip && asciiEqualFold(headerValue(resp.Header, "Content-Encoding"), "gzip") {
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
		resp.Body = &gzipBody{b: b}
	}
	return resp, nil
}

// release ends an exchange: the connection goes back to the pool when it
// may be kept and no cancellation touched it, else it is closed.
func (t *Transport) release(c *conn, stop func() bool, keep bool) {
	if stop != nil && !stop() {
		keep = false // the context ended: its AfterFunc set a past deadline
	}
	if keep {
		t.put(c)
	} else {
		_ = c.nc.Close()
	}
}

var errClosedBody = errors.New("http1: read on a closed response body")

// body is a response body on a pooled connection: at EOF the connection
// is released; closed early, it is drained from its buffer or closed.
type body struct {
	t    *Transport
	c    *conn // nil once released or closed
	fr   *frame
	ctx  context.Context
	stop func() bool
	keep bool
	err  error // sticky, after the connection is gone
	mu   sync.Mutex
	// nc and aborted let Close end a Read blocked in another goroutine.
	nc      net.Conn
	aborted atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c == nil {
		return 0, b.err
	}
	n, err := b.fr.Read(p)
	if err == nil {
		return n, nil
	}
	c := b.c
	b.c = nil
	if err == io.EOF {
		b.err = io.EOF
		b.t.release(c, b.stop, b.keep && !b.fr.toEOF && !b.aborted.Load())
		return n, io.EOF
	}
	if b.stop != nil {
		b.stop()
	}
	_ = c.nc.Close()
	if b.ctx.Err() != nil {
		err = b.ctx.Err()
	}
	b.err = &Error{Op: "read response body", Addr: c.addr, Err: err}
	return n, b.err
}

// Close gives the connection back when the body was read to its end, or
// when what is left of it is already buffered; else it closes it, as
// net/http does: reading an unbounded rest could block.
func (b *body) Close() error {
	if !b.mu.TryLock() {
		// A Read is blocked in another goroutine: closing the
		// connection ends it, as net/http's Close does.
		b.aborted.Store(true)
		return b.nc.Close()
	}
	defer b.mu.Unlock()
	c := b.c
	b.err = errClosedBody
	if c == nil {
		return nil
	}
	b.c = nil
	if b.keep && b.fr.drainBuffered(c) {
		b.t.release(c, b.stop, true)
		return nil
	}
	if b.stop != nil {
		b.stop()
	}
	return c.nc.Close()
}

// hasToken reports whether a list of comma-separated header values holds
// tok, compared ASCII case-insensitively.
func hasToken(vs []string, tok string) bool { return httpguts.HeaderValuesContainsToken(vs, tok) }

// headerValue is h.Get(key) for a key already in canonical form: Get spent as
// much canonicalizing the key as looking it up.
func headerValue(h http.Header, key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}
