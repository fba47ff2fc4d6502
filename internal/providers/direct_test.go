package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestDirectOnlyOwnClient: exchange skips http.Client only for the client
// a provider made itself over http1; a caller's client, a wrapped
// transport or net/http's transport keeps Client.Do.
func TestDirectOnlyOwnClient(t *testing.T) {
	wrap := func(rt http.RoundTripper) http.RoundTripper { return rt }
	for _, tc := range []struct {
		name   string
		opts   []Option
		direct bool
	}{
		{"own http1 client", nil, true},
		{"EXTRACTQ_HTTP1=off", []Option{WithGetenv(env{http1Env: "off"}.get)}, false},
		{"caller's client", []Option{WithHTTPClient(&http.Client{})}, false},
		{"wrapped transport", []Option{func(s *Settings) { s.WrapTransport = wrap }}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]Option{WithBaseURL("http://127.0.0.1:1/v1"), WithAPIKey("sk-test-key-0000"), WithGetenv(env{}.get)}, tc.opts...)
			p, err := New("openai:gpt-4o-mini", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.(*openAIProvider).direct != nil; got != tc.direct {
				t.Fatalf("direct = %v, want %v", got, tc.direct)
			}
		})
	}
}

// TestDirectMatchesClientDo sends the same calls with and without
// exchange's direct path and compares what the caller sees: the answer,
// or the error's class, status and message (a transport error keeps
// Client.Do's *url.Error, "Post \"<url>\": ...").
func TestDirectMatchesClientDo(t *testing.T) {
	sch := testSchema(t)
	req := llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeStrict, Schema: sch}
	answer := `{"model":"m","choices":[{"message":{"content":"{\"total\":12.5}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`
	mux := http.NewServeMux()
	handle := func(path string, h http.HandlerFunc) { mux.HandleFunc(path, h) }
	handle("/ok/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelimit-Remaining-Requests", "7")
		_, _ = fmt.Fprint(w, answer)
	})
	for _, code := range []int{301, 302, 303, 307, 308} {
		handle(fmt.Sprintf("/r%d/chat/completions", code), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/ok/chat/completions")
			w.WriteHeader(code)
			_, _ = fmt.Fprint(w, `{"error":{"message":"moved"}}`)
		})
		handle(fmt.Sprintf("/bad%d/chat/completions", code), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(code)
		})
		handle(fmt.Sprintf("/none%d/chat/completions", code), func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
		})
	}
	handle("/cut/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = fmt.Fprint(w, `{"model"`)
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	_ = ln.Close()

	userinfo := strings.Replace(hs.URL, "http://", "http://user:pass@", 1) // basic auth: through Client.Do
	paths := []string{hs.URL + "/ok", hs.URL + "/cut", refused + "/v1", userinfo + "/bad302"}
	for _, code := range []int{301, 302, 303, 307, 308} {
		paths = append(paths, fmt.Sprintf("%s/r%d", hs.URL, code), fmt.Sprintf("%s/bad%d", hs.URL, code), fmt.Sprintf("%s/none%d", hs.URL, code))
	}
	for _, base := range paths {
		t.Run(base, func(t *testing.T) {
			var out [2]string
			for i, direct := range []bool{true, false} {
				p, err := New("openai:gpt-4o-mini", WithBaseURL(base), WithAPIKey("sk-test-key-0000"), WithGetenv(env{}.get))
				if err != nil {
					t.Fatal(err)
				}
				op := p.(*openAIProvider)
				if direct && op.direct == nil && strings.HasPrefix(base, "http:") {
					t.Fatal("the direct path is not taken")
				}
				if !direct {
					op.direct = nil
				}
				resp, err := p.Chat(context.Background(), req)
				var pe *llm.Error
				switch {
				case errors.As(err, &pe):
					var ue *url.Error
					out[i] = fmt.Sprintf("class %s status %d urlError %v: %s", pe.Class, pe.Status, errors.As(err, &ue), pe.Error())
				case err != nil:
					out[i] = "error " + err.Error()
				default:
					out[i] = fmt.Sprintf("answer %q remaining %d", resp.Text, resp.RateLimit.RemainingRequests)
				}
			}
			if out[0] != out[1] {
				t.Fatalf("direct: %s\nClient.Do: %s", out[0], out[1])
			}
			t.Log(out[0])
		})
	}
}

// TestChatAllocs bounds the allocations of one call over the provider's
// own client against a server that allocates nothing per request
// (cannedServer): 49 before exchange stopped going through http.Client,
// parsing the URL and building the bearer header per call, and http1
// stopped allocating per header value and apart for each of the
// response, its body and its frame; 32 after.
func TestChatAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	sch := testSchema(t)
	req := llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeStrict, Schema: sch}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, `{"model":"m","choices":[{"message":{"content":"{\"total\":12.5}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
	}))
	defer hs.Close()
	addr, _ := cannedServer(t, strings.TrimPrefix(hs.URL, "http://"))
	p, err := New("openai:gpt-4o-mini", WithBaseURL("http://"+addr+"/v1"), WithAPIKey("sk-test-key-0000"), WithGetenv(env{}.get))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := p.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(200, func() {
		if _, err := p.Chat(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	if n > 36 {
		t.Fatalf("%.0f allocations per call, want at most 36", n)
	}
	t.Logf("%.0f allocations per call", n)
}
