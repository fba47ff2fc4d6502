package http1

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server starts an httptest server and counts the connections it accepts.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// rawServer accepts connections and hands each to serve with its number
// (from 1); it writes whatever bytes a test needs.
func rawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader, n int)) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			k := int(n.Add(1))
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, bufio.NewReader(c), k)
			}()
		}
	}()
	return "http://" + l.Addr().String(), &n
}

func client(t *testing.T) (*http.Client, *Transport) {
	t.Helper()
	tr := &Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, tr
}

func get(t *testing.T, ctx context.Context, hc *http.Client, method, url string, body []byte) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// echo answers with the request's body (read whole first: net/http's
// server stops the body once the response is flushed).
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Method", r.Method)
	_, _ = w.Write(b)
}

func TestKeepAliveReuse(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, echo)
	hc, _ := client(t)
	for i := range 10 {
		msg := fmt.Sprintf("call %d", i)
		resp, b := get(t, t.Context(), hc, http.MethodPost, srv.URL+"/x", []byte(msg))
		if resp.StatusCode != 200 || string(b) != msg || resp.Header.Get("X-Method") != "POST" {
			t.Fatalf("call %d: %d %q %v", i, resp.StatusCode, b, resp.Header)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("10 sequential calls used %d connections, want 1", n)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, echo)
	hc, _ := client(t)
	const workers = 32
	echoConcurrently(t, hc, srv.URL, workers, 25, func(i int) int { return 1 + i*7 })
	if n := conns.Load(); n > workers {
		t.Fatalf("%d connections for %d concurrent callers: the pool does not reuse", n, workers)
	}
}

// echoConcurrently has workers callers post calls bodies each to an echo
// server at url (call i's body repeats a short marker repeat(i) times)
// and checks every answer.
func echoConcurrently(t *testing.T, hc *http.Client, url string, workers, calls int, repeat func(int) int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				msg := strings.Repeat(fmt.Sprintf("w%d-c%d;", w, i), repeat(i))
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(msg))
				resp, err := hc.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != msg {
					errs <- fmt.Errorf("worker %d call %d: %v, body %d bytes want %d", w, i, err, len(b), len(msg))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestChunkedResponse(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		for i := range 5 {
			_, _ = fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush() // no Content-Length: the server chunks
		}
		w.Header().Set("X-Sum", "10")
	})
	hc, _ := client(t)
	for range 2 {
		resp, b := get(t, t.Context(), hc, http.MethodGet, srv.URL, nil)
		want := "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"
		if string(b) != want || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.ContentLength != -1 {
			t.Fatalf("body %q TE %v CL %d", b, resp.TransferEncoding, resp.ContentLength)
		}
		if resp.Trailer.Get("X-Sum") != "10" {
			t.Fatalf("trailer %v", resp.Trailer)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1: a chunked body read to its end keeps the connection", n)
	}
}

func TestCloseDelimitedResponse(t *testing.T) {
	t.Parallel()
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader, _ int) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello, until the close")
	})
	hc, _ := client(t)
	for range 2 {
		resp, b := get(t, t.Context(), hc, http.MethodGet, url, nil)
		if string(b) != "hello, until the close" || !resp.Close || resp.ContentLength != -1 {
			t.Fatalf("body %q close %v CL %d", b, resp.Close, resp.ContentLength)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: a close-delimited body ends its connection", n)
	}
}

func TestServerConnectionClose(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	hc, _ := client(t)
	for range 3 {
		resp, b := get(t, t.Context(), hc, http.MethodGet, srv.URL, nil)
		if string(b) != "bye" || !resp.Close {
			t.Fatalf("body %q close %v", b, resp.Close)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3: Connection: close must not be reused", n)
	}
}

func TestClientConnectionClose(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, echo)
	hc, _ := client(t)
	for range 2 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		req.Close = true
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: a request with Close is not reused", n)
	}
}

// staleServer serves one request per connection with keep-alive
// announced, then closes the connection without a word, as a server whose
// idle timeout fired does. It records the bodies it received.
func staleServer(t *testing.T) (string, *atomic.Int32, func() []string) {
	var mu sync.Mutex
	var bodies []string
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader, _ int) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	})
	return url, conns, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), bodies...) }
}

