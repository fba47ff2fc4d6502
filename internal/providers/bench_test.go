package providers

import (
	"context"
	"testing"

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
