package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/extractq/extractq/internal/jsonx"
)

// outMode is the structured-output promise a request asked for; it decides
// which faults are realistic (Profile.FaultModes).
type outMode uint8

const (
	modeText   outMode = iota // plain text: anything goes
	modeJSON                  // JSON mode or a non-strict schema/tool: valid syntax
	modeStrict                // the API enforces the schema
)

type role uint8

const (
	roleSystem role = iota
	roleUser
	roleAssistant
)

type message struct {
	role role
	text string
}

// chatRequest is a request of any API reduced to what the simulator needs.
type chatRequest struct {
	model    string
	messages []message
	mode     outMode
	// tool names the tool to call when the answer must be a tool call.
	tool string
	// toolDesc is that tool's description, and schemaName the name of a
	// response format's schema: both count as input (promptTokens).
	toolDesc, schemaName string
	// schema is the schema the API carries natively, as sent; nil if none.
	schema json.RawMessage
	// geminiSchema marks schema as Gemini's OpenAPI-style responseSchema,
	// which needs translating before it compiles.
	geminiSchema bool
	maxTokens    int
	stream       bool
	// breakpoints are Anthropic cache_control marks: the index of the
	// message they end, or -1 for one on a tool (the tools come first).
	breakpoints []int
	// mediaTokens is what the request's pictures and files cost beyond
	// their text; mediaChars the text read from pictures, which costs
	// nothing as text (readMedia).
	mediaTokens, mediaChars int
}

// apiError is an error the simulator answers with, before it is put in the
// shape of the API addressed.
type apiError struct {
	status int
	kind   errKind
	msg    string
	code   string // the OpenAI error code where it is not the kind's
	// scope is the budget a rate-limit error is about: "requests" or "tokens".
	scope string
	// param is the OpenAI error's param, the request part it is about.
	param string
	// failedGeneration is Groq's failed_generation: the model's output
	// that was not a valid tool call.
	failedGeneration string
}

func (e *apiError) Error() string { return e.msg }

type errKind uint8

const (
	errInvalid errKind = iota
	errNotFound
	errMethod
	errTooLarge
	errRateLimit
	errServer
	errUnavailable
	errOverloaded
	errTimeout
)

func invalid(format string, args ...any) *apiError {
	return &apiError{status: 400, kind: errInvalid, msg: fmt.Sprintf(format, args...)}
}

// decodeBody unmarshals a request body; a syntax or type error becomes the
// 400 every API sends for a malformed body.
func decodeBody(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		return invalid("request body is empty; send a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return invalid("could not parse the JSON body of your request: %v", err)
	}
	return nil
}

// part is a content block of OpenAI or Anthropic messages.
type part struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Input   json.RawMessage `json:"input"`   // Anthropic tool_use
	Content content         `json:"content"` // Anthropic tool_result
	// OpenAI image_url and file parts.
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	File *struct {
		FileData string `json:"file_data"`
		FileID   string `json:"file_id"`
	} `json:"file"`
	// Anthropic image and document blocks.
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// mediaOf is the mark (readMedia) of a picture or file part, "" for any
// other part.
func (p *part) mediaOf() (string, error) {
	switch {
	case p.Type == "image_url" && p.ImageURL != nil:
		return dataURLRef(p.ImageURL.URL, "image/png")
	case p.Type == "file" && p.File != nil:
		if p.File.FileData == "" {
			return "", errors.New("file: the simulator keeps no uploaded files (file_id); send the file inline in file_data")
		}
		return dataURLRef(p.File.FileData, "application/pdf")
	case (p.Type == "image" || p.Type == "document") && p.Source != nil:
		if p.Source.Type != "base64" {
			return "", fmt.Errorf("%s.source.type %q: the simulator reads base64 sources only", p.Type, p.Source.Type)
		}
		return mediaRef(p.Source.MediaType, p.Source.Data), nil
	}
	return "", nil
}

// content is message content: a string, null, or an array of content
// blocks, flattened to text as it is decoded. Prompts are most of a
// request's bytes, so it unquotes strings itself rather than keeping raw
// JSON and decoding it a second time.
type content string

