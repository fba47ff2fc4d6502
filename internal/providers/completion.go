package providers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/extractq/extractq/llm"
)

// This file holds the adapters' llm.Completer side: continuing a prefix
// for llm.ModePrefill. Capabilities list ModePrefill only for the families
// whose servers have a completion endpoint (vLLM, LM Studio, llama.cpp,
// Ollama) or an assistant prefill (Anthropic).

// checkCompletion refuses a request a completion endpoint cannot take.
func (b *base) checkCompletion(req llm.CompletionRequest) error {
	if !b.caps.Supports(llm.ModePrefill) {
		return b.localError("mode prefill is not supported by " + b.name + ": it needs a completion endpoint (vllm, lmstudio, llamacpp, ollama) or anthropic; use another mode")
	}
	if req.Instructions == "" && req.Prefix == "" {
		return b.localError("the completion request has no prompt")
	}
	return nil
}

// oaiCompletionRequest is the body of POST {base}/completions, the
// OpenAI-compatible legacy completions API that vLLM, LM Studio and
// llama.cpp's server keep for raw prompts.
type oaiCompletionRequest struct {
	Model       string   `json:"model"`
	Prompt      string   `json:"prompt"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature float64  `json:"temperature"`
	Stop        []string `json:"stop,omitempty"`
	Stream      bool     `json:"stream"`
}

type oaiCompletionResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Complete continues Instructions+Prefix with /completions.
func (p *openAIProvider) Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Response, error) {
	if err := p.checkCompletion(req); err != nil {
		return nil, err
	}
	body := &oaiCompletionRequest{Model: p.model, Prompt: req.Instructions + req.Prefix, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stop: req.Stop}
	hdr := http.Header{}
	if p.apiKey != "" {
		hdr.Set("Authorization", "Bearer "+p.apiKey)
	}
	r, err := p.post(ctx, llm.Request{Timeout: req.Timeout}, p.baseURL+"/completions", hdr, body)
	if err != nil {
		return nil, err
	}
	var doc oaiCompletionResponse
	if err := json.Unmarshal(r.body, &doc); err != nil {
		return nil, p.badResponse(r, "the answer is not a completion", err)
	}
	if len(doc.Choices) == 0 {
		return nil, p.badResponse(r, "the completion has no choices", nil)
	}
	return &llm.Response{
		Text:         doc.Choices[0].Text,
		FinishReason: openAIFinish(doc.Choices[0].FinishReason),
		Usage:        llm.Usage{PromptTokens: doc.Usage.PromptTokens, CompletionTokens: doc.Usage.CompletionTokens},
		RateLimit:    r.rateLimit,
		Raw:          r.body,
		Model:        doc.Model,
	}, nil
}

// ollamaGenerateRequest is the body of POST {base}/api/generate with raw
// true: the prompt is sent as is, without the model's chat template, so
// the model continues the prefix.
type ollamaGenerateRequest struct {
	Model   string        `json:"model"`
	Prompt  string        `json:"prompt"`
	Raw     bool          `json:"raw"`
	Stream  bool          `json:"stream"`
	Options ollamaOptions `json:"options"`
}

type ollamaGenerateResponse struct {
	Model           string `json:"model"`
	Response        string `json:"response"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	EvalCount       int    `json:"eval_count"`
}

// Complete continues Instructions+Prefix with a raw /api/generate call.
func (p *ollamaProvider) Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Response, error) {
	if err := p.checkCompletion(req); err != nil {
		return nil, err
	}
	body := &ollamaGenerateRequest{
		Model: p.model, Prompt: req.Instructions + req.Prefix, Raw: true,
		Options: ollamaOptions{Temperature: req.Temperature, NumPredict: req.MaxTokens, Stop: req.Stop},
	}
	hdr := http.Header{}
	if p.apiKey != "" {
		hdr.Set("Authorization", "Bearer "+p.apiKey)
	}
	r, err := p.post(ctx, llm.Request{Timeout: req.Timeout}, p.baseURL+"/api/generate", hdr, body)
	if err != nil {
		return nil, err
	}
	var doc ollamaGenerateResponse
	if err := json.Unmarshal(r.body, &doc); err != nil {
		return nil, p.badResponse(r, "the answer is not an /api/generate response", err)
	}
	if !doc.Done {
		return nil, p.badResponse(r, "the /api/generate response is not done (was it streamed?)", nil)
	}
	out := &llm.Response{
		Text:      doc.Response,
		Usage:     llm.Usage{PromptTokens: doc.PromptEvalCount, CompletionTokens: doc.EvalCount},
		RateLimit: r.rateLimit,
		Raw:       r.body,
		Model:     doc.Model,
	}
	switch doc.DoneReason {
	case "stop", "":
		out.FinishReason = llm.FinishStop
	case "length":
		out.FinishReason = llm.FinishLength
	default:
		out.FinishReason = llm.FinishOther
	}
	return out, nil
}

// Complete continues the prefix with a prefilled assistant turn: the
// instructions are the user turn and the prefix starts the assistant's
// answer. The Messages API rejects a prefill ending in whitespace and stop
// sequences of whitespace only, so both are dropped (the engine cuts the
// answer at its stops itself).
func (p *anthropicProvider) Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Response, error) {
	if err := p.checkCompletion(req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Instructions) == "" {
		return nil, p.localError("the completion request has no instructions; the Messages API needs a user turn")
	}
	var stops []string
	for _, s := range req.Stop {
		if strings.TrimSpace(s) != "" {
			stops = append(stops, s)
		}
	}
	body := &antRequest{
		Model: p.model, MaxTokens: req.MaxTokens, Temperature: p.temperature(req.Temperature, p.learn.current(ctx)), StopSequences: stops,
		Messages: []wireMessage{{Role: llm.RoleUser, Content: req.Instructions}},
	}
	if prefix := strings.TrimRight(req.Prefix, " \t\r\n"); prefix != "" {
		body.Messages = append(body.Messages, wireMessage{Role: llm.RoleAssistant, Content: prefix})
	}
	if body.MaxTokens <= 0 {
		body.MaxTokens = anthropicDefaultMaxTokens
	}
	r, err := p.post(ctx, llm.Request{Timeout: req.Timeout}, p.baseURL+"/v1/messages", p.headers(), body)
	if err != nil {
		return nil, err
	}
	return p.parseResponse(r, body, false)
}
