package audit

import (
	"encoding/json"
	"regexp"
)

// Providers redact credentials themselves; the audit trail redacts again at
// write time (defence in depth) because raw responses and error messages
// can echo what a request carried.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Authorization: Bearer <token>
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "$1 [REDACTED]"},
	// OpenAI / Anthropic / most OpenAI-compatible services: sk-..., sk-ant-...
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{8,}`), "[REDACTED]"},
	// Google API keys.
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{20,}`), "[REDACTED]"},
	// Headers and URL parameters that carry a key: api-key: x, x-api-key=x,
	// ?key=x, &access_token=x, "authorization": "x".
	{regexp.MustCompile(`(?i)((?:[?&](?:key|api_?key|token|access_token|auth)=)|(?:\b(?:x-api-key|x-goog-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|authorization|client[_-]?secret|password)["']?\s*[:=]\s*["']?))[^\s"'&,;}\\]{6,}`), "${1}[REDACTED]"},
}

// redact replaces anything that looks like a credential in s.
func redact(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
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