func TestServerClosedIdleConn(t *testing.T) {
	t.Parallel()
	url, conns, bodies := staleServer(t)
	hc, _ := client(t)
	_, b := get(t, t.Context(), hc, http.MethodPost, url, []byte("first"))
	if string(b) != "first" {
		t.Fatalf("first body %q", b)
	}
	time.Sleep(peekIdle + 50*time.Millisecond) // idle long enough to be peeked at
	// The peek finds the close: the call goes out on a fresh connection.
	resp, b := get(t, t.Context(), hc, http.MethodPost, url, []byte("second"))
	if resp.StatusCode != 200 || string(b) != "second" {
		t.Fatalf("second: %d %q", resp.StatusCode, b)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the stale one, then a fresh one)", n)
	}
	if got := bodies(); len(got) != 2 || got[1] != "second" {
		t.Fatalf("server received %q", got)
	}
}

// TestStaleConnFoundBeforeWrite: a connection the server closed while
// idle is found by the peek before anything is written, so even a body
// that cannot be replayed goes out, once, on a fresh connection.
func TestStaleConnFoundBeforeWrite(t *testing.T) {
	t.Parallel()
	url, conns, bodies := staleServer(t)
	hc, _ := client(t)
	get(t, t.Context(), hc, http.MethodPost, url, []byte("first"))
	time.Sleep(peekIdle + 50*time.Millisecond)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, io.NopCloser(strings.NewReader("once")))
	req.ContentLength = 4 // a body that cannot be sent again
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("the stale connection was used: %v", err)
	}
	_ = resp.Body.Close()
	if got := bodies(); len(got) != 2 || got[1] != "once" || conns.Load() != 2 {
		t.Fatalf("server received %q on %d connections", got, conns.Load())
	}
}

func TestNotRetriedAfterResponseBytes(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader, _ int) {
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			requests.Add(1)
			if i == 0 {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				continue
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-A: 1\r\n") // then the connection drops
			return
		}
	})
	hc, _ := client(t)
	get(t, t.Context(), hc, http.MethodPost, url, []byte("a"))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("b"))
	_, err := hc.Do(req)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want a cut header (io.ErrUnexpectedEOF)", err)
	}
	if n, c := requests.Load(), conns.Load(); n != 2 || c != 1 {
		t.Fatalf("server saw %d requests on %d connections, want 2 on 1: a response begun is never retried", n, c)
	}
}

func TestCancelDuringSlowResponse(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	hc, tr := client(t)

	t.Run("header", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/head", nil)
		start := time.Now()
		_, err := hc.Do(req)
		if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
			t.Fatalf("err %v after %v, want context.Canceled promptly", err, time.Since(start))
		}
	})
	t.Run("body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/body", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !errors.Is(err, context.Canceled) || string(b) != "partial" || time.Since(start) > 5*time.Second {
			t.Fatalf("read %q, err %v after %v; want context.Canceled promptly", b, err, time.Since(start))
		}
	})
	tr.mu.Lock()
	idle := len(tr.idle[srv.Listener.Addr().String()])
	tr.mu.Unlock()
	if idle != 0 {
		t.Fatalf("%d idle connections after two canceled calls: a canceled call's connection was pooled", idle)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestDeadlineIsTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	hc, _ := client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	_, err := hc.Do(req)
	var ne net.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v (%T), want context.DeadlineExceeded and a net.Error timeout", err, err)
	}
	var he *Error
	if !errors.As(err, &he) || he.Op != "read response header" {
		t.Fatalf("err %v: want *Error while reading the header", err)
	}
}

func TestHeaderTooLarge(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Huge", strings.Repeat("a", MaxHeaderBytes+10))
	})
	hc, _ := client(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	_, err := hc.Do(req)
	if !errors.Is(err, ErrHeaderTooLarge) {
		t.Fatalf("err %v, want ErrHeaderTooLarge", err)
	}
	// Just under the limit is fine.
	srv2, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", MaxHeaderBytes-1000))
	})
	resp, _ := get(t, t.Context(), hc, http.MethodGet, srv2.URL, nil)
	if len(resp.Header.Get("X-Big")) != MaxHeaderBytes-1000 {
		t.Fatal("a header under the limit was refused or cut")
	}
}

