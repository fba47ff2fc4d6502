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
	"sync"
	"sync/atomic"

	"github.com/extractq/extractq/llm"
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
	"llamacpp":      {wire: wireOpenAI, defaultBase: "http://127.0.0.1:8080/v1", baseEnv: []string{"LLAMACPP_BASE_URL"}, keyEnv: []string{"LLAMACPP_API_KEY"}},
	"lmstudio":      {wire: wireOpenAI, defaultBase: "http://127.0.0.1:1234/v1", baseEnv: []string{"LMSTUDIO_BASE_URL"}, keyEnv: []string{"LMSTUDIO_API_KEY"}},
	"ollama-openai": {wire: wireOpenAI, defaultBase: "http://127.0.0.1:11434/v1", baseEnv: []string{"OLLAMA_HOST"}, ollamaHost: true, baseSuffix: "/v1", keyEnv: []string{"OLLAMA_API_KEY"}},
	"anthropic":     {wire: wireAnthropic, defaultBase: "https://api.anthropic.com", baseEnv: []string{"ANTHROPIC_BASE_URL"}, keyEnv: []string{"ANTHROPIC_API_KEY"}, keyRequired: true},
	"ollama":        {wire: wireOllama, defaultBase: "http://127.0.0.1:11434", baseEnv: []string{"OLLAMA_HOST"}, ollamaHost: true, keyEnv: []string{"OLLAMA_API_KEY"}},
	"gemini":        {wire: wireGemini, defaultBase: "https://generativelanguage.googleapis.com", baseEnv: []string{"GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"}, keyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, keyRequired: true},
}

// KnownFamilies lists the provider families New accepts, built-in and
// registered, sorted.
func KnownFamilies() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(families)+len(registry.m))
	for k := range families {
		out = append(out, k)
	}
	for k := range registry.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Settings is what New and a registered Factory are configured with. Zero
