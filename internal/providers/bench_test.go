package providers

import (
	"context"
	"net/http/httptest"
	"testing"

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
