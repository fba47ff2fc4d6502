package audit

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Providers redact credentials themselves; the audit trail redacts again at
// write time (defence in depth) because raw responses and error messages
// can echo what a request carried.
var secretPatterns = []struct {
	// anchors are lower-case words one of which every match contains: the
	// regexp runs only when one occurs, which keeps redaction cheap on the
	// hot write path (most text contains none).
	anchors []string
	re      *regexp.Regexp
	repl    string
}{
	// Authorization: Bearer <token>
	{[]string{"bearer", "basic"}, regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "$1 [REDACTED]"},
	// OpenAI / Anthropic / most OpenAI-compatible services: sk-..., sk-ant-...
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{8,}`), "[REDACTED]"},
	// Google API keys.
	{[]string{"aiza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{20,}`), "[REDACTED]"},
	// Headers and URL parameters that carry a key: api-key: x, x-api-key=x,
	// ?key=x, &access_token=x, "authorization": "x".
	{[]string{"key=", "apikey", "api_key", "api-key", "token", "auth", "secret", "password"}, regexp.MustCompile(`(?i)((?:[?&](?:key|api_?key|token|access_token|auth)=)|(?:\b(?:x-api-key|x-goog-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|authorization|client[_-]?secret|password)["']?\s*[:=]\s*["']?))[^\s"'&,;}\\]{6,}`), "${1}[REDACTED]"},
}

// redact replaces anything that looks like a credential in s.
func redact(s string) string {
	if s == "" {
		return s
	}
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		for _, a := range p.anchors {
			if strings.Contains(lower, a) {
				s = p.re.ReplaceAllString(s, p.repl)
				lower = strings.ToLower(s)
				break
			}
		}
	}
	return s
}

// redactJSON redacts JSON text. The patterns never match a quote or a
// backslash, so the result stays valid JSON; if it somehow did not, the
// redacted text is kept as a JSON string rather than lost.
func redactJSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	r := redact(string(b))
	if r == string(b) {
		return b
	}
	if json.Valid([]byte(r)) {
		return []byte(r)
	}
	q, _ := json.Marshal(r) // marshalling a string cannot fail
	return q
}

// Redact replaces anything that looks like a credential in s, with the
// patterns the audit trail uses, for sinks outside the database (the
// fleet's dead-letter stream).
func Redact(s string) string { return redact(s) }

// RedactJSON is Redact for JSON text; the result stays valid JSON.
func RedactJSON(b []byte) []byte { return redactJSON(b) }
