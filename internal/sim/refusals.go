package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Request parts a profile's server may refuse (Profile.Refuses). Each is
// refused with a 400 worded as the real server words it, so that the
// adapters' learning (internal/providers, learn.go) meets what it meets in
// production.
const (
	// RefuseTemperature: Anthropic, any temperature ("`temperature` is
	// deprecated for this model.", Claude Opus 4.7 and later); OpenAI, any
	// but 1 ("Unsupported value: 'temperature' does not support 0 with this
	// model. Only the default (1) value is supported.", reasoning models).
	RefuseTemperature = "temperature"
	// RefuseForcedTool: Anthropic, tool_choice of type tool or any
	// (`tool_choice: type "tool" and "any" are not supported for this
	// model.`, the 5.1 models).
	RefuseForcedTool = "forced_tool"
	// RefuseSystemRole: OpenAI, a system message ("Unsupported value:
	// 'messages[0].role' does not support 'system' with this model.",
	// o1-mini); Gemini, systemInstruction ("Developer instruction is not
	// enabled for models/MODEL", Gemma).
	RefuseSystemRole = "system_role"
	// RefuseStrictTools: Anthropic, strict on a tool ("tools.0.custom.strict:
	// Extra inputs are not permitted", models before structured outputs).
	RefuseStrictTools = "strict_tools"
	// RefuseNativeSchema: OpenAI, a json_schema response format ("Invalid
	// parameter: 'response_format' of type 'json_schema' is not supported
	// with this model."); Anthropic, output_config ("output_config: Extra
	// inputs are not permitted"); Gemini, responseJsonSchema (`Invalid JSON
	// payload received. Unknown name "responseJsonSchema" at
	// 'generation_config': Cannot find field.`, before Gemini 2.5).
	RefuseNativeSchema = "native_schema"
	// RefuseMaxTokens: OpenAI, max_tokens ("Unsupported parameter:
	// 'max_tokens' is not supported with this model. Use
	// 'max_completion_tokens' instead.", reasoning models).
	RefuseMaxTokens = "max_tokens"
	// RefuseToolUseFailed: Groq, a forced tool call on a first ask fails
	// with 400 tool_use_failed carrying the model's broken output in
	// failed_generation; re-asks are answered.
	RefuseToolUseFailed = "tool_use_failed"
	// refuseKeyword prefixes "schema_keyword:NAME": a schema using keyword
	// NAME is refused (OpenAI: "Invalid schema for response_format 'x': In
	// context=(), 'NAME' is not permitted."; Gemini: `Unknown name "NAME"
	// at 'generation_config.response_json_schema'`).
	refuseKeyword = "schema_keyword:"
)

// refusalNames are the values Profile.Refuses takes (besides
// schema_keyword:NAME).
var refusalNames = []string{RefuseTemperature, RefuseForcedTool, RefuseSystemRole, RefuseStrictTools, RefuseNativeSchema, RefuseMaxTokens, RefuseToolUseFailed}

// checkRefusals validates Profile.Refuses.
func checkRefusals(rs []string) error {
	for _, r := range rs {
		if kw, ok := strings.CutPrefix(r, refuseKeyword); ok && kw != "" {
			continue
		}
		if !slices.Contains(refusalNames, r) {
			return fmt.Errorf("%w: refuses has %q; use %s or %sNAME", ErrInvalidProfile, r, strings.Join(refusalNames, ", "), refuseKeyword)
		}
	}
	return nil
}

