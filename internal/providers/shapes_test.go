package providers

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// replay is a raw TCP server answering each request with bytes written
// as given (parts, one write each), not through net/http's server, which
// would canonicalise keys, pick the framing and add headers of its own.
type replay struct {
	url      string
	dials    atomic.Int32
	requests atomic.Int32
}

// replayAnswer builds the bytes of one answer to a request and its body;
// close ends the connection after them.
type replayAnswer func(r *http.Request, body []byte) (parts []string, close bool)

func newReplay(t *testing.T, answer replayAnswer) *replay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &replay{url: "http://" + l.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.dials.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.(*net.TCPConn).SetNoDelay(true)
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil {
						return
					}
					s.requests.Add(1)
					parts, closeAfter := answer(req, body)
					for i, p := range parts {
						if _, err := io.WriteString(c, p); err != nil {
							return
						}
						if len(parts) > 1 && i%16 == 0 {
							time.Sleep(50 * time.Microsecond) // lets the reader see a partial header
						}
					}
					if closeAfter {
						return
					}
				}
			}()
		}
	}()
	return s
}

func whole(s string) []string { return []string{s} }

// bytewise splits a response into one write per byte of its header.
func bytewise(s string) []string {
	head, body, _ := strings.Cut(s, "\r\n\r\n")
	var parts []string
	for i := 0; i < len(head)+4; i++ {
		parts = append(parts, (head + "\r\n\r\n")[i:i+1])
	}
	return append(parts, body)
}

func httpChunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

