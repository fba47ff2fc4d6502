package providers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedactorString(t *testing.T) {
	const key = "my-secret-key-0123456789"
	r := newRedactor(key)
	tests := []struct {
		name, in string
		gone     []string // must not survive
		kept     []string // must survive
	}{
		{"literal key", "bad key " + key + " here", []string{key}, []string{"bad key", "here"}},
		{"key twice", key + key, []string{key}, nil},
		{"openai-style key", "Incorrect API key provided: sk-proj-abcdefghijklmnop1234", []string{"abcdefghijklmnop1234"}, []string{"Incorrect API key provided"}},
		{"masked echo", "key sk-proj-********************abcd", []string{"****abcd"}, nil},
		{"bearer", `Authorization: Bearer tok_123456789`, []string{"tok_123456789"}, []string{"Authorization"}},
		{"x-api-key dump", `x-api-key: abcdef123456`, []string{"abcdef123456"}, []string{"x-api-key"}},
		{"x-goog-api-key json", `"x-goog-api-key":"AIzaSyD-abcdefghijklmnopqrstuvwxyz123"`, []string{"abcdefghijklmnopqrstuvwxyz123"}, nil},
		{"url parameter", `Post "https://host/v1beta/models/m:generateContent?key=secret999&alt=json": EOF`, []string{"secret999"}, []string{"alt=json", "EOF"}},
		{"url password", `Post "https://user:hunter22@proxy.example/v1": refused`, []string{"hunter22"}, []string{"proxy.example"}},
		{"plain text untouched", "task-force is not a key; Bearer-less text", nil, []string{"task-force is not a key; Bearer-less text"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.String(tc.in)
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("String(%q) = %q still contains %q", tc.in, got, g)
				}
			}
			for _, k := range tc.kept {
				if !strings.Contains(got, k) {
					t.Errorf("String(%q) = %q lost %q", tc.in, got, k)
				}
			}
		})
	}
}

func TestRedactorBytesAndError(t *testing.T) {
	const key = "zz-secret-value-42"
	r := newRedactor(key, "x") // a degenerate secret must not blank every "x"
	body := []byte(`{"error":{"message":"bad key zz-secret-value-42 (xx)"}}`)
	got := string(r.Bytes(body))
	if strings.Contains(got, key) || !strings.Contains(got, "(xx)") {
		t.Fatalf("Bytes = %s", got)
	}
	if r.Bytes(nil) != nil {
		t.Fatal("Bytes(nil) must stay nil")
	}
	cause := fmt.Errorf("dial %s: %w", key, context.DeadlineExceeded)
	err := r.Error(cause)
	if strings.Contains(err.Error(), key) {
		t.Fatalf("Error() = %q leaks the key", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the redacted error must keep its chain")
	}
	if r.Error(nil) != nil {
		t.Fatal("Error(nil) must be nil")
	}
}

// TestContainsAt checks the anchored search against bytes.Contains on the
// cases that matter: a match at the start, at the end, after a false
// start on the anchor, overlapping candidates, and none.
func TestContainsAt(t *testing.T) {
	const key = "sk-sim-test-key-000"
	at := anchor(key)
	if at != 2 {
		t.Fatalf("anchor(%q) = %d, want 2 (the first '-')", key, at)
	}
	for _, body := range []string{
		"", key, "x" + key, key + "x", "sk-sim-test-key-00", "k-sim-test-key-000",
		"-sim-test-key-000 sk-sim-test-key-000", "sk-sk-sim-test-key-000", "s-sim-test-key-000",
		`{"id":"chatcmpl-1","content":"sk-sim-test-key-001 then sk-sim-test-key-000"}`,
	} {
		if got, want := containsAt([]byte(body), key, at), strings.Contains(body, key); got != want {
			t.Errorf("containsAt(%q) = %v, want %v", body, got, want)
		}
	}
}

func FuzzContainsAt(f *testing.F) {
	f.Add([]byte("xx sk-ab-cd-ef yy"), "sk-ab-cd-ef")
	f.Add([]byte("aAaAaB"), "aAaB")
	f.Fuzz(func(t *testing.T, body []byte, secret string) {
		if len(secret) < minSecretLen {
			return
		}
		if got, want := containsAt(body, secret, anchor(secret)), bytes.Contains(body, []byte(secret)); got != want {
			t.Fatalf("containsAt(%q, %q) = %v, want %v", body, secret, got, want)
		}
	})
}
