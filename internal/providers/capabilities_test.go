package providers

import (
	"math"
	"testing"

	"github.com/extractq/extractq/llm"
)

func TestCapabilitiesFor(t *testing.T) {
	tests := []struct {
		family, model string
		auto          llm.Mode
		has, hasNot   []llm.Mode
	}{
		{"openai", "gpt-4o-mini", llm.ModeStrict, []llm.Mode{llm.ModeJSON, llm.ModeTools, llm.ModeText}, nil},
		{"openai", "gpt-4o-2024-08-06", llm.ModeStrict, nil, nil},
		{"openai", "gpt-4o-2024-05-13", llm.ModeTools, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeStrict}},
		{"openai", "gpt-4.1-nano", llm.ModeStrict, nil, nil},
		{"openai", "gpt-5-mini", llm.ModeStrict, nil, nil},
		{"openai", "o3-mini", llm.ModeStrict, nil, nil},
		{"openai", "o1-mini", llm.ModeText, nil, []llm.Mode{llm.ModeJSON, llm.ModeTools}},
		{"openai", "gpt-3.5-turbo-0125", llm.ModeTools, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeStrict}},
		{"openai", "gpt-4-turbo-2024-04-09", llm.ModeTools, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeStrict}},
		{"openai", "gpt-4-0613", llm.ModeTools, nil, []llm.Mode{llm.ModeJSON, llm.ModeStrict}},
		{"anthropic", "claude-haiku-4-5-20251001", llm.ModeStrict, []llm.Mode{llm.ModeTools}, []llm.Mode{llm.ModeJSON}},
		{"anthropic", "claude-sonnet-4-5", llm.ModeStrict, nil, nil},
		{"anthropic", "claude-3-5-haiku-latest", llm.ModeTools, nil, []llm.Mode{llm.ModeStrict, llm.ModeJSON}},
		{"anthropic", "claude-sonnet-4-20250514", llm.ModeTools, []llm.Mode{llm.ModePrefill}, []llm.Mode{llm.ModeStrict}},
		// Read by generation: later models than any table entry.
		{"anthropic", "claude-opus-4-7", llm.ModeStrict, nil, []llm.Mode{llm.ModePrefill}},
		{"anthropic", "claude-sonnet-4-6", llm.ModeStrict, nil, []llm.Mode{llm.ModePrefill}},
		{"anthropic", "claude-haiku-4-5", llm.ModeStrict, []llm.Mode{llm.ModePrefill}, nil},
		{"anthropic", "claude-fable-5-1", llm.ModeStrict, []llm.Mode{llm.ModeTools}, []llm.Mode{llm.ModePrefill}},
		{"anthropic", "us.anthropic.claude-opus-5-5-v1:0", llm.ModeStrict, nil, nil},
		{"anthropic", "house-model", llm.ModeTools, nil, []llm.Mode{llm.ModeStrict, llm.ModePrefill}},
		{"gemini", "gemini-2.0-flash", llm.ModeStrict, nil, nil},
		{"gemini", "gemini-2.5-flash", llm.ModeStrict, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeTools}},
		{"ollama", "llama3.1:8b", llm.ModeStrict, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeTools}},
		{"ollama-openai", "llama3.1:8b", llm.ModeStrict, []llm.Mode{llm.ModeJSON, llm.ModeTools}, nil},
		{"groq", "llama-3.1-8b-instant", llm.ModeTools, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeStrict}},
		{"groq", "openai/gpt-oss-20b", llm.ModeStrict, nil, nil},
		{"together", "meta-llama/Llama-3.3-70B-Instruct-Turbo", llm.ModeTools, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeStrict}},
		{"deepseek", "deepseek-chat", llm.ModeTools, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeStrict}},
		{"openrouter", "openai/gpt-4o-mini", llm.ModeStrict, nil, nil},
		{"openrouter", "meta-llama/llama-3.1-8b-instruct", llm.ModeTools, nil, []llm.Mode{llm.ModeStrict}},
		{"mistral", "mistral-small-latest", llm.ModeStrict, nil, nil},
		{"xai", "grok-4", llm.ModeStrict, nil, nil},
		{"vllm", "Qwen/Qwen2.5-7B-Instruct", llm.ModeStrict, []llm.Mode{llm.ModeJSON}, []llm.Mode{llm.ModeTools}},
		{"lmstudio", "qwen2.5-7b", llm.ModeStrict, nil, []llm.Mode{llm.ModeJSON}},
		{"nosuch", "x", llm.ModeText, nil, []llm.Mode{llm.ModeJSON}},
	}
	for _, tc := range tests {
		t.Run(tc.family+":"+tc.model, func(t *testing.T) {
			c := capabilitiesFor(tc.family, tc.model)
			if got := c.Auto(); got != tc.auto {
				t.Errorf("Auto() = %s, want %s (modes %v)", got, tc.auto, c.Modes)
			}
			for _, m := range tc.has {
				if !c.Supports(m) {
					t.Errorf("missing %s in %v", m, c.Modes)
				}
			}
			for _, m := range tc.hasNot {
				if c.Supports(m) {
					t.Errorf("unexpected %s in %v", m, c.Modes)
				}
			}
		})
	}
	// The table must not be aliased: a caller editing its copy changes nothing.
	c := capabilitiesFor("openai", "gpt-4o")
	c.Modes[0] = "broken"
	if capabilitiesFor("openai", "gpt-4o").Modes[0] == "broken" {
		t.Fatal("capabilitiesFor returns the table's own slice")
	}
}

