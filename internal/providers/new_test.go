package providers

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"
)

// env is an injected environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

func TestNewSpecs(t *testing.T) {
	full := env{
		"OPENAI_API_KEY": "k-openai-123", "ANTHROPIC_API_KEY": "k-ant-123", "GEMINI_API_KEY": "k-gem-123",
		"GROQ_API_KEY": "k-groq-123", "OPENROUTER_API_KEY": "k-or-123", "MISTRAL_API_KEY": "k-mis-123",
		"XAI_API_KEY": "k-xai-123", "TOGETHER_API_KEY": "k-tog-123", "DEEPSEEK_API_KEY": "k-ds-123",
	}
	tests := []struct {
		spec, name, model, baseURL string
		wire                       any
	}{
		{"openai:gpt-4o-mini", "openai:gpt-4o-mini", "gpt-4o-mini", "https://api.openai.com/v1", &openAIProvider{}},
		{"OpenAI:gpt-4o", "openai:gpt-4o", "gpt-4o", "https://api.openai.com/v1", &openAIProvider{}},
		{"openrouter:openai/gpt-4o-mini", "openrouter:openai/gpt-4o-mini", "openai/gpt-4o-mini", "https://openrouter.ai/api/v1", &openAIProvider{}},
		{"groq:llama-3.1-8b-instant", "groq:llama-3.1-8b-instant", "llama-3.1-8b-instant", "https://api.groq.com/openai/v1", &openAIProvider{}},
		{"mistral:mistral-small-latest", "mistral:mistral-small-latest", "mistral-small-latest", "https://api.mistral.ai/v1", &openAIProvider{}},
		{"xai:grok-4", "xai:grok-4", "grok-4", "https://api.x.ai/v1", &openAIProvider{}},
		{"together:meta-llama/Llama-3.3-70B-Instruct-Turbo", "together:meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "https://api.together.xyz/v1", &openAIProvider{}},
		{"deepseek:deepseek-chat", "deepseek:deepseek-chat", "deepseek-chat", "https://api.deepseek.com/v1", &openAIProvider{}},
		{"vllm:Qwen/Qwen2.5-7B-Instruct", "vllm:Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "http://127.0.0.1:8000/v1", &openAIProvider{}},
		{"lmstudio:qwen2.5-7b", "lmstudio:qwen2.5-7b", "qwen2.5-7b", "http://127.0.0.1:1234/v1", &openAIProvider{}},
		{"ollama-openai:llama3.1:8b", "ollama-openai:llama3.1:8b", "llama3.1:8b", "http://127.0.0.1:11434/v1", &openAIProvider{}},
		{"anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5", "claude-haiku-4-5", "https://api.anthropic.com", &anthropicProvider{}},
		{"ollama:llama3.1:8b", "ollama:llama3.1:8b", "llama3.1:8b", "http://127.0.0.1:11434", &ollamaProvider{}},
		{"gemini:gemini-2.5-flash", "gemini:gemini-2.5-flash", "gemini-2.5-flash", "https://generativelanguage.googleapis.com", &geminiProvider{}},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			p, err := New(tc.spec, WithGetenv(full.get))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != tc.name || p.Model() != tc.model {
				t.Fatalf("Name/Model = %q/%q, want %q/%q", p.Name(), p.Model(), tc.name, tc.model)
			}
			if got := baseOf(t, p).baseURL; got != tc.baseURL {
				t.Fatalf("base URL = %q, want %q", got, tc.baseURL)
			}
			if fmt.Sprintf("%T", p) != fmt.Sprintf("%T", tc.wire) {
				t.Fatalf("adapter %T, want %T", p, tc.wire)
			}
		})
	}
}

// baseOf returns the shared part of any adapter.
func baseOf(t *testing.T, p llm.Provider) *base {
	t.Helper()
	switch v := p.(type) {
	case *openAIProvider:
		return &v.base
	case *anthropicProvider:
		return &v.base
	case *ollamaProvider:
		return &v.base
	case *geminiProvider:
		return &v.base
	}
	t.Fatalf("unknown adapter %T", p)
	return nil
}

