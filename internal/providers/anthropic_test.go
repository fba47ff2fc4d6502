package providers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

func TestAnthropicRequests(t *testing.T) {
	sch := testSchema(t)
	okBody := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"{}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":2}}`
	tests := []struct {
		name  string
		model string
		req   llm.Request
		check func(t *testing.T, b map[string]any)
	}{
		{"text", "claude-haiku-4-5", llm.Request{Messages: conversation(), Mode: llm.ModeText, Temperature: 0.3, Stop: []string{"END"}},
			func(t *testing.T, b map[string]any) {
				if b["max_tokens"] != float64(anthropicDefaultMaxTokens) {
					t.Errorf("max_tokens = %v; the API requires it, a default must be sent", b["max_tokens"])
				}
				if b["temperature"] != 0.3 || b["stop_sequences"].([]any)[0] != "END" {
					t.Errorf("temperature %v stop %v", b["temperature"], b["stop_sequences"])
				}
				if b["tools"] != nil || b["output_config"] != nil {
					t.Error("text mode sends neither tools nor output_config")
				}
			}},
		{"tools", "claude-3-5-haiku-latest", llm.Request{Messages: conversation(), Mode: llm.ModeTools, Schema: sch, SchemaName: "invoice", MaxTokens: 800},
			func(t *testing.T, b map[string]any) {
				tool := b["tools"].([]any)[0].(map[string]any)
				if tool["name"] != "invoice" || tool["input_schema"] == nil {
					t.Errorf("tool = %v", tool)
				}
				if _, has := tool["description"]; has {
					t.Error("the forced tool needs no description (the input schema says what it takes); it would be paid for on every call")
				}
				if _, has := tool["strict"]; has {
					t.Error("claude-3-5-haiku has no strict tool use")
				}
				tc := b["tool_choice"].(map[string]any)
				if tc["type"] != "tool" || tc["name"] != "invoice" {
					t.Errorf("tool_choice = %v", tc)
				}
				if b["max_tokens"] != 800.0 {
					t.Errorf("max_tokens = %v", b["max_tokens"])
				}
			}},
		{"strict tools", "claude-haiku-4-5", llm.Request{Messages: conversation(), Mode: llm.ModeTools, Schema: sch},
			func(t *testing.T, b map[string]any) {
				if tool := b["tools"].([]any)[0].(map[string]any); tool["strict"] != true {
					t.Errorf("claude-haiku-4-5 supports strict tool use: %v", tool)
				}
			}},
		{"native structured output", "claude-haiku-4-5", llm.Request{Messages: conversation(), Mode: llm.ModeStrict, Schema: sch},
			func(t *testing.T, b map[string]any) {
				f := b["output_config"].(map[string]any)["format"].(map[string]any)
				if f["type"] != "json_schema" || f["schema"] == nil {
					t.Errorf("output_config.format = %v", f)
				}
				if b["tools"] != nil {
					t.Error("strict mode must not force a tool")
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, 200, nil, okBody)
			p := mustNew(t, "anthropic:"+tc.model, env{"ANTHROPIC_API_KEY": "sk-ant-test-000111"}, WithBaseURL(srv.URL))
			if _, err := p.Chat(context.Background(), tc.req); err != nil {
				t.Fatal(err)
			}
			got := srv.last(t)
			if got.Path != "/v1/messages" || got.Header.Get("x-api-key") != "sk-ant-test-000111" || got.Header.Get("anthropic-version") != anthropicVersion {
				t.Fatalf("path %s x-api-key %q version %q", got.Path, got.Header.Get("x-api-key"), got.Header.Get("anthropic-version"))
			}
			if got.Header.Get("Authorization") != "" {
				t.Fatal("Anthropic takes x-api-key, not Authorization")
			}
			b := srv.lastJSON(t)
			sys, _ := b["system"].([]any)
			if len(sys) != 1 || sys[0].(map[string]any)["text"] != "You extract data as JSON." ||
				sys[0].(map[string]any)["cache_control"].(map[string]any)["type"] != "ephemeral" || b["model"] != tc.model {
				t.Fatalf("system %v model %v", b["system"], b["model"])
			}
			msgs := b["messages"].([]any)
			if len(msgs) != 3 {
				t.Fatalf("messages: %d, want the 3 non-system turns", len(msgs))
			}
			for _, m := range msgs {
				if r := m.(map[string]any)["role"]; r != "user" && r != "assistant" {
					t.Fatalf("role %v in messages", r)
				}
			}
			tc.check(t, b)
		})
	}
}

func TestAnthropicResponses(t *testing.T) {
	sch := testSchema(t)
	const usage = `"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":40}`
	tests := []struct {
		name    string
		mode    llm.Mode
		body    string
		text    string
		refusal string
		finish  llm.FinishReason
	}{
		{"text", llm.ModeText,
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"{\"name\":"},{"type":"text","text":"\"ACME\"}"}],"stop_reason":"end_turn","stop_sequence":null,` + usage + `}`,
			`{"name":"ACME"}`, "", llm.FinishStop},
		{"tool use", llm.ModeTools,
			`{"id":"msg_2","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"Here it is."},{"type":"tool_use","id":"toolu_1","name":"response","input":{"name":"ACME","total":12.5,"status":"paid"}}],"stop_reason":"tool_use","stop_sequence":null,` + usage + `}`,
			`{"name":"ACME","total":12.5,"status":"paid"}`, "", llm.FinishToolCall},
		{"max tokens", llm.ModeStrict,
			`{"id":"msg_3","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"{\"name\":\"AC"}],"stop_reason":"max_tokens","stop_sequence":null,` + usage + `}`,
			`{"name":"AC`, "", llm.FinishLength},
		{"refusal", llm.ModeText,
			`{"id":"msg_4","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal","stop_sequence":null,` + usage + `}`,
			"I can't help with that.", "I can't help with that.", llm.FinishRefusal},
		{"stop sequence", llm.ModeText,
			`{"id":"msg_5","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"{}"}],"stop_reason":"stop_sequence","stop_sequence":"END",` + usage + `}`,
			`{}`, "", llm.FinishStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, 200, map[string]string{
				"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
				"anthropic-ratelimit-requests-reset": time.Now().Add(time.Minute).UTC().Format(time.RFC3339),
			}, tc.body)
			p := mustNew(t, "anthropic:claude-haiku-4-5", env{"ANTHROPIC_API_KEY": "k-123456"}, WithBaseURL(srv.URL))
			resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: tc.mode, Schema: sch})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text || resp.Refusal != tc.refusal || resp.FinishReason != tc.finish {
				t.Fatalf("got text %q refusal %q finish %s", resp.Text, resp.Refusal, resp.FinishReason)
			}
			if resp.Usage != (llm.Usage{PromptTokens: 125, CompletionTokens: 40, CachedPromptTokens: 5, CacheCreationTokens: 20}) || resp.Model != "claude-haiku-4-5-20251001" {
				t.Fatalf("usage %+v (cache reads and writes count as prompt) model %q", resp.Usage, resp.Model)
			}
			rl := resp.RateLimit
			if !rl.HasRequests || rl.LimitRequests != 50 || rl.RemainingRequests != 49 || rl.ResetRequests <= 50*time.Second || rl.ResetRequests > time.Minute {
				t.Fatalf("rate limit %+v", rl)
			}
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		hdr    map[string]string
		body   string
		class  llm.ErrorClass
		typ    string
		msg    string
		retry  time.Duration
	}{
		{"overloaded 529", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, llm.ClassOverloaded, "overloaded_error", "Overloaded", 0},
		{"rate limit", 429, map[string]string{"retry-after": "12"}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, llm.ClassRateLimited, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", 12 * time.Second},
		{"auth", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, llm.ClassAuth, "authentication_error", "invalid x-api-key (check the API key in ANTHROPIC_API_KEY)", 0},
		{"not found", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`, llm.ClassNotFound, "not_found_error", "model: claude-9", 0},
		{"too large", 413, nil, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`, llm.ClassTooLarge, "request_too_large", "Request exceeds the maximum size", 0},
		{"api error", 500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, llm.ClassServer, "api_error", "Internal server error", 0},
		{"not a message", 200, nil, `{"type":"completion"}`, llm.ClassBadResponse, "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCanned(t, tc.status, tc.hdr, tc.body)
			p := mustNew(t, "anthropic:claude-haiku-4-5", env{"ANTHROPIC_API_KEY": "k-123456"}, WithBaseURL(srv.URL))
			_, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
			var pe *llm.Error
			if !errors.As(err, &pe) || pe.Class != tc.class || pe.Type != tc.typ || (tc.msg != "" && pe.Message != tc.msg) || pe.RateLimit.RetryAfter != tc.retry {
				t.Fatalf("got %+v", err)
			}
			if want := tc.class.Retryable(); llm.IsRetryable(err) != want {
				t.Fatalf("IsRetryable = %v, want %v", !want, want)
			}
		})
	}
}
