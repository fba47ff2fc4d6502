package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/extractq/extractq/schema"
)

const invoiceSchemaPath = "../../examples/invoice.schema.json"

func invoiceSchema(t testing.TB) (*schema.Schema, json.RawMessage) {
	t.Helper()
	raw, err := os.ReadFile(invoiceSchemaPath)
	if err != nil {
		t.Fatalf("read the example schema: %v", err)
	}
	s, err := schema.Compile(raw)
	if err != nil {
		t.Fatalf("compile %s: %v", invoiceSchemaPath, err)
	}
	return s, raw
}

const testDoc = `Dear Quantum Bakery Co.,
please find below our invoice INV48931 dated 2026-03-19 for the goods delivered.
- 40 pcs x Ergonomic office chair at $289.00 = $11,560.00
Total $14,450.00. Questions: billing@acme-supply.example
Accounts team, Acme Industrial Supply Inc.`

// fence wraps a document the way the engine's prompt does.
func fence(doc string) string {
	return "<document-0123456789abcdef>\n" + doc + "\n</document-0123456789abcdef>"
}

// promptWithSchema is an engine-style prompt embedding the schema.
func promptWithSchema(schemaJSON []byte, doc string) string {
	return "Extract the fields below from the document. Answer with JSON only.\n<json-schema>\n" +
		string(schemaJSON) + "\n</json-schema>\n\n" + fence(doc)
}

// call posts body to path through the in-process transport.
func call(t testing.TB, s *Server, path string, body any) (*http.Response, []byte) {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Transport: s.Transport()}
	resp, err := client.Post("http://sim"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// obj decodes a JSON object or fails.
func obj(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, b)
	}
	return m
}

// dig walks a decoded JSON value by keys and indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// openAIChat is a text-mode OpenAI request with the schema in the prompt.
func openAIChat(schemaJSON []byte, doc string) map[string]any {
	return map[string]any{
		"model":    "gpt-4o-mini",
		"messages": []map[string]any{{"role": "user", "content": promptWithSchema(schemaJSON, doc)}},
	}
}

// openAIAnswer returns the answer text (content or tool arguments), the
// refusal and the finish reason of an OpenAI response.
func openAIAnswer(t testing.TB, body []byte) (text, refusal, finish string) {
	t.Helper()
	m := obj(t, body)
	msg := dig(m, "choices", 0, "message")
	text = str(dig(msg, "content"))
	if args := dig(msg, "tool_calls", 0, "function", "arguments"); args != nil {
		text = str(args)
	}
	return text, str(dig(msg, "refusal")), str(dig(m, "choices", 0, "finish_reason"))
}

func mustProfile(t testing.TB, yaml string) Profile {
	t.Helper()
	p, err := ParseProfile([]byte(yaml))
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	return p
}

func validate(t testing.TB, s *schema.Schema, text string) []schema.Violation {
	t.Helper()
	vs, err := s.ValidateJSON([]byte(text))
	if err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, text)
	}
	return vs
}

func keywords(vs []schema.Violation) string {
	var b bytes.Buffer
	for _, v := range vs {
		fmt.Fprintf(&b, "%s %s; ", v.Pointer, v.Keyword)
	}
	return b.String()
}

func mustCompile(t testing.TB, src string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(src))
	if err != nil {
		t.Fatalf("compile %s: %v", src, err)
	}
	return s
}

func httpRequest(method, url string) (*http.Request, error) {
	return http.NewRequest(method, url, nil)
}

func readAll(resp *http.Response) ([]byte, error) { return io.ReadAll(resp.Body) }
