package extractq

import (
	"log/slog"
	"net/http"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/llm"
)

// ProviderSettings is what NewProvider and a registered ProviderFactory are
// configured with. Zero fields mean "from the environment" or the default.
type ProviderSettings struct {
	// BaseURL overrides the API's base URL (for OpenAI-compatible families
	// it includes the version, e.g. "http://127.0.0.1:8080/v1"; for
	// anthropic, gemini and ollama it is the server root).
	BaseURL string
	// APIKey overrides the family's key variable (OPENAI_API_KEY, …).
	APIKey string
	// HTTPClient replaces the provider's own pooled client.
	HTTPClient *http.Client
	// Getenv replaces os.Getenv for keys and base URLs.
	Getenv func(string) string
	// Logger receives one debug line per call (status, latency, error class;
	// never prompts, answers or credentials); nil discards.
	Logger *slog.Logger
	// MaxResponseBytes caps a response body (8 MiB when zero).
	MaxResponseBytes int64
	// CapabilityStore shares what the provider learns from requests its
	// server refuses (llm.Adjustment) with other processes; nil keeps it in
	// this process.
	CapabilityStore llm.CapabilityStore
	// WrapTransport, when set, wraps the HTTP client's transport (the
	// provider's own or HTTPClient's): the worker traces each HTTP call
	// with it when traces are on. A ProviderFactory that makes HTTP calls
	// should apply it too.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// ProviderOption configures NewProvider.
type ProviderOption func(*ProviderSettings)

// WithProviderBaseURL points NewProvider at another endpoint (a proxy, a
// self-hosted server, the simulator).
func WithProviderBaseURL(u string) ProviderOption {
	return func(s *ProviderSettings) { s.BaseURL = u }
}

// WithProviderAPIKey sets NewProvider's API key instead of the environment's.
func WithProviderAPIKey(k string) ProviderOption { return func(s *ProviderSettings) { s.APIKey = k } }

// WithProviderHTTPClient sets NewProvider's HTTP client.
func WithProviderHTTPClient(c *http.Client) ProviderOption {
	return func(s *ProviderSettings) { s.HTTPClient = c }
}

// WithProviderTransport wraps the provider's HTTP transport with wrap
// (e.g. to trace or meter each HTTP call).
func WithProviderTransport(wrap func(http.RoundTripper) http.RoundTripper) ProviderOption {
	return func(s *ProviderSettings) { s.WrapTransport = wrap }
}

// WithProviderLogger makes the provider log each call at debug level.
func WithProviderLogger(l *slog.Logger) ProviderOption {
	return func(s *ProviderSettings) { s.Logger = l }
}

// WithProviderCapabilityStore makes the provider load and share, through
// st, the adjustments it learns when its server refuses a request part
// (a temperature, a forced tool, the system role, a schema keyword), so
// one refusal teaches every process calling that model. The fleet's
// workers share a NATS key-value bucket.
func WithProviderCapabilityStore(st llm.CapabilityStore) ProviderOption {
	return func(s *ProviderSettings) { s.CapabilityStore = st }
}

// NewProvider makes a provider from a spec such as "openai:gpt-4o-mini",
// "anthropic:claude-haiku-4-5", "ollama:llama3.1:8b", "gemini:gemini-2.5-flash"
// or "family:model" for a family added with RegisterProvider. API keys and
// base URLs come from the conventional environment variables unless set
// with the options.
func NewProvider(spec string, opts ...ProviderOption) (llm.Provider, error) {
	var s ProviderSettings
	for _, o := range opts {
		o(&s)
	}
	return providers.New(spec, providers.WithSettings(providers.Settings(s)))
}

// ProviderFactory makes a provider for one model of a registered family; s
// holds the caller's settings with Getenv, Logger and MaxResponseBytes
// filled in.
type ProviderFactory func(model string, s ProviderSettings) (llm.Provider, error)

// Errors of RegisterProvider, matched with errors.Is: a family name that
// cannot be one (or a nil factory), and a family that is built in or was
// registered before.
var (
	ErrBadProviderFamily  = providers.ErrBadFamily
	ErrProviderRegistered = providers.ErrFamilyRegistered
)

// RegisterProvider adds a provider family, so that "family:model" works in
// NewProvider and everywhere the commands take a provider string (the
// worker's --pool, submit's --provider) of a program that registered it.
// Families are lower-case letters, digits, '-' and '_'; a built-in family
// or one already registered is refused with ErrProviderRegistered, a name
// that cannot be a family with ErrBadProviderFamily. Call it from init or main, before
// any provider string is read.
func RegisterProvider(family string, f ProviderFactory) error {
	if f == nil {
		return providers.Register(family, nil)
	}
	return providers.Register(family, func(model string, s providers.Settings) (llm.Provider, error) {
		return f(model, ProviderSettings(s))
	})
}

// NewOpenAICompatible makes a provider named name (e.g. "myco:small") for
// any server that speaks OpenAI's chat completions API at s.BaseURL
// (including the version, e.g. "http://127.0.0.1:8000/v1"), supporting the
// given modes: the usual body of a ProviderFactory for such a server.
func NewOpenAICompatible(name, model string, caps llm.Capabilities, s ProviderSettings) (llm.Provider, error) {
	return providers.NewOpenAICompatible(name, model, caps, providers.Settings(s))
}
