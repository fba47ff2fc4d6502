package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// reply is a finished answer with what every API's envelope needs.
type reply struct {
	req              *chatRequest
	ans              *answer
	promptTokens     int
	completionTokens int
	// cache is the part of promptTokens the prompt cache served or stored.
	cache cacheUse
	id    uint64 // seeds the response and tool-call ids
	now   time.Time
}

// OpenAI chat completion.

type openAIResponse struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openAIChoice `json:"choices"`
	Usage             openAIUsage    `json:"usage"`
	SystemFingerprint string         `json:"system_fingerprint"`
	ServiceTier       string         `json:"service_tier"`
}

type openAIChoice struct {
	Index        int           `json:"index"`
	Message      openAIMessage `json:"message"`
	Logprobs     *struct{}     `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type openAIMessage struct {
	Role        string           `json:"role"`
	Content     *string          `json:"content"`
	Refusal     *string          `json:"refusal"`
	ToolCalls   []openAIToolCall `json:"tool_calls,omitempty"`
	Annotations []struct{}       `json:"annotations"`
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openAIUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func openAIBody(r *reply) any {
	msg := openAIMessage{Role: "assistant", Annotations: []struct{}{}}
	finish := "stop"
	switch {
	case r.ans.refusal != "":
		msg.Refusal = &r.ans.refusal
	case r.req.tool != "":
		tc := openAIToolCall{ID: fmt.Sprintf("call_%016x", r.id), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = r.req.tool, r.ans.text
		msg.ToolCalls = []openAIToolCall{tc}
		finish = "tool_calls"
	default:
		msg.Content = &r.ans.text
	}
	if r.ans.truncated {
		finish = "length"
	}
	return &openAIResponse{
		ID: fmt.Sprintf("chatcmpl-sim%016x", r.id), Object: "chat.completion", Created: r.now.Unix(),
		Model:             r.req.model,
		Choices:           []openAIChoice{{Message: msg, FinishReason: finish}},
		Usage:             openAIUsageOf(r),
		SystemFingerprint: "fp_extractq_sim", ServiceTier: "default",
	}
}

func openAIUsageOf(r *reply) openAIUsage {
	u := openAIUsage{PromptTokens: r.promptTokens, CompletionTokens: r.completionTokens, TotalTokens: r.promptTokens + r.completionTokens}
	u.PromptTokensDetails.CachedTokens = r.cache.read
	return u
}

// Anthropic message.

type anthropicResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	} `json:"usage"`
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

func anthropicBody(r *reply) any {
	resp := &anthropicResponse{ID: fmt.Sprintf("msg_sim%016x", r.id), Type: "message", Role: "assistant", Model: r.req.model}
	// input_tokens is only what the cache neither served nor stored.
	resp.Usage.InputTokens, resp.Usage.OutputTokens = r.promptTokens-r.cache.read-r.cache.created, r.completionTokens
	resp.Usage.CacheReadInputTokens, resp.Usage.CacheCreationInputTokens = r.cache.read, r.cache.created
	resp.StopReason = "end_turn"
	if r.req.tool != "" {
		input := json.RawMessage(r.ans.text)
		if r.ans.truncated || !json.Valid(input) {
			input = json.RawMessage("{}") // a cut-off tool call arrives with what parsed: nothing
		}
		resp.Content = []anthropicBlock{{Type: "tool_use", ID: fmt.Sprintf("toolu_sim%016x", r.id), Name: r.req.tool, Input: input}}
		resp.StopReason = "tool_use"
	} else {
		resp.Content = []anthropicBlock{{Type: "text", Text: &r.ans.text}}
	}
	if r.ans.truncated {
		resp.StopReason = "max_tokens"
	}
	return resp
}

// Ollama chat.

type ollamaResponse struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Message   struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Done               bool   `json:"done"`
	DoneReason         string `json:"done_reason,omitempty"`
	TotalDuration      int64  `json:"total_duration,omitempty"`
	PromptEvalCount    int    `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64  `json:"prompt_eval_duration,omitempty"`
	EvalCount          int    `json:"eval_count,omitempty"`
	EvalDuration       int64  `json:"eval_duration,omitempty"`
}

