package providers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/redact"
)

// TestAPIKeyNeverLeaks sets a recognisable key in the (injected)
// environment of every adapter, makes calls fail every way a call can fail
// against a server that echoes the key back, and asserts the key appears in
// no error string, no Raw body and no log line.
func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-LEAKCANARY-0123456789abcdefXYZ"
	families := []struct {
		spec, keyVar, baseVar, baseSuffix string
	}{
		{"openai:gpt-4o-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"},
		{"groq:llama-3.1-8b-instant", "GROQ_API_KEY", "GROQ_BASE_URL", "/v1"},
		{"anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ""},
		{"gemini:gemini-2.5-flash", "GEMINI_API_KEY", "GEMINI_BASE_URL", ""},
		{"ollama:llama3.1:8b", "OLLAMA_API_KEY", "OLLAMA_HOST", ""},
	}
	// Each behaviour echoes whatever credential header arrived, the way a
	// careless proxy or an "invalid key: …" message might.
	behaviours := []struct {
		name    string
		handler func(cred string, w http.ResponseWriter)
	}{
		{"401 echoing the key", func(cred string, w http.ResponseWriter) {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, cred)
		}},
		{"500 echoing the key", func(cred string, w http.ResponseWriter) {
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"upstream said %s"}}`, cred)
		}},
		{"429 with key in type", func(cred string, w http.ResponseWriter) {
			w.WriteHeader(429)
			fmt.Fprintf(w, `{"error":{"message":"slow","type":"%s","code":"%s"}}`, cred, cred)
		}},
		{"malformed 200 echoing the key", func(cred string, w http.ResponseWriter) {
			fmt.Fprintf(w, `{"choices": [ {"message": "%s"`, cred)
		}},
		{"plain text 502 echoing the key", func(cred string, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(502)
			fmt.Fprintf(w, "bad gateway for request with key=%s", cred)
		}},
	}
	credential := func(r *http.Request) string {
		for _, h := range []string{"Authorization", "x-api-key", "x-goog-api-key"} {
			if v := r.Header.Get(h); v != "" {
				return strings.TrimPrefix(v, "Bearer ")
			}
		}
		return ""
	}

	for _, fam := range families {
		for _, bh := range behaviours {
			t.Run(fam.spec+"/"+bh.name, func(t *testing.T) {
				var mu sync.Mutex
				var got string
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					mu.Lock()
					got = credential(r)
					mu.Unlock()
					bh.handler(got, w)
				}))
				defer srv.Close()
				var logs bytes.Buffer
				logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				p := mustNew(t, fam.spec, env{fam.keyVar: key, fam.baseVar: srv.URL + fam.baseSuffix}, WithLogger(logger))
				_, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
				mu.Lock()
				sent := got
				mu.Unlock()
				if sent != key {
					t.Fatalf("the server did not receive the key (got %q): the test proves nothing", sent)
				}
				assertNoKey(t, key, err, logs.String())
			})
		}
		t.Run(fam.spec+"/network error", func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			_ = l.Close()
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			// The key is also planted in the base URL's query, where a
			// *url.Error would print it.
			p := mustNew(t, fam.spec, env{fam.keyVar: key, fam.baseVar: "http://" + addr + fam.baseSuffix + "?key=" + key}, WithLogger(logger))
			_, err = p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
			if err == nil {
				t.Fatal("a call to a closed port succeeded")
			}
			assertNoKey(t, key, err, logs.String())
		})
	}
}

func assertNoKey(t *testing.T, key string, err error, logs string) {
	t.Helper()
	if err == nil {
		t.Fatal("the call did not fail")
	}
	var pe *llm.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %T is not *Error", err)
	}
	texts := map[string]string{
		"Error()": err.Error(),
		"%+v":     fmt.Sprintf("%+v", err),
		"%#v":     fmt.Sprintf("%#v", *pe),
		"Message": pe.Message,
		"Type":    pe.Type,
		"Raw":     string(pe.Raw),
		"slog":    logs,
	}
	if pe.Err != nil {
		texts["Err"] = pe.Err.Error()
	}
	for where, s := range texts {
		if strings.Contains(s, key) {
			t.Errorf("the key leaked into %s: %s", where, s)
		}
	}
	if logs == "" {
		t.Error("nothing was logged: the log check proves nothing")
	}
}

// TestSuccessfulRawIsRedacted: a 2xx body that echoes the key is stored
// without it.
func TestSuccessfulRawIsRedacted(t *testing.T) {
	const key = "sk-LEAKCANARY-success-000000000"
	srv := newCanned(t, 200, nil, strings.Replace(okCompletion, `\"ok\":true`, `\"note\":\"`+key+`\"`, 1))
	p := mustNew(t, "openai:gpt-4o-mini", env{"OPENAI_API_KEY": key}, WithBaseURL(srv.URL+"/v1"))
	resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(resp.Raw), key) || strings.Contains(resp.Text, key) {
		t.Fatalf("key in Raw or Text: %s", resp.Raw)
	}
	if !strings.Contains(string(resp.Raw), redact.Marker) {
		t.Fatal("Raw was not redacted where the key was")
	}
}
