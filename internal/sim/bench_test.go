package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHandler measures the handler path (parse, answer, encode) for
// an OpenAI request with the schema in the prompt, and with it also as a
// strict json_schema response format (as the worker asks), cycling
// through distinct documents so no answer is cached.
func BenchmarkHandler(b *testing.B) {
	_, raw := invoiceSchema(b)
	prompt := make([][]byte, 256)
	strict := make([][]byte, len(prompt))
	for i := range prompt {
		req := openAIChat(raw, fmt.Sprintf("%s\nreference %d", testDoc, i))
		prompt[i] = []byte(jsonOf(req))
		req["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "invoice", "strict": true, "schema": json.RawMessage(raw)}}
		strict[i] = []byte(jsonOf(req))
	}
	for _, c := range []struct {
		name   string
		bodies [][]byte
	}{{"clean", prompt}, {"sloppy", prompt}, {"clean/strict", strict}} {
		name, bodies := strings.Split(c.name, "/")[0], c.bodies
		b.Run(c.name, func(b *testing.B) {
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
