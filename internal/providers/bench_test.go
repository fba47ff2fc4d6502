package providers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
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
	sch := testSchema(b)
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		b.Fatal(err)
	}
	srv := sim.New(prof)
	b.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	req := llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeStrict, Schema: sch}
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
	sch := testSchema(b)
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		b.Fatal(err)
	}
	srv := sim.New(prof)
	b.Cleanup(srv.Close)
	req := llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeStrict, Schema: sch}
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