func TestEarlyClose(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 100_000)
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, big)
		case "/small":
			_, _ = io.WriteString(w, "a short answer")
		default:
			_, _ = io.WriteString(w, "next")
		}
	})
	hc, _ := client(t)
	read10 := func(path string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b [10]byte
		if _, err := io.ReadFull(resp.Body, b[:]); err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil && path == "/small" {
			t.Fatal(err)
		}
		if _, err := resp.Body.Read(b[:]); err == nil {
			t.Fatal("read after Close succeeded")
		}
	}
	read10("/big")
	if _, b := get(t, t.Context(), hc, http.MethodGet, srv.URL+"/next", nil); string(b) != "next" {
		t.Fatalf("after an unread large body, got %q", b)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: the large body's connection must be closed", n)
	}
	read10("/small") // the rest is buffered: drained, the connection kept
	if _, b := get(t, t.Context(), hc, http.MethodGet, srv.URL+"/next", nil); string(b) != "next" {
		t.Fatalf("after an unread short body, got %q", b)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: a short rest is drained and the connection kept", n)
	}
}

func TestInformationalSkipped(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "made")
	})
	hc, _ := client(t)
	resp, b := get(t, t.Context(), hc, http.MethodPost, srv.URL, []byte("x"))
	if resp.StatusCode != http.StatusCreated || string(b) != "made" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}

func TestNoBodyResponses(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("Content-Length", "1234")
			if r.Method != http.MethodHead {
				_, _ = io.WriteString(w, strings.Repeat("x", 1234))
			}
		}
	})
	hc, _ := client(t)
	for _, tc := range []struct {
		method, path string
		status       int
		cl           int64
	}{
		{http.MethodHead, "/", 200, 1234},
		{http.MethodGet, "/204", 204, 0},
		{http.MethodGet, "/304", 304, 0},
		{http.MethodHead, "/", 200, 1234},
	} {
		resp, b := get(t, t.Context(), hc, tc.method, srv.URL+tc.path, nil)
		if resp.StatusCode != tc.status || len(b) != 0 || resp.ContentLength != tc.cl {
			t.Fatalf("%s %s: %d, %d bytes, CL %d", tc.method, tc.path, resp.StatusCode, len(b), resp.ContentLength)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

func TestLargeBodies(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		w.Header().Set("X-Sum", fmt.Sprintf("%x", h.Sum(nil)))
		w.Header().Set("X-Len", fmt.Sprint(n))
		_, _ = w.Write(bytes.Repeat([]byte("response-"), 700_000)) // 6.3 MB
	})
	hc, _ := client(t)
	payload := make([]byte, 5<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	sum := sha256.Sum256(payload)
	for _, unknown := range []bool{false, true} {
		var rd io.Reader = bytes.NewReader(payload)
		if unknown {
			rd = io.MultiReader(rd) // no length: sent chunked
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, rd)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.Header.Get("X-Sum") != fmt.Sprintf("%x", sum) || resp.Header.Get("X-Len") != fmt.Sprint(len(payload)) {
			t.Fatalf("unknown length %v: err %v, server got %s bytes, sum %s", unknown, err, resp.Header.Get("X-Len"), resp.Header.Get("X-Sum"))
		}
		if !bytes.Equal(b, bytes.Repeat([]byte("response-"), 700_000)) {
			t.Fatalf("response body of %d bytes differs", len(b))
		}
	}
}

func TestHeaderCanonicalization(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader, _ int) {
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		got <- head.String()
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-foo-bar: 1\r\nx-foo-bar: 2\r\nCONTENT-type: text/plain\r\n\r\nok")
	})
	hc, _ := client(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/p?q=1", nil)
	req.Header["x-custom-thing"] = []string{"v"}
	req.Header.Set("Authorization", "Bearer k")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	head := <-got
	for _, want := range []string{"GET /p?q=1 HTTP/1.1\r\n", "Host: " + strings.TrimPrefix(url, "http://") + "\r\n", "X-Custom-Thing: v\r\n", "Authorization: Bearer k\r\n", "User-Agent: Go-http-client/1.1\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("request head %q lacks %q", head, want)
		}
	}
	if string(b) != "ok" || resp.Header.Get("Content-Type") != "text/plain" || strings.Join(resp.Header["X-Foo-Bar"], ",") != "1,2" {
		t.Fatalf("body %q header %v", b, resp.Header)
	}
	bad, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	bad.Header.Set("X-Inject", "a\r\nX-Evil: 1")
	if _, err := hc.Do(bad); err == nil {
		t.Fatal("a header value with CRLF was sent")
	}
}

