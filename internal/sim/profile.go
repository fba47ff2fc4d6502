package sim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Profile describes how the simulated model behaves: how fast it answers,
// how much traffic it accepts, how often the transport fails and how often
// the answer is malformed. A zero Profile is a perfect, instant model.
//
// Profiles are read from YAML or JSON (LoadProfile); durations are written
// as Go durations ("250ms", "2s").
type Profile struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`

	Latency    Latency    `yaml:"latency,omitempty" json:"latency"`
	RateLimits RateLimits `yaml:"rate_limits,omitempty" json:"rate_limits"`
	Errors     ErrorRates `yaml:"errors,omitempty" json:"errors"`
	Faults     FaultRates `yaml:"faults,omitempty" json:"faults"`
	// Batch is how the batch APIs behave (batch.go).
	Batch BatchProfile `yaml:"batch,omitempty" json:"batch"`

	// FixProbability is the chance that a re-ask (a conversation holding
	// the failed answer followed by feedback) comes back clean. When it does
	// not, output faults are drawn again as for a first attempt.
	FixProbability float64 `yaml:"fix_probability,omitempty" json:"fix_probability"`

	// FaultModes says which output faults may hit an answer whose API mode
	// promises more: "realistic" (default) keeps each mode's promise (JSON
	// mode is always syntactically valid, a strict schema is always obeyed,
	// so only truncation and refusal remain); "all" lets every fault hit
	// every mode, like a model that ignores the constraint.
	FaultModes string `yaml:"fault_modes,omitempty" json:"fault_modes,omitempty"`

	// Completion spoils continuations on the completion endpoints
	// (/v1/completions, raw /api/generate) that prefill mode uses; a re-ask
	// comes back clean with FixProbability.
	Completion CompletionFaults `yaml:"completion,omitempty" json:"completion"`

	// Refuses lists request parts the server refuses with a 400 worded as
	// the real server words it (refusals.go): temperature, forced_tool,
	// system_role, strict_tools, native_schema, max_tokens,
	// tool_use_failed, and schema_keyword:NAME.
	Refuses []string `yaml:"refuses,omitempty" json:"refuses,omitempty"`
}

// CompletionFaults are the probabilities, per continuation, of what a small
// model gets wrong when it continues a JSON prefix.
type CompletionFaults struct {
	// OverrunStop: the answer runs past the stop sequences (a server that
	// did not cut, or a stop split across tokens), e.g. `42, "tax": 3}`.
	OverrunStop float64 `yaml:"overrun_stop,omitempty" json:"overrun_stop"`
	// NumberWords: a number written as words, e.g. "forty-two".
	NumberWords float64 `yaml:"number_words,omitempty" json:"number_words"`
	// EnumOutside: an enum value outside the list, e.g. "eurs" for "EUR".
	EnumOutside float64 `yaml:"enum_outside,omitempty" json:"enum_outside"`
}

// Latency is time to first token plus a per-token time for every completion
// token, scaled by a random factor in [1-Jitter, 1+Jitter].
type Latency struct {
	TTFT     time.Duration `yaml:"ttft,omitempty" json:"ttft"`
	PerToken time.Duration `yaml:"per_token,omitempty" json:"per_token"`
	Jitter   float64       `yaml:"jitter,omitempty" json:"jitter"`
}

// RateLimits are per-minute budgets shared by all routes; zero means
// unlimited. Shape says how they are counted: a token bucket holding one
// minute's worth and refilling continuously (the default), a strict
// sliding one-minute window, or a window that resets on every wall-clock
// minute (see ShapeTokenBucket, ShapeSlidingWindow, ShapeFixedWindow).
// Providers use each of these; a client must hold up against all three.
// Headers says what responses report of the limits: everything OpenAI and
// Anthropic document (HeadersAll, the default), or only Retry-After on a
// refusal (HeadersRetryAfter).
type RateLimits struct {
	RequestsPerMinute int    `yaml:"requests_per_minute,omitempty" json:"requests_per_minute"`
	TokensPerMinute   int    `yaml:"tokens_per_minute,omitempty" json:"tokens_per_minute"`
	Shape             string `yaml:"shape,omitempty" json:"shape,omitempty"`
	Headers           string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// ErrorRates are the probabilities, per request, of each transport failure.
type ErrorRates struct {
	Status500 float64 `yaml:"status_500,omitempty" json:"status_500"`
	Status503 float64 `yaml:"status_503,omitempty" json:"status_503"`
	// Status529 is Anthropic's "overloaded_error"; the other APIs have no
	// 529 and answer 503 instead.
	Status529 float64 `yaml:"status_529,omitempty" json:"status_529"`
	// Timeout hangs the request until the client gives up or TimeoutCap
	// passes (then 504).
	Timeout float64 `yaml:"timeout,omitempty" json:"timeout"`
	// Drop closes the connection without an answer (a reset).
	Drop       float64       `yaml:"drop,omitempty" json:"drop"`
	TimeoutCap time.Duration `yaml:"timeout_cap,omitempty" json:"timeout_cap"`
}

// FaultRates are the probabilities, per answer, of each output fault. Each
// is drawn independently, so one answer may carry several.
type FaultRates struct {
	CodeFence       float64 `yaml:"code_fence,omitempty" json:"code_fence"`
	Prose           float64 `yaml:"prose,omitempty" json:"prose"`
	TrailingComma   float64 `yaml:"trailing_comma,omitempty" json:"trailing_comma"`
	SingleQuotes    float64 `yaml:"single_quotes,omitempty" json:"single_quotes"`
	MissingRequired float64 `yaml:"missing_required,omitempty" json:"missing_required"`
	WrongType       float64 `yaml:"wrong_type,omitempty" json:"wrong_type"`
	EnumOutside     float64 `yaml:"enum_outside,omitempty" json:"enum_outside"`
	ExtraField      float64 `yaml:"extra_field,omitempty" json:"extra_field"`
	Truncation      float64 `yaml:"truncation,omitempty" json:"truncation"`
	Refusal         float64 `yaml:"refusal,omitempty" json:"refusal"`
}

// Fault-mode names for Profile.FaultModes.
const (
	FaultModesRealistic = "realistic"
	FaultModesAll       = "all"
)

// defaultTimeoutCap bounds a simulated timeout when the profile sets none.
const defaultTimeoutCap = 30 * time.Second

// builtins are the named profiles LoadProfile knows without a file.
var builtins = map[string]Profile{
	"clean": {
		Name:           "clean",
		Description:    "a perfect, instant model: every answer valid, no limits, no failures",
		FixProbability: 1,
	},
	"sloppy": {
		Name:        "sloppy",
		Description: "a careless small model that ignores structured-output modes: fences, prose, broken syntax and schema slips",
		Faults: FaultRates{
			CodeFence: 0.3, Prose: 0.2, TrailingComma: 0.1, SingleQuotes: 0.05,
			MissingRequired: 0.1, WrongType: 0.1, EnumOutside: 0.05, ExtraField: 0.1,
			Truncation: 0.02, Refusal: 0.01,
		},
		FixProbability: 0.7,
		FaultModes:     FaultModesAll,
	},
	"flaky": {
		Name:        "flaky",
		Description: "a busy provider: 5xx, 529 overloaded, timeouts and dropped connections, some slow answers",
		Latency:     Latency{TTFT: 20 * time.Millisecond, PerToken: 200 * time.Microsecond, Jitter: 0.5},
		Errors: ErrorRates{
			Status500: 0.05, Status503: 0.03, Status529: 0.05, Timeout: 0.01, Drop: 0.02,
			TimeoutCap: 5 * time.Second,
		},
		Faults:         FaultRates{CodeFence: 0.05, MissingRequired: 0.03, WrongType: 0.03, Truncation: 0.01},
		FixProbability: 0.9,
	},
	"small-model": {
		Name: "small-model",
		Description: "a small local model behind a completion endpoint: whole JSON objects come back broken (chat and json modes mostly fail), " +
			"but it continues a JSON prefix reasonably, sometimes running past the stop, writing a number as words or an enum value outside the list",
		Faults: FaultRates{
			CodeFence: 0.3, Prose: 0.3, TrailingComma: 0.4, SingleQuotes: 0.3,
			MissingRequired: 0.7, WrongType: 0.6, EnumOutside: 0.5, ExtraField: 0.3,
			Truncation: 0.6,
		},
		FixProbability: 0.05,
		FaultModes:     FaultModesAll,
		Completion:     CompletionFaults{OverrunStop: 0.15, NumberWords: 0.08, EnumOutside: 0.15},
	},
	"claude-opus-4-7": {
		Name:           "claude-opus-4-7",
		Description:    "a server that refuses temperature, as Anthropic does for Claude Opus 4.7 and later",
		FixProbability: 1,
		Refuses:        []string{RefuseTemperature},
	},
	"claude-fable-5-1": {
		Name:           "claude-fable-5-1",
		Description:    "a server that refuses temperature and forced tool use, as Anthropic does for the Claude 5.1 models",
		FixProbability: 1,
		Refuses:        []string{RefuseTemperature, RefuseForcedTool},
	},
	"openai-o1-mini": {
		Name:           "openai-o1-mini",
		Description:    "a server that refuses the system role, any temperature but 1 and max_tokens, as OpenAI does for o1-mini",
		FixProbability: 1,
		Refuses:        []string{RefuseTemperature, RefuseSystemRole, RefuseMaxTokens},
	},
	"gemini-2.0": {
		Name:           "gemini-2.0",
		Description:    "a server without the newest native schema field: Gemini's responseJsonSchema (responseSchema only, as before Gemini 2.5), OpenAI's json_schema response format, Anthropic's output_config",
		FixProbability: 1,
		Refuses:        []string{RefuseNativeSchema},
	},
	"groq-tool-use-failed": {
		Name:           "groq-tool-use-failed",
		Description:    "a server whose model fails every first forced tool call with Groq's 400 tool_use_failed; re-asks are answered",
		FixProbability: 1,
		Refuses:        []string{RefuseToolUseFailed},
	},
	"rate-limited": {
		Name:           "rate-limited",
		Description:    "a low-tier account: 60 requests and 20,000 tokens per minute",
		RateLimits:     RateLimits{RequestsPerMinute: 60, TokensPerMinute: 20000},
		FixProbability: 1,
	},
	"realistic": {
		Name:        "realistic",
		Description: "a hosted model at a normal day: 300ms to first token, 5ms per token, rare faults",
		Latency:     Latency{TTFT: 300 * time.Millisecond, PerToken: 5 * time.Millisecond, Jitter: 0.3},
		Errors:      ErrorRates{Status500: 0.002, Status529: 0.002, Timeout: 0.001, TimeoutCap: 30 * time.Second},
		Faults: FaultRates{
			CodeFence: 0.05, Prose: 0.03, MissingRequired: 0.02, WrongType: 0.02,
			EnumOutside: 0.01, ExtraField: 0.02, Truncation: 0.005, Refusal: 0.002,
		},
		FixProbability: 0.9,
	},
}

// DefaultProfile is the built-in profile the name "default" loads.
const DefaultProfile = "realistic"

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ErrInvalidProfile is matched (errors.Is) by every error that means a
// profile is unusable: unknown name, unreadable file, bad value.
var ErrInvalidProfile = errors.New("invalid simulator profile")

// LoadProfile returns the built-in profile of that name, or reads a YAML or
// JSON profile from that path. Unknown fields and out-of-range values are
// errors naming the field.
func LoadProfile(nameOrPath string) (Profile, error) {
	if nameOrPath == "default" {
		// "sim:default" is the name people reach for first; it means a normal day.
		nameOrPath = DefaultProfile
	}
	if p, ok := builtins[nameOrPath]; ok {
		return p, nil
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(nameOrPath, `/\.`) {
			return Profile{}, fmt.Errorf("%w: %q is neither a built-in profile (%s, or default) nor a file", ErrInvalidProfile, nameOrPath, strings.Join(ProfileNames(), ", "))
		}
		return Profile{}, fmt.Errorf("%w: read %s: %w", ErrInvalidProfile, nameOrPath, err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return Profile{}, fmt.Errorf("%s: %w", nameOrPath, err)
	}
	if p.Name == "" {
		p.Name = nameOrPath
	}
	return p, nil
}

// ParseProfile reads a profile from YAML or JSON and validates it.
func ParseProfile(data []byte) (Profile, error) {
	var p Profile
	if len(bytes.TrimSpace(data)) == 0 {
		return Profile{}, fmt.Errorf("%w: the profile is empty; set at least a name (a profile with only a name is a perfect model)", ErrInvalidProfile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("%w: %s", ErrInvalidProfile, yaml.FormatError(err, false, true))
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// Validate reports the first value out of range, naming its field.
func (p Profile) Validate() error {
	rates := []struct {
		field string
		v     float64
	}{
		{"latency.jitter", p.Latency.Jitter},
		{"errors.status_500", p.Errors.Status500},
		{"errors.status_503", p.Errors.Status503},
		{"errors.status_529", p.Errors.Status529},
		{"errors.timeout", p.Errors.Timeout},
		{"errors.drop", p.Errors.Drop},
		{"faults.code_fence", p.Faults.CodeFence},
		{"faults.prose", p.Faults.Prose},
		{"faults.trailing_comma", p.Faults.TrailingComma},
		{"faults.single_quotes", p.Faults.SingleQuotes},
		{"faults.missing_required", p.Faults.MissingRequired},
		{"faults.wrong_type", p.Faults.WrongType},
		{"faults.enum_outside", p.Faults.EnumOutside},
		{"faults.extra_field", p.Faults.ExtraField},
		{"faults.truncation", p.Faults.Truncation},
		{"faults.refusal", p.Faults.Refusal},
		{"fix_probability", p.FixProbability},
		{"batch.expire", p.Batch.Expire},
		{"batch.fail", p.Batch.Fail},
		{"completion.overrun_stop", p.Completion.OverrunStop},
		{"completion.number_words", p.Completion.NumberWords},
		{"completion.enum_outside", p.Completion.EnumOutside},
	}
	for _, r := range rates {
		if !(r.v >= 0 && r.v <= 1) { // also rejects NaN
			return fmt.Errorf("%w: %s is %v; it must be a probability between 0 and 1", ErrInvalidProfile, r.field, r.v)
		}
	}
	if sum := p.Errors.Status500 + p.Errors.Status503 + p.Errors.Status529 + p.Errors.Timeout + p.Errors.Drop; sum > 1 {
		return fmt.Errorf("%w: errors.* add up to %v; the transport failure rates must sum to at most 1", ErrInvalidProfile, sum)
	}
	durations := []struct {
		field string
		v     time.Duration
	}{
		{"latency.ttft", p.Latency.TTFT},
		{"latency.per_token", p.Latency.PerToken},
		{"errors.timeout_cap", p.Errors.TimeoutCap},
		{"batch.delay", p.Batch.Delay},
	}
	for _, d := range durations {
		if d.v < 0 {
			return fmt.Errorf("%w: %s is %v; a duration cannot be negative", ErrInvalidProfile, d.field, d.v)
		}
	}
	if sum := p.Batch.Expire + p.Batch.Fail; sum > 1 {
		return fmt.Errorf("%w: batch.expire and batch.fail add up to %v; they must sum to at most 1", ErrInvalidProfile, sum)
	}
	if p.Batch.MaxEnqueuedTokens < 0 {
		return fmt.Errorf("%w: batch.max_enqueued_tokens is %d; use 0 for unlimited", ErrInvalidProfile, p.Batch.MaxEnqueuedTokens)
	}
	if p.RateLimits.RequestsPerMinute < 0 {
		return fmt.Errorf("%w: rate_limits.requests_per_minute is %d; use 0 for unlimited", ErrInvalidProfile, p.RateLimits.RequestsPerMinute)
	}
	if p.RateLimits.TokensPerMinute < 0 {
		return fmt.Errorf("%w: rate_limits.tokens_per_minute is %d; use 0 for unlimited", ErrInvalidProfile, p.RateLimits.TokensPerMinute)
	}
	if p.RateLimits.Shape != "" && !slices.Contains(LimiterShapes(), p.RateLimits.Shape) {
		return fmt.Errorf("%w: rate_limits.shape is %q; use one of %s", ErrInvalidProfile, p.RateLimits.Shape, strings.Join(LimiterShapes(), ", "))
	}
	switch p.RateLimits.Headers {
	case "", HeadersAll, HeadersRetryAfter:
	default:
		return fmt.Errorf("%w: rate_limits.headers is %q; use %q or %q", ErrInvalidProfile, p.RateLimits.Headers, HeadersAll, HeadersRetryAfter)
	}
	if err := checkRefusals(p.Refuses); err != nil {
		return err
	}
	switch p.FaultModes {
	case "", FaultModesRealistic, FaultModesAll:
	default:
		return fmt.Errorf("%w: fault_modes is %q; use %q or %q", ErrInvalidProfile, p.FaultModes, FaultModesRealistic, FaultModesAll)
	}
	return nil
}
