package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Serve answers the simulator's APIs on ln until ctx is done, then shuts
// down: it stops accepting, closes idle connections, lets a request being
// answered finish (Close releases the ones held by latency or simulated
// timeouts) and returns once every connection it served is closed, nil
// when ctx ended it. A connection still busy after the grace period
// (ShutdownGrace) is closed and Serve says so.
//
// It serves what Handler serves, with the same bytes but a cheaper path for
// the requests an API client sends: a POST of a Content-Length body over
// HTTP/1.1 to a chat route is read by a fixed-header loop that calls the
// handler's code directly and writes the reply in one write, without
// net/http's Request, header map, context and background read per request.
// Anything else (another route or method, chunked bodies, Expect,
// Connection: close, an unusual or malformed head) hands the connection,
// with what was read of it, to an http.Server running Handler, which keeps
// it from then on. Over a TCP listener a dropped-connection fault resets
// the connection as Handler's Hijack does.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	st := &serveState{s: s, conns: make(map[*fastConn]bool), grace: s.shutdownGrace}
	st.hard, st.stopHard = context.WithCancel(context.Background())
	defer st.stopHard()
	st.handoff = newChanListener(ln.Addr())
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.headerTimeout}
	hsDone := make(chan error, 1)
	go func() { hsDone <- hs.Serve(st.handoff) }()
	stopAccept := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stopAccept()

	var err error
	var backoff time.Duration
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(aerr, &ne) && ne.Timeout() || isTemporary(aerr) { // e.g. too many open files
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-ctx.Done():
				}
				break
			}
			err = fmt.Errorf("simulator: accept on %s: %w", ln.Addr(), aerr)
			break
		}
		backoff = 0
		if !st.add(c) {
			_ = c.Close()
			break
		}
	}
	_ = ln.Close()
	if serr := st.shutdown(hs, hsDone); serr != nil && err == nil {
		err = serr
	}
	return err
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// ShutdownGrace is how long Serve waits, once its context is done, for the
// requests being answered to finish before it closes their connections.
const ShutdownGrace = 5 * time.Second

// WithHeaderTimeout bounds the time a client may take to send a request's
// head (and, on the fast path, its body) once it has started, as
// http.Server's ReadHeaderTimeout does (default 10 s). Serve uses it.
func WithHeaderTimeout(d time.Duration) Option {
	return func(s *Server) { s.headerTimeout = d }
}

const defaultHeaderTimeout = 10 * time.Second

// serveState is one Serve call's connections.
type serveState struct {
	s       *Server
	handoff *chanListener
	wg      sync.WaitGroup
	grace   time.Duration
	// hard ends the requests still held when the grace period is over.
	hard     context.Context
	stopHard context.CancelFunc

	mu       sync.Mutex
	conns    map[*fastConn]bool // connection → idle (waiting for a request)
	shutting bool
}

// add starts serving c; false once shutting down.
func (st *serveState) add(c net.Conn) bool {
	fc := newFastConn(st, c)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shutting {
		return false
	}
	st.conns[fc] = false
	st.wg.Add(1)
	go fc.serve()
	return true
}

// setIdle records fc's state; false once shutting down, when fc should
// close instead of waiting for or answering another request.
func (st *serveState) setIdle(fc *fastConn, idle bool) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shutting {
		return false
	}
	st.conns[fc] = idle
	return true
}

func (st *serveState) isShutting() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.shutting
}

func (st *serveState) remove(fc *fastConn) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.conns, fc)
}

// aLongTimeAgo is a read deadline that makes a blocked read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// shutdown closes idle connections, waits up to ShutdownGrace for the busy
// ones, then closes what is left, on both paths.
func (st *serveState) shutdown(hs *http.Server, hsDone <-chan error) error {
	st.mu.Lock()
	st.shutting = true
	for fc, idle := range st.conns {
		if idle {
			_ = fc.c.SetReadDeadline(aLongTimeAgo) // its read ends; it closes
		}
	}
	st.mu.Unlock()

	grace, cancel := context.WithTimeout(context.Background(), st.grace)
	defer cancel()
	fastDone := make(chan struct{})
	go func() { st.wg.Wait(); close(fastDone) }()
	var err error
	hsErr := hs.Shutdown(grace) // closes the hand-off listener; waits for its connections
	select {
	case <-fastDone:
	case <-grace.Done():
	}
	st.stopHard() // a held request ends unanswered
	st.mu.Lock()
	busy := len(st.conns)
	for fc := range st.conns {
		_ = fc.c.Close()
	}
	st.mu.Unlock()
	if hsErr != nil {
		_ = hs.Close()
	}
	<-fastDone
	<-hsDone
	if busy > 0 || hsErr != nil {
		err = fmt.Errorf("simulator: connections still busy %v after shutdown began were closed; call Close first to release requests held by latency or timeouts", st.grace)
	}
	return err
}