func TestGzip(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = io.WriteString(w, "plain")
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, strings.Repeat("compressed ", 100))
		_ = zw.Close()
	})
	hc, _ := client(t)
	for range 2 {
		resp, b := get(t, t.Context(), hc, http.MethodGet, srv.URL, nil)
		if string(b) != strings.Repeat("compressed ", 100) || !resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("body %q uncompressed %v", b, resp.Uncompressed)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	off := &http.Client{Transport: &Transport{DisableCompression: true}}
	if _, b := get(t, t.Context(), off, http.MethodGet, srv.URL, nil); string(b) != "plain" {
		t.Fatalf("DisableCompression: %q", b)
	}
}

func TestUnsupportedAndFallback(t *testing.T) {
	t.Parallel()
	hc, _ := client(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "ftp://example.invalid/", nil)
	if _, err := hc.Do(req); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ftp without Fallback: %v", err)
	}
	var used atomic.Bool
	fb := &http.Client{Transport: &Transport{Fallback: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Store(true)
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})}}
	if resp, err := fb.Do(req); err != nil || resp.StatusCode != 204 || !used.Load() {
		t.Fatalf("ftp with Fallback: %v %v", resp, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDialErrors(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	hc, _ := client(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr, nil)
	_, err = hc.Do(req)
	var he *Error
	var oe *net.OpError
	if !errors.As(err, &he) || he.Op != "dial" || !errors.As(err, &oe) {
		t.Fatalf("refused: %v", err)
	}
}

func TestIdleTimeoutReaped(t *testing.T) {
	t.Parallel()
	srv, conns := server(t, echo)
	tr := &Transport{IdleConnTimeout: 20 * time.Millisecond}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	get(t, t.Context(), hc, http.MethodGet, srv.URL, nil)
	time.Sleep(60 * time.Millisecond)
	get(t, t.Context(), hc, http.MethodGet, srv.URL, nil)
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: an idle connection past its timeout is not reused", n)
	}
}

// TestRaceWithIdleClose: the server reads the second request on a reused
// connection and closes it without a word, as a server whose idle timer
// fired just as the request arrived. An idempotent request (or one with an
// Idempotency-Key) is sent again on a fresh connection; a POST is not, as
// net/http does not: the server may have acted on it.
func TestRaceWithIdleClose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		key          bool
		retried      bool
	}{
		{"GET", http.MethodGet, false, true},
		{"POST", http.MethodPost, false, false},
		{"POST with Idempotency-Key", http.MethodPost, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var bodies []string
			url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader, n int) {
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					mu.Lock()
					bodies = append(bodies, string(b))
					mu.Unlock()
					if n == 1 && i == 1 {
						return // the second request on the first connection: dropped
					}
					_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
				}
			})
			hc, _ := client(t)
			get(t, t.Context(), hc, tc.method, url, []byte("one"))
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, url, strings.NewReader("two"))
			if tc.key {
				req.Header.Set("Idempotency-Key", "k-2")
			}
			resp, err := hc.Do(req)
			if tc.retried {
				if err != nil {
					t.Fatalf("not retried: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				if string(b) != "two" || conns.Load() != 2 || len(bodies) != 3 || bodies[2] != "two" {
					t.Fatalf("body %q, %d connections, server got %q", b, conns.Load(), bodies)
				}
				return
			}
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("err %v, want the cut (io.ErrUnexpectedEOF), not a retry", err)
			}
			if n := conns.Load(); n != 1 {
				t.Fatalf("%d connections: the POST was sent again", n)
			}
		})
	}
}

// TestCloseUnblocksRead: Close from another goroutine ends a Read blocked
// on a stalled body, as with net/http.
func TestCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	hc, _ := client(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { _ = resp.Body.Close() })
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read cut by Close reported no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a blocked Read")
	}
}
