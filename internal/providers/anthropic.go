package providers

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// anthropicVersion is the Messages API version header every call sends.
const anthropicVersion = "2023-06-01"

// anthropicDefaultMaxTokens fills max_tokens, which the Messages API
// requires, when the request leaves it to the provider.
const anthropicDefaultMaxTokens = 4096

// anthropicProvider speaks the Anthropic Messages API (POST {base}/v1/messages).
// ModeTools forces a tool call (tool_choice {"type":"tool"}) on the models
// that accept it, else lets the model choose (tool_choice auto); ModeStrict
// uses native structured output (output_config.format, json_schema), which
// Claude 4.5 models and later support. What each generation accepts is in
// form (claudeFormFor).
type anthropicProvider struct {
	base
	form claudeForm
}

type antRequest struct {
	Model         string           `json:"model"`
	MaxTokens     int              `json:"max_tokens"`
	System        []antBlock       `json:"system,omitempty"`
	Messages      []wireMessage    `json:"messages"`
	Temperature   *float64         `json:"temperature,omitempty"`
	StopSequences []string         `json:"stop_sequences,omitempty"`
	Tools         []antTool        `json:"tools,omitempty"`
	ToolChoice    *antToolChoice   `json:"tool_choice,omitempty"`
	OutputConfig  *antOutputConfig `json:"output_config,omitempty"`
}

// antBlock is a text content block (the system prompt is sent as one).
type antBlock struct {
	Type         string           `json:"type"` // "text"
	Text         string           `json:"text"`
	CacheControl *antCacheControl `json:"cache_control,omitempty"`
}

// antCacheControl marks the end of a prefix to cache. Anthropic caches
// only marked prefixes (of at least 1,024 tokens on most models; shorter
// ones are sent uncached without error); a cache read is billed at a tenth
// of the input price, a write at 1.25 times it.
type antCacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

var ephemeral = &antCacheControl{Type: "ephemeral"}

type antTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
	// Strict asks for strict tool use (input validated against the
	// schema), on the models that support structured outputs.
	Strict       bool             `json:"strict,omitempty"`
	CacheControl *antCacheControl `json:"cache_control,omitempty"`
}

type antToolChoice struct {
	Type string `json:"type"` // "tool" or "auto"
	Name string `json:"name,omitempty"`
}

type antOutputConfig struct {
	Format antFormat `json:"format"`
}

type antFormat struct {
	Type   string          `json:"type"` // "json_schema"
	Schema json.RawMessage `json:"schema"`
}

type antResponse struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// Chat performs one Messages call. A 400 that names a part of the request
// the model refuses is learned from and the call sent again without it
// (sendLearning).
func (p *anthropicProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	return p.sendLearning(ctx, func(adj adjustments) (*llm.Response, error) {
		body, wrapped, err := p.buildRequest(req, adj)
		if err != nil {
			return nil, err
		}
		r, err := p.post(ctx, req, p.baseURL+"/v1/messages", p.headers(), body)
		if err != nil {
			return nil, err
		}
		return p.parseResponse(r, body, wrapped)
	})
}

// temperature is the temperature to send, nil where the model refuses one.
func (p *anthropicProvider) temperature(t float64, adj adjustments) *float64 {
	if !p.form.temperature || adj.has(llm.AdjustNoTemperature) {
		return nil
	}
	return &t
}

