package providers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

func TestOllamaRequests(t *testing.T) {
	sch := testSchema(t)
	okBody := `{"model":"llama3.1:8b","created_at":"2026-11-22T03:00:00Z","message":{"role":"assistant","content":"{}"},"done":true,"done_reason":"stop","total_duration":1,"prompt_eval_count":10,"eval_count":2}`
	tests := []struct {
		name   string
		mode   llm.Mode
		format string // JSON of the expected format field, "" = absent
	}{
		{"text", llm.ModeText, ""},
		{"json", llm.ModeJSON, `"json"`},
		{"strict", llm.ModeStrict, "schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, 200, nil, okBody)
			p := mustNew(t, "ollama:llama3.1:8b", env{"OLLAMA_HOST": srv.URL})
			if _, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: tc.mode, Schema: sch, Temperature: 0.1, MaxTokens: 256, Stop: []string{"###"}}); err != nil {
				t.Fatal(err)
			}
			if got := srv.last(t); got.Path != "/api/chat" || got.Header.Get("Authorization") != "" {
				t.Fatalf("path %s auth %q", got.Path, got.Header.Get("Authorization"))
			}
			b := srv.lastJSON(t)
			if b["model"] != "llama3.1:8b" || b["stream"] != false || len(b["messages"].([]any)) != 4 {
				t.Fatalf("model/stream/messages: %v", b)
			}
			o := b["options"].(map[string]any)
			if o["temperature"] != 0.1 || o["num_predict"] != 256.0 || o["stop"].([]any)[0] != "###" {
				t.Fatalf("options = %v", o)
			}
			switch tc.format {
			case "":
				if _, has := b["format"]; has {
					t.Fatal("text mode sends no format")
				}
			case "schema":
				f, ok := b["format"].(map[string]any)
				if !ok || f["properties"] == nil {
					t.Fatalf("format = %v, want the schema", b["format"])
				}
			default:
				if b["format"] != "json" {
					t.Fatalf("format = %v", b["format"])
				}
			}
		})
	}
}

func TestOllamaResponsesAndErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		text   string
		finish llm.FinishReason
		class  llm.ErrorClass
		msg    string
	}{
		{"done", 200, `{"model":"llama3.1:8b","message":{"role":"assistant","content":"{\"a\":1}"},"done":true,"done_reason":"stop","prompt_eval_count":26,"eval_count":9}`, `{"a":1}`, llm.FinishStop, "", ""},
		{"length", 200, `{"model":"llama3.1:8b","message":{"role":"assistant","content":"{\"a\":"},"done":true,"done_reason":"length","prompt_eval_count":26,"eval_count":9}`, `{"a":`, llm.FinishLength, "", ""},
		{"streamed answer", 200, `{"model":"llama3.1:8b","message":{"role":"assistant","content":"{"},"done":false}`, "", "", llm.ClassBadResponse, ""},
		{"model not found", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, "", "", llm.ClassNotFound, `model "llama9" not found, try pulling it first`},
		{"server", 500, `{"error":"llama runner process has terminated"}`, "", "", llm.ClassServer, "llama runner process has terminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, tc.status, nil, tc.body)
			p := mustNew(t, "ollama:llama3.1:8b", env{}, WithBaseURL(srv.URL))
			resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeJSON})
			if tc.class != "" {
				var pe *llm.Error
				if !errors.As(err, &pe) || pe.Class != tc.class || (tc.msg != "" && pe.Message != tc.msg) {
					t.Fatalf("got %v, want class %s", err, tc.class)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text || resp.FinishReason != tc.finish || resp.Usage != (llm.Usage{PromptTokens: 26, CompletionTokens: 9}) || resp.Model != "llama3.1:8b" {
				t.Fatalf("got %+v", resp)
			}
		})
	}
}

func TestGeminiRequests(t *testing.T) {
	sch := testSchema(t)
	okBody := `{"candidates":[{"content":{"parts":[{"text":"{}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash"}`
	tests := []struct {
		name        string
		mode        llm.Mode
		mime        any
		wantsSchema bool
	}{
		{"text", llm.ModeText, nil, false},
		{"json", llm.ModeJSON, "application/json", false},
		{"strict", llm.ModeStrict, "application/json", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, 200, nil, okBody)
			const key = "AIzaSyTEST-gemini-key-0123456789abcdefg"
			p := mustNew(t, "gemini:gemini-2.5-flash", env{"GEMINI_API_KEY": key, "GEMINI_BASE_URL": srv.URL})
			if _, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: tc.mode, Schema: sch, Temperature: 0, MaxTokens: 300, Stop: []string{"###"}}); err != nil {
				t.Fatal(err)
			}
			got := srv.last(t)
			if got.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || got.RawQuery != "" {
				t.Fatalf("path %s query %q: the key must travel in a header, never in the URL", got.Path, got.RawQuery)
			}
			if got.Header.Get("x-goog-api-key") != key {
				t.Fatal("x-goog-api-key header missing")
			}
			b := srv.lastJSON(t)
			si := b["systemInstruction"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]
			if si != "You extract data as JSON." {
				t.Fatalf("systemInstruction = %v", si)
			}
			contents := b["contents"].([]any)
			var roles []string
			for _, c := range contents {
				roles = append(roles, c.(map[string]any)["role"].(string))
			}
			if strings.Join(roles, ",") != "user,model,user" {
				t.Fatalf("roles %v", roles)
			}
			gc := b["generationConfig"].(map[string]any)
			if gc["temperature"] != 0.0 || gc["maxOutputTokens"] != 300.0 || gc["stopSequences"].([]any)[0] != "###" {
				t.Fatalf("generationConfig = %v", gc)
			}
			// Gemini 2.5 takes the JSON Schema itself; responseSchema (the
			// OpenAPI subset) is never sent beside it.
			if gc["responseMimeType"] != tc.mime || (gc["responseJsonSchema"] != nil) != tc.wantsSchema || gc["responseSchema"] != nil {
				t.Fatalf("responseMimeType %v responseJsonSchema %v responseSchema %v", gc["responseMimeType"], gc["responseJsonSchema"], gc["responseSchema"])
			}
		})
	}
}

func TestGeminiResponsesAndErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		text    string
		finish  llm.FinishReason
		refusal string
		usage   llm.Usage
		class   llm.ErrorClass
		retry   time.Duration
	}{
		{"stop with thoughts", 200, `{"candidates":[{"content":{"parts":[{"text":"thinking…","thought":true},{"text":"{\"a\":"},{"text":"1}"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":7,"thoughtsTokenCount":100,"totalTokenCount":157},"modelVersion":"gemini-2.5-flash"}`,
			`{"a":1}`, llm.FinishStop, "", llm.Usage{PromptTokens: 50, CompletionTokens: 107}, "", 0},
		{"max tokens", 200, `{"candidates":[{"content":{"parts":[{"text":"{\"a\":"}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":7}}`,
			`{"a":`, llm.FinishLength, "", llm.Usage{PromptTokens: 50, CompletionTokens: 7}, "", 0},
		{"safety", 200, `{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"SAFETY","safetyRatings":[]}],"usageMetadata":{"promptTokenCount":50}}`,
			"", llm.FinishContentFilter, "the answer was blocked (finishReason SAFETY)", llm.Usage{PromptTokens: 50, CompletionTokens: 0}, "", 0},
		{"prohibited content", 200, `{"candidates":[{"finishReason":"PROHIBITED_CONTENT","index":0}],"usageMetadata":{"promptTokenCount":50,"totalTokenCount":50},"modelVersion":"gemini-2.5-flash"}`,
			"", llm.FinishContentFilter, "the answer was blocked (finishReason PROHIBITED_CONTENT)", llm.Usage{PromptTokens: 50}, "", 0},
		{"model armor", 200, `{"candidates":[{"content":{"role":"model"},"finishReason":"MODEL_ARMOR"}],"usageMetadata":{"promptTokenCount":50}}`,
			"", llm.FinishContentFilter, "the answer was blocked (finishReason MODEL_ARMOR)", llm.Usage{PromptTokens: 50}, "", 0},
		{"malformed function call is no refusal", 200, `{"candidates":[{"content":{"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL"}],"usageMetadata":{"promptTokenCount":50}}`,
			"", llm.FinishOther, "", llm.Usage{PromptTokens: 50}, "", 0},
		{"prompt blocked", 200, `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":50}}`,
			"", llm.FinishContentFilter, "prompt blocked: SAFETY", llm.Usage{PromptTokens: 50, CompletionTokens: 0}, "", 0},
		{"no candidates", 200, `{"usageMetadata":{"promptTokenCount":50}}`, "", "", "", llm.Usage{}, llm.ClassBadResponse, 0},
		{"resource exhausted", 429, `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"29s"}]}}`,
			"", "", "", llm.Usage{}, llm.ClassRateLimited, 29 * time.Second},
		{"bad key", 400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`, "", "", "", llm.Usage{}, llm.ClassAuth, 0},
		{"unavailable", 503, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, "", "", "", llm.Usage{}, llm.ClassOverloaded, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, tc.status, nil, tc.body)
			p := mustNew(t, "gemini:gemini-2.5-flash", env{"GOOGLE_API_KEY": "AIzaSyTEST-0123456789abcdefghijklmnop"}, WithBaseURL(srv.URL))
			resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeJSON})
			if tc.class != "" {
				var pe *llm.Error
				if !errors.As(err, &pe) || pe.Class != tc.class || pe.RateLimit.RetryAfter != tc.retry {
					t.Fatalf("got %+v, want class %s retry %v", err, tc.class, tc.retry)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text || resp.FinishReason != tc.finish || resp.Refusal != tc.refusal || resp.Usage != tc.usage {
				t.Fatalf("got text %q finish %s refusal %q usage %+v", resp.Text, resp.FinishReason, resp.Refusal, resp.Usage)
			}
		})
	}
}
