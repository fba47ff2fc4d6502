package providers

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// seen is one request a canned server received.
type seen struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

// canned is an httptest server answering every request with one status,
// headers and body, and recording what it received.
type canned struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newCanned(t *testing.T, status int, hdr map[string]string, body string) *canned {
	t.Helper()
	c := &canned{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		c.mu.Unlock()
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(c.Close)
	return c
}

// count is the number of requests received.
func (c *canned) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reqs)
}

// last returns the last request, failing if there was none.
func (c *canned) last(t *testing.T) seen {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return c.reqs[len(c.reqs)-1]
}

// lastJSON decodes the last request body.
func (c *canned) lastJSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.last(t).Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, c.last(t).Body)
	}
	return m
}

// mustNew builds a provider with an injected environment.
func mustNew(t *testing.T, spec string, e env, opts ...Option) llm.Provider {
	t.Helper()
	p, err := New(spec, append([]Option{WithGetenv(e.get)}, opts...)...)
	if err != nil {
		t.Fatalf("New(%q): %v", spec, err)
	}
	return p
}

// testSchema is a small extraction schema used by the adapter tests.
func testSchema(t testing.TB) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"total": {"type": "number"},
			"status": {"type": "string", "enum": ["paid", "open"]}
		},
		"required": ["name", "total", "status"],
		"additionalProperties": false
	}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// conversation is a re-ask: system, user, the failed answer, the feedback.
func conversation() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "You extract data as JSON."},
		{Role: llm.RoleUser, Content: "<document-0123456789abcdef>Invoice ACME, total 12.50, paid</document-0123456789abcdef>"},
		{Role: llm.RoleAssistant, Content: `{"name": "ACME", "total": "12.50"}`},
		{Role: llm.RoleUser, Content: "/total: expected number; /status: required"},
	}
}
