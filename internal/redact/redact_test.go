package redact

import (
	"encoding/json"
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
