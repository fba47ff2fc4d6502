package providers

import (
	"strings"

	"github.com/extractq/extractq/llm"
)

// Mode sets used by the capability table.
var (
	modesAll             = []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools}
	modesJSONTools       = []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeTools}
	modesJSONStrict      = []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict}
	modesTextTools       = []llm.Mode{llm.ModeText, llm.ModeTools}
	modesTextToolsStrict = []llm.Mode{llm.ModeText, llm.ModeStrict, llm.ModeTools}
	// The same, for servers that also continue a prefix (ModePrefill).
	modesAllPrefill             = []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools, llm.ModePrefill}
	modesJSONStrictPrefill      = []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModePrefill}
	modesTextToolsPrefill       = []llm.Mode{llm.ModeText, llm.ModeTools, llm.ModePrefill}
	modesTextToolsStrictPrefill = []llm.Mode{llm.ModeText, llm.ModeStrict, llm.ModeTools, llm.ModePrefill}
)

// capRule gives the modes of the models of one family whose name starts
// with prefix ("" = the family's default). The longest matching prefix wins.
type capRule struct {
	prefix string
	modes  []llm.Mode
}

// capabilityTable says which modes each family (and model family, where it
// differs) supports. Unknown models of a family get its default: for OpenAI
// that is full support, since every current model has it. Claude models
// are read by version (claudeModes), so a model released after this table
// gets its generation's modes.
var capabilityTable = map[string][]capRule{
	"openai": {
		{"", modesAll}, // gpt-4o, gpt-4.1, gpt-5, o1, o3, o4-mini and later
		{"gpt-4o-2024-05-13", modesJSONTools},
		{"gpt-4-turbo", modesJSONTools},
		{"gpt-4-1106", modesJSONTools},
		{"gpt-4-0125", modesJSONTools},
		{"gpt-4", modesTextTools},
		{"gpt-3.5-turbo", modesJSONTools},
		{"o1-mini", []llm.Mode{llm.ModeText}},
		{"o1-preview", []llm.Mode{llm.ModeText}},
	},
	// anthropic: by version, see claudeModes.
	"gemini": {{"", modesJSONStrict}},
	"ollama": {{"", modesJSONStrictPrefill}}, // format: "json" or a JSON Schema; raw /api/generate
	"ollama-openai": {
		{"", modesAllPrefill}, // /v1/completions
	},
	"groq": {
		{"", modesJSONTools},
		// Groq's structured outputs (json_schema) are limited to some models.
		{"openai/gpt-oss", modesAll},
		{"moonshotai/kimi-k2", modesAll},
		{"meta-llama/llama-4", modesAll},
	},
	"openrouter": {
		{"", modesJSONTools},
		{"openai/", modesAll},
		{"google/", modesAll},
	},
	"mistral":  {{"", modesAll}},
	"xai":      {{"", modesAll}},
	"together": {{"", modesJSONTools}},
	"deepseek": {{"", modesJSONTools}},
	"vllm":     {{"", modesJSONStrictPrefill}}, // guided decoding; tools need server flags; /v1/completions
	"lmstudio": {{"", []llm.Mode{llm.ModeText, llm.ModeStrict, llm.ModePrefill}}},
	"llamacpp": {{"", modesJSONStrictPrefill}}, // llama.cpp's server: json_object, json_schema, /v1/completions
}

// structuredRoles are the families whose API keeps message roles out of
// the text the model reads (llm.Capabilities.StructuredRoles): the model
// makers' own APIs. The OpenAI-compatible routers and local servers are
// left out: some render a chat template into text, where a document can
// write a role's special tokens.
var structuredRoles = map[string]bool{"openai": true, "anthropic": true, "gemini": true}

