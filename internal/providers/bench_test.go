package providers

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/extractq/extractq/internal/http1"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
)

// BenchmarkChatSim measures one strict-mode call through the OpenAI
// adapter and the in-process simulator (request building, schema form,
// JSON encoding, response parsing, redaction): the adapter's own cost.
func BenchmarkChatSim(b *testing.B) {
	sch := testSchema(b)
	p := simOpenAI(b, "clean")
	req := llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeStrict, Schema: sch}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Chat(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatSimHTTP is BenchmarkChatSim over loopback TCP, the
// simulator behind a real HTTP server, with the provider's own client:
// net/http's transport (EXTRACTQ_HTTP1=off) against http1's. The server's
// CPU is in both figures alike. The context can be canceled, as a
// worker's is, so the cancellation hook is paid for.
func BenchmarkChatSimHTTP(b *testing.B) {
	srv, req := benchSim(b)
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	for _, tc := range []struct {
		name string
		env  env
	}{
		{"transport=net-http", env{http1Env: "off"}},
		{"transport=http1", env{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, err := New("openai:sim", WithBaseURL(hs.URL+"/v1"), WithAPIKey("sk-sim-test-key-000"), WithGetenv(tc.env.get))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChatSimHTTPS is BenchmarkChatSimHTTP over TLS, as every hosted
// API is called: net/http's transport over HTTP/2 (what it negotiates
// with a server that offers h2) and over HTTP/1.1, against http1's. Each
// client trusts the test server's certificate alone; the connection is
// kept alive, so the figures are the exchange, not the handshake.
func BenchmarkChatSimHTTPS(b *testing.B) {
	srv, req := benchSim(b)
	for _, tc := range []struct {
		name string
		h2   bool
		rt   func(*tls.Config) http.RoundTripper
	}{
		{"transport=net-http/h2", true, func(c *tls.Config) http.RoundTripper {
			tr := newTransport()
			tr.TLSClientConfig = c
			return tr
		}},
		{"transport=net-http/h1", false, func(c *tls.Config) http.RoundTripper {
			tr := newTransport()
			tr.TLSClientConfig = c
			return tr
		}},
		{"transport=http1", false, func(c *tls.Config) http.RoundTripper {
			return &http1.Transport{TLSClientConfig: c}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hs := httptest.NewUnstartedServer(srv.Handler())
			hs.EnableHTTP2 = tc.h2
			hs.StartTLS()
			defer hs.Close()
			roots := x509.NewCertPool()
			roots.AddCert(hs.Certificate())
			hc := &http.Client{Transport: tc.rt(&tls.Config{RootCAs: roots})}
			p, err := New("openai:sim", WithBaseURL(hs.URL+"/v1"), WithAPIKey("sk-sim-test-key-000"), WithHTTPClient(hc))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := p.Chat(ctx, req); err != nil { // the handshake, outside the loop
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChatCanned is BenchmarkChatSimHTTP's http1 case with the
// simulator's answer replayed by a raw TCP server that parses nothing but
// the request's Content-Length: the server costs a read and a write, so
// the figure (and allocs/op, the server allocating none) is the client's
// own cost per call: building and encoding the request, the exchange,
// reading and decoding the answer.
func BenchmarkChatCanned(b *testing.B) {
	p, req, _, _ := cannedChat(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatCannedFloor is BenchmarkChatCanned's exchange without the
// client: the bytes of the first request written on a raw connection and
// the answer read back by its length. It is the server's and the
// loopback's share of BenchmarkChatCanned (two system calls each side,
// the scheduler); the rest of that figure is the client's.
func BenchmarkChatCannedFloor(b *testing.B) {
	_, _, addr, recorded := cannedChat(b)
	request, answer := recorded()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = nc.Close() }()
	buf := make([]byte, len(answer))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nc.Write(request); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSim is the clean-profile simulator the HTTP benchmarks serve, and
// the strict-mode request they send it.
func benchSim(b *testing.B) (*sim.Server, llm.Request) {
	b.Helper()
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		b.Fatal(err)
	}
	srv := sim.New(prof)
	b.Cleanup(srv.Close)
	return srv, llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeStrict, Schema: testSchema(b)}
}

// cannedChat is the OpenAI adapter over http1 against cannedServer in
// front of the simulator, after one call that recorded the request and
// the answer.
func cannedChat(b *testing.B) (p llm.Provider, req llm.Request, addr string, recorded func() (request, answer []byte)) {
	b.Helper()
	srv, req := benchSim(b)
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	addr, recorded = cannedServer(b, strings.TrimPrefix(hs.URL, "http://"))
	p, err := New("openai:sim", WithBaseURL("http://"+addr+"/v1"), WithAPIKey("sk-sim-test-key-000"), WithGetenv(env{}.get))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Chat(context.Background(), req); err != nil { // records the request and the answer
		b.Fatal(err)
	}
	return p, req, addr, recorded
}

// cannedServer listens on loopback and answers every request on a
// connection with the bytes upstream sent to the first one; recorded
// returns the first request and that answer.
func cannedServer(tb testing.TB, upstream string) (addr string, recorded func() (request, answer []byte)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	var (
		mu     sync.Mutex
		first  []byte
		answer []byte
	)
	// readRequest returns one request's bytes, header and body.
	readRequest := func(br *bufio.Reader, buf []byte) ([]byte, error) {
		buf = buf[:0]
		cl := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return nil, err
			}
			buf = append(buf, line...)
			if k, v, ok := strings.Cut(string(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
				cl, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if len(line) == 2 {
				break
			}
		}
		n := len(buf)
		buf = append(buf, make([]byte, cl)...)
		_, err := io.ReadFull(br, buf[n:])
		return buf, err
	}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = nc.Close() }()
				br := bufio.NewReaderSize(nc, 64<<10)
				buf := make([]byte, 0, 64<<10)
				for {
					r, err := readRequest(br, buf)
					if err != nil {
						return
					}
					mu.Lock()
					if answer == nil { // the first call, before the benchmark's loop
						first = append([]byte(nil), r...)
						up, err := net.Dial("tcp", upstream)
						if err != nil {
							mu.Unlock()
							return
						}
						_, _ = up.Write(r)
						resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(up, (*sliceWriter)(&answer))), nil)
						if err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
						}
						_ = up.Close()
					}
					a := answer
					mu.Unlock()
					if _, err := nc.Write(a); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() ([]byte, []byte) {
		mu.Lock()
		defer mu.Unlock()
		return first, answer
	}
}

type sliceWriter []byte

func (w *sliceWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