func (c *content) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		s, ok := jsonx.Unquote(b)
		if !ok {
			return errors.New("content: malformed string")
		}
		*c = content(s)
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []part
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			ref, err := p.mediaOf()
			if err != nil {
				return err
			}
			switch {
			case ref != "":
				sb.WriteString(ref)
			case p.Text != "":
				sb.WriteString(p.Text)
			case len(p.Input) > 0:
				sb.Write(p.Input)
			default:
				sb.WriteString(string(p.Content))
			}
		}
		*c = content(sb.String())
		return nil
	}
	return errors.New("content must be a string or an array of content blocks")
}

func roleOf(r string) (role, bool) {
	switch r {
	case "system", "developer":
		return roleSystem, true
	case "user", "tool", "function":
		return roleUser, true
	case "assistant", "model":
		return roleAssistant, true
	}
	return 0, false
}

// OpenAI chat completions.

type openAIRequest struct {
	Model               string                `json:"model"`
	Messages            []openAIReqMessage    `json:"messages"`
	ResponseFormat      *openAIResponseFormat `json:"response_format"`
	Tools               []openAITool          `json:"tools"`
	ToolChoice          json.RawMessage       `json:"tool_choice"`
	MaxTokens           int                   `json:"max_tokens"`
	MaxCompletionTokens int                   `json:"max_completion_tokens"`
	Stream              bool                  `json:"stream"`
}

