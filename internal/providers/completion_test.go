package providers

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/extractq/extractq/llm"
)

func TestCompleteRequestBodies(t *testing.T) {
	t.Parallel()
	req := llm.CompletionRequest{
		Instructions: "Extract.\n<document-0123456789abcdef>Invoice ACME</document-0123456789abcdef>\nJSON:\n",
		Prefix:       `{"name":`, Stop: []string{",", "}", "\n"}, MaxTokens: 16, Temperature: 0.2,
	}
	cases := []struct {
		name, spec, base, path, reply string
		want                          map[string]any
		text                          string
		usage                         llm.Usage
		finish                        llm.FinishReason
	}{
		{"vllm /v1/completions", "vllm:qwen2.5-0.5b", "/v1", "/v1/completions",
			`{"model":"qwen2.5-0.5b","choices":[{"text":" \"ACME\"","finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":3}}`,
			map[string]any{"model": "qwen2.5-0.5b", "prompt": req.Instructions + req.Prefix, "stop": []any{",", "}", "\n"}, "max_tokens": 16.0, "temperature": 0.2, "stream": false},
			` "ACME"`, llm.Usage{PromptTokens: 40, CompletionTokens: 3}, llm.FinishStop},
		{"llama.cpp server", "llamacpp:phi", "/v1", "/v1/completions",
			`{"choices":[{"text":"12","finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":16}}`,
			map[string]any{"model": "phi", "prompt": req.Instructions + req.Prefix, "stop": []any{",", "}", "\n"}, "max_tokens": 16.0, "temperature": 0.2, "stream": false},
			"12", llm.Usage{PromptTokens: 9, CompletionTokens: 16}, llm.FinishLength},
		{"ollama raw /api/generate", "ollama:llama3.2:1b", "", "/api/generate",
			`{"model":"llama3.2:1b","response":"\"ACME\"","done":true,"done_reason":"stop","prompt_eval_count":30,"eval_count":2}`,
			map[string]any{"model": "llama3.2:1b", "prompt": req.Instructions + req.Prefix, "raw": true, "stream": false,
				"options": map[string]any{"temperature": 0.2, "num_predict": 16.0, "stop": []any{",", "}", "\n"}}},
			`"ACME"`, llm.Usage{PromptTokens: 30, CompletionTokens: 2}, llm.FinishStop},
		{"anthropic prefilled assistant turn", "anthropic:claude-haiku-4-5", "", "/v1/messages",
			`{"type":"message","model":"claude-haiku-4-5","content":[{"type":"text","text":" \"ACME\""}],"stop_reason":"stop_sequence","usage":{"input_tokens":50,"output_tokens":3}}`,
			map[string]any{"model": "claude-haiku-4-5", "max_tokens": 16.0, "temperature": 0.2,
				"stop_sequences": []any{",", "}"}, // "\n" alone is refused by the API
				"messages": []any{
					map[string]any{"role": "user", "content": req.Instructions},
					map[string]any{"role": "assistant", "content": `{"name":`},
				}},
			` "ACME"`, llm.Usage{PromptTokens: 50, CompletionTokens: 3}, llm.FinishStop},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCanned(t, 200, nil, tc.reply)
			p := mustNew(t, tc.spec, env{}, WithBaseURL(srv.URL+tc.base), WithAPIKey("k-test"))
			if !llm.CanPrefill(p) {
				t.Fatalf("%s does not advertise prefill: %v", tc.spec, p.Capabilities().Modes)
			}
			resp, err := p.(llm.Completer).Complete(t.Context(), req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got := srv.last(t).Path; got != tc.path {
				t.Errorf("path %s, want %s", got, tc.path)
			}
			if got := srv.lastJSON(t); !reflect.DeepEqual(got, tc.want) {
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(tc.want)
				t.Errorf("body\n%s\nwant\n%s", gb, wb)
			}
			if resp.Text != tc.text || resp.Usage != tc.usage || resp.FinishReason != tc.finish {
				t.Errorf("response %q %+v %s, want %q %+v %s", resp.Text, resp.Usage, resp.FinishReason, tc.text, tc.usage, tc.finish)
			}
		})
	}
}

func TestCompleteRefusedWithoutCapability(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"openai:gpt-4o-mini", "groq:llama-3.1-8b-instant"} {
		srv := newCanned(t, 200, nil, `{}`)
		p := mustNew(t, spec, env{}, WithBaseURL(srv.URL+"/v1"), WithAPIKey("k"))
		if llm.CanPrefill(p) {
			t.Errorf("%s advertises prefill", spec)
		}
		_, err := p.(llm.Completer).Complete(t.Context(), llm.CompletionRequest{Instructions: "x"})
		var pe *llm.Error
		if !errors.As(err, &pe) || pe.Class != llm.ClassInvalidRequest || srv.count() != 0 {
			t.Errorf("%s: err %v after %d requests, want a local invalid_request", spec, err, srv.count())
		}
	}
}

func TestCompleteErrorsClassified(t *testing.T) {
	t.Parallel()
	srv := newCanned(t, 429, map[string]string{"Retry-After": "2"}, `{"error":{"message":"slow down","type":"rate_limit"}}`)
	p := mustNew(t, "vllm:m", env{}, WithBaseURL(srv.URL+"/v1"))
	_, err := p.(llm.Completer).Complete(t.Context(), llm.CompletionRequest{Instructions: "x", Prefix: "{"})
	var pe *llm.Error
	if !errors.As(err, &pe) || pe.Class != llm.ClassRateLimited || pe.RateLimit.RetryAfter == 0 {
		t.Fatalf("err %v, want rate_limited with Retry-After", err)
	}
}