// fields mean "from the environment" or the default.
type Settings struct {
	// BaseURL overrides the API's base URL (for OpenAI-compatible families
	// it includes the version, e.g. "http://127.0.0.1:8080/v1"; for
	// anthropic, gemini and ollama it is the server root).
	BaseURL string
	// APIKey overrides the family's key variable.
	APIKey string
	// HTTPClient replaces the provider's own pooled client.
	HTTPClient *http.Client
	// Getenv replaces os.Getenv for keys and base URLs.
	Getenv func(string) string
	// Logger receives one debug line per call (never prompts, answers or
	// credentials); nil discards.
	Logger *slog.Logger
	// MaxResponseBytes caps a response body (DefaultMaxResponseBytes when
	// zero or less).
	MaxResponseBytes int64
	// CapabilityStore shares what the provider learns from refused
	// requests with other processes (nil: this process only).
	CapabilityStore llm.CapabilityStore
	// WrapTransport, when set, wraps the HTTP client's transport (the
	// provider's own or HTTPClient's), e.g. to trace each HTTP call.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Option configures New.
type Option func(*Settings)

// WithSettings replaces every setting at once (later options still apply).
func WithSettings(s Settings) Option { return func(c *Settings) { *c = s } }

// WithBaseURL overrides the API's base URL (for OpenAI-compatible
// families it includes the version, e.g. "http://127.0.0.1:8080/v1"; for
// anthropic, gemini and ollama it is the server root). It wins over the
// environment.
func WithBaseURL(u string) Option { return func(c *Settings) { c.BaseURL = u } }

// WithAPIKey sets the API key, overriding the environment.
func WithAPIKey(k string) Option { return func(c *Settings) { c.APIKey = k } }

// WithHTTPClient makes the provider use c instead of its own pooled client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Settings) { c.HTTPClient = hc } }

// WithGetenv replaces os.Getenv for reading keys and base URLs, so tests and
// embedding programs decide what the environment is.
func WithGetenv(f func(string) string) Option { return func(c *Settings) { c.Getenv = f } }

// WithLogger makes the provider log each call at debug level (status,
// latency, error class; never prompts, answers or credentials). The default
// discards.
func WithLogger(l *slog.Logger) Option { return func(c *Settings) { c.Logger = l } }

// WithMaxResponseBytes changes the response size cap
// (DefaultMaxResponseBytes; zero or less keeps the default).
func WithMaxResponseBytes(n int64) Option { return func(c *Settings) { c.MaxResponseBytes = n } }

// WithCapabilityStore makes the provider load and share what it learns
// from refused requests (llm.Adjustment) through st, so that every process
// calling the same model learns from one refusal.
func WithCapabilityStore(st llm.CapabilityStore) Option {
	return func(c *Settings) { c.CapabilityStore = st }
}

// Factory makes a provider for one model of a registered family. s holds
// the caller's options with defaults filled in (Getenv, Logger and
// MaxResponseBytes are never zero).
type Factory func(model string, s Settings) (llm.Provider, error)

// ErrBadFamily: Register was given a name that cannot be a family, or no
// factory.
var ErrBadFamily = errors.New("bad provider family")

// ErrFamilyRegistered: Register was given a family that is built in or was
// registered before.
var ErrFamilyRegistered = errors.New("provider family already registered")

var registry struct {
	sync.RWMutex
	m map[string]Factory
}

// Register adds a provider family, so that New("family:model") calls f.
// Families are lower-case letters, digits, '-' and '_'; a built-in family or
// one already registered cannot be registered again. It is how the
// simulator plugs in (internal/sim/simprovider) and how users add their own
// provider to every place that takes a provider string.
func Register(family string, f Factory) error {
	if family == "" || strings.Trim(family, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return fmt.Errorf("%w name %q: use lower-case letters, digits, '-' and '_'", ErrBadFamily, family)
	}
	if f == nil {
		return fmt.Errorf("%w %q: the factory is nil; pass a function that makes the family's providers", ErrBadFamily, family)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, builtIn := families[family]; builtIn {
		return fmt.Errorf("%w: %q is built in; register yours under another name", ErrFamilyRegistered, family)
	}
	if registry.m[family] != nil {
		return fmt.Errorf("%w: %q was registered before (Register is called once per family, from init or main); use another name or register it once", ErrFamilyRegistered, family)
	}
	if registry.m == nil {
		registry.m = map[string]Factory{}
	}
	registry.m[family] = f
	return nil
}

func registered(family string) Factory {
	registry.RLock()
	defer registry.RUnlock()
	return registry.m[family]
}

// New makes a provider from a string "family:model", e.g.
// "openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "ollama:llama3.1:8b"
// (the model may contain colons), "gemini:gemini-2.5-flash", or
// or a family added with Register ("sim:PROFILE" once the simulator is
// registered).
func New(spec string, opts ...Option) (llm.Provider, error) {
	var cfg Settings
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	name, model, ok := strings.Cut(strings.TrimSpace(spec), ":")
	name, model = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(model)
	if !ok || name == "" || model == "" {
		return nil, fmt.Errorf("%w %q: want family:model, e.g. openai:gpt-4o-mini or sim:clean (families: %s)", ErrBadSpec, spec, strings.Join(KnownFamilies(), ", "))
	}
	fam, ok := families[name]
	if !ok {
		if f := registered(name); f != nil {
			return f(model, cfg)
		}
		return nil, fmt.Errorf("%w %q in %q: known families are %s", ErrUnknownProvider, name, spec, strings.Join(KnownFamilies(), ", "))
	}

	baseURL, custom, err := fam.resolveBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", spec, err)
	}
	key := cfg.APIKey
	if key == "" {
		for _, v := range fam.keyEnv {
			if key = strings.TrimSpace(cfg.Getenv(v)); key != "" {
				break
			}
		}
	}
	if key == "" && fam.keyRequired && !custom {
		return nil, fmt.Errorf("%w for %s: set %s (or pass an API key explicitly)", ErrMissingAPIKey, spec, strings.Join(fam.keyEnv, " or "))
	}

	hc := clientWith(cfg.HTTPClient, baseURL, cfg.Getenv, cfg.WrapTransport)
	b := base{
		name:     name + ":" + model,
		model:    model,
		caps:     capabilitiesFor(name, model),
		baseURL:  baseURL,
		apiKey:   key,
		keyHint:  strings.Join(fam.keyEnv, " or "),
		hc:       hc,
		direct:   directTransport(hc, cfg.HTTPClient == nil && cfg.WrapTransport == nil),
		lastURL:  new(atomic.Pointer[parsedURL]),
		bearer:   bearerFor(key),
		template: new(atomic.Pointer[requestTemplate]),
		red:      newRedactor(key),
		log:      cfg.Logger,
		maxBody:  cfg.MaxResponseBytes,
		learn:    &learner{key: name + ":" + model, store: cfg.CapabilityStore, log: cfg.Logger},
	}
	switch fam.wire {
	case wireAnthropic:
		return &anthropicProvider{base: b, form: claudeFormFor(model)}, nil
	case wireOllama:
		return &ollamaProvider{base: b}, nil
	case wireGemini:
		return &geminiProvider{base: b, jsonSchema: geminiJSONSchema(model)}, nil
	}
	openAI := name == "openai"
	return &openAIProvider{base: b, maxCompletionTokens: fam.maxCompletionTokens,
		fixedTemperature: openAI && !openAITemperature(model), noSystem: openAI && openAINoSystem(model), strictTools: openAI,
		chatURL: b.baseURL + "/chat/completions"}, nil
}

// resolveBase picks the base URL: WithBaseURL, else the family's variables,
// else its default. custom reports that it is not the official default.
func (f family) resolveBase(cfg Settings) (u string, custom bool, err error) {
	u = strings.TrimSpace(cfg.BaseURL)
	if u == "" {
		for _, v := range f.baseEnv {
			if val := strings.TrimSpace(cfg.Getenv(v)); val != "" {
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

// NewOpenAICompatible makes a provider named name (e.g. "myco:small") for
// an OpenAI-compatible chat completions endpoint at s.BaseURL (which
// includes the version, e.g. "http://127.0.0.1:8000/v1"), with the given
// capabilities. It is the building block for a registered family that
// speaks the OpenAI wire format; s.APIKey, when set, is sent as a bearer
// token.
func NewOpenAICompatible(name, model string, caps llm.Capabilities, s Settings) (llm.Provider, error) {
	if strings.TrimSpace(s.BaseURL) == "" {
		return nil, fmt.Errorf("provider %s: no base URL: set Settings.BaseURL to the endpoint, e.g. http://127.0.0.1:8000/v1", name)
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.MaxResponseBytes <= 0 {
		s.MaxResponseBytes = DefaultMaxResponseBytes
	}
	hc := clientWith(s.HTTPClient, s.BaseURL, s.Getenv, s.WrapTransport)
	baseURL := strings.TrimRight(s.BaseURL, "/")
	return &openAIProvider{chatURL: baseURL + "/chat/completions", base: base{
		name:     name,
		model:    model,
		caps:     caps,
		baseURL:  baseURL,
		apiKey:   s.APIKey,
		hc:       hc,
		direct:   directTransport(hc, s.HTTPClient == nil && s.WrapTransport == nil),
		lastURL:  new(atomic.Pointer[parsedURL]),
		bearer:   bearerFor(s.APIKey),
		template: new(atomic.Pointer[requestTemplate]),
		red:      newRedactor(s.APIKey),
		log:      s.Logger,
		maxBody:  s.MaxResponseBytes,
		learn:    &learner{key: name, store: s.CapabilityStore, log: s.Logger},
	}}, nil
}
