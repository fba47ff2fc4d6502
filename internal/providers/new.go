package providers

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/sim"
)

// Errors New returns, for callers that branch (a CLI maps them to a usage
// error). Each is wrapped with the details and the fix.
var (
	// ErrUnknownProvider: the family before the first colon is not known.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrBadSpec: the provider string is not "family:model".
	ErrBadSpec = errors.New("bad provider string")
	// ErrMissingAPIKey: the provider's official endpoint needs a key and
	// none was given or found in the environment.
	ErrMissingAPIKey = errors.New("missing API key")
)

// wire is the API a family speaks.
type wire int

const (
	wireOpenAI wire = iota
	wireAnthropic
	wireOllama
	wireGemini
	wireSim
)

// family is one preset: where the API lives and where its key comes from.
type family struct {
	wire        wire
	defaultBase string
	// baseEnv are variables that override the base URL, first set wins.
	baseEnv []string
	// ollamaHost: the variable is OLLAMA_HOST ("host", "host:port" or a URL)
	// and baseSuffix is appended to it.
	ollamaHost bool
	baseSuffix string
	// keyEnv are variables holding the API key, first set wins.
	keyEnv []string
	// keyRequired: the official endpoint refuses calls without a key. A
	// custom base URL (a proxy, the simulator) makes the key optional.
	keyRequired bool
	// maxCompletionTokens: send max_completion_tokens (OpenAI proper)
	// rather than the older max_tokens that compatible servers read.
	maxCompletionTokens bool
}

// families are the presets New knows, by the name before the colon.
var families = map[string]family{
	"openai":        {wire: wireOpenAI, defaultBase: "https://api.openai.com/v1", baseEnv: []string{"OPENAI_BASE_URL"}, keyEnv: []string{"OPENAI_API_KEY"}, keyRequired: true, maxCompletionTokens: true},
	"openrouter":    {wire: wireOpenAI, defaultBase: "https://openrouter.ai/api/v1", baseEnv: []string{"OPENROUTER_BASE_URL"}, keyEnv: []string{"OPENROUTER_API_KEY"}, keyRequired: true},
	"groq":          {wire: wireOpenAI, defaultBase: "https://api.groq.com/openai/v1", baseEnv: []string{"GROQ_BASE_URL"}, keyEnv: []string{"GROQ_API_KEY"}, keyRequired: true},
	"mistral":       {wire: wireOpenAI, defaultBase: "https://api.mistral.ai/v1", baseEnv: []string{"MISTRAL_BASE_URL"}, keyEnv: []string{"MISTRAL_API_KEY"}, keyRequired: true},
	"xai":           {wire: wireOpenAI, defaultBase: "https://api.x.ai/v1", baseEnv: []string{"XAI_BASE_URL"}, keyEnv: []string{"XAI_API_KEY"}, keyRequired: true},
	"together":      {wire: wireOpenAI, defaultBase: "https://api.together.xyz/v1", baseEnv: []string{"TOGETHER_BASE_URL"}, keyEnv: []string{"TOGETHER_API_KEY"}, keyRequired: true},
	"deepseek":      {wire: wireOpenAI, defaultBase: "https://api.deepseek.com/v1", baseEnv: []string{"DEEPSEEK_BASE_URL"}, keyEnv: []string{"DEEPSEEK_API_KEY"}, keyRequired: true},
	"vllm":          {wire: wireOpenAI, defaultBase: "http://127.0.0.1:8000/v1", baseEnv: []string{"VLLM_BASE_URL"}, keyEnv: []string{"VLLM_API_KEY"}},
	"lmstudio":      {wire: wireOpenAI, defaultBase: "http://127.0.0.1:1234/v1", baseEnv: []string{"LMSTUDIO_BASE_URL"}, keyEnv: []string{"LMSTUDIO_API_KEY"}},
	"ollama-openai": {wire: wireOpenAI, defaultBase: "http://127.0.0.1:11434/v1", baseEnv: []string{"OLLAMA_HOST"}, ollamaHost: true, baseSuffix: "/v1", keyEnv: []string{"OLLAMA_API_KEY"}},
	"anthropic":     {wire: wireAnthropic, defaultBase: "https://api.anthropic.com", baseEnv: []string{"ANTHROPIC_BASE_URL"}, keyEnv: []string{"ANTHROPIC_API_KEY"}, keyRequired: true},
	"ollama":        {wire: wireOllama, defaultBase: "http://127.0.0.1:11434", baseEnv: []string{"OLLAMA_HOST"}, ollamaHost: true, keyEnv: []string{"OLLAMA_API_KEY"}},
	"gemini":        {wire: wireGemini, defaultBase: "https://generativelanguage.googleapis.com", baseEnv: []string{"GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"}, keyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, keyRequired: true},
	"sim":           {wire: wireSim},
}

