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
}

// minSecretLen keeps a degenerate "key" (say "x") from blanking every
// occurrence of a common letter; real keys are far longer.
const minSecretLen = 6

func newRedactor(secrets ...string) redactor {
	var r redactor
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			r.secrets = append(r.secrets, s)
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
	for _, sec := range r.secrets {
		if bytes.Contains(out, []byte(sec)) {
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
