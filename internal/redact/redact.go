// Package redact removes credentials from text before it leaves the process's
// memory: errors, log lines, stored responses, audit rows and dead letters.
// Providers also replace the literal keys they hold; these patterns catch the
// credentials nobody told them about (a key a provider echoes back, a token
// in a URL or a header dump).
package redact

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Error returns err with every credential in its text replaced by Marker
// (see Credentials: API keys, bearer tokens, passwords in URLs, NATS
// tokens in nats:// URLs …), keeping the chain for errors.Is and
// errors.As; nil stays nil. Commands pass every error through it before
// printing it: errors that quote a connection URL
// ("connect to NATS at nats://user:secret@host: …") then print none of
// its secrets.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := Credentials(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, cause: err}
}

// redactedError is an error whose text is redacted and whose chain is
// its cause's.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// Marker replaces every credential found.
const Marker = "[REDACTED]"

// patterns are credential shapes. anchors are lower-case words one of which
// every match contains: a pattern's regexp runs only when one occurs, which
// keeps redaction cheap on hot paths (most text contains none).
var patterns = []struct {
	anchors []string
	re      *regexp.Regexp
	repl    string
}{
	// OpenAI / Anthropic / most OpenAI-compatible keys, also masked echoes (sk-…, sk-ant-…).
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_\-*.]{8,}`), Marker},
	// Google, Groq and xAI keys.
	{[]string{"aiza"}, regexp.MustCompile(`AIza[0-9A-Za-z_\-]{20,}`), Marker},
	{[]string{"gsk_"}, regexp.MustCompile(`gsk_[A-Za-z0-9]{16,}`), Marker},
	{[]string{"xai-"}, regexp.MustCompile(`xai-[A-Za-z0-9]{16,}`), Marker},
	// Authorization: Bearer … / Basic …
	{[]string{"bearer"}, regexp.MustCompile(`(?i)(bearer\s+)[^\s"',;]+`), "${1}" + Marker},
	{[]string{"basic"}, regexp.MustCompile(`(?i)\b(basic\s+)[A-Za-z0-9._~+/=-]{8,}`), "${1}" + Marker},
	// Header dumps: x-api-key: …, x-goog-api-key: …, api-key: …
	{[]string{"api-key"}, regexp.MustCompile(`(?i)((?:x-api-key|x-goog-api-key|api-key)["']?\s*[:=]\s*["']?)[^\s"',;&]+`), "${1}" + Marker},
	// URL parameters: ?key=…, &access_token=…
	{[]string{"key=", "token="}, regexp.MustCompile(`(?i)([?&](?:key|api_key|apikey|access_token|token)=)[^&\s"']+`), "${1}" + Marker},
	// Passwords in URLs: scheme://user:password@host, up to the last @ of
	// the authority (a password may hold an unescaped @), in lists too
	// (nats://a:p@h1,nats://b:q@h2).
	{[]string{"://"}, regexp.MustCompile(`(://[^/@\s:]*:)[^/\s"'<>]*@`), "${1}" + Marker + "@"},
	// NATS tokens: nats://token@host (a NATS URL's user without a password
	// is a token), also tls://, ws://, wss://.
	{[]string{"nats://", "tls://", "ws://", "wss://"}, regexp.MustCompile(`(?i)\b((?:nats|tls|wss?)://)[^/@\s:"'<>,]+@`), "${1}" + Marker + "@"},
	// Keys, tokens, secrets and passwords as name: value or name=value pairs, incl. JSON.
	{[]string{"key=", "apikey", "api_key", "api-key", "token", "auth", "secret", "password"}, regexp.MustCompile(`(?i)((?:[?&](?:key|api_?key|token|access_token|auth)=)|(?:\b(?:x-api-key|x-goog-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|authorization|client[_-]?secret|password)["']?\s*[:=]\s*["']?))[^\s"'&,;}\\]{6,}`), "${1}" + Marker},
}