func gzipString(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

// openAIHead is the header block of an OpenAI answer behind Cloudflare,
// in lower case, cookies with commas in their expiry dates.
const openAIHead = "date: Fri, 27 Nov 2026 10:12:13 GMT\r\n" +
	"content-type: application/json; charset=utf-8\r\n" +
	"access-control-expose-headers: X-Request-ID\r\n" +
	"openai-organization: user-abc123\r\n" +
	"openai-processing-ms: 412\r\n" +
	"openai-version: 2020-10-01\r\n" +
	"x-ratelimit-limit-requests: 10000\r\n" +
	"x-ratelimit-limit-tokens: 30000000\r\n" +
	"x-ratelimit-remaining-requests: 9999\r\n" +
	"x-ratelimit-remaining-tokens: 29999945\r\n" +
	"x-ratelimit-reset-requests: 6ms\r\n" +
	"x-ratelimit-reset-tokens: 1m30s\r\n" +
	"x-request-id: req_8f1a2b3c4d5e6f708192a3b4c5d6e7f8\r\n" +
	"strict-transport-security: max-age=31536000; includeSubDomains; preload\r\n" +
	"cf-cache-status: DYNAMIC\r\n" +
	"set-cookie: __cf_bm=Xy1.abc-1732700000-1.0.1.1-AbC; path=/; expires=Fri, 27-Nov-26 10:42:13 GMT; domain=.api.openai.com; HttpOnly; Secure; SameSite=None\r\n" +
	"set-cookie: _cfuvid=QwErTy-1732700000000-0.0.1.1-604800000; path=/; domain=.api.openai.com; HttpOnly; Secure; SameSite=None\r\n" +
	"x-content-type-options: nosniff\r\n" +
	"server: cloudflare\r\n" +
	"cf-ray: 8e9f0a1b2c3d4e5f-FRA\r\n" +
	"alt-svc: h3=\":443\"; ma=86400\r\n"

const openAIAnswer = `{"id":"chatcmpl-abc","object":"chat.completion","created":1732700000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"{\"total\":12.5}","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":31,"completion_tokens":7,"total_tokens":38},"system_fingerprint":"fp_0ba0d124f1"}`

const anthropicAnswer = `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"{\"total\":12.5}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":6}}`

const geminiAnswer = `{
  "candidates": [
    {
      "content": {
        "parts": [
          {
            "text": "{\"total\":12.5}"
          }
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "avgLogprobs": -0.0123
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 10,
    "candidatesTokenCount": 5,
    "totalTokenCount": 15
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "abcXYZ"
}
`

const anthropicHead = "date: Fri, 27 Nov 2026 10:12:13 GMT\r\n" +
	"content-type: application/json\r\n" +
	"connection: keep-alive\r\n" +
	"request-id: req_011CVabcdef\r\n" +
	"anthropic-organization-id: 0b1c2d3e-0000-4000-8000-000000000000\r\n" +
	"via: 1.1 google\r\n" +
	"cf-cache-status: DYNAMIC\r\n" +
	"x-robots-tag: none\r\n" +
	"server: cloudflare\r\n" +
	"cf-ray: 8e9f0a1b2c3d4e5f-SJC\r\n"

func withLength(body string) string {
	return "content-length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// shapeCase is one API-shaped answer and what the adapter must make of it.
type shapeCase struct {
	name   string
	spec   string
	answer replayAnswer
	// check looks at the default provider's first result.
	check func(t *testing.T, r *llm.Response, e *llm.Error)
	// dials is the connections two calls take, 0: not checked.
	dials int32
}

func wantText(text string) func(t *testing.T, r *llm.Response, e *llm.Error) {
	return func(t *testing.T, r *llm.Response, e *llm.Error) {
		t.Helper()
		if e != nil || r == nil {
			t.Fatalf("error %v, want the answer %q", e, text)
		}
		if r.Text != text || len(r.Raw) == 0 || !json.Valid(r.Raw) {
			t.Fatalf("text %q raw %q, want %q", r.Text, r.Raw, text)
		}
	}
}

func shapeCases() []shapeCase {
	openAIOK := func(head string, parts func(string) []string) replayAnswer {
		return func(*http.Request, []byte) ([]string, bool) {
			return parts("HTTP/1.1 200 OK\r\n" + openAIHead + head + withLength(openAIAnswer)), false
		}
	}
	openAIText := wantText(`{"total":12.5}`)
	return []shapeCase{
		{name: "openai 200 chunked", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\n" + openAIHead + "transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n" +
					httpChunk(openAIAnswer[:120]) + httpChunk(openAIAnswer[120:]) + "0\r\n\r\n"), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				openAIText(t, r, e)
				rl := r.RateLimit
				if !rl.HasRequests || rl.LimitRequests != 10000 || rl.RemainingRequests != 9999 || rl.ResetRequests != 6*time.Millisecond ||
					rl.LimitTokens != 30000000 || rl.RemainingTokens != 29999945 || rl.ResetTokens != 90*time.Second {
					t.Fatalf("rate limit %+v", rl)
				}
				if r.Usage.PromptTokens != 31 || r.Usage.CompletionTokens != 7 {
					t.Fatalf("usage %+v", r.Usage)
				}
			}},
		{name: "openai 200 length", spec: "openai:gpt-4o-mini", dials: 1, answer: openAIOK("", whole), check: openAIText},
		{name: "openai 200 gzip", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(r *http.Request, _ []byte) ([]string, bool) {
				if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
					return whole("HTTP/1.1 200 OK\r\n" + openAIHead + withLength(openAIAnswer)), false
				}
				return whole("HTTP/1.1 200 OK\r\n" + openAIHead + "content-encoding: gzip\r\n" + withLength(gzipString(openAIAnswer))), false
			}, check: openAIText},
		{name: "openai 200 header byte by byte", spec: "openai:gpt-4o-mini", dials: 1, answer: openAIOK("", bytewise), check: openAIText},
		{name: "openai 200 chunked byte by byte", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				s := "HTTP/1.1 200 OK\r\n" + openAIHead + "transfer-encoding: chunked\r\n\r\n" + httpChunk(openAIAnswer) + "0\r\n\r\n"
				var parts []string
				for i := range s {
					parts = append(parts, s[i:i+1])
				}
				return parts, false
			}, check: openAIText},
		{name: "utf-8 header value", spec: "openai:gpt-4o-mini", dials: 1, answer: openAIOK("x-note: café – naïve\r\n", whole), check: openAIText},
		{name: "folded header line", spec: "openai:gpt-4o-mini", dials: 1,
			answer: openAIOK("x-folded: first\r\n  second\r\nx-ratelimit-remaining-requests: 7\r\n", whole),
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				openAIText(t, r, e)
				if r.RateLimit.RemainingRequests != 9999 { // the first of the duplicates, as Header.Get
					t.Fatalf("remaining %d", r.RateLimit.RemainingRequests)
				}
			}},
		{name: "duplicate headers", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\nx-ratelimit-remaining-requests: 5\r\nX-Ratelimit-Remaining-Requests: 6\r\nx-ratelimit-limit-requests: 10\r\ncontent-type: application/json\r\ncontent-type: text/plain\r\n" + withLength(openAIAnswer)), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				openAIText(t, r, e)
				if r.RateLimit.RemainingRequests != 5 {
					t.Fatalf("remaining %d, want the first value", r.RateLimit.RemainingRequests)
				}
			}},
		{name: "connection close", spec: "openai:gpt-4o-mini", dials: 2,
			answer: func(*http.Request, []byte) ([]string, bool) {
				// The server does not close: only the header says it will.
				return whole("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\n" + withLength(openAIAnswer)), false
			}, check: openAIText},
		{name: "http/1.0 read to close", spec: "openai:gpt-4o-mini", dials: 2,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n" + openAIAnswer), true
			}, check: openAIText},
		{name: "100 continue first", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return []string{"HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\n" + openAIHead + withLength(openAIAnswer)}, false
			}, check: openAIText},
		{name: "trailer", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ntrailer: x-usage, x-checksum\r\n\r\n" +
					httpChunk(openAIAnswer) + "0\r\nx-usage: 38\r\nx-checksum: abc\r\n\r\n"), false
			}, check: openAIText},
		{name: "redirect 301", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 301 Moved Permanently\r\nlocation: https://api.example.com/v1/chat/completions\r\ncontent-type: text/html\r\n" + withLength("<html>moved</html>\n")), false
			}, check: wantError(llm.ClassInvalidRequest, 301)},
		{name: "redirect 307", spec: "anthropic:claude-haiku-4-5", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 307 Temporary Redirect\r\nlocation: /v2/messages\r\ncontent-length: 0\r\n\r\n"), false
			}, check: wantError(llm.ClassInvalidRequest, 307)},
		{name: "anthropic 200", spec: "anthropic:claude-haiku-4-5", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\n" + anthropicHead +
					"anthropic-ratelimit-requests-limit: 50\r\nanthropic-ratelimit-requests-remaining: 49\r\n" + withLength(anthropicAnswer)), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				wantText(`{"total":12.5}`)(t, r, e)
				if r.RateLimit.LimitRequests != 50 || r.RateLimit.RemainingRequests != 49 || r.FinishReason != llm.FinishStop {
					t.Fatalf("rate limit %+v finish %q", r.RateLimit, r.FinishReason)
				}
			}},
		{name: "anthropic 529 overloaded", spec: "anthropic:claude-haiku-4-5", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 529 \r\n" + anthropicHead + "x-should-retry: true\r\n" +
					withLength(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				wantError(llm.ClassOverloaded, 529)(t, r, e)
				if e.Type != "overloaded_error" || e.Message != "Overloaded" {
					t.Fatalf("type %q message %q", e.Type, e.Message)
				}
			}},
		{name: "anthropic 429 retry-after", spec: "anthropic:claude-haiku-4-5", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				reset := time.Now().Add(90 * time.Second).UTC().Format(time.RFC3339)
				return whole("HTTP/1.1 429 Too Many Requests\r\n" + anthropicHead + "retry-after: 17\r\n" +
					"anthropic-ratelimit-requests-limit: 50\r\nanthropic-ratelimit-requests-remaining: 0\r\nanthropic-ratelimit-requests-reset: " + reset + "\r\n" +
					"anthropic-ratelimit-tokens-limit: 40000\r\nanthropic-ratelimit-tokens-remaining: 0\r\nanthropic-ratelimit-tokens-reset: " + reset + "\r\n" +
					"x-should-retry: true\r\n" +
					withLength(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				wantError(llm.ClassRateLimited, 429)(t, r, e)
				rl := e.RateLimit
				if rl.RetryAfter != 17*time.Second || !rl.HasRequests || rl.LimitRequests != 50 || rl.RemainingRequests != 0 ||
					rl.ResetRequests < 80*time.Second || rl.ResetRequests > 91*time.Second || rl.LimitTokens != 40000 || !rl.HasTokens {
					t.Fatalf("rate limit %+v", rl)
				}
				if !strings.Contains(string(e.Raw), "rate_limit_error") {
					t.Fatalf("raw %q", e.Raw)
				}
			}},
		{name: "gemini 200 chunked", spec: "gemini:gemini-2.5-flash", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=UTF-8\r\n" +
					"vary: Origin\r\nvary: X-Origin\r\nvary: Referer\r\n" +
					"date: Fri, 27 Nov 2026 10:12:13 GMT\r\nserver: scaffolding on HTTPServer2\r\nx-xss-protection: 0\r\n" +
					"x-frame-options: SAMEORIGIN\r\nx-content-type-options: nosniff\r\nserver-timing: gfet4t7; dur=812\r\n" +
					"alt-svc: h3=\":443\"; ma=2592000,h3-29=\":443\"; ma=2592000\r\ntransfer-encoding: chunked\r\n\r\n" +
					httpChunk(geminiAnswer[:200]) + httpChunk(geminiAnswer[200:]) + "0\r\n\r\n"), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				wantText(`{"total":12.5}`)(t, r, e)
				if r.Usage.PromptTokens != 10 || r.Usage.CompletionTokens != 5 {
					t.Fatalf("usage %+v", r.Usage)
				}
			}},
		{name: "gzip upper case", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(r *http.Request, _ []byte) ([]string, bool) {
				if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
					return whole("HTTP/1.1 200 OK\r\n" + openAIHead + withLength(openAIAnswer)), false
				}
				return whole("HTTP/1.1 200 OK\r\n" + openAIHead + "content-encoding: GZIP\r\n" + withLength(gzipString(openAIAnswer))), false
			}, check: openAIText},
		{name: "gzip cut short", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(r *http.Request, _ []byte) ([]string, bool) {
				z := gzipString(openAIAnswer)
				z = z[:len(z)-12]
				return whole("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n" + withLength(z)), false
			}, check: wantError(llm.ClassTruncatedBody, 200)},
		{name: "103 early hints first", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return []string{"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload; as=style\r\n\r\n", "HTTP/1.1 200 OK\r\n" + openAIHead + withLength(openAIAnswer)}, false
			}, check: openAIText},
		{name: "204 no content", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 204 No Content\r\n" + openAIHead + "\r\n"), false
			}, check: wantError(llm.ClassBadResponse, 204)},
		{name: "200 empty", spec: "anthropic:claude-haiku-4-5", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\n" + anthropicHead + "content-length: 0\r\n\r\n"), false
			}, check: wantError(llm.ClassBadResponse, 200)},
		{name: "body cut by close", spec: "openai:gpt-4o-mini", dials: 2,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\n" + openAIHead + "content-length: 1000\r\n\r\n" + openAIAnswer[:50]), true
			}, check: wantError(llm.ClassTruncatedBody, 200)},
		{name: "chunked cut by close", spec: "gemini:gemini-2.5-flash", dials: 2,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=UTF-8\r\ntransfer-encoding: chunked\r\n\r\n" + httpChunk(geminiAnswer[:100])), true
			}, check: wantError(llm.ClassTruncatedBody, 200)},
		{name: "cloudflare 502 html", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				html := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
				return whole("HTTP/1.1 502 Bad Gateway\r\ndate: Fri, 27 Nov 2026 10:12:13 GMT\r\ncontent-type: text/html\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\nserver: cloudflare\r\ncf-ray: 8e9f-FRA\r\n\r\n" + httpChunk(html) + "0\r\n\r\n"), false
			}, check: wantError(llm.ClassServer, 502)},
		{name: "openai 401", spec: "openai:gpt-4o-mini", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 401 Unauthorized\r\n" + openAIHead + "www-authenticate: Bearer realm=\"OpenAI API\"\r\n" +
					withLength(`{"error":{"message":"Incorrect API key provided: sk-test-*****0000. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)), false
			}, check: wantError(llm.ClassAuth, 401)},
		{name: "gemini 429 retry delay", spec: "gemini:gemini-2.5-flash", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 429 Too Many Requests\r\nvary: Origin\r\nvary: X-Origin\r\nvary: Referer\r\ncontent-type: application/json; charset=UTF-8\r\nserver: scaffolding on HTTPServer2\r\nx-xss-protection: 0\r\ntransfer-encoding: chunked\r\n\r\n" +
					httpChunk(`{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"21s"}]}}`) + "0\r\n\r\n"), false
			},
			check: func(t *testing.T, r *llm.Response, e *llm.Error) {
				if e == nil || e.Status != 429 || e.RateLimit.RetryAfter != 21*time.Second {
					t.Fatalf("error %+v", e)
				}
			}},
		{name: "gemini 200 vary one line", spec: "gemini:gemini-2.5-flash", dials: 1,
			answer: func(*http.Request, []byte) ([]string, bool) {
				return whole("HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=UTF-8\r\nvary: Origin, X-Origin, Referer\r\n" +
					"server: scaffolding on HTTPServer2\r\nx-xss-protection: 0\r\ntransfer-encoding: chunked\r\n\r\n" +
					httpChunk(geminiAnswer) + "0\r\n\r\n"), false
			}, check: wantText(`{"total":12.5}`)},
	}
}

func wantError(class llm.ErrorClass, status int) func(t *testing.T, r *llm.Response, e *llm.Error) {
	return func(t *testing.T, r *llm.Response, e *llm.Error) {
		t.Helper()
		if e == nil {
			t.Fatalf("answer %+v, want a %s error", r, class)
		}
		if e.Class != class || e.Status != status {
			t.Fatalf("class %s status %d (%v), want %s %d", e.Class, e.Status, e, class, status)
		}
	}
}

// shapeSummary is what a caller sees of one call, the server's address
// taken out.
func shapeSummary(r *llm.Response, err error, addr string) string {
	var e *llm.Error
	var s string
	switch {
	case errors.As(err, &e):
		s = fmt.Sprintf("error class=%s status=%d type=%q message=%q rl=%s raw=%q", e.Class, e.Status, e.Type, e.Message, rlSummary(e.RateLimit), e.Raw)
	case err != nil:
		s = "other error " + err.Error()
	default:
		s = fmt.Sprintf("answer text=%q finish=%s refusal=%q usage=%+v rl=%s raw=%q", r.Text, r.FinishReason, r.Refusal, r.Usage, rlSummary(r.RateLimit), r.Raw)
	}
	return strings.ReplaceAll(s, addr, "ADDR")
}

// transportWording drops the words of a transport failure after its
// class's own: http1 names the stage that failed ("http1: read response
// body <addr>: unexpected EOF") where net/http says "unexpected EOF".
func transportWording(s string) string {
	return transportCause.ReplaceAllString(s, `$1"`)
}

