package providers

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"encoding/pem"
	"github.com/extractq/extractq/internal/http1"
	"github.com/extractq/extractq/llm"
	"log"
	"os"
	"os/exec"
	"path/filepath"
)

const okCompletion = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\":true}","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`

// hijackClose answers by writing raw bytes to the connection and closing it.
func hijackClose(raw string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
		_ = conn.Close()
	}
}

func chatErr(t *testing.T, p llm.Provider, ctx context.Context, req llm.Request) *llm.Error {
	t.Helper()
	_, err := p.Chat(ctx, req)
	var pe *llm.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	return pe
}

func TestHTTPHygiene(t *testing.T) {
	req := llm.Request{Messages: conversation(), Mode: llm.ModeJSON}

	t.Run("gzip", func(t *testing.T) {
		var acceptEnc atomic.Value
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			acceptEnc.Store(r.Header.Get("Accept-Encoding"))
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = io.WriteString(zw, okCompletion)
			_ = zw.Close()
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b.Bytes())
		}))
		defer srv.Close()
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		resp, err := p.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(acceptEnc.Load().(string), "gzip") || resp.Text != `{"ok":true}` || string(resp.Raw) != okCompletion {
			t.Fatalf("Accept-Encoding %q text %q", acceptEnc.Load(), resp.Text)
		}
	})

	t.Run("size cap", func(t *testing.T) {
		srv := newCanned(t, 200, nil, `{"choices":[{"message":{"content":"`+strings.Repeat("x", 5000)+`"}}]}`)
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"), WithMaxResponseBytes(1024))
		pe := chatErr(t, p, context.Background(), req)
		if pe.Class != llm.ClassBadResponse || pe.Retryable() || len(pe.Raw) != 1024 || !strings.Contains(pe.Message, "1024") {
			t.Fatalf("got %+v (raw %d bytes)", pe, len(pe.Raw))
		}
	})

	t.Run("error body over the size cap", func(t *testing.T) {
		srv := newCanned(t, 503, nil, `{"error":{"message":"overloaded `+strings.Repeat("x", 5000)+`"}}`)
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"), WithMaxResponseBytes(1024))
		pe := chatErr(t, p, context.Background(), req)
		if pe.Class != llm.ClassOverloaded || !pe.Retryable() || len(pe.Raw) != 1024 {
			t.Fatalf("got %+v (raw %d bytes): a 503 stays an outage whatever its size", pe, len(pe.Raw))
		}
	})

	t.Run("body cut short", func(t *testing.T) {
		srv := httptest.NewServer(hijackClose("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"choices\": [{\"mess"))
		defer srv.Close()
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		pe := chatErr(t, p, context.Background(), req)
		if pe.Class != llm.ClassTruncatedBody || !pe.Retryable() || pe.Status != 200 {
			t.Fatalf("got %+v", pe)
		}
	})

	t.Run("connection dropped before headers", func(t *testing.T) {
		srv := httptest.NewServer(hijackClose(""))
		defer srv.Close()
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		pe := chatErr(t, p, context.Background(), req)
		if pe.Class != llm.ClassNetwork || !pe.Retryable() {
			t.Fatalf("got %+v", pe)
		}
	})

	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		p := mustNew(t, "vllm:m", env{}, WithBaseURL("http://"+addr+"/v1"))
		pe := chatErr(t, p, context.Background(), req)
		if pe.Class != llm.ClassNetwork || !pe.Retryable() || pe.Err == nil {
			t.Fatalf("got %+v", pe)
		}
	})

	t.Run("per-request timeout", func(t *testing.T) {
		srv := stallServer(t)
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		r := req
		r.Timeout = 50 * time.Millisecond
		start := time.Now()
		pe := chatErr(t, p, context.Background(), r)
		if pe.Class != llm.ClassTimeout || !pe.Retryable() || !errors.Is(pe, context.DeadlineExceeded) {
			t.Fatalf("got %+v", pe)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the timeout was not honoured")
		}
	})

	t.Run("caller cancels", func(t *testing.T) {
		srv := stallServer(t)
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		pe := chatErr(t, p, ctx, req)
		if pe.Class != llm.ClassCanceled || pe.Retryable() || !errors.Is(pe, context.Canceled) {
			t.Fatalf("got %+v", pe)
		}
	})

	t.Run("caller deadline is not a retryable timeout", func(t *testing.T) {
		srv := stallServer(t)
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		r := req
		r.Timeout = time.Minute
		if pe := chatErr(t, p, ctx, r); pe.Class != llm.ClassCanceled {
			t.Fatalf("got %+v", pe)
		}
	})

	t.Run("redirects are not followed", func(t *testing.T) {
		elsewhere := newCanned(t, 200, nil, okCompletion)
		srv := newCanned(t, 307, map[string]string{"Location": elsewhere.URL + "/v1/messages"}, ``)
		p := mustNew(t, "anthropic:claude-haiku-4-5", env{"ANTHROPIC_API_KEY": "sk-ant-redirect-0000"}, WithBaseURL(srv.URL))
		pe := chatErr(t, p, context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
		if pe.Class != llm.ClassInvalidRequest || pe.Status != 307 {
			t.Fatalf("got %+v", pe)
		}
		if n := elsewhere.count(); n != 0 {
			t.Fatalf("the key was carried to the redirect target (%d requests)", n)
		}
	})

	t.Run("injected client", func(t *testing.T) {
		var calls atomic.Int32
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(okCompletion)), Request: r}, nil
		})}
		p := mustNew(t, "openai:gpt-4o-mini", env{"OPENAI_API_KEY": "sk-test"}, WithHTTPClient(hc))
		if _, err := p.Chat(context.Background(), req); err != nil || calls.Load() != 1 {
			t.Fatalf("err %v calls %d", err, calls.Load())
		}
	})

	t.Run("connections are reused", func(t *testing.T) {
		var conns atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, okCompletion)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		defer srv.Close()
		p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
		for i := 0; i < 5; i++ {
			if _, err := p.Chat(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("%d connections for 5 sequential calls; the transport does not pool", n)
		}
	})
}