// capabilitiesFor looks up a family and model in capabilityTable.
func capabilitiesFor(family, model string) llm.Capabilities {
	rules := capabilityTable[family]
	best, bestLen := []llm.Mode{llm.ModeText}, -1
	m := strings.ToLower(model)
	for _, r := range rules {
		if len(r.prefix) > bestLen && matchesPrefix(m, r.prefix) {
			best, bestLen = r.modes, len(r.prefix)
		}
	}
	if family == "anthropic" {
		best = claudeModes(model)
	}
	c := llm.Capabilities{Modes: append([]llm.Mode(nil), best...), StructuredRoles: structuredRoles[family]}
	c.Images, c.PDF = mediaFor(family, m)
	c.Batch, _ = BatchLimitsFor(family)
	bestLen = -1
	for _, r := range limitTable[family] {
		if len(r.prefix) > bestLen && matchesPrefix(m, r.prefix) {
			c.ContextWindow, c.MaxOutput, bestLen = r.window, r.output, len(r.prefix)
		}
	}
	return c
}

// limitRule gives the context window and output limit, in tokens, of the
// models of one family whose name starts with prefix ("" = the family's
// default; the longest matching prefix wins).
type limitRule struct {
	prefix         string
	window, output int
}

// limitTable holds the vendors' published limits. A family without a
// default leaves unknown models at 0 (unknown): a long document is then
// split only when extractq.WithChunking gives a size. Ollama's window is
// the server's num_ctx, not the model's, so it has no entry.
var limitTable = map[string][]limitRule{
	"openai": {
		{"", 128000, 16384},
		{"gpt-4o", 128000, 16384},
		{"gpt-4o-2024-05-13", 128000, 4096},
		{"gpt-4.1", 1047576, 32768},
		{"gpt-5", 400000, 128000},
		{"gpt-4-turbo", 128000, 4096},
		{"gpt-4-1106", 128000, 4096},
		{"gpt-4-0125", 128000, 4096},
		{"gpt-4", 8192, 8192},
		{"gpt-3.5-turbo", 16385, 4096},
		{"o1", 200000, 100000},
		{"o1-mini", 128000, 65536},
		{"o1-preview", 128000, 32768},
		{"o3", 200000, 100000},
		{"o4-mini", 200000, 100000},
	},
	"anthropic": {
		{"", 200000, 8192},
		{"claude-3-haiku", 200000, 4096},
		{"claude-3-5", 200000, 8192},
		{"claude-3-7-sonnet", 200000, 64000},
		{"claude-sonnet-4", 200000, 64000},
		{"claude-haiku-4-5", 200000, 64000},
		{"claude-opus-4", 200000, 32000},
	},
	"gemini": {
		{"", 1048576, 8192},
		{"gemini-2.5", 1048576, 65536},
	},
	"mistral":  {{"", 128000, 0}},
	"deepseek": {{"", 128000, 8192}},
	"xai":      {{"", 131072, 0}},
}

// matchesPrefix reports whether model is prefix or a variant of it:
// "gpt-4o-mini-2024-07-18" matches "gpt-4o-mini", "gpt-4o" does not match
// "gpt-4", "llama3.1:8b" matches "llama3.1". A prefix ending in "/" (a
// vendor on a router) matches anything under it.
func matchesPrefix(model, prefix string) bool {
	if prefix == "" {
		return true
	}
	if !strings.HasPrefix(model, prefix) {
		return false
	}
	if len(model) == len(prefix) || strings.HasSuffix(prefix, "/") {
		return true
	}
	switch model[len(prefix)] {
	case '-', ':', '@', '_':
		return true
	}
	return false
}

// claudeVersion reads the generation of a Claude model from its name:
// "claude-opus-4-7" is 4.7, "claude-sonnet-4-20250514" 4.0,
// "claude-3-5-haiku-latest" 3.5, "claude-fable-5-1" 5.1; a vendor prefix
// ("anthropic/", "anthropic.", "us.anthropic.") is skipped. ok is false for
// a name without one (an alias a proxy gives): such a model is treated as
// unknown and sent the safest form.
func claudeVersion(model string) (v claudeGen, ok bool) {
	m := strings.ToLower(model)
	i := strings.Index(m, "claude-")
	if i < 0 {
		return claudeGen{}, false
	}
	toks := strings.FieldsFunc(m[i+len("claude-"):], func(r rune) bool { return r == '-' || r == '.' || r == '@' || r == ':' || r == '_' })
	for j, t := range toks {
		if !isSmallNumber(t) {
			continue
		}
		v.major = atoi(t)
		if j+1 < len(toks) && isSmallNumber(toks[j+1]) {
			v.minor = atoi(toks[j+1])
		}
		return v, true
	}
	return claudeGen{}, false
}