// buildRequest turns a Request into the Messages body with the
// adjustments adj applied; wrapped reports a schema sent wrapped in an
// object (formFor).
func (p *anthropicProvider) buildRequest(req llm.Request, adj adjustments) (body *antRequest, wrapped bool, err error) {
	mode, err := p.prepare(req)
	if err != nil {
		return nil, false, err
	}
	msgs := req.Messages
	if adj.has(llm.AdjustNoSystemRole) {
		msgs = systemAsUser(msgs)
	}
	system, turns := splitSystem(msgs)
	if len(turns) == 0 {
		return nil, false, p.localError("the request has only system messages; the Messages API needs a user turn")
	}
	body = &antRequest{
		Model: p.model, MaxTokens: req.MaxTokens, Messages: anthropicMessages(turns),
		Temperature: p.temperature(req.Temperature, adj), StopSequences: req.Stop,
	}
	// The cached prefix is tools, then system: the system prompt (rules and
	// schema or example) is the same for every document of a run, the
	// document comes after it, so one mark at its end caches both.
	if system != "" {
		body.System = []antBlock{{Type: "text", Text: system, CacheControl: ephemeral}}
	}
	if body.MaxTokens <= 0 {
		body.MaxTokens = anthropicDefaultMaxTokens
	}
	if mode == llm.ModeText {
		return body, false, nil
	}
	form, err := formFor(req.Schema, schema.FormAnthropic, true)
	if err != nil {
		return nil, false, p.formError(err, llm.ModeText)
	}
	form.body = dropKeywords(form.body, adj.droppedKeywords())
	if mode == llm.ModeStrict && adj.has(llm.AdjustNoNativeSchema) {
		mode = llm.ModeTools
	}
	if mode == llm.ModeTools {
		name := toolName(firstNonEmpty(req.SchemaName, schemaName(req.Schema)))
		strict := p.form.strictTools && !adj.has(llm.AdjustNoStrictTool)
		// No description, as for OpenAI (openai.go): the forced tool's input
		// schema says what it takes.
		body.Tools = []antTool{{Name: name, InputSchema: form.body, Strict: strict}}
		body.ToolChoice = &antToolChoice{Type: "tool", Name: name}
		if !p.form.forceTool || adj.has(llm.AdjustToolAuto) {
			// The only tool, offered: the model calls it or answers in
			// text, and parseResponse reads either.
			body.ToolChoice = &antToolChoice{Type: "auto"}
		}
		if system == "" {
			body.Tools[0].CacheControl = ephemeral
		}
	} else {
		body.OutputConfig = &antOutputConfig{Format: antFormat{Type: "json_schema", Schema: form.body}}
	}
	return body, form.wrapped, nil
}

func (p *anthropicProvider) parseResponse(r *reply, sent *antRequest, wrapped bool) (*llm.Response, error) {
	var doc antResponse
	if err := json.Unmarshal(r.body, &doc); err != nil {
		return nil, p.badResponse(r, "the answer is not a Messages response", err)
	}
	if doc.Type != "message" {
		return nil, p.badResponse(r, "the answer is not a Messages response (type "+doc.Type+")", nil)
	}
	out := &llm.Response{
		Usage: llm.Usage{
			// input_tokens counts only what came after the last cache
			// breakpoint; PromptTokens is every input token.
			PromptTokens:        doc.Usage.InputTokens + doc.Usage.CacheCreationInputTokens + doc.Usage.CacheReadInputTokens,
			CompletionTokens:    doc.Usage.OutputTokens,
			CachedPromptTokens:  doc.Usage.CacheReadInputTokens,
			CacheCreationTokens: doc.Usage.CacheCreationInputTokens,
		},
		RateLimit: r.rateLimit,
		Raw:       r.body,
		Model:     doc.Model,
	}
	var text []string
	toolFound := false
	for _, c := range doc.Content {
		switch c.Type {
		case "text":
			text = append(text, c.Text)
		case "tool_use":
			if len(sent.Tools) > 0 && c.Name == sent.Tools[0].Name && !toolFound {
				out.Text, toolFound = string(c.Input), true
			}
		}
	}
	if !toolFound {
		out.Text = strings.Join(text, "")
	}
	if wrapped {
		out.Text = unwrapAnswer(out.Text)
	}
	switch doc.StopReason {
	case "end_turn", "stop_sequence", "":
		out.FinishReason = llm.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		out.FinishReason = llm.FinishLength
	case "tool_use":
		out.FinishReason = llm.FinishToolCall
	case "refusal":
		out.FinishReason = llm.FinishRefusal
		out.Refusal = strings.Join(text, "")
	default:
		out.FinishReason = llm.FinishOther
	}
	return out, nil
}
