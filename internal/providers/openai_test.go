package providers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/schema"
)

// openAPIClosure compiles one of the OpenAI chat-completions closures
// (a root "#/components/schemas/X" plus the components it references) into
// a schema that validates X.
func openAPIClosure(t *testing.T, file string) *schema.Schema {
	t.Helper()
	data, err := os.ReadFile(testenv.SharedTestdata(t, "openai-chat-completions", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Root       string          `json:"root"`
		Components json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Root == "" {
		t.Fatalf("%s is not a closure document: %v", file, err)
	}
	wrapper, _ := json.Marshal(map[string]any{"$ref": doc.Root, "components": doc.Components})
	s, err := schema.Compile(wrapper)
	if err != nil {
		t.Fatalf("compiling %s: %v", file, err)
	}
	return s
}

// TestOpenAIRequestConformance validates every request body the adapter
// sends, in every mode and flavour, against the official request schema.
func TestOpenAIRequestConformance(t *testing.T) {
	reqSchema := openAPIClosure(t, "CreateChatCompletionRequest.closure.json")
	sch := testSchema(t)
	okBody := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{}","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	tests := []struct {
		name  string
		spec  string
		req   llm.Request
		check func(t *testing.T, body map[string]any)
	}{
		{"text", "openai:gpt-4o-mini", llm.Request{Messages: conversation(), Mode: llm.ModeText, Temperature: 0.2, MaxTokens: 500, Stop: []string{"\n\n\n"}},
			func(t *testing.T, b map[string]any) {
				if b["response_format"] != nil || b["tools"] != nil {
					t.Error("text mode must send neither response_format nor tools")
				}
				if b["max_completion_tokens"] != 500.0 || b["max_tokens"] != nil {
					t.Errorf("OpenAI proper takes max_completion_tokens: %v / %v", b["max_completion_tokens"], b["max_tokens"])
				}
				if b["temperature"] != 0.2 {
					t.Errorf("temperature = %v", b["temperature"])
				}
			}},
		{"json", "openai:gpt-4o-mini", llm.Request{Messages: conversation(), Mode: llm.ModeJSON},
			func(t *testing.T, b map[string]any) {
				if rf := b["response_format"].(map[string]any); rf["type"] != "json_object" {
					t.Errorf("response_format = %v", rf)
				}
			}},
		{"strict", "openai:gpt-4o-mini", llm.Request{Messages: conversation(), Mode: llm.ModeStrict, Schema: sch, SchemaName: "invoice v2!"},
			func(t *testing.T, b map[string]any) {
				rf := b["response_format"].(map[string]any)
				js := rf["json_schema"].(map[string]any)
				if rf["type"] != "json_schema" || js["strict"] != true || js["name"] != "invoice_v2_" || js["schema"] == nil {
					t.Errorf("response_format = %v", rf)
				}
			}},
		{"tools strict", "openai:gpt-4o-mini", llm.Request{Messages: conversation(), Mode: llm.ModeTools, Schema: sch, SchemaName: "invoice"},
			func(t *testing.T, b map[string]any) {
				tools := b["tools"].([]any)
				fn := tools[0].(map[string]any)["function"].(map[string]any)
				if fn["name"] != "invoice" || fn["strict"] != true || fn["parameters"] == nil {
					t.Errorf("tool = %v", fn)
				}
				if _, has := fn["description"]; has {
					t.Error("the forced function needs no description (its parameters say what it takes); it would be paid for on every call")
				}
				tc := b["tool_choice"].(map[string]any)
				if tc["type"] != "function" || tc["function"].(map[string]any)["name"] != "invoice" {
					t.Errorf("tool_choice = %v", tc)
				}
			}},
		{"tools without strict (gpt-3.5)", "openai:gpt-3.5-turbo", llm.Request{Messages: conversation(), Mode: llm.ModeTools, Schema: sch},
			func(t *testing.T, b map[string]any) {
				fn := b["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
				if _, has := fn["strict"]; has || fn["name"] != "response" {
					t.Errorf("non-strict tool = %v", fn)
				}
			}},
		{"reasoning model omits temperature", "openai:o4-mini", llm.Request{Messages: conversation(), Mode: llm.ModeStrict, Schema: sch, Temperature: 0.7},
			func(t *testing.T, b map[string]any) {
				if _, has := b["temperature"]; has {
					t.Error("o-series models reject temperature; it must not be sent")
				}
			}},
		{"compatible server takes max_tokens", "groq:llama-3.1-8b-instant", llm.Request{Messages: conversation(), Mode: llm.ModeJSON, MaxTokens: 64},
			func(t *testing.T, b map[string]any) {
				if b["max_tokens"] != 64.0 || b["max_completion_tokens"] != nil {
					t.Errorf("max_tokens %v max_completion_tokens %v", b["max_tokens"], b["max_completion_tokens"])
				}
			}},
		{"auto resolves to strict", "openai:gpt-4.1", llm.Request{Messages: conversation(), Mode: llm.ModeAuto, Schema: sch},
			func(t *testing.T, b map[string]any) {
				if b["response_format"].(map[string]any)["type"] != "json_schema" {
					t.Errorf("auto on gpt-4.1 = %v", b["response_format"])
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, 200, nil, okBody)
			p := mustNew(t, tc.spec, env{}, WithBaseURL(srv.URL+"/v1"), WithAPIKey("sk-test-conformance-0001"))
			if _, err := p.Chat(context.Background(), tc.req); err != nil {
				t.Fatal(err)
			}
			got := srv.last(t)
			if got.Path != "/v1/chat/completions" || got.Method != "POST" {
				t.Fatalf("%s %s", got.Method, got.Path)
			}
			if got.Header.Get("Authorization") != "Bearer sk-test-conformance-0001" {
				t.Fatalf("Authorization header = %q", got.Header.Get("Authorization"))
			}
			vs, err := reqSchema.ValidateJSON(got.Body)
			if err != nil || vs != nil {
				t.Fatalf("request body violates CreateChatCompletionRequest: %v %+v\n%s", err, vs, got.Body)
			}
			body := srv.lastJSON(t)
			if body["model"] != p.Model() || body["stream"] != false || len(body["messages"].([]any)) != len(tc.req.Messages) {
				t.Fatalf("model/stream/messages wrong: %s", got.Body)
			}
			tc.check(t, body)
		})
	}
}

// TestOpenAIConformanceCheckCanFail shows the conformance check rejects a
// body the API would reject, so a passing check means something.
func TestOpenAIConformanceCheckCanFail(t *testing.T) {
	reqSchema := openAPIClosure(t, "CreateChatCompletionRequest.closure.json")
	for _, bad := range []string{
		`{"model":"m","messages":[]}`,
		`{"model":"m","messages":[{"role":"robot","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}`,
	} {
		vs, err := reqSchema.ValidateJSON([]byte(bad))
		if err != nil || len(vs) == 0 {
			t.Errorf("conformance check accepted %s", bad)
		}
	}
}

func TestOpenAIResponses(t *testing.T) {
	respSchema := openAPIClosure(t, "CreateChatCompletionResponse.closure.json")
	sch := testSchema(t)
	const head = `{"id":"chatcmpl-1","object":"chat.completion","created":1760000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1",`
	const usage = `"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`
	tests := []struct {
		name    string
		mode    llm.Mode
		body    string
		text    string
		refusal string
		finish  llm.FinishReason
	}{
		{"content", llm.ModeStrict,
			head + `"choices":[{"index":0,"message":{"role":"assistant","content":"{\"name\":\"ACME\"}","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` + usage,
			`{"name":"ACME"}`, "", llm.FinishStop},
		{"refusal", llm.ModeStrict,
			head + `"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I cannot help with that."},"logprobs":null,"finish_reason":"stop"}],` + usage,
			"", "I'm sorry, I cannot help with that.", llm.FinishRefusal},
		{"tool call", llm.ModeTools,
			head + `"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"response","arguments":"{\"name\":\"ACME\",\"total\":12.5,\"status\":\"paid\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` + usage,
			`{"name":"ACME","total":12.5,"status":"paid"}`, "", llm.FinishToolCall},
		{"tool call, other tool ignored", llm.ModeTools,
			head + `"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"other","arguments":"{}"}},{"id":"call_1","type":"function","function":{"name":"response","arguments":"{\"a\":1}"}}]},"logprobs":null,"finish_reason":"stop"}],` + usage,
			`{"a":1}`, "", llm.FinishStop},
		{"length", llm.ModeJSON,
			head + `"choices":[{"index":0,"message":{"role":"assistant","content":"{\"name\": \"AC","refusal":null},"logprobs":null,"finish_reason":"length"}],` + usage,
			`{"name": "AC`, "", llm.FinishLength},
		{"content filter", llm.ModeText,
			head + `"choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"}],` + usage,
			"", "", llm.FinishContentFilter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if vs, err := respSchema.ValidateJSON([]byte(tc.body)); err != nil || vs != nil {
				t.Fatalf("canned body is not a CreateChatCompletionResponse: %v %+v", err, vs)
			}
			srv := newCanned(t, 200, map[string]string{"x-ratelimit-remaining-requests": "9", "x-ratelimit-reset-requests": "6m0s"}, tc.body)
			p := mustNew(t, "openai:gpt-4o-mini", env{"OPENAI_API_KEY": "sk-x"}, WithBaseURL(srv.URL+"/v1"))
			resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: tc.mode, Schema: sch})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text || resp.Refusal != tc.refusal || resp.FinishReason != tc.finish {
				t.Fatalf("got text %q refusal %q finish %s; want %q %q %s", resp.Text, resp.Refusal, resp.FinishReason, tc.text, tc.refusal, tc.finish)
			}
			if resp.Usage != (llm.Usage{PromptTokens: 120, CompletionTokens: 30}) || resp.Model != "gpt-4o-mini-2024-07-18" {
				t.Fatalf("usage %+v model %q", resp.Usage, resp.Model)
			}
			if string(resp.Raw) != tc.body {
				t.Fatal("Raw is not the body as received")
			}
			if !resp.RateLimit.HasRequests || resp.RateLimit.RemainingRequests != 9 || resp.RateLimit.ResetRequests != 6*time.Minute {
				t.Fatalf("rate limit %+v", resp.RateLimit)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		hdr     map[string]string
		body    string
		class   llm.ErrorClass
		typ     string
		message string
		retry   time.Duration
	}{
		{"rate limited", 429, map[string]string{"Retry-After": "3", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20ms"},
			`{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, llm.ClassRateLimited, "rate_limit_exceeded", "Rate limit reached", 3 * time.Second},
		{"quota", 429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, llm.ClassQuota, "insufficient_quota", "You exceeded your current quota", 0},
		{"context length", 400, nil, `{"error":{"message":"maximum context length is 128000 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, llm.ClassContextLength, "context_length_exceeded", "maximum context length is 128000 tokens", 0},
		{"unknown model", 404, nil, `{"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, llm.ClassNotFound, "model_not_found", "The model 'gpt-9' does not exist", 0},
		{"server", 500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, llm.ClassServer, "server_error", "The server had an error while processing your request.", 0},
		{"upstream error in a 200", 200, nil, `{"error":{"code":502,"message":"Provider returned error"}}`, llm.ClassServer, "", "Provider returned error", 0},
		{"bad json", 200, nil, `{"choices": [`, llm.ClassBadResponse, "", "", 0},
		{"no choices", 200, nil, `{"id":"x","choices":[]}`, llm.ClassBadResponse, "", "the chat completion has no choices", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, tc.status, tc.hdr, tc.body)
			p := mustNew(t, "openai:gpt-4o-mini", env{"OPENAI_API_KEY": "sk-x"}, WithBaseURL(srv.URL+"/v1"))
			_, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeJSON})
			var pe *llm.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not *Error", err)
			}
			if pe.Class != tc.class || pe.Type != tc.typ || (tc.message != "" && pe.Message != tc.message) || pe.RateLimit.RetryAfter != tc.retry {
				t.Fatalf("got %+v", pe)
			}
			if pe.Status != tc.status || pe.Provider != "openai:gpt-4o-mini" || string(pe.Raw) != tc.body {
				t.Fatalf("status %d provider %q raw %q", pe.Status, pe.Provider, pe.Raw)
			}
			if !strings.Contains(err.Error(), string(tc.class)) {
				t.Fatalf("Error() = %q does not name the class", err)
			}
		})
	}
}

func TestModeChecks(t *testing.T) {
	sch := testSchema(t)
	srv := newCanned(t, 200, nil, `{}`)
	tests := []struct {
		name string
		spec string
		req  llm.Request
		want string
	}{
		{"no messages", "openai:gpt-4o", llm.Request{Mode: llm.ModeText}, "no messages"},
		{"strict without schema", "openai:gpt-4o", llm.Request{Messages: conversation(), Mode: llm.ModeStrict}, "needs a schema"},
		{"unsupported mode", "openai:gpt-3.5-turbo", llm.Request{Messages: conversation(), Mode: llm.ModeStrict, Schema: sch}, "not supported"},
		{"json on anthropic", "anthropic:claude-haiku-4-5", llm.Request{Messages: conversation(), Mode: llm.ModeJSON}, "not supported"},
		{"only system on anthropic", "anthropic:claude-haiku-4-5", llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "x"}}, Mode: llm.ModeText}, "user turn"},
		{"only system on gemini", "gemini:gemini-2.5-flash", llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "x"}}, Mode: llm.ModeText}, "user turn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.spec, env{}, WithBaseURL(srv.URL))
			_, err := p.Chat(context.Background(), tc.req)
			var pe *llm.Error
			if !errors.As(err, &pe) || pe.Class != llm.ClassInvalidRequest || pe.Retryable() || !strings.Contains(pe.Message, tc.want) {
				t.Fatalf("got %v, want a fatal invalid_request mentioning %q", err, tc.want)
			}
		})
	}
	if n := srv.count(); n != 0 {
		t.Fatalf("%d requests reached the server; local checks must not call the API", n)
	}
}
