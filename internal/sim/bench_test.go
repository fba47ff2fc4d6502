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

// BenchmarkOpenAIBatch measures a whole OpenAI batch of 1,000 request lines
// through the simulator: upload, create, poll until ended (no delay), and
// read the output file; ns/op is per batch.
func BenchmarkOpenAIBatch(b *testing.B) {
	for _, name := range []string{"clean", "sloppy"} {
		b.Run(name, func(b *testing.B) {
			s := New(builtins[name])
			file := batchFile(b, 0, 1000)
			b.ReportAllocs()
			for b.Loop() {
				got := getBatch(b, s, createBatch(b, s, file)["id"].(string))
				if n := len(fileLines(b, s, got["output_file_id"])); n != 1000 {
					b.Fatalf("%d output lines", n)
				}
			}
		})
	}
}
