package extractq

import (
	"net/http"
	"time"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/retry"
)

// Option configures Extract. Every option has a documented default; an
// Extract without options other than WithProvider uses them all.
type Option func(*options)

type options struct {
	provider Provider
	cfg      retry.Config
}

func newOptions(opts []Option) options {
	o := options{cfg: retry.DefaultConfig()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithProvider sets the model to ask (required).
func WithProvider(p Provider) Option { return func(o *options) { o.provider = p } }

// WithMaxReasks sets how many times an invalid answer is re-asked with
// feedback (default 3: at most 4 calls, not counting transport retries).
func WithMaxReasks(n int) Option { return func(o *options) { o.cfg.MaxReasks = n } }

// WithFeedback sets the re-ask strategy (default FeedbackReflect: list the
// errors and ask the model to work out their cause before answering with
// JSON only).
func WithFeedback(f Feedback) Option { return func(o *options) { o.cfg.Feedback = f } }

// WithSchemaIn sets how the schema appears in the prompt (default
// SchemaInAuto: an example instance, or nothing when the mode makes the
// provider enforce the schema).
func WithSchemaIn(in SchemaIn) Option { return func(o *options) { o.cfg.SchemaIn = in } }

// WithMode sets how calls ask for structured output (default ModeAuto: the
// strongest mode the provider supports).
func WithMode(m Mode) Option { return func(o *options) { o.cfg.Mode = m } }

// WithTemperature sets the sampling temperature (default 0).
func WithTemperature(t float64) Option { return func(o *options) { o.cfg.Temperature = t } }

// WithMaxTokens caps each answer (default: the provider's cap, or what
// remains of the token budget).
func WithMaxTokens(n int) Option { return func(o *options) { o.cfg.MaxTokens = n } }

// WithHistory sets what a re-ask sends (default HistoryLast: system prompt,
// task, last failed answer and its feedback, so the prompt does not grow).
func WithHistory(h History) Option { return func(o *options) { o.cfg.History = h } }

// WithTokenBudget caps the tokens one document may cost over all calls
// (default 0: no cap). Exceeding it ends with ErrBudgetExceeded.
func WithTokenBudget(tokens int) Option { return func(o *options) { o.cfg.TokenBudget = tokens } }

// WithCallTimeout bounds each HTTP call (default: the context's deadline
// only); a timed-out call is retried as a transport failure.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.cfg.CallTimeout = d } }

// WithTransport sets the transport-retry policy (default: 4 retries, 500ms
// base doubling to a 20s cap, full jitter, Retry-After honoured up to 60s).
func WithTransport(t Transport) Option { return func(o *options) { o.cfg.Transport = t } }

// WithRepair sets what is repaired locally before re-asking (default
// RepairCoerce: syntax repairs and safe schema-guided coercions).
func WithRepair(p RepairPolicy) Option { return func(o *options) { o.cfg.Repair = p } }

// WithBreakOnUnextractable sets whether an answer saying the document lacks
// the data (or a refusal) ends the extraction at once with
// ErrUnextractable (default true); when false it is re-asked.
func WithBreakOnUnextractable(b bool) Option {
	return func(o *options) { o.cfg.BreakOnUnextractable = b }
}

// WithAcceptLossy decides what an extraction whose re-asks ran out does
// with a value that validated only after a lossy repair (a cut-off string
// closed, a closing quote guessed): false (default) fails it with
// ErrExhausted; true returns it with OutcomeLossy and a nil error. Such a
// value is never accepted while re-asks remain.
func WithAcceptLossy(b bool) Option { return func(o *options) { o.cfg.AcceptLossy = b } }

// WithRepeatTemperatureStep raises the temperature of the next call by
// step each time the model repeats a mistake it was told about, up to 1
// (default 0.2; 0 keeps the temperature fixed).
func WithRepeatTemperatureStep(step float64) Option {
	return func(o *options) { o.cfg.RepeatTemperatureStep = step }
}

// WithFeedbackMaxChars bounds the error list of one feedback (default 1200).
func WithFeedbackMaxChars(n int) Option { return func(o *options) { o.cfg.FeedbackMaxChars = n } }

// WithTemplates replaces built-in prompts; nil fields keep the built-in ones.
// A Feedback template replaces the feedback strategy.
func WithTemplates(t Templates) Option { return func(o *options) { o.cfg.Templates = t } }

// WithSleeper replaces the pause between transport retries, e.g. in tests.
func WithSleeper(s Sleeper) Option { return func(o *options) { o.cfg.Sleep = s } }

// WithProviderBaseURL points NewProvider at another endpoint (a proxy, a
// self-hosted server, the simulator).
func WithProviderBaseURL(u string) ProviderOption { return providers.WithBaseURL(u) }

// WithProviderAPIKey sets NewProvider's API key instead of the environment's.
func WithProviderAPIKey(k string) ProviderOption { return providers.WithAPIKey(k) }

// WithProviderHTTPClient sets NewProvider's HTTP client.
func WithProviderHTTPClient(c *http.Client) ProviderOption { return providers.WithHTTPClient(c) }
