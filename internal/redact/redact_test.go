package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCredentials(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		secret string // must be gone ("" when nothing is secret)
		keep   string // must survive
	}{
		{"openai key in an error", "Incorrect API key provided: sk-test-LEAKCHECK-9f8e7d6c5b4a39281706", "LEAKCHECK", "Incorrect API key provided"},
		{"masked echo", "key sk-proj-********************abcd", "****abcd", "key"},
		{"bearer header", "Authorization: Bearer tok_LEAKCHECK_123456789", "LEAKCHECK", "Authorization"},
		{"basic header", "Authorization: Basic dXNlcjpMRUFLQ0hFQ0s=", "dXNlcjpMRUFLQ0hFQ0s=", "Authorization"},
		{"x-api-key in JSON", `{"headers":{"x-api-key":"LEAKCHECK123456"}}`, "LEAKCHECK", `"headers"`},
		{"api-key header dump", "api-key: LEAKCHECK0123456789", "LEAKCHECK", "api-key"},
		{"google key", "AIzaSyLEAKCHECK0123456789abcdefghijklmno", "LEAKCHECK", ""},
		{"groq key", "gsk_LEAKCHECK0123456789abcdef", "LEAKCHECK", ""},
		{"xai key", "xai-LEAKCHECK0123456789abcdef", "LEAKCHECK", ""},
		{"url key parameter", `GET https://host/v1beta/models/m:generateContent?key=LEAKCHECK999&alt=json`, "LEAKCHECK", "alt=json"},
		{"url password", `Post "https://user:LEAKCHECK22@proxy.example/v1": refused`, "LEAKCHECK", "proxy.example"},
		{"password pair", "password=LEAKCHECK-hunter2", "LEAKCHECK", "password"},
		{"client secret", `client_secret: "LEAKCHECK7777"`, "LEAKCHECK", "client_secret"},
		{"JSON answer untouched", `{"total": 12.5, "customer": {"name": "Acme"}}`, "", `{"total": 12.5, "customer": {"name": "Acme"}}`},
		{"prose about keys untouched", "the key to success is a valid answer", "", "the key to success is a valid answer"},
		{"token budget message untouched", "token budget exceeded: 4000 > 3000", "", "token budget exceeded: 4000 > 3000"},
		{"hyphenated words untouched", "task-force is not a key; Bearer-less text", "", "task-force is not a key; Bearer-less text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Credentials(tt.in)
			if tt.secret != "" && (strings.Contains(got, tt.secret) || !strings.Contains(got, Marker)) {
				t.Errorf("Credentials(%q) = %q: secret %q left in", tt.in, got, tt.secret)
			}
			if tt.keep != "" && !strings.Contains(got, tt.keep) {
				t.Errorf("Credentials(%q) = %q: lost %q", tt.in, got, tt.keep)
			}
		})
	}
}

func TestJSONStaysValid(t *testing.T) {
	in := []byte(`{"error":{"message":"bad key","request":{"headers":{"x-api-key":"sk-test-LEAKCHECK-9f8e7d6c5b4a"}}}}`)
	got := JSON(in)
	if !json.Valid(got) || strings.Contains(string(got), "LEAKCHECK") {
		t.Errorf("JSON = %s", got)
	}
	clean := []byte(`{"a":1}`)
	if got := JSON(clean); &got[0] != &clean[0] {
		t.Error("JSON copied text that held no credential")
	}
}

// TestConnectionURLs covers the credentials a NATS (or Postgres, HTTP
// proxy) URL carries, as connection errors print them.
func TestConnectionURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"nats user and password", "connect to NATS at nats://extractq:LEAKCHECK-s3cret@nats.internal:4222: nats: no servers available for connection",
			"connect to NATS at nats://extractq:[REDACTED]@nats.internal:4222: nats: no servers available for connection"},
		{"nats token", "connect to NATS at nats://LEAKCHECKtoken123@10.0.0.5:4222: dial tcp: connection refused",
			"connect to NATS at nats://[REDACTED]@10.0.0.5:4222: dial tcp: connection refused"},
		{"server list", "nats://a:LEAKCHECK1@h1:4222,nats://b:LEAKCHECK2@h2:4222,tls://LEAKCHECK3@h3:4443",
			"nats://a:[REDACTED]@h1:4222,nats://b:[REDACTED]@h2:4222,tls://[REDACTED]@h3:4443"},
		{"@ in the password", "nats://user:LEAK@CHECK@host:4222 refused", "nats://user:[REDACTED]@host:4222 refused"},
		{"websocket token", `dial "wss://LEAKCHECKtok@ws.example:443/nats"`, `dial "wss://[REDACTED]@ws.example:443/nats"`},
		{"quoted in JSON", `{"url":"nats://u:LEAKCHECK@h:4222"}`, `{"url":"nats://u:[REDACTED]@h:4222"}`},
		{"postgres password", "postgres://extractq:LEAKCHECK@db:5432/extractq?sslmode=require", "postgres://extractq:[REDACTED]@db:5432/extractq?sslmode=require"},
		{"postgres user only is not a secret", "postgres://postgres@127.0.0.1:5432/extractq", "postgres://postgres@127.0.0.1:5432/extractq"},
		{"no credentials", "connect to NATS at nats://127.0.0.1:4222: refused", "connect to NATS at nats://127.0.0.1:4222: refused"},
		{"an email is not a URL", "mail ops@example.com about nats://127.0.0.1:4222", "mail ops@example.com about nats://127.0.0.1:4222"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Credentials(tt.in); got != tt.want {
				t.Errorf("Credentials(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	cause := errors.New("nats: no servers available for connection")
	err := fmt.Errorf("connect to NATS at %s: %w", "nats://user:LEAKCHECK@host:4222", cause)
	got := Error(err)
	if strings.Contains(got.Error(), "LEAKCHECK") || !strings.Contains(got.Error(), "nats://user:[REDACTED]@host:4222") {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(got, cause) {
		t.Error("the redacted error lost its chain")
	}
	if clean := errors.New("nothing secret"); Error(clean) != clean {
		t.Error("an error without credentials was wrapped")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nats://u:secret@h:4222":                  "nats://u:[REDACTED]@h:4222",
		"postgres://u:p'q@h/db":                   "postgres://u:[REDACTED]@h/db", // a quote the patterns stop at
		"postgres://u@h/db":                       "postgres://u@h/db",
		"postgres://h/db?password=hunter22":       "postgres://h/db?password=[REDACTED]",
		"nats://h:4222":                           "nats://h:4222",
		"nats://s3cr3ttoken@h:4222":               "nats://[REDACTED]@h:4222",
		"nats://a:p1@h1:4222,nats://b:p2@h2:4222": "nats://a:[REDACTED]@h1:4222,nats://b:[REDACTED]@h2:4222",
		"postgres://u:p@h:bad port/":              "postgres://u:[REDACTED]@h:bad port/", // unparsable
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