// stallServer never answers; it lets its handlers go when the test ends.
func stallServer(t *testing.T) *httptest.Server {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	return srv
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestErrorStatusTable drives every status of the list through a
// real HTTP exchange and checks class and retryability.
func TestErrorStatusTable(t *testing.T) {
	tests := []struct {
		status int
		body   string
		class  llm.ErrorClass
	}{
		{408, `{}`, llm.ClassServer}, {409, `{}`, llm.ClassServer}, {425, `{}`, llm.ClassServer},
		{429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, llm.ClassRateLimited},
		{429, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, llm.ClassQuota},
		{500, `{}`, llm.ClassServer}, {502, `{}`, llm.ClassServer}, {503, `{}`, llm.ClassOverloaded}, {504, `{}`, llm.ClassServer},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.ClassOverloaded},
		{400, `{"error":{"message":"bad"}}`, llm.ClassInvalidRequest},
		{400, `{"error":{"message":"too long","code":"context_length_exceeded"}}`, llm.ClassContextLength},
		{401, `{}`, llm.ClassAuth}, {403, `{}`, llm.ClassPermission}, {404, `{}`, llm.ClassNotFound}, {413, `{}`, llm.ClassTooLarge},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.class), func(t *testing.T) {
			srv := newCanned(t, tc.status, nil, tc.body)
			p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
			pe := chatErr(t, p, context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
			if pe.Class != tc.class || pe.Status != tc.status {
				t.Fatalf("got %s/%d, want %s/%d", pe.Class, pe.Status, tc.class, tc.status)
			}
		})
	}
}

// TestUnusableAnswersAreNotOutages: a complete HTTP 200 the adapter cannot
// use (nested past the decoder's depth limit, over the response cap, not a
// chat completion) is a bad answer. Retrying it as a transport failure
// asked the same runaway model 25 times per document (5 calls × 5
// deliveries); it is asked once.
func TestUnusableAnswersAreNotOutages(t *testing.T) {
	t.Parallel()
	req := llm.Request{Messages: conversation(), Mode: llm.ModeJSON}
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	tests := []struct {
		name string
		body string
		cap  int64
	}{
		{"nested 100,000 levels", `{"choices":[{"message":{"content":"{}","tool_calls":` + deep + `}}]}`, 0},
		{"over the response cap", `{"choices":[{"message":{"content":"` + strings.Repeat("x", 2<<20) + `"}}]}`, 1 << 20},
		{"not a chat completion", `{"choices": [`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCanned(t, 200, nil, tc.body)
			opts := []Option{WithBaseURL(srv.URL + "/v1")}
			if tc.cap > 0 {
				opts = append(opts, WithMaxResponseBytes(tc.cap))
			}
			p := mustNew(t, "vllm:m", env{}, opts...)
			pe := chatErr(t, p, context.Background(), req)
			if pe.Class != llm.ClassBadResponse || pe.Retryable() || llm.IsRetryable(pe) || pe.Status != 200 {
				t.Fatalf("got class %s retryable %v status %d: %v; want a fatal bad_response", pe.Class, pe.Retryable(), pe.Status, pe)
			}
		})
	}
}

func TestTransportChoice(t *testing.T) {
	t.Parallel()
	noProxy := func(*http.Request) (*url.URL, error) { return nil, nil }
	proxied := func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.example:3128") }
	for _, tc := range []struct {
		name, base string
		env        env
		proxy      func(*http.Request) (*url.URL, error)
		lean       bool
	}{
		{"plain http", "http://vllm.svc:8000/v1", env{}, noProxy, true},
		{"https", "https://api.openai.com/v1", env{}, noProxy, true},
		{"https, plain only", "https://api.openai.com/v1", env{http1Env: "plain"}, noProxy, false},
		{"plain http, plain only", "http://vllm.svc:8000/v1", env{http1Env: "plain"}, noProxy, true},
		{"proxied", "http://vllm.svc:8000/v1", env{}, proxied, false},
		{"https proxied", "https://api.anthropic.com", env{}, proxied, false},
		{"https escape hatch", "https://api.anthropic.com", env{http1Env: "off"}, noProxy, false},
		{"other scheme", "unix:///run/ollama.sock", env{}, noProxy, false},
		{"escape hatch", "http://vllm.svc:8000/v1", env{http1Env: "off"}, noProxy, false},
		{"escape hatch, any case", "http://vllm.svc:8000/v1", env{http1Env: " OFF "}, noProxy, false},
		{"escape hatch as false", "http://vllm.svc:8000/v1", env{http1Env: "false"}, noProxy, false},
		{"escape hatch as 0", "http://vllm.svc:8000/v1", env{http1Env: "0"}, noProxy, false},
		{"other values keep it", "http://vllm.svc:8000/v1", env{http1Env: "on"}, noProxy, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := pickTransport(tc.base, tc.env.get, tc.proxy)
			_, lean := rt.(*http1.Transport)
			_, std := rt.(*http.Transport)
			if lean != tc.lean || lean == std {
				t.Fatalf("transport %T, want lean %v", rt, tc.lean)
			}
		})
	}
}