var transportCause = regexp.MustCompile(`(message="the response body ended early|message="no response|message="network failure[^:]*):[^"]*"`)

// rlSummary is a rate limit with the resets computed from the clock
// reduced to whether they are set.
func rlSummary(rl llm.RateLimit) string {
	rr, rt := rl.ResetRequests > 0, rl.ResetTokens > 0
	rl.ResetRequests, rl.ResetTokens = 0, 0
	return fmt.Sprintf("%+v resets=%v,%v", rl, rr, rt)
}

// TestAPIShapes replays API-shaped answers byte for byte and checks what
// each adapter makes of them over http1 (the default) and over net/http
// (EXTRACTQ_HTTP1=off): the same answer or error, the same connections.
func TestAPIShapes(t *testing.T) {
	req := llm.Request{Messages: nativePrompt("Invoice from ACME, total 12.50, paid."), Mode: llm.ModeText}
	for _, tc := range shapeCases() {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out [2]string
			var dials [2]int32
			for i, e := range []env{{}, {http1Env: "off"}} {
				srv := newReplay(t, tc.answer)
				p := mustNew(t, tc.spec, e, WithBaseURL(srv.url), WithAPIKey("sk-test-shapes-0000"))
				var b strings.Builder
				for call := 0; call < 2; call++ {
					r, err := p.Chat(context.Background(), req)
					if call == 0 && i == 0 {
						var pe *llm.Error
						errors.As(err, &pe)
						tc.check(t, r, pe)
					}
					b.WriteString(shapeSummary(r, err, strings.TrimPrefix(srv.url, "http://")) + "\n")
				}
				out[i], dials[i] = b.String(), srv.dials.Load()
				if n := srv.requests.Load(); n != 2 {
					t.Fatalf("the server received %d requests for two calls (a redirect followed?)", n)
				}
			}
			if transportWording(out[0]) != transportWording(out[1]) {
				t.Fatalf("http1:\n%s\nnet/http:\n%s", out[0], out[1])
			}
			if tc.dials != 0 && (dials[0] != tc.dials || dials[1] != tc.dials) {
				t.Fatalf("two calls dialled %d times over http1, %d over net/http, want %d", dials[0], dials[1], tc.dials)
			}
			t.Log(out[0])
		})
	}
}