func TestMatchesPrefix(t *testing.T) {
	tests := []struct {
		model, prefix string
		want          bool
	}{
		{"gpt-4o", "gpt-4o", true},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini", true},
		{"gpt-4o", "gpt-4", false},
		{"gpt-4.1", "gpt-4", false},
		{"llama3.1:8b", "llama3.1", true},
		{"openai/gpt-4o", "openai/", true},
		{"o3", "o3-mini", false},
		{"anything", "", true},
	}
	for _, tc := range tests {
		if got := matchesPrefix(tc.model, tc.prefix); got != tc.want {
			t.Errorf("matchesPrefix(%q, %q) = %v, want %v", tc.model, tc.prefix, got, tc.want)
		}
	}
}

func TestEstimateCost(t *testing.T) {
	u := llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}
	tests := []struct {
		model string
		usd   float64
		known bool
	}{
		{"gpt-4o-mini", 0.15 + 0.60, true},
		{"gpt-4o-mini-2024-07-18", 0.15 + 0.60, true},
		{"openai:gpt-4o", 2.50 + 10.00, true},
		{"openrouter:openai/gpt-4o-mini", 0.15 + 0.60, true},
		{"claude-haiku-4-5-20251001", 1.00 + 5.00, true},
		{"anthropic:claude-sonnet-4-5", 3.00 + 15.00, true},
		{"gemini-2.5-flash", 0.30 + 2.50, true},
		{"gemini-2.5-flash-lite", 0.10 + 0.40, true},
		{"sim", SimInputPrice + SimOutputPrice, true},
		{"sim:clean", SimInputPrice + SimOutputPrice, true},
		{"sim:flaky/gpt-4o", SimInputPrice + SimOutputPrice, true},
		{"ollama:llama3.1:8b", 0, false},
		{"simple-model", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		usd, known := EstimateCost(tc.model, u)
		if known != tc.known || math.Abs(usd-tc.usd) > 1e-9 {
			t.Errorf("EstimateCost(%q) = %v, %v; want %v, %v", tc.model, usd, known, tc.usd, tc.known)
		}
	}
	if usd, _ := EstimateCost("gpt-4o-mini", llm.Usage{PromptTokens: 1000, CompletionTokens: 500}); math.Abs(usd-(1000*0.15+500*0.60)/1e6) > 1e-12 {
		t.Errorf("small usage cost = %v", usd)
	}
}

func TestClaudeForm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		want  claudeForm
	}{
		{"claude-3-5-haiku-latest", claudeForm{temperature: true, forceTool: true}},
		{"claude-3-7-sonnet-20250219", claudeForm{temperature: true, forceTool: true}},
		{"claude-sonnet-4-20250514", claudeForm{temperature: true, forceTool: true}},
		{"claude-sonnet-4-5-20250929", claudeForm{temperature: true, forceTool: true, strictTools: true}},
		{"claude-opus-4-6", claudeForm{temperature: true, forceTool: true, strictTools: true}},
		{"claude-opus-4-7", claudeForm{forceTool: true, strictTools: true}},
		{"claude-sonnet-5", claudeForm{forceTool: true, strictTools: true}},
		{"claude-fable-5-1", claudeForm{strictTools: true}},
		{"anthropic/claude-opus-5-5", claudeForm{strictTools: true}},
		{"claude-next", claudeForm{}},
		{"my-proxy-alias", claudeForm{}},
	}
	for _, tc := range tests {
		if got := claudeFormFor(tc.model); got != tc.want {
			t.Errorf("claudeFormFor(%q) = %+v, want %+v", tc.model, got, tc.want)
		}
	}
}

// TestStructuredRoles: only the model makers' own APIs say a message's
// text cannot end its message (the engine then sends a lean prompt's
// document unfenced); routers and local servers keep the fence.
func TestStructuredRoles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		family, model string
		want          bool
	}{
		{"openai", "gpt-4o-mini", true},
		{"anthropic", "claude-haiku-4-5", true},
		{"gemini", "gemini-2.5-flash", true},
		{"openrouter", "openai/gpt-4o-mini", false},
		{"groq", "openai/gpt-oss-20b", false},
		{"vllm", "Qwen/Qwen2.5-7B-Instruct", false},
		{"ollama", "llama3.1:8b", false},
		{"llamacpp", "qwen", false},
		{"nosuch", "x", false},
	}
	for _, tc := range tests {
		if got := capabilitiesFor(tc.family, tc.model).StructuredRoles; got != tc.want {
			t.Errorf("%s:%s StructuredRoles = %v, want %v", tc.family, tc.model, got, tc.want)
		}
	}
}

func TestOpenAIForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model            string
		temperature, sys bool
	}{
		{"gpt-4o-mini", true, true},
		{"gpt-4.1-nano", true, true},
		{"ft:gpt-4o-mini-2024-07-18:acme::abc", true, true},
		{"gpt-3.5-turbo", true, true},
		{"gpt-5", false, true},
		{"gpt-5.4-mini", false, true},
		{"gpt-5.1", false, true},
		{"o3-mini", false, true},
		{"o1-mini", false, false},
		{"o1-preview-2024-09-12", false, false},
		{"o1", false, true},
		{"gpt-7", false, true},
	}
	for _, tc := range tests {
		if openAITemperature(tc.model) != tc.temperature || openAINoSystem(tc.model) == tc.sys {
			t.Errorf("%s: temperature %v, system role %v; want %v, %v", tc.model, openAITemperature(tc.model), !openAINoSystem(tc.model), tc.temperature, tc.sys)
		}
	}
}