// Credentials returns s with everything credential-shaped replaced by Marker.
func Credentials(s string) string {
	if s == "" || clean(s) {
		return s
	}
	lower := strings.ToLower(s)
	for _, p := range patterns {
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

// URL hides the credentials of a server URL, or of a comma-separated list
// of them as NATS takes, for messages: passwords, NATS tokens (a user
// without a password) and keys or passwords in the query. A URL that
// url.Parse reads has its password replaced first (url.URL.Redacted), so a
// password the patterns would not recognise (one with a quote in it) is
// hidden too; the patterns then cover the rest, lists and unparsable URLs
// included.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil && !strings.Contains(raw, ",") {
		if _, ok := u.User.Password(); ok {
			raw = u.Redacted()
		}
	}
	return Credentials(raw)
}

// JSON is Credentials for JSON text. The patterns never match a quote or a
// backslash, so the result stays valid JSON; if it somehow did not, the
// redacted text is kept as a JSON string rather than lost.
func JSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if clean(b) {
		return b
	}
	r := Credentials(string(b))
	if r == string(b) {
		return b
	}
	if json.Valid([]byte(r)) {
		return []byte(r)
	}
	q, _ := json.Marshal(r) // marshalling a string cannot fail
	return q
}

// clean reports that s is ASCII and holds none of the patterns' anchors in
// any case: then no pattern can match and redaction changes nothing. It is
// the check Credentials makes with strings.ToLower, in one pass without
// allocating: only where two bytes begin some anchor (anchorPairs, one
// table look-up, any case) are the anchors beginning with the first byte
// compared (TestCleanAgreesWithAnchors and FuzzClean hold it to the
// lower-and-search it replaced, cleanSearch). Text that is not ASCII
// takes Credentials' full path, since lower-casing can turn a non-ASCII
// letter into an ASCII one (the Kelvin sign into k).
func clean[T string | []byte](s T) bool {
	if len(s) == 0 {
		return true
	}
	// c is s[i-1]: each byte is loaded once, as the second of one pair
	// and the first of the next.
	c := s[0]
	for i := 1; i < len(s); i++ {
		d := s[i]
		if c|d >= utf8.RuneSelf {
			return false
		}
		// c and d are below 128, so k>>6 is below 256: the mask only
		// spares the bounds check.
		if k := uint(c)<<7 | uint(d); anchorPairs[k>>6&255]&(1<<(k&63)) != 0 && anchorAt(s[i-1:]) {
			// An anchor: the answer is false unless a later byte is not
			// ASCII, which makes it false too.
			return false
		}
		c = d
	}
	// The last byte begins no anchor (every one has two bytes or more).
	return c < utf8.RuneSelf
}

// anchorAt reports whether an anchor begins s, ignoring case; s[0] is
// ASCII.
func anchorAt[T string | []byte](s T) bool {
	for _, a := range anchorsBy[lowerASCII(s[0])&(utf8.RuneSelf-1)] {
		if hasPrefixFold(s, a) {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether s begins with the lower-case ASCII
// anchor a, ignoring the case of s's ASCII letters.
func hasPrefixFold[T string | []byte](s T, a string) bool {
	if len(s) < len(a) {
		return false
	}
	for j := 1; j < len(a); j++ { // a[0] matched: it chose a
		if lowerASCII(s[j]) != a[j] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// anchorsBy lists every pattern's anchors by their first byte, for clean.
var anchorsBy = func() (by [utf8.RuneSelf][]string) {
	for _, p := range patterns {
		for _, a := range p.anchors {
			by[a[0]] = append(by[a[0]], a)
		}
	}
	return by
}()

// anchorPairs has bit c<<7|d set for every two ASCII bytes c, d with
// which some anchor begins, ignoring case: clean's one look-up per byte to
// tell whether an anchor may begin there.
var anchorPairs = func() (pairs [utf8.RuneSelf * utf8.RuneSelf / 64]uint64) {
	for _, p := range patterns {
		for _, a := range p.anchors {
			if len(a) < 2 {
				panic("redact: anchor " + a + " is shorter than clean assumes")
			}
			for _, c := range []byte{a[0], upperASCII(a[0])} {
				for _, d := range []byte{a[1], upperASCII(a[1])} {
					k := uint(c)<<7 | uint(d)
					pairs[k>>6] |= 1 << (k & 63)
				}
			}
		}
	}
	return pairs
}()

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