func TestNewKeysAndBaseURLs(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		env     env
		opts    []Option
		wantKey string
		wantURL string
	}{
		{"key from env", "openai:gpt-4o", env{"OPENAI_API_KEY": " sk-env "}, nil, "sk-env", "https://api.openai.com/v1"},
		{"explicit key wins", "openai:gpt-4o", env{"OPENAI_API_KEY": "sk-env"}, []Option{WithAPIKey("sk-explicit")}, "sk-explicit", "https://api.openai.com/v1"},
		{"base from env", "openai:gpt-4o", env{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"}, nil, "k", "http://127.0.0.1:9/v1"},
		{"explicit base wins", "openai:gpt-4o", env{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://a/v1"}, []Option{WithBaseURL("http://b/v1")}, "k", "http://b/v1"},
		{"custom base makes key optional", "openai:gpt-4o", env{"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, nil, "", "http://127.0.0.1:8080/v1"},
		{"gemini falls back to GOOGLE_API_KEY", "gemini:gemini-2.5-flash", env{"GOOGLE_API_KEY": "g-key"}, nil, "g-key", "https://generativelanguage.googleapis.com"},
		{"gemini prefers GEMINI_API_KEY", "gemini:gemini-2.5-flash", env{"GOOGLE_API_KEY": "g", "GEMINI_API_KEY": "gem"}, nil, "gem", "https://generativelanguage.googleapis.com"},
		{"gemini base", "gemini:gemini-2.5-flash", env{"GEMINI_API_KEY": "k", "GEMINI_BASE_URL": "http://127.0.0.1:7/"}, nil, "k", "http://127.0.0.1:7"},
		{"anthropic base", "anthropic:claude-haiku-4-5", env{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "https://proxy.example"}, nil, "k", "https://proxy.example"},
		{"ollama host only", "ollama:llama3.1:8b", env{"OLLAMA_HOST": "gpu-box"}, nil, "", "http://gpu-box:11434"},
		{"ollama host:port", "ollama:llama3.1:8b", env{"OLLAMA_HOST": "0.0.0.0:9999"}, nil, "", "http://0.0.0.0:9999"},
		{"ollama url", "ollama:llama3.1:8b", env{"OLLAMA_HOST": "https://ollama.example:443/"}, nil, "", "https://ollama.example:443"},
		{"ollama ipv6", "ollama:llama3.1:8b", env{"OLLAMA_HOST": "[::1]"}, nil, "", "http://[::1]:11434"},
		{"ollama-openai adds /v1", "ollama-openai:llama3.1:8b", env{"OLLAMA_HOST": "127.0.0.1:5555"}, nil, "", "http://127.0.0.1:5555/v1"},
		{"vllm needs no key", "vllm:m", env{}, nil, "", "http://127.0.0.1:8000/v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.spec, append([]Option{WithGetenv(tc.env.get)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			b := baseOf(t, p)
			if b.apiKey != tc.wantKey || b.baseURL != tc.wantURL {
				t.Fatalf("key %q url %q, want key %q url %q", b.apiKey, b.baseURL, tc.wantKey, tc.wantURL)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		env      env
		opts     []Option
		is       error
		mentions []string
	}{
		{"missing openai key", "openai:gpt-4o", env{}, nil, ErrMissingAPIKey, []string{"OPENAI_API_KEY"}},
		{"missing anthropic key", "anthropic:claude-haiku-4-5", env{}, nil, ErrMissingAPIKey, []string{"ANTHROPIC_API_KEY"}},
		{"missing gemini key", "gemini:gemini-2.5-flash", env{}, nil, ErrMissingAPIKey, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}},
		{"missing groq key", "groq:llama-3.1-8b-instant", env{}, nil, ErrMissingAPIKey, []string{"GROQ_API_KEY"}},
		{"unknown family", "foo:bar", env{}, nil, ErrUnknownProvider, []string{"foo", "openai", "anthropic", "gemini", "ollama"}},
		{"no colon", "gpt-4o", env{}, nil, ErrBadSpec, []string{"family:model"}},
		{"empty model", "openai:", env{}, nil, ErrBadSpec, []string{"family:model"}},
		{"empty", "", env{}, nil, ErrBadSpec, nil},
		{"bad base URL", "openai:gpt-4o", env{"OPENAI_BASE_URL": "ftp://x"}, nil, nil, []string{"not an http(s) URL"}},
		{"bad base URL password hidden", "openai:gpt-4o", env{}, []Option{WithBaseURL("localhost:8080/v1?key=topsecret99")}, nil, []string{"not an http(s) URL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.spec, append([]Option{WithGetenv(tc.env.get)}, tc.opts...)...)
			if err == nil {
				t.Fatalf("New(%q) = %v, want an error", tc.spec, p.Name())
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %q is not %v", err, tc.is)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if strings.Contains(err.Error(), "topsecret99") {
				t.Errorf("error %q leaks a credential", err)
			}
		})
	}
}

func TestNewOwnTransportPerInstance(t *testing.T) {
	e := env{"OPENAI_API_KEY": "k"}
	a, _ := New("openai:gpt-4o", WithGetenv(e.get))
	b, _ := New("openai:gpt-4o", WithGetenv(e.get))
	if baseOf(t, a).hc == baseOf(t, b).hc || baseOf(t, a).hc.Transport == baseOf(t, b).hc.Transport {
		t.Fatal("two providers share an HTTP client or transport")
	}
}

func TestRegisterFamily(t *testing.T) {
	t.Parallel()
	var got struct {
		model string
		s     Settings
	}
	factory := func(model string, s Settings) (llm.Provider, error) {
		got.model, got.s = model, s
		return NewOpenAICompatible("testreg-family:"+model, model, llm.Capabilities{Modes: []llm.Mode{llm.ModeJSON}}, Settings{BaseURL: "http://127.0.0.1:1/v1"})
	}
	if err := Register("testreg-family", factory); err != nil {
		t.Fatal(err)
	}
	p, err := New("testreg-family:small-1", WithAPIKey("k-123"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "testreg-family:small-1" || got.model != "small-1" || got.s.APIKey != "k-123" || got.s.Getenv == nil || got.s.Logger == nil || got.s.MaxResponseBytes != DefaultMaxResponseBytes {
		t.Fatalf("factory saw model %q settings %+v; provider %q", got.model, got.s, p.Name())
	}
	if !strings.Contains(strings.Join(KnownFamilies(), " "), "testreg-family") {
		t.Fatalf("registered family not listed: %v", KnownFamilies())
	}
	for _, bad := range []string{"", "Upper", "has:colon", "has space"} {
		if err := Register(bad, factory); !errors.Is(err, ErrBadFamily) || errors.Is(err, ErrFamilyRegistered) {
			t.Errorf("Register(%q) = %v, want ErrBadFamily", bad, err)
		}
	}
	for _, taken := range []string{"openai", "testreg-family"} {
		if err := Register(taken, factory); !errors.Is(err, ErrFamilyRegistered) || errors.Is(err, ErrBadFamily) || !strings.Contains(err.Error(), "already registered") {
			t.Errorf("Register(%q) = %v, want ErrFamilyRegistered saying so", taken, err)
		}
	}
	if err := Register("testreg-nil", nil); !errors.Is(err, ErrBadFamily) {
		t.Errorf("a nil factory must be refused: %v", err)
	}
	if _, err := NewOpenAICompatible("x:y", "y", llm.Capabilities{}, Settings{}); err == nil || !strings.Contains(err.Error(), "base URL") {
		t.Errorf("no base URL must be an error naming it: %v", err)
	}
}