// TestPooledBodiesConcurrent runs many calls at once through one provider,
// each with a prompt of its own size, against a server that checks every
// body it receives is the JSON of that call's prompt and answers with a
// body of its own size: a request body buffer reused too early (see
// payloadPool) shows as a body that is not the one sent.
func TestPooledBodiesConcurrent(t *testing.T) {
	const workers, calls = 16, 40
	prompt := func(id int) string {
		return fmt.Sprintf("doc %d: ", id) + strings.Repeat(string(rune('a'+id%26)), (id*977)%9000)
	}
	var bad atomic.Int32
	srv := newReplay(t, func(r *http.Request, body []byte) ([]string, bool) {
		var in struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		id := -1
		if err := json.Unmarshal(body, &in); err == nil && len(in.Messages) == 1 {
			c := in.Messages[0].Content
			if rest, ok := strings.CutPrefix(c, "doc "); ok {
				n, _, _ := strings.Cut(rest, ":")
				if v, err := strconv.Atoi(n); err == nil && c == prompt(v) {
					id = v
				}
			}
		}
		if id < 0 {
			bad.Add(1)
			return whole("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n" + withLength(`{"error":{"message":"bad body"}}`)), false
		}
		text, _ := json.Marshal(fmt.Sprintf("answer %d", id))
		pad := strings.Repeat("x", (id*1543)%20000)
		answer := `{"model":"m","choices":[{"message":{"content":` + string(text) + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1},"pad":"` + pad + `"}`
		if id%3 == 0 {
			return whole("HTTP/1.1 200 OK\r\n" + openAIHead + "transfer-encoding: chunked\r\n\r\n" + httpChunk(answer) + "0\r\n\r\n"), false
		}
		return whole("HTTP/1.1 200 OK\r\n" + openAIHead + withLength(answer)), false
	})
	p := mustNew(t, "openai:gpt-4o-mini", env{}, WithBaseURL(srv.url), WithAPIKey("sk-test-shapes-0000"))
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for c := 0; c < calls; c++ {
				id := w*calls + c
				r, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt(id)}}, Mode: llm.ModeText})
				if err != nil {
					errs <- fmt.Errorf("call %d: %w", id, err)
					continue
				}
				if want := fmt.Sprintf("answer %d", id); r.Text != want {
					errs <- fmt.Errorf("call %d got %q", id, r.Text)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := bad.Load(); n != 0 {
		t.Fatalf("the server received %d bodies that were not the prompt sent", n)
	}
}