// ollamaBody is one object, or for a streamed answer the content chunk and
// the final "done" object, each on its own line.
func ollamaBody(r *reply, took time.Duration) []any {
	final := &ollamaResponse{Model: r.req.model, CreatedAt: r.now.UTC().Format(time.RFC3339Nano), Done: true, DoneReason: "stop",
		TotalDuration: int64(took), PromptEvalCount: r.promptTokens, EvalCount: r.completionTokens, EvalDuration: int64(took)}
	final.Message.Role = "assistant"
	if r.ans.truncated {
		final.DoneReason = "length"
	}
	if !r.req.stream {
		final.Message.Content = r.ans.text
		return []any{final}
	}
	chunk := &ollamaResponse{Model: r.req.model, CreatedAt: final.CreatedAt}
	chunk.Message.Role, chunk.Message.Content = "assistant", r.ans.text
	return []any{chunk, final}
}

// Gemini generateContent.

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

type geminiCandidate struct {
	Content struct {
		Parts []geminiReqPart `json:"parts"`
		Role  string          `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason"`
	Index        int    `json:"index"`
}

func geminiBody(r *reply) any {
	c := geminiCandidate{FinishReason: "STOP"}
	c.Content.Parts, c.Content.Role = []geminiReqPart{{Text: r.ans.text}}, "model"
	if r.ans.truncated {
		c.FinishReason = "MAX_TOKENS"
	}
	resp := &geminiResponse{Candidates: []geminiCandidate{c}, ModelVersion: r.req.model, ResponseID: fmt.Sprintf("sim%016x", r.id)}
	u := &resp.UsageMetadata
	u.PromptTokenCount, u.CandidatesTokenCount, u.TotalTokenCount = r.promptTokens, r.completionTokens, r.promptTokens+r.completionTokens
	u.CachedContentTokenCount = r.cache.read
	return resp
}

// Errors, in each API's shape.

// httpStatus is the status an error kind gets from API a.
func (e *apiError) httpStatus(a api) int {
	if e.kind == errOverloaded && a != apiAnthropic {
		return 503 // only Anthropic has 529
	}
	return e.status
}

func errorBody(a api, e *apiError, retryAfter time.Duration) any {
	switch a {
	case apiAnthropic:
		typ := [...]string{
			errInvalid: "invalid_request_error", errNotFound: "not_found_error", errMethod: "invalid_request_error",
			errTooLarge: "request_too_large", errRateLimit: "rate_limit_error", errServer: "api_error",
			errUnavailable: "api_error", errOverloaded: "overloaded_error", errTimeout: "timeout_error",
		}[e.kind]
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": e.msg}}
	case apiOllama:
		return map[string]any{"error": e.msg}
	case apiGemini:
		status := [...]string{
			errInvalid: "INVALID_ARGUMENT", errNotFound: "NOT_FOUND", errMethod: "UNIMPLEMENTED",
			errTooLarge: "INVALID_ARGUMENT", errRateLimit: "RESOURCE_EXHAUSTED", errServer: "INTERNAL",
			errUnavailable: "UNAVAILABLE", errOverloaded: "UNAVAILABLE", errTimeout: "DEADLINE_EXCEEDED",
		}[e.kind]
		body := map[string]any{"code": e.httpStatus(a), "message": e.msg, "status": status}
		if e.kind == errRateLimit {
			body["details"] = []any{map[string]any{
				"@type":      "type.googleapis.com/google.rpc.RetryInfo",
				"retryDelay": strconv.FormatFloat(retryAfter.Seconds(), 'f', -1, 64) + "s",
			}}
		}
		return map[string]any{"error": body}
	}
	typ, code := "invalid_request_error", any(nil)
	switch e.kind {
	case errRateLimit:
		typ, code = e.scope, "rate_limit_exceeded"
	case errServer, errUnavailable, errOverloaded, errTimeout:
		typ = "server_error"
	case errNotFound:
		code = "unknown_url"
	}
	if e.code != "" {
		code = e.code
	}
	param := any(nil)
	if e.param != "" {
		param = e.param
	}
	body := map[string]any{"message": e.msg, "type": typ, "param": param, "code": code}
	if e.code == "tool_use_failed" {
		body["failed_generation"] = e.failedGeneration
	}
	return map[string]any{"error": body}
}

// marshal encodes values one per line without HTML escaping.
func marshal(b *bytes.Buffer, vs ...any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