type openAIReqMessage struct {
	Role      string  `json:"role"`
	Content   content `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type openAIResponseFormat struct {
	Type string `json:"type"`
	// Schema is a json_object format's schema as Anyscale and Together
	// take it (instructor's JSON_SCHEMA mode sends it).
	Schema     json.RawMessage   `json:"schema"`
	JSONSchema *openAIJSONSchema `json:"json_schema"`
}

type openAIJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type openAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
	} `json:"function"`
}

func parseOpenAI(body []byte, seen *rawCache) (*chatRequest, *apiError) {
	var r openAIRequest
	if !r.decodeFast(body, seen) {
		r = openAIRequest{}
		if err := decodeBody(body, &r); err != nil {
			return nil, err
		}
	}
	if r.Model == "" {
		return nil, invalid("you must provide a model parameter")
	}
	if len(r.Messages) == 0 {
		return nil, invalid("[] is too short - 'messages'")
	}
	if r.Stream {
		return nil, invalid("stream: the simulator does not stream; send \"stream\": false")
	}
	c := &chatRequest{model: r.Model, maxTokens: r.MaxCompletionTokens, messages: make([]message, 0, len(r.Messages))}
	if c.maxTokens == 0 {
		c.maxTokens = r.MaxTokens
	}
	for i, m := range r.Messages {
		ro, ok := roleOf(m.Role)
		if !ok {
			return nil, invalid("messages[%d].role: %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		text := string(m.Content)
		for _, tc := range m.ToolCalls {
			text += tc.Function.Name + tc.Function.Arguments // both are input when sent back
		}
		c.messages = append(c.messages, message{role: ro, text: text})
	}
	if rf := r.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text", "":
		case "json_object":
			c.mode = modeJSON
			if len(rf.Schema) > 0 && rf.Schema[0] == '{' {
				c.schema = rf.Schema
			}
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return nil, invalid("response_format.json_schema.schema: missing; a json_schema response format needs a schema")
			}
			c.schema, c.schemaName = rf.JSONSchema.Schema, rf.JSONSchema.Name
			c.mode = modeJSON
			if rf.JSONSchema.Strict {
				c.mode = modeStrict
			}
		default:
			return nil, invalid("response_format.type: %q is not one of text, json_object, json_schema", rf.Type)
		}
	}
	if len(r.Tools) > 0 {
		name, err := openAIToolChoice(r.ToolChoice)
		if err != nil {
			return nil, err
		}
		if name != "none" {
			found := false
			for _, t := range r.Tools {
				if name == "" || t.Function.Name == name {
					c.tool, c.toolDesc, c.schema, found = t.Function.Name, t.Function.Description, t.Function.Parameters, true
					c.mode = modeJSON
					if t.Function.Strict {
						c.mode = modeStrict
					}
					break
				}
			}
			if !found {
				return nil, invalid("tool_choice: no tool named %q in tools", name)
			}
		}
	}
	return c, nil
}

// openAIToolChoice returns the forced tool name, "" for any tool, or "none".
func openAIToolChoice(raw json.RawMessage) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "none":
			return "none", nil
		case "auto", "required":
			return "", nil
		}
		return "", invalid("tool_choice: %q is not one of none, auto, required", s)
	}
	var o struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Function.Name == "" {
		return "", invalid("tool_choice: expected a string or {\"type\": \"function\", \"function\": {\"name\": ...}}")
	}
	return o.Function.Name, nil
}

// Anthropic messages.

type anthropicRequest struct {
	Model     string  `json:"model"`
	MaxTokens int     `json:"max_tokens"`
	System    content `json:"system"`
	Messages  []struct {
		Role    string  `json:"role"`
		Content content `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Strict      bool            `json:"strict"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	// OutputConfig.Format is structured output as released; OutputFormat
	// is the same under its beta name (structured-outputs-2025-11-13).
	OutputConfig *struct {
		Format *anthropicFormat `json:"format"`
	} `json:"output_config"`
	OutputFormat *anthropicFormat `json:"output_format"`
	Stream       bool             `json:"stream"`
}

type anthropicFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

func parseAnthropic(body []byte) (*chatRequest, *apiError) {
	var r anthropicRequest
	if err := decodeBody(body, &r); err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, invalid("model: Field required")
	}
	if r.MaxTokens <= 0 {
		return nil, invalid("max_tokens: Field required (a positive integer)")
	}
	if len(r.Messages) == 0 {
		return nil, invalid("messages: at least one message is required")
	}
	if r.Stream {
		return nil, invalid("stream: the simulator does not stream; send \"stream\": false")
	}
	c := &chatRequest{model: r.Model, maxTokens: r.MaxTokens}
	if bytes.Contains(body, []byte(`"cache_control"`)) {
		c.breakpoints = anthropicBreakpoints(body, r.System != "")
	}
	if r.System != "" {
		c.messages = append(c.messages, message{role: roleSystem, text: string(r.System)})
	}
	for i, m := range r.Messages {
		var ro role
		switch m.Role {
		case "user":
			ro = roleUser
		case "assistant":
			ro = roleAssistant
		default:
			return nil, invalid("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		c.messages = append(c.messages, message{role: ro, text: string(m.Content)})
	}
	of, field := r.OutputFormat, "output_format"
	if r.OutputConfig != nil && r.OutputConfig.Format != nil {
		of, field = r.OutputConfig.Format, "output_config.format"
	}
	if of != nil {
		if of.Type != "json_schema" || len(of.Schema) == 0 {
			return nil, invalid("%s: expected {\"type\": \"json_schema\", \"schema\": {...}}", field)
		}
		c.schema, c.mode = of.Schema, modeStrict
	}
	// With tools and no tool_choice ("auto") the simulated model, asked to
	// extract, calls the first tool, as OpenAI's does.
	if tc := r.ToolChoice; len(r.Tools) > 0 && (tc == nil || tc.Type != "none") {
		forced := ""
		if tc != nil && tc.Type == "tool" {
			if tc.Name == "" {
				return nil, invalid("tool_choice.name: Field required when tool_choice.type is \"tool\"")
			}
			forced = tc.Name
		}
		found := false
		for _, t := range r.Tools {
			if forced == "" || t.Name == forced {
				c.tool, c.toolDesc, c.schema, found = t.Name, t.Description, t.InputSchema, true
				c.mode = modeJSON
				if t.Strict {
					c.mode = modeStrict
				}
				break
			}
		}
		if !found {
			return nil, invalid("tool_choice: no tool named %q in tools", forced)
		}
	}
	return c, nil
}

// anthropicBreakpoints finds the cache_control marks of a request: on a
// tool (-1), on the system prompt (message 0) and on message i (i, or i+1
// after a system prompt). Only requests that mention cache_control pay for
// this second decoding.
func anthropicBreakpoints(body []byte, hasSystem bool) []int {
	type block struct {
		CacheControl json.RawMessage `json:"cache_control"`
	}
	var r struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []block `json:"tools"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	marked := func(raw json.RawMessage) bool {
		var bs []block
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &bs) != nil {
			return false
		}
		for _, b := range bs {
			if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
				return true
			}
		}
		return false
	}
	var out []int
	for _, t := range r.Tools {
		if len(t.CacheControl) > 0 && string(t.CacheControl) != "null" {
			out = append(out, -1)
			break
		}
	}
	off := 0
	if hasSystem {
		if marked(r.System) {
			out = append(out, 0)
		}
		off = 1
	}
	for i, m := range r.Messages {
		if marked(m.Content) {
			out = append(out, i+off)
		}
	}
	return out
}

// Ollama /api/chat.

type ollamaRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string   `json:"role"`
		Content string   `json:"content"`
		Images  []string `json:"images"`
	} `json:"messages"`
	Format  json.RawMessage `json:"format"`
	Stream  *bool           `json:"stream"`
	Options struct {
		NumPredict int `json:"num_predict"`
	} `json:"options"`
}

func parseOllama(body []byte) (*chatRequest, *apiError) {
	var r ollamaRequest
	if err := decodeBody(body, &r); err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, invalid("model is required")
	}
	c := &chatRequest{model: r.Model, maxTokens: r.Options.NumPredict, stream: r.Stream == nil || *r.Stream}
	for i, m := range r.Messages {
		ro, ok := roleOf(m.Role)
		if !ok {
			return nil, invalid("messages[%d]: invalid role %q", i, m.Role)
		}
		text := m.Content
		for _, img := range m.Images {
			text += mediaRef("image/png", img)
		}
		c.messages = append(c.messages, message{role: ro, text: text})
	}
	switch f := bytes.TrimSpace(r.Format); {
	case len(f) == 0 || string(f) == "null" || string(f) == `""`:
	case string(f) == `"json"`:
		c.mode = modeJSON
	case f[0] == '{':
		c.schema, c.mode = f, modeStrict
	default:
		return nil, invalid("invalid format: %s; use \"json\" or a JSON schema object", f)
	}
	return c, nil
}

// Gemini generateContent.

type geminiRequest struct {
	Contents []struct {
		Role  string          `json:"role"`
		Parts []geminiReqPart `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []geminiReqPart `json:"parts"`
	} `json:"systemInstruction"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		MaxOutputTokens    int             `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

type geminiReqPart struct {
	Text string `json:"text"`
	// InlineData is a picture or file; the REST API takes both spellings.
	InlineData  *geminiBlob `json:"inline_data"`
	InlineData2 *geminiBlob `json:"inlineData"`
}

type geminiBlob struct {
	MimeType  string `json:"mime_type"`
	MimeType2 string `json:"mimeType"`
	Data      string `json:"data"`
}

// text is the part's text, or the mark (readMedia) of its inline data.
func (p geminiReqPart) text() string {
	d := p.InlineData
	if d == nil {
		d = p.InlineData2
	}
	if d == nil {
		return p.Text
	}
	return mediaRef(d.MimeType+d.MimeType2, d.Data)
}

func parseGemini(model string, body []byte) (*chatRequest, *apiError) {
	var r geminiRequest
	if err := decodeBody(body, &r); err != nil {
		return nil, err
	}
	if len(r.Contents) == 0 {
		return nil, invalid("* GenerateContentRequest.contents: contents is not specified")
	}
	c := &chatRequest{model: model, maxTokens: r.GenerationConfig.MaxOutputTokens}
	if si := r.SystemInstruction; si != nil {
		c.messages = append(c.messages, message{role: roleSystem, text: joinGeminiParts(si.Parts)})
	}
	for i, ct := range r.Contents {
		var ro role
		switch ct.Role {
		case "", "user":
			ro = roleUser
		case "model":
			ro = roleAssistant
		default:
			return nil, invalid("* GenerateContentRequest.contents[%d].role: Please use a valid role: user, model.", i)
		}
		c.messages = append(c.messages, message{role: ro, text: joinGeminiParts(ct.Parts)})
	}
	gc := r.GenerationConfig
	switch gc.ResponseMimeType {
	case "", "text/plain":
		if len(gc.ResponseSchema) > 0 || len(gc.ResponseJSONSchema) > 0 {
			return nil, invalid("* GenerateContentRequest.generation_config.response_mime_type: response_mime_type must be application/json when a response schema is set")
		}
	case "application/json":
		c.mode = modeJSON
		switch {
		case len(gc.ResponseJSONSchema) > 0:
			c.schema, c.mode = gc.ResponseJSONSchema, modeStrict
		case len(gc.ResponseSchema) > 0:
			c.schema, c.mode, c.geminiSchema = gc.ResponseSchema, modeStrict, true
		}
	default:
		return nil, invalid("* GenerateContentRequest.generation_config.response_mime_type: allowed mimetypes are text/plain and application/json, got %q", gc.ResponseMimeType)
	}
	return c, nil
}

func joinGeminiParts(ps []geminiReqPart) string {
	if len(ps) == 1 {
		return ps[0].text()
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.text())
	}
	return b.String()
}