// TestHTTP1Wiring: a provider's own client for a plain-HTTP base URL uses
// http1, still wrapped by WrapTransport and still refusing redirects; a
// WithHTTPClient is never replaced.
func TestHTTP1Wiring(t *testing.T) {
	t.Parallel()
	var wrapped atomic.Value
	wrap := func(rt http.RoundTripper) http.RoundTripper {
		wrapped.Store(fmt.Sprintf("%T", rt))
		return roundTripFunc(func(r *http.Request) (*http.Response, error) { return rt.RoundTrip(r) })
	}
	srv := newCanned(t, 200, nil, okCompletion)
	p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"), func(s *Settings) { s.WrapTransport = wrap })
	if _, err := p.Chat(t.Context(), llm.Request{Messages: conversation(), Mode: llm.ModeJSON}); err != nil {
		t.Fatal(err)
	}
	if got, _ := wrapped.Load().(string); got != "*http1.Transport" {
		t.Fatalf("WrapTransport saw %q, want *http1.Transport", got)
	}
	own := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(okCompletion)), Request: r}, nil
	})}
	q := mustNew(t, "vllm:m", env{}, WithBaseURL("http://127.0.0.1:1/v1"), WithHTTPClient(own))
	if baseOf(t, q).hc != own {
		t.Fatal("WithHTTPClient was replaced")
	}
}

// httpsChildEnv makes TestHTTPSWiring's child process call the https URL
// it names, trusting the system's roots (SSL_CERT_FILE, set by the parent).
const httpsChildEnv = "EXTRACTQ_TEST_HTTPS_CHILD_URL"

// TestHTTPSWiring: a provider's own client for an https base URL uses
// http1 over TLS, trusting the system's roots as net/http does, so a
// private CA named by SSL_CERT_FILE is honoured. The roots load once per
// process, so the call runs in a child process of this test binary.
func TestHTTPSWiring(t *testing.T) {
	if u := os.Getenv(httpsChildEnv); u != "" {
		var wrapped atomic.Value
		wrap := func(rt http.RoundTripper) http.RoundTripper {
			wrapped.Store(fmt.Sprintf("%T", rt))
			return rt
		}
		p := mustNew(t, "openai:gpt-4o-mini", env{"OPENAI_API_KEY": "sk-test-https-000"}, WithBaseURL(u+"/v1"), func(s *Settings) { s.WrapTransport = wrap })
		resp, err := p.Chat(t.Context(), llm.Request{Messages: conversation(), Mode: llm.ModeJSON})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := wrapped.Load().(string); got != "*http1.Transport" || resp.Text == "" {
			t.Fatalf("transport %q, answer %q: want an answer through *http1.Transport", got, resp.Text)
		}
		return
	}
	t.Parallel()
	var proto atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, okCompletion)
	}))
	srv.EnableHTTP2 = true // as a hosted API: h2 offered, HTTP/1.1 taken
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestHTTPSWiring$", "-test.count", "1")
	cmd.Env = append(os.Environ(), httpsChildEnv+"="+srv.URL, "SSL_CERT_FILE="+certFile, "SSL_CERT_DIR=/nonexistent", http1Env+"=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child's https call failed: %v\n%s", err, out)
	}
	if got, _ := proto.Load().(string); got != "HTTP/1.1" {
		t.Fatalf("the server saw %q, want HTTP/1.1", got)
	}
}

// TestUntrustedCertificateNamed: a provider whose server's certificate is
// not trusted fails as a network error (retried as one) whose message
// names the fix, on either transport.
func TestUntrustedCertificateNamed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, okCompletion)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"http1", &http1.Transport{}},
		{"net/http", newTransport()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"), WithHTTPClient(&http.Client{Transport: tc.rt}))
			pe := chatErr(t, p, t.Context(), llm.Request{Messages: conversation(), Mode: llm.ModeJSON})
			if pe.Class != llm.ClassNetwork || !pe.Retryable() || !strings.Contains(pe.Message, "SSL_CERT_FILE") || !strings.Contains(pe.Message, "x509") {
				t.Fatalf("class %s retryable %v: %q; want a retryable network error naming SSL_CERT_FILE and the x509 cause", pe.Class, pe.Retryable(), pe.Message)
			}
		})
	}
}
