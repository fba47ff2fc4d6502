package providers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// openAIProvider speaks the OpenAI chat completions API
// (POST {base}/chat/completions), which OpenAI and the OpenAI-compatible
// presets (OpenRouter, Groq, Mistral, xAI, Together, DeepSeek, vLLM,
// LM Studio, Ollama's /v1) share.
type openAIProvider struct {
	base
	// maxCompletionTokens sends max_completion_tokens instead of the
	// deprecated max_tokens (OpenAI's reasoning models reject max_tokens;
	// many compatible servers only read max_tokens).
	maxCompletionTokens bool
	// fixedTemperature: the model rejects any temperature but its default
	// (OpenAI's reasoning models, and any OpenAI model not known to take
	// one), so none is sent.
	fixedTemperature bool
	// noSystem: the model refuses the system role (o1-mini, o1-preview);
	// the system prompt is sent as a user turn.
	noSystem bool
	// strictTools: the server is known to accept strict on function
	// definitions (OpenAI itself); elsewhere strict is never sent there.
	strictTools bool
	// chatURL is baseURL+"/chat/completions", made once by the
	// constructors ("" in a provider made otherwise: made per call).
	chatURL string
}

type oaiRequest struct {
	Model               string             `json:"model"`
	Messages            []wireMessage      `json:"messages"`
	Temperature         *float64           `json:"temperature,omitempty"`
	MaxTokens           int                `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Stop                []string           `json:"stop,omitempty"`
	ResponseFormat      *oaiResponseFormat `json:"response_format,omitempty"`
	Tools               []oaiTool          `json:"tools,omitempty"`
	// ToolChoice is *oaiToolChoice (a forced function) or "auto".
	ToolChoice any  `json:"tool_choice,omitempty"`
	Stream     bool `json:"stream"`
}

type oaiResponseFormat struct {
	Type       string         `json:"type"` // "json_object" or "json_schema"
	JSONSchema *oaiJSONSchema `json:"json_schema,omitempty"`
}

type oaiJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type oaiTool struct {
	Type     string      `json:"type"` // "function"
	Function oaiFunction `json:"function"`
}

type oaiFunction struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Strict     bool            `json:"strict,omitempty"`
}

type oaiToolChoice struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type oaiResponse struct {
	Model   string      `json:"model"`
	Choices []oaiChoice `json:"choices"`
	Usage   oaiUsage    `json:"usage"`
	// Some routers (OpenRouter) report an upstream failure in a 200 body.
	Error json.RawMessage `json:"error"`
}

type oaiChoice struct {
	Message      oaiMessage `json:"message"`
	FinishReason string     `json:"finish_reason"`
}

type oaiMessage struct {
	Content   *string       `json:"content"`
	Refusal   *string       `json:"refusal"`
	ToolCalls []oaiToolCall `json:"tool_calls"`
}

type oaiToolCall struct {
	Type     string          `json:"type"`
	Function oaiCallFunction `json:"function"`
}

type oaiCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		// CachedTokens is the part of prompt_tokens served by OpenAI's
		// automatic prompt caching (prefixes of 1,024 tokens and more).
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// Chat performs one chat completion. A 400 that names a part of the
// request the model refuses is learned from and the call sent again
// without it (sendLearning); Groq's tool_use_failed is the model's invalid
// answer, returned as one so the engine re-asks with feedback.
func (p *openAIProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	hdr := p.bearerHeader()
	return p.sendLearning(ctx, func(adj adjustments) (*llm.Response, error) {
		body, wrapped, err := p.buildRequest(req, adj)
		if err != nil {
			return nil, err
		}
		r, err := p.post(ctx, req, p.chatEndpoint(), hdr, body)
		if err != nil {
			if resp, ok := failedGeneration(err); ok {
				return resp, nil
			}
			return nil, err
		}
		return p.parseResponse(r, body.Tools, wrapped)
	})
}

// chatEndpoint is the chat completions URL: concatenating it was an
// allocation per call.
func (p *openAIProvider) chatEndpoint() string {
	if p.chatURL != "" {
		return p.chatURL
	}
	return p.baseURL + "/chat/completions"
}

// failedGeneration turns Groq's 400 tool_use_failed (a forced tool call the
// model got wrong) and json_validate_failed (JSON mode output that did not
// parse) into the answer they carry in error.failed_generation: an invalid
// answer, re-asked with feedback like any other, not a fatal request error.
func failedGeneration(err error) (*llm.Response, bool) {
	var pe *llm.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusBadRequest || (pe.Type != "tool_use_failed" && pe.Type != "json_validate_failed") {
		return nil, false
	}
	var doc struct {
		Error struct {
			FailedGeneration string `json:"failed_generation"`
		} `json:"error"`
	}
	_ = json.Unmarshal(pe.Raw, &doc) // an unreadable body is an empty answer
	return &llm.Response{Text: doc.Error.FailedGeneration, FinishReason: llm.FinishStop, RateLimit: pe.RateLimit, Raw: pe.Raw}, true
}

// buildRequest turns a Request into the chat completions body with the
// adjustments adj applied; wrapped reports a schema sent wrapped in an
// object (formFor).
func (p *openAIProvider) buildRequest(req llm.Request, adj adjustments) (body *oaiRequest, wrapped bool, err error) {
	mode, err := p.prepare(req)
	if err != nil {
		return nil, false, err
	}
	body = &oaiRequest{Model: p.model, Messages: openAIMessages(req.Messages), Stop: req.Stop}
	if p.noSystem || adj.has(llm.AdjustNoSystemRole) {
		body.Messages = openAIMessages(systemAsUser(req.Messages))
	}
	if !p.fixedTemperature && !adj.has(llm.AdjustNoTemperature) {
		t := req.Temperature
		body.Temperature = &t
	}
	if p.maxCompletionTokens || adj.has(llm.AdjustMaxCompletionTokens) {
		body.MaxCompletionTokens = req.MaxTokens
	} else {
		body.MaxTokens = req.MaxTokens
	}
	strict := p.strictTools && p.caps.Supports(llm.ModeStrict) && !adj.has(llm.AdjustNoStrictTool)
	name := toolName(firstNonEmpty(req.SchemaName, schemaName(req.Schema)))
	if mode == llm.ModeStrict && adj.has(llm.AdjustNoNativeSchema) {
		mode = llm.ModeTools // the schema still travels, as the function's parameters
	}
	switch mode {
	case llm.ModeJSON:
		body.ResponseFormat = &oaiResponseFormat{Type: "json_object"}
	case llm.ModeStrict:
		form, err := p.form(req.Schema, true, adj)
		if err != nil {
			return nil, false, err
		}
		// One allocation for the format and its schema.
		rf := &struct {
			f oaiResponseFormat
			s oaiJSONSchema
		}{oaiResponseFormat{Type: "json_schema"}, oaiJSONSchema{Name: name, Schema: form.body, Strict: true}}
		rf.f.JSONSchema = &rf.s
		body.ResponseFormat = &rf.f
		wrapped = form.wrapped
	case llm.ModeTools:
		form, err := p.form(req.Schema, strict, adj)
		if err != nil {
			return nil, false, err
		}
		// No description: the call is forced, so the model need not be told
		// when to make it, and the parameters (the schema, its own
		// descriptions included) say what it takes; one would be paid for
		// on every call (about 8 tokens; doc/cost.md).
		body.Tools = []oaiTool{{Type: "function", Function: oaiFunction{Name: name, Parameters: form.body, Strict: strict}}}
		if adj.has(llm.AdjustToolAuto) {
			body.ToolChoice = "auto"
		} else {
			choice := &oaiToolChoice{Type: "function"}
			choice.Function.Name = name
			body.ToolChoice = choice
		}
		wrapped = form.wrapped
	}
	return body, wrapped, nil
}

// form is the strict form where the model enforces it, else the
// user's schema as is (non-strict tools accept any JSON Schema object),
// without the keywords the server refused.
func (p *openAIProvider) form(s *schema.Schema, strict bool, adj adjustments) (schemaForm, error) {
	f := schema.FormJSONSchema
	if strict {
		f = schema.FormOpenAI
	}
	form, err := formFor(s, f, true)
	if err != nil {
		return form, p.formError(err, llm.ModeJSON)
	}
	form.body = dropKeywords(form.body, adj.droppedKeywords())
	return form, nil
}

// parseResponse reads the first choice: its text, refusal or tool call.
func (p *openAIProvider) parseResponse(r *reply, tools []oaiTool, wrapped bool) (*llm.Response, error) {
	var doc oaiResponse // on the stack: only decodeChat sees it
	if !decodeChat(r.body, &doc) {
		slow := new(oaiResponse) // json.Unmarshal's argument escapes
		if err := json.Unmarshal(r.body, slow); err != nil {
			return nil, p.badResponse(r, "the answer is not a chat completion", err)
		}
		doc = *slow
	}
	if len(doc.Choices) == 0 {
		if len(doc.Error) > 0 {
			ae := parseAPIError(r.body)
			return nil, &llm.Error{Provider: p.name, Class: llm.ClassServer, Status: r.status, Type: p.red.String(ae.Type),
				Message: p.red.String(ae.Message), RateLimit: r.rateLimit, Raw: r.body}
		}
		return nil, p.badResponse(r, "the chat completion has no choices", nil)
	}
	c := doc.Choices[0]
	out := &llm.Response{
		Usage: llm.Usage{PromptTokens: doc.Usage.PromptTokens, CompletionTokens: doc.Usage.CompletionTokens,
			CachedPromptTokens: min(doc.Usage.PromptTokensDetails.CachedTokens, doc.Usage.PromptTokens)},
		RateLimit: r.rateLimit,
		Raw:       r.body,
		Model:     doc.Model,
	}
	if c.Message.Content != nil {
		out.Text = *c.Message.Content
	}
	if len(tools) > 0 {
		for _, tc := range c.Message.ToolCalls {
			if tc.Function.Name == tools[0].Function.Name {
				out.Text = tc.Function.Arguments
				break
			}
		}
	}
	if wrapped {
		out.Text = unwrapAnswer(out.Text)
	}
	out.FinishReason = openAIFinish(c.FinishReason)
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		out.Refusal = *c.Message.Refusal
		out.FinishReason = llm.FinishRefusal
	}
	return out, nil
}

// openAIFinish normalises finish_reason.
func openAIFinish(s string) llm.FinishReason {
	switch s {
	case "stop", "":
		return llm.FinishStop
	case "length":
		return llm.FinishLength
	case "tool_calls", "function_call":
		return llm.FinishToolCall
	case "content_filter":
		return llm.FinishContentFilter
	}
	return llm.FinishOther
}
