package sim

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHandler measures the handler path (parse, answer, encode) for
// an OpenAI request with the schema in the prompt, cycling through
// distinct documents so no answer is cached.
func BenchmarkHandler(b *testing.B) {
	_, raw := invoiceSchema(b)
	bodies := make([][]byte, 256)
	for i := range bodies {
		bodies[i] = []byte(jsonOf(openAIChat(raw, fmt.Sprintf("%s\nreference %d", testDoc, i))))
	}
	for _, name := range []string{"clean", "sloppy"} {
		b.Run(name, func(b *testing.B) {
			h := New(builtins[name]).Handler()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(bodies[i%len(bodies)]))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("status %d: %s", w.Code, w.Body)
					}
				}
			})
		})
	}
}