// claudeGen is a Claude generation, major.minor.
type claudeGen struct{ major, minor int }

// atLeast reports whether g is major.minor or later.
func (g claudeGen) atLeast(major, minor int) bool {
	return g.major > major || (g.major == major && g.minor >= minor)
}

// isSmallNumber reports a version number token: one or two digits (a
// snapshot date such as 20250514 is not one).
func isSmallNumber(t string) bool {
	if len(t) == 0 || len(t) > 2 {
		return false
	}
	for _, r := range t {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func atoi(t string) int {
	n := 0
	for _, r := range t {
		n = n*10 + int(r-'0')
	}
	return n
}

// claudeModes are a Claude model's modes by generation, per Anthropic's
// documentation: structured outputs (output_config.format, strict tools)
// from Claude 4.5 on; an assistant prefill (ModePrefill) accepted until
// 4.5 and refused from 4.6 on ("This model does not support assistant
// message prefill"). A model whose generation cannot be read gets text and
// tools only, the form every Claude model takes.
func claudeModes(model string) []llm.Mode {
	g, ok := claudeVersion(model)
	switch {
	case !ok:
		return modesTextTools
	case g.atLeast(4, 6):
		return modesTextToolsStrict
	case g.atLeast(4, 5):
		return modesTextToolsStrictPrefill
	}
	return modesTextToolsPrefill
}

// claudeForm is what a Claude model's requests carry by generation, where
// Anthropic changed what the API accepts. An unknown generation gets the
// safest form: no temperature, tool_choice auto, no strict tools.
type claudeForm struct {
	// temperature: sent (Opus 4.7 and later answer 400 "`temperature` is
	// deprecated for this model").
	temperature bool
	// forceTool: tool_choice {"type":"tool"} (the 5.1 models answer 400
	// `tool_choice: type "tool" and "any" are not supported for this
	// model.`; they get tool_choice auto).
	forceTool bool
	// strictTools: strict on tool definitions (structured outputs, 4.5 on).
	strictTools bool
}

func claudeFormFor(model string) claudeForm {
	g, ok := claudeVersion(model)
	if !ok {
		return claudeForm{}
	}
	return claudeForm{
		temperature: !g.atLeast(4, 7),
		forceTool:   !g.atLeast(5, 1),
		strictTools: g.atLeast(4, 5),
	}
}

// openAITemperature reports the OpenAI models known to take a temperature
// of 0: the GPT-4 and GPT-3.5 lines. Reasoning models (o1, o3, o4, gpt-5
// and every gpt-5.x) take only the default, and so does any model this
// list does not know: it is sent none.
func openAITemperature(model string) bool {
	m := strings.TrimPrefix(strings.ToLower(model), "ft:")
	for _, p := range []string{"gpt-4", "gpt-3.5", "chatgpt-4o"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// openAINoSystem reports the OpenAI models that refuse the system role
// ("'messages[0].role' does not support 'system' with this model").
func openAINoSystem(model string) bool {
	m := strings.ToLower(model)
	return matchesPrefix(m, "o1-mini") || matchesPrefix(m, "o1-preview")
}

// geminiJSONSchema reports the Gemini models that take the full JSON
// Schema in generationConfig.responseJsonSchema: all but the 1.x and 2.0
// lines, which take only responseSchema (an OpenAPI subset without maps,
// tuples or recursion).
func geminiJSONSchema(model string) bool {
	m := strings.TrimPrefix(strings.ToLower(model), "models/")
	for _, p := range []string{"gemini-1.0", "gemini-1.5", "gemini-2.0", "gemini-pro"} {
		if strings.HasPrefix(m, p) {
			return false
		}
	}
	return true
}
