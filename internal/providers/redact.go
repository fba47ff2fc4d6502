package providers

import (
	"bytes"
	"strings"

	"github.com/extractq/extractq/internal/redact"
)

// redactor removes credentials from anything that leaves an adapter: error
// messages, wrapped causes, log attributes and stored bodies. It holds the
// literal secrets of one provider instance; it is immutable and safe for
// concurrent use.
type redactor struct {
	secrets []string
	// anchors[i] is where in secrets[i] Bytes starts its search (see
	// anchor).
	anchors []int
}

// minSecretLen keeps a degenerate "key" (say "x") from blanking every
// occurrence of a common letter; real keys are far longer.
const minSecretLen = 6

func newRedactor(secrets ...string) redactor {
	var r redactor
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			r.secrets = append(r.secrets, s)
			r.anchors = append(r.anchors, anchor(s))
		}
	}
	return r
}

// String returns s with every known secret and every credential-shaped
// substring replaced.
func (r redactor) String(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redact.Marker)
	}
	return redact.Credentials(s)
}

// Bytes is String for bodies. Only literal secrets are replaced: patterns
// could corrupt a JSON document that merely mentions "Bearer" in its text,
// while the literal key is what a provider can echo.
func (r redactor) Bytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := b
	for i, sec := range r.secrets {
		if containsAt(out, sec, r.anchors[i]) {
			out = bytes.ReplaceAll(out, []byte(sec), []byte(redact.Marker))
		}
	}
	return out
}

// redactedError formats its cause through the redactor but keeps the chain,
// so errors.Is(err, context.DeadlineExceeded) still works.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// Error wraps err so that its text is redacted; nil stays nil.
func (r redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: r.String(err.Error()), cause: err}
}

// anchor picks the byte of secret that Bytes looks for first: one that is
// rare in a JSON answer (punctuation such as '-' or '_', else an upper-case
// letter) rather than the key's first, which for "sk-..." keys is a common
// letter. Every response body is searched, and bytes.Index stops at each
// occurrence of the byte it looks for: 's' occurs dozens of times in an
// answer, '-' a few.
func anchor(secret string) int {
	best, bestRank := 0, rank(secret[0])
	for i := 1; i < len(secret) && bestRank > 0; i++ {
		if r := rank(secret[i]); r < bestRank {
			best, bestRank = i, r
		}
	}
	return best
}

// rank orders bytes by how common they are in a JSON chat answer: 0 for
// ASCII punctuation outside JSON's syntax, 1 for upper-case letters, 2
// for the rest (lower-case letters, digits, space, JSON syntax, non-ASCII).
func rank(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return 1
	case c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' || c == '=' || c == '!' || c == '#' || c == '$' || c == '%' || c == '&' || c == '*' || c == '@' || c == '^' || c == '|':
		return 0
	}
	return 2
}

// containsAt is bytes.Contains(b, secret), searching for secret[at:] and
// checking the at bytes before each match.
func containsAt(b []byte, secret string, at int) bool {
	tail, head := secret[at:], secret[:at]
	for off := at; off <= len(b)-len(tail); {
		i := bytes.Index(b[off:], []byte(tail))
		if i < 0 {
			return false
		}
		p := off + i
		if string(b[p-at:p]) == head {
			return true
		}
		off = p + 1
	}
	return false
}
