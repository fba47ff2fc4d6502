package providers

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/extractq/extractq/llm"
)

// apiError is the provider's own description of a failure, read from any of
// the error bodies the four API families send:
//
//	OpenAI & compatible: {"error": {"message", "type", "code", "param"}}
//	vLLM (older):        {"object": "error", "message", "type", "code"}
//	Anthropic:           {"type": "error", "error": {"type", "message"}}
//	Gemini:              {"error": {"code": 429, "message", "status", "details"}}
//	Ollama:              {"error": "model \"x\" not found"}
type apiError struct {
	Type    string // the most specific code or type the body carries
	Message string
	// RetryDelay is Gemini's google.rpc.RetryInfo delay, when present.
	RetryDelay string
}

// parseAPIError extracts what it can; a body that is not JSON becomes the
// message itself (trimmed), as proxies send HTML or plain text.
func parseAPIError(body []byte) apiError {
	var doc struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return apiError{Message: snippet(string(body))}
	}
	var out apiError
	if len(doc.Error) > 0 {
		var s string
		if json.Unmarshal(doc.Error, &s) == nil {
			return apiError{Message: s}
		}
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Status  string          `json:"status"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		}
		if json.Unmarshal(doc.Error, &e) == nil {
			out.Message = e.Message
			out.Type = firstNonEmpty(codeString(e.Code), e.Status, e.Type)
			for _, d := range e.Details {
				if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
					out.RetryDelay = d.RetryDelay
				}
			}
			return out
		}
	}
	out.Message = doc.Message
	if doc.Type != "error" {
		out.Type = firstNonEmpty(codeString(doc.Code), doc.Type)
	}
	if out.Message == "" && out.Type == "" {
		out.Message = snippet(string(body))
	}
	return out
}

// codeString returns a string code ("insufficient_quota"); numeric codes
// repeat the HTTP status and say nothing new.
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// snippet shortens a non-JSON body to something that fits in an error line.
func snippet(s string) string {
	s = strings.TrimSpace(s)
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// quotaMarkers identify a 429 (or 400/403) that no amount of waiting fixes:
// an exhausted quota, a spend limit, an empty balance.
var quotaMarkers = []string{
	"insufficient_quota", "billing_hard_limit", "billing_not_active", "spend limit", "spending limit",
	"usage limit", "credit balance", "insufficient balance", "insufficient_balance", "quota exceeded for billing",
	"payment required",
}

// contextLengthMarkers identify a request too long for the model.
var contextLengthMarkers = []string{
	"context_length_exceeded", "context length", "context window", "maximum context", "prompt is too long",
	"too many tokens", "input token count", "exceeds the maximum number of tokens", "reduce the length",
}

// badKeyMarkers identify a rejected API key sent with a status other than 401.
var badKeyMarkers = []string{"api key not valid", "api_key_invalid", "invalid api key"}

func containsAny(s string, markers []string) bool {
	s = strings.ToLower(s)
	for _, m := range markers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// classifyStatus maps a non-2xx HTTP status and the provider's own error to a
// class: 408, 409, 425, 429 (rate limit), 500, 502, 503, 504 and 529 are
// retryable; 400 (including context length), 401, 403, 404, 413 and 429 for
// an exhausted quota or spend limit are fatal.
func classifyStatus(status int, e apiError) llm.ErrorClass {
	text := e.Type + " " + e.Message
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return llm.ClassServer
	case http.StatusServiceUnavailable, 529:
		return llm.ClassOverloaded
	case http.StatusTooManyRequests:
		if containsAny(text, quotaMarkers) {
			return llm.ClassQuota
		}
		return llm.ClassRateLimited
	case http.StatusBadRequest:
		switch {
		case containsAny(text, contextLengthMarkers):
			return llm.ClassContextLength
		case containsAny(text, quotaMarkers):
			return llm.ClassQuota
		case containsAny(text, badKeyMarkers):
			return llm.ClassAuth // Gemini answers a bad key with 400
		}
		return llm.ClassInvalidRequest
	case http.StatusUnauthorized:
		return llm.ClassAuth
	case http.StatusPaymentRequired:
		return llm.ClassQuota
	case http.StatusForbidden:
		return llm.ClassPermission
	case http.StatusNotFound:
		return llm.ClassNotFound
	case http.StatusRequestEntityTooLarge:
		return llm.ClassTooLarge
	}
	if status >= 500 {
		return llm.ClassServer
	}
	// Other 4xx, and 3xx: redirects are not followed (see newClient).
	return llm.ClassInvalidRequest
}

// classifyTransport maps a failure to get (or to finish reading) a response.
// parent is the caller's context: when it ended, the caller gave up and the
// call is canceled; when only the per-request timeout fired, it is a timeout.
// inBody tells a failure while reading the body, where a cut connection
// means a truncated body.
func classifyTransport(parent context.Context, err error, inBody bool) llm.ErrorClass {
	if parent.Err() != nil {
		return llm.ClassCanceled
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return llm.ClassTimeout
	}
	if inBody {
		return llm.ClassTruncatedBody
	}
	// Resets, refused connections, EOF before headers, DNS failures, TLS
	// handshakes cut short: all may succeed after a pause.
	return llm.ClassNetwork
}
