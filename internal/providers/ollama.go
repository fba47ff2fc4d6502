package providers

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// ollamaProvider speaks Ollama's native chat API (POST {base}/api/chat,
// stream false). ModeStrict sets format to the JSON Schema, which Ollama
// enforces by constrained decoding; ModeJSON sets format to "json".
type ollamaProvider struct {
	base
}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Stream   bool            `json:"stream"`
	Format   json.RawMessage `json:"format,omitempty"`
	Options  ollamaOptions   `json:"options"`
}

type ollamaOptions struct {
	Temperature float64  `json:"temperature"`
	NumPredict  int      `json:"num_predict,omitempty"`
	Stop        []string `json:"stop,omitempty"`
}

type ollamaResponse struct {
	Model   string `json:"model"`
	Message struct {
		Content string `json:"content"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	EvalCount       int    `json:"eval_count"`
}

// Chat performs one /api/chat call.
func (p *ollamaProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	mode, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	body := &ollamaRequest{
		Model: p.model, Messages: ollamaMessages(req.Messages),
		Options: ollamaOptions{Temperature: req.Temperature, NumPredict: req.MaxTokens, Stop: req.Stop},
	}
	switch mode {
	case llm.ModeJSON:
		body.Format = json.RawMessage(`"json"`)
	case llm.ModeStrict:
		form, err := req.Schema.ProviderForm(schema.FormOllama)
		if err != nil {
			return nil, p.formError(err, llm.ModeJSON)
		}
		body.Format = form
	}
	hdr := http.Header{}
	if p.apiKey != "" { // Ollama itself needs none; an authenticating proxy may
		hdr.Set("Authorization", "Bearer "+p.apiKey)
	}
	r, err := p.post(ctx, req, p.baseURL+"/api/chat", hdr, body)
	if err != nil {
		return nil, err
	}
	var doc ollamaResponse
	if err := json.Unmarshal(r.body, &doc); err != nil {
		return nil, p.badResponse(r, "the answer is not an /api/chat response", err)
	}
	if !doc.Done {
		return nil, p.badResponse(r, "the /api/chat response is not done (was it streamed?)", nil)
	}
	out := &llm.Response{
		Text:      doc.Message.Content,
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