// refusable is what the refusals look at, read from any API's body.
type refusable struct {
	Temperature *float64 `json:"temperature"`
	MaxTokens   *int     `json:"max_tokens"`
	Messages    []struct {
		Role string `json:"role"`
	} `json:"messages"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Tools      []struct {
		Strict bool `json:"strict"`
	} `json:"tools"`

	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name string `json:"name"`
		} `json:"json_schema"`
	} `json:"response_format"`
	OutputConfig      json.RawMessage `json:"output_config"`
	SystemInstruction json.RawMessage `json:"systemInstruction"`
	GenerationConfig  struct {
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// strictTool is the index of the first tool marked strict, or -1.
func (r *refusable) strictTool() int {
	for i, t := range r.Tools {
		if t.Strict {
			return i
		}
	}
	return -1
}

// systemMessage is the index of the first system message, or -1.
func (r *refusable) systemMessage() int {
	for i, m := range r.Messages {
		if m.Role == "system" {
			return i
		}
	}
	return -1
}

// refuse returns the 400 the profile's server answers a well-formed
// request with, or nil.
func (s *Server) refuse(a api, body []byte, req *chatRequest) *apiError {
	rs := s.prof.Refuses
	if len(rs) == 0 {
		return nil
	}
	var r refusable
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	on := func(name string) bool { return slices.Contains(rs, name) }
	switch a {
	case apiAnthropic:
		switch {
		case on(RefuseTemperature) && r.Temperature != nil:
			return invalid("`temperature` is deprecated for this model.")
		case on(RefuseForcedTool) && anthropicForced(r.ToolChoice):
			return invalid(`tool_choice: type "tool" and "any" are not supported for this model.`)
		case on(RefuseStrictTools) && r.strictTool() >= 0:
			return invalid("tools.%d.custom.strict: Extra inputs are not permitted", r.strictTool())
		case on(RefuseNativeSchema) && len(r.OutputConfig) > 0:
			return invalid("output_config: Extra inputs are not permitted")
		}
	case apiOpenAI:
		switch {
		case on(RefuseTemperature) && r.Temperature != nil && *r.Temperature != 1:
			return openAIUnsupported("temperature", fmt.Sprintf("Unsupported value: 'temperature' does not support %s with this model. Only the default (1) value is supported.", strconv.FormatFloat(*r.Temperature, 'f', -1, 64)))
		case on(RefuseSystemRole) && r.systemMessage() >= 0:
			param := fmt.Sprintf("messages[%d].role", r.systemMessage())
			return openAIUnsupported(param, fmt.Sprintf("Unsupported value: '%s' does not support 'system' with this model.", param))
		case on(RefuseMaxTokens) && r.MaxTokens != nil:
			e := invalid("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
			e.code, e.param = "unsupported_parameter", "max_tokens"
			return e
		case on(RefuseNativeSchema) && r.ResponseFormat != nil && r.ResponseFormat.Type == "json_schema":
			e := invalid("Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.")
			e.param = "response_format"
			return e
		case on(RefuseToolUseFailed) && req.tool != "" && readPrompt(req.messages).attempt == 0:
			e := invalid("Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.")
			e.code = "tool_use_failed"
			// What a model that fails a tool call writes: the call as
			// text, cut short.
			e.failedGeneration = `<function=` + req.tool + `>{"`
			return e
		}
		if kw, ok := refusedKeyword(rs, req.schema); ok && req.mode == modeStrict {
			name := "x"
			if r.ResponseFormat != nil && r.ResponseFormat.JSONSchema != nil {
				name = r.ResponseFormat.JSONSchema.Name
			}
			e := invalid("Invalid schema for response_format '%s': In context=(), '%s' is not permitted.", name, kw)
			e.param = "response_format"
			return e
		}
	case apiGemini:
		switch {
		case on(RefuseSystemRole) && len(r.SystemInstruction) > 0:
			return invalid("Developer instruction is not enabled for models/%s", req.model)
		case on(RefuseNativeSchema) && len(r.GenerationConfig.ResponseJSONSchema) > 0:
			return invalid(`Invalid JSON payload received. Unknown name "responseJsonSchema" at 'generation_config': Cannot find field.`)
		}
		if kw, ok := refusedKeyword(rs, req.schema); ok {
			field := "response_json_schema"
			if req.geminiSchema {
				field = "response_schema"
			}
			return invalid(`Invalid JSON payload received. Unknown name "%s" at 'generation_config.%s': Cannot find field.`, kw, field)
		}
	}
	return nil
}

// openAIUnsupported is OpenAI's 400 for a parameter value the model does
// not take: code unsupported_value, param naming it.
func openAIUnsupported(param, msg string) *apiError {
	e := invalid("%s", msg)
	e.code, e.param = "unsupported_value", param
	return e
}

// anthropicForced reports a tool_choice that forces tool use.
func anthropicForced(raw json.RawMessage) bool {
	var tc struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &tc) == nil && (tc.Type == "tool" || tc.Type == "any")
}

// refusedKeyword returns the first refused keyword the schema uses.
func refusedKeyword(rs []string, schema json.RawMessage) (string, bool) {
	if len(schema) == 0 {
		return "", false
	}
	for _, r := range rs {
		if kw, ok := strings.CutPrefix(r, refuseKeyword); ok && usesKeyword(schema, kw) {
			return kw, true
		}
	}
	return "", false
}

// usesKeyword reports whether kw appears as a keyword in the schema (a
// property of that name does not count).
func usesKeyword(schema json.RawMessage, kw string) bool {
	if !bytes.Contains(schema, []byte(`"`+kw+`"`)) {
		return false
	}
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return false
	}
	var walk func(v any, names bool) bool
	walk = func(v any, names bool) bool {
		switch t := v.(type) {
		case map[string]any:
			for k, sub := range t {
				if !names && k == kw {
					return true
				}
				named := !names && (k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions")
				if walk(sub, named) {
					return true
				}
			}
		case []any:
			for _, sub := range t {
				if walk(sub, false) {
					return true
				}
			}
		}
		return false
	}
	return walk(v, false)
}
