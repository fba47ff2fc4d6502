package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/extractq/extractq/llm"
)

func TestClassifyStatus(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   llm.ErrorClass
	}{
		{"408", 408, `{"error":{"message":"timeout"}}`, llm.ClassServer},
		{"409", 409, `{"error":{"message":"conflict"}}`, llm.ClassServer},
		{"425", 425, `{"error":{"message":"too early"}}`, llm.ClassServer},
		{"429 rate limit", 429, `{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","code":"rate_limit_exceeded"}}`, llm.ClassRateLimited},
		{"429 insufficient quota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`, llm.ClassQuota},
		{"429 spend limit", 429, `{"error":{"message":"You have reached your spend limit for this month."}}`, llm.ClassQuota},
		{"429 anthropic rate limit", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, llm.ClassRateLimited},
		{"429 gemini", 429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, llm.ClassRateLimited},
		{"500", 500, `{"error":{"message":"The server had an error"}}`, llm.ClassServer},
		{"502", 502, `<html>Bad Gateway</html>`, llm.ClassServer},
		{"503", 503, `{"error":{"message":"overloaded"}}`, llm.ClassOverloaded},
		{"504", 504, ``, llm.ClassServer},
		{"529 anthropic overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.ClassOverloaded},
		{"other 5xx", 599, ``, llm.ClassServer},
		{"400", 400, `{"error":{"message":"Invalid 'messages'","type":"invalid_request_error"}}`, llm.ClassInvalidRequest},
		{"400 openai context length", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, llm.ClassContextLength},
		{"400 anthropic prompt too long", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, llm.ClassContextLength},
		{"400 gemini input tokens", 400, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, llm.ClassContextLength},
		{"400 anthropic credit balance", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`, llm.ClassQuota},
		{"401", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, llm.ClassAuth},
		{"402", 402, `{"error":{"message":"Insufficient credits"}}`, llm.ClassQuota},
		{"403", 403, `{"type":"error","error":{"type":"permission_error","message":"no access"}}`, llm.ClassPermission},
		{"404 unknown model", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, llm.ClassNotFound},
		{"413", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, llm.ClassTooLarge},
		{"422", 422, `{"object":"error","message":"bad","type":"BadRequestError","code":422}`, llm.ClassInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyStatus(tc.status, parseAPIError([]byte(tc.body)))
			if got != tc.want {
				t.Fatalf("classifyStatus(%d, %s) = %s, want %s", tc.status, tc.body, got, tc.want)
			}
		})
	}
}

func TestRetryableClasses(t *testing.T) {
	retryable := map[int]bool{408: true, 409: true, 425: true, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true,
		400: false, 401: false, 403: false, 404: false, 413: false}
	for status, want := range retryable {
		if got := classifyStatus(status, apiError{}).Retryable(); got != want {
			t.Errorf("HTTP %d retryable = %v, want %v", status, got, want)
		}
	}
	if classifyStatus(429, apiError{Type: "insufficient_quota"}).Retryable() {
		t.Error("429 insufficient_quota must be fatal")
	}
}

func TestParseAPIError(t *testing.T) {
	tests := []struct {
		name, body        string
		typ, msg, backoff string
	}{
		{"openai", `{"error":{"message":"Rate limit","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "Rate limit", ""},
		{"openai null code", `{"error":{"message":"bad","type":"invalid_request_error","code":null}}`, "invalid_request_error", "bad", ""},
		{"openrouter numeric code", `{"error":{"code":429,"message":"slow down"}}`, "", "slow down", ""},
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded", ""},
		{"gemini with retry info", `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"29s"}]}}`, "RESOURCE_EXHAUSTED", "quota", "29s"},
		{"ollama", `{"error":"model \"x\" not found"}`, "", `model "x" not found`, ""},
		{"vllm", `{"object":"error","message":"maximum context length","type":"BadRequestError","code":400}`, "BadRequestError", "maximum context length", ""},
		{"html", `<html><body>502 Bad Gateway</body></html>`, "", "<html><body>502 Bad Gateway</body></html>", ""},
		{"empty", ``, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseAPIError([]byte(tc.body))
			if got.Type != tc.typ || got.Message != tc.msg || got.RetryDelay != tc.backoff {
				t.Fatalf("parseAPIError = %+v, want type %q message %q delay %q", got, tc.typ, tc.msg, tc.backoff)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestClassifyTransport(t *testing.T) {
	live := context.Background()
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		parent context.Context
		err    error
		inBody bool
		want   llm.ErrorClass
	}{
		{"caller canceled", dead, context.Canceled, false, llm.ClassCanceled},
		{"caller canceled while reading", dead, io.ErrUnexpectedEOF, true, llm.ClassCanceled},
		{"per-request timeout", live, fmt.Errorf("Post: %w", context.DeadlineExceeded), false, llm.ClassTimeout},
		{"net timeout", live, &net.OpError{Op: "read", Err: timeoutErr{}}, false, llm.ClassTimeout},
		{"reset", live, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, false, llm.ClassNetwork},
		{"refused", live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false, llm.ClassNetwork},
		{"eof before headers", live, io.EOF, false, llm.ClassNetwork},
		{"cut body", live, io.ErrUnexpectedEOF, true, llm.ClassTruncatedBody},
		{"reset in body", live, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true, llm.ClassTruncatedBody},
		{"dns", live, &net.DNSError{Err: "no such host", Name: "x.invalid"}, false, llm.ClassNetwork},
		{"other", live, errors.New("tls: handshake failure"), false, llm.ClassNetwork},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyTransport(tc.parent, tc.err, tc.inBody); got != tc.want {
				t.Fatalf("classifyTransport = %s, want %s", got, tc.want)
			}
		})
	}
}
