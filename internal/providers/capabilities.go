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
// that is full support, since every current model has it; for Anthropic
// forced tool use, which every Claude model supports.
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
	"anthropic": {
		// Every Claude model continues a prefilled assistant turn.
		{"", modesTextToolsPrefill},
		// Native structured output (output_config.format) per Anthropic's
		// structured-outputs guide: Claude 4.5 models and later.
		{"claude-haiku-4-5", modesTextToolsStrictPrefill},
		{"claude-sonnet-4-5", modesTextToolsStrictPrefill},
		{"claude-opus-4-5", modesTextToolsStrictPrefill},
		{"claude-sonnet-4-6", modesTextToolsStrictPrefill},
		{"claude-opus-4-6", modesTextToolsStrictPrefill},
		{"claude-opus-4-7", modesTextToolsStrictPrefill},
	},
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
	c := llm.Capabilities{Modes: append([]llm.Mode(nil), best...)}
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