// chanListener is the hand-off: the fast path's connections net/http takes
// over arrive on it.
type chanListener struct {
	addr      net.Addr
	ch        chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// give hands c to net/http, or closes it if net/http has stopped.
func (l *chanListener) give(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// handedConn is a connection given to net/http: its reads start with what
// the fast path had buffered.
type handedConn struct {
	net.Conn
	r io.Reader
}

func (c *handedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Buffer sizes of a fast connection. A head that does not fit in the read
// buffer goes to net/http (whose limit is 1 MB).
// A larger body goes to net/http too, which reads it as it comes instead
// of setting its length aside first.
const (
	fastReadBuf = 8 << 10
	maxFastHead = fastReadBuf
	maxFastBody = 1 << 20
)

// fastConn is one connection on the fast path.
type fastConn struct {
	st  *serveState
	c   net.Conn
	cr  connReader
	r   *bufio.Reader
	w   fastWriter
	out []byte // the reply being written
	// deadline is the current request's read deadline, set on the
	// connection (armed) only before a read that may block.
	deadline time.Time
	armed    bool
}

func newFastConn(st *serveState, c net.Conn) *fastConn {
	fc := &fastConn{st: st, c: c}
	fc.cr.c = c
	fc.r = bufio.NewReaderSize(&fc.cr, fastReadBuf)
	fc.w.fc = fc
	fc.w.header = make(http.Header, 16)
	return fc
}

// connReader reads the connection, first returning the byte a watch read
// while a request was being answered (the next pipelined request's).
type connReader struct {
	c       net.Conn
	pending []byte
	one     [1]byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.c.Read(p)
}

func (fc *fastConn) serve() {
	handed := false
	defer func() {
		fc.st.remove(fc)
		if !handed {
			_ = fc.c.Close()
		}
		fc.st.wg.Done()
	}()
	timeout := fc.st.s.headerTimeout
	for {
		if !fc.st.setIdle(fc, true) {
			return
		}
		if _, err := fc.r.Peek(1); err != nil {
			return // the client closed, or shutdown
		}
		if !fc.st.setIdle(fc, false) {
			return
		}
		fc.deadline = time.Time{}
		if timeout > 0 {
			fc.deadline = time.Now().Add(timeout)
		}
		h, ok, err := fc.readHead()
		if err != nil {
			return // timed out or gone in the middle of a head: net/http closes too
		}
		if !ok {
			fc.disarm()
			fc.st.s.served.handedOff.Add(1)
			fc.st.handoff.give(&handedConn{Conn: fc.c, r: fc.r})
			handed = true
			return
		}
		if !fc.serveOne(&h) {
			return
		}
	}
}

// arm sets the request's read deadline before a read that may block. A
// request that arrived whole in one read (the usual case) never sets one:
// a deadline costs a timer.
func (fc *fastConn) arm() {
	if !fc.armed && !fc.deadline.IsZero() {
		fc.armed = true
		_ = fc.c.SetReadDeadline(fc.deadline)
	}
}

// disarm clears the deadline: no idle timeout, as http.Server has none
// without IdleTimeout or ReadTimeout.
func (fc *fastConn) disarm() {
	if fc.armed {
		fc.armed = false
		_ = fc.c.SetReadDeadline(time.Time{})
	}
}

// head is what the fast path takes from a request head.
type head struct {
	a             api
	model, path   string
	contentLength int64
	size          int // bytes of the head, request line to the empty line
}

// readHead reads the next request's head into the buffer without consuming
// it. ok is false when net/http should answer it (and everything after it
// on the connection); err when the client went away or timed out.
func (fc *fastConn) readHead() (h head, ok bool, err error) {
	for {
		buf, _ := fc.r.Peek(fc.r.Buffered())
		h, done, fast := parseHead(buf)
		if done || !fast {
			return h, fast && done, nil
		}
		if len(buf) >= maxFastHead {
			return h, false, nil
		}
		fc.arm()
		if _, err := fc.r.Peek(len(buf) + 1); err != nil {
			if len(buf) > 0 && !isTimeout(err) && errors.Is(err, io.EOF) {
				return h, false, nil // half a head then EOF: net/http decides what it was
			}
			return h, false, err
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// hasControl reports whether b holds an ASCII control character, which
// net/url refuses in a request target (net/http answers 400).
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// parseHead parses a request head at the start of buf. done: the head is
// complete; fast: the fast path may answer it (so far, when !done).
// The fast path takes "POST <known route> HTTP/1.1", CRLF line ends, a
// Host, an optional Content-Length of digits, Connection only as
// keep-alive, and any other header whose name is a token and whose value
// has no control characters, except those that change how net/http reads
// or answers the request (Transfer-Encoding, Expect, Upgrade, Trailer, TE,
// and the HTTP/2 ones). The handler reads no request header but the
// batch routes' Content-Type, which are not fast routes.
func parseHead(buf []byte) (h head, done, fast bool) {
	line, rest, ok := cutLine(buf)
	if !ok {
		return h, false, line != nil
	}
	method, rest1, ok1 := bytes.Cut(line, []byte{' '})
	target, proto, ok2 := bytes.Cut(rest1, []byte{' '})
	if !ok1 || !ok2 || string(method) != http.MethodPost || string(proto) != "HTTP/1.1" || len(target) == 0 || target[0] != '/' ||
		bytes.ContainsAny(target, "?#% \t") || hasControl(target) {
		return h, false, false
	}
	var known bool
	h.a, h.model, known = routeOf(string(target))
	if !known {
		return h, false, false
	}
	hosts, lengths := 0, 0
	for {
		line, rest, ok = cutLine(rest)
		if !ok {
			return h, false, line != nil
		}
		if len(line) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte{':'})
		if !found || !isToken(name) {
			return h, false, false
		}
		value = trimOWS(value)
		if !validValue(value) {
			return h, false, false
		}
		switch {
		case asciiEqualFold(name, "Host"):
			hosts++
			if !validHost(value) {
				return h, false, false
			}
		case asciiEqualFold(name, "Content-Length"):
			lengths++
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || n > maxFastBody || !allDigits(value) {
				return h, false, false
			}
			h.contentLength = n
		case asciiEqualFold(name, "Connection"):
			if !asciiEqualFold(value, "keep-alive") {
				return h, false, false
			}
		case asciiEqualFold(name, "Transfer-Encoding"), asciiEqualFold(name, "Expect"), asciiEqualFold(name, "Upgrade"),
			asciiEqualFold(name, "Trailer"), asciiEqualFold(name, "TE"), asciiEqualFold(name, "Http2-Settings"),
			asciiEqualFold(name, "Keep-Alive"), asciiEqualFold(name, "Proxy-Connection"):
			return h, false, false
		}
	}
	if hosts != 1 || lengths > 1 {
		return h, false, false
	}
	h.path = string(target)
	h.size = len(buf) - len(rest)
	return h, true, true
}

// cutLine cuts a CRLF-ended line. Without a whole line, ok is false and
// line is nil if the partial line is already not fast (a bare LF, a NUL).
func cutLine(buf []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return buf[:0:0], buf, false
	}
	if i == 0 || buf[i-1] != '\r' {
		return nil, nil, false // a bare LF: net/http's reader decides
	}
	return buf[:i-1], buf[i+1:], true
}

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validValue reports a value with no control character (but tab) and no
// DEL; net/http refuses those.
func validValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validHost is a conservative host[:port] check (a name, IPv4 or
// bracketed IPv6); anything else goes to net/http, which checks it itself.
func validHost(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return true
}

func allDigits(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(v) > 0
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// serveOne answers the request whose head h is at the front of the buffer;
// false when the connection is to be closed.
func (fc *fastConn) serveOne(h *head) bool {
	s := fc.st.s
	_, _ = fc.r.Discard(h.size)
	// Counted as serveHTTP counts, before the body is read.
	s.c.requests.Add(1)
	s.c.byRoute[h.a].Add(1)
	s.served.fast.Add(1)
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	buf.Grow(int(h.contentLength))
	body := buf.AvailableBuffer()[:h.contentLength]
	fc.w.reset()
	if int64(fc.r.Buffered()) < h.contentLength {
		fc.arm()
	}
	if _, err := io.ReadFull(fc.r, body); err != nil {
		// The client went away or stalled mid-body: answered as the handler
		// answers a body it could not read, to no one.
		s.fail(&fc.w, h.a, invalid("could not read the request body: %v", err), nil)
		return false
	}
	fc.disarm()
	rc := &reqCtx{fc: fc}
	s.serveAPI(rc, &fc.w, h.a, h.model, h.path, body)
	gone := rc.end()
	if fc.w.dropped {
		if tc, ok := fc.c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as drop's Hijack does
		}
		return false
	}
	if !fc.w.wroteHeader {
		// No answer: the client gave up while a simulated timeout held it.
		return false
	}
	if _, err := fc.c.Write(fc.out); err != nil {
		return false
	}
	return !gone && !fc.w.close
}

// fastWriter is the fast path's ResponseWriter: the head is serialized as
// net/http's server serializes it (the status line, the handler's headers
// sorted, then Date), the body appended after it.
type fastWriter struct {
	fc          *fastConn
	header      http.Header
	keys        []string
	wroteHeader bool
	dropped     bool
	close       bool
}

func (w *fastWriter) reset() {
	clear(w.header)
	w.wroteHeader, w.dropped, w.close = false, false, false
	w.fc.out = w.fc.out[:0]
}

func (w *fastWriter) Header() http.Header { return w.header }

// drop is the dropped-connection fault (see drop).
func (w *fastWriter) drop() { w.dropped = true }

var headerNewlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

func (w *fastWriter) WriteHeader(status int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	out := w.fc.out[:0]
	out = append(out, "HTTP/1.1 "...)
	if text := http.StatusText(status); text != "" {
		out = strconv.AppendInt(out, int64(status), 10)
		out = append(out, ' ')
		out = append(out, text...)
		out = append(out, "\r\n"...)
	} else {
		out = fmt.Appendf(out, "%03d status code %d\r\n", status, status)
	}
	w.keys = w.keys[:0]
	for k := range w.header {
		w.keys = append(w.keys, k)
	}
	slices.Sort(w.keys)
	for _, k := range w.keys {
		for _, v := range w.header[k] {
			if strings.ContainsAny(v, "\r\n") {
				v = headerNewlineToSpace.Replace(v)
			}
			v = strings.Trim(v, " \t")
			out = append(out, k...)
			out = append(out, ": "...)
			out = append(out, v...)
			out = append(out, "\r\n"...)
		}
	}
	if _, ok := w.header["Date"]; !ok {
		out = appendDateLine(out, time.Now())
	}
	// The handler always sets Content-Type and Content-Length on these
	// routes; without a length the connection ends the body.
	if _, ok := w.header["Content-Length"]; !ok {
		w.close = true
	}
	if w.fc.st.isShutting() {
		w.close = true
	}
	if w.close {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "\r\n"...)
	w.fc.out = out
}

// cachedDate is the last Date header line written, for its second: the
// same line serves every response in that second instead of formatting
// the time each time.
type cachedDate struct {
	sec  int64
	line []byte
}

var lastDate atomic.Pointer[cachedDate]

// appendDateLine appends "Date: " now in http.TimeFormat and CRLF.
func appendDateLine(out []byte, now time.Time) []byte {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return append(out, d.line...)
	}
	line := append([]byte("Date: "), now.UTC().AppendFormat(nil, http.TimeFormat)...)
	line = append(line, "\r\n"...)
	lastDate.Store(&cachedDate{sec: sec, line: line})
	return append(out, line...)
}

func (w *fastWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.fc.out = append(w.fc.out, p...)
	return len(p), nil
}

// reqCtx is a request's context on the fast path. net/http reads the
// connection in the background while a handler runs, to cancel its
// context when the client goes away; that costs a goroutine wake-up and a
// read per request. Here the read starts only when the handler first asks
// for Done (a simulated latency or timeout waits on it), so a request
// answered at once costs nothing, and a client that gives up while held
// still ends the wait.
type reqCtx struct {
	fc *fastConn

	mu       sync.Mutex
	ended    bool
	ctx      context.Context
	cancel   context.CancelFunc
	watching bool
	watched  chan struct{} // closed when the watch read returned
	got      int           // bytes the watch read (0 or 1)
	err      error         // the watch read's error
}

var closedCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (c *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *reqCtx) Value(any) any               { return nil }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return closedCtx.Done()
	}
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(c.fc.st.hard)
		c.watching = true
		c.watched = make(chan struct{})
		go c.watch()
	}
	return c.ctx.Done()
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ended:
		return context.Canceled
	case c.ctx == nil:
		return nil
	}
	return c.ctx.Err()
}

// watch reads one byte: the client closing (EOF, reset) cancels the
// request; a byte is the next request's, kept for it.
func (c *reqCtx) watch() {
	defer close(c.watched)
	n, err := c.fc.c.Read(c.fc.cr.one[:])
	c.got, c.err = n, err
	if n == 0 {
		c.cancel()
	}
}

// end stops the watch, if any, and reports whether the client went away.
func (c *reqCtx) end() (gone bool) {
	c.mu.Lock()
	c.ended = true
	watching := c.watching
	c.mu.Unlock()
	if !watching {
		return false
	}
	_ = c.fc.c.SetReadDeadline(aLongTimeAgo)
	<-c.watched
	c.cancel()
	if c.got == 1 {
		c.fc.cr.pending = c.fc.cr.one[:1]
	}
	_ = c.fc.c.SetReadDeadline(time.Time{})
	return c.got == 0 && c.err != nil && !errors.Is(c.err, os.ErrDeadlineExceeded)
}