// KnownFamilies lists the provider families New accepts, sorted.
func KnownFamilies() []string {
	out := make([]string, 0, len(families))
	for k := range families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Option configures New.
type Option func(*config)

type config struct {
	baseURL    string
	apiKey     string
	httpClient *http.Client
	getenv     func(string) string
	logger     *slog.Logger
	maxBody    int64
	simServer  *sim.Server
}

// WithBaseURL overrides the API's base URL (for OpenAI-compatible
// families it includes the version, e.g. "http://127.0.0.1:8080/v1"; for
// anthropic, gemini and ollama it is the server root). It wins over the
// environment.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithAPIKey sets the API key, overriding the environment.
func WithAPIKey(k string) Option { return func(c *config) { c.apiKey = k } }

// WithHTTPClient makes the provider use c instead of its own pooled client.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithGetenv replaces os.Getenv for reading keys and base URLs, so tests and
// embedding programs decide what the environment is.
func WithGetenv(f func(string) string) Option { return func(c *config) { c.getenv = f } }

// WithLogger makes the provider log each call at debug level (status,
// latency, error class; never prompts, answers or credentials). The default
// discards.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithMaxResponseBytes changes the response size cap
// (DefaultMaxResponseBytes; zero or less keeps the default).
func WithMaxResponseBytes(n int64) Option { return func(c *config) { c.maxBody = n } }

// New makes a provider from a string "family:model", e.g.
// "openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "ollama:llama3.1:8b"
// (the model may contain colons), "gemini:gemini-2.5-flash", or
// "sim:PROFILE" / "sim:PROFILE/model" for the in-process simulator.
func New(spec string, opts ...Option) (llm.Provider, error) {
	cfg := config{getenv: os.Getenv, maxBody: DefaultMaxResponseBytes}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.getenv == nil {
		cfg.getenv = os.Getenv
	}
	if cfg.maxBody <= 0 {
		cfg.maxBody = DefaultMaxResponseBytes
	}
	name, model, ok := strings.Cut(strings.TrimSpace(spec), ":")
	name, model = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(model)
	if !ok || name == "" || model == "" {
		return nil, fmt.Errorf("%w %q: want family:model, e.g. openai:gpt-4o-mini or sim:clean (families: %s)", ErrBadSpec, spec, strings.Join(KnownFamilies(), ", "))
	}
	fam, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("%w %q in %q: known families are %s", ErrUnknownProvider, name, spec, strings.Join(KnownFamilies(), ", "))
	}
	if fam.wire == wireSim {
		return newSim(model, cfg)
	}

	baseURL, custom, err := fam.resolveBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", spec, err)
	}
	key := cfg.apiKey
	if key == "" {
		for _, v := range fam.keyEnv {
			if key = strings.TrimSpace(cfg.getenv(v)); key != "" {
				break
			}
		}
	}
	if key == "" && fam.keyRequired && !custom {
		return nil, fmt.Errorf("%w for %s: set %s (or pass an API key explicitly)", ErrMissingAPIKey, spec, strings.Join(fam.keyEnv, " or "))
	}

	b := base{
		name:    name + ":" + model,
		model:   model,
		caps:    capabilitiesFor(name, model),
		baseURL: baseURL,
		apiKey:  key,
		keyHint: strings.Join(fam.keyEnv, " or "),
		hc:      cfg.httpClient,
		red:     newRedactor(key),
		log:     cfg.logger,
		maxBody: cfg.maxBody,
	}
	if b.hc == nil {
		b.hc = newClient()
	}
	switch fam.wire {
	case wireAnthropic:
		return &anthropicProvider{base: b}, nil
	case wireOllama:
		return &ollamaProvider{base: b}, nil
	case wireGemini:
		return &geminiProvider{base: b}, nil
	}
	return &openAIProvider{base: b, maxCompletionTokens: fam.maxCompletionTokens, fixedTemperature: name == "openai" && reasoningModel(model)}, nil
}

// resolveBase picks the base URL: WithBaseURL, else the family's variables,
// else its default. custom reports that it is not the official default.
func (f family) resolveBase(cfg config) (u string, custom bool, err error) {
	u = strings.TrimSpace(cfg.baseURL)
	if u == "" {
		for _, v := range f.baseEnv {
			if val := strings.TrimSpace(cfg.getenv(v)); val != "" {
				u = val
				if f.ollamaHost {
					u = ollamaHostURL(val) + f.baseSuffix
				}
				break
			}
		}
	}
	if u == "" {
		return f.defaultBase, false, nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", false, fmt.Errorf("base URL %q is not an http(s) URL; fix the base URL flag or variable", newRedactor().String(u))
	}
	u = strings.TrimRight(u, "/")
	return u, u != f.defaultBase, nil
}

// ollamaHostURL reads OLLAMA_HOST the way Ollama does: "host", "host:port"
// or a URL, port 11434 by default.
func ollamaHostURL(v string) string {
	scheme := "http"
	if s, rest, ok := strings.Cut(v, "://"); ok {
		scheme, v = s, rest
	}
	v = strings.TrimRight(v, "/")
	host, path, _ := strings.Cut(v, "/")
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "11434")
	}
	if path != "" {
		path = "/" + path
	}
	return scheme + "://" + host + path
}
