package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/extractq/extractq/schema"
)

// Mode is how a call asks the provider for structured output.
type Mode string

// Modes a provider may support. ModeAuto is resolved by Capabilities.Auto
// before a request is sent; adapters never receive it.
const (
	ModeAuto   Mode = "auto"   // pick the strongest mode the provider supports
	ModeText   Mode = "text"   // plain text; JSON is found in the answer
	ModeJSON   Mode = "json"   // the provider guarantees syntactically valid JSON
	ModeStrict Mode = "strict" // the provider enforces the JSON Schema natively
	ModeTools  Mode = "tools"  // a forced tool call whose arguments follow the schema
)

// Role is the author of a chat message.
type Role string

// Chat roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one chat turn: Content, then Parts in order. A text-only
// message has Content alone; a message showing a model a scanned page or a
// PDF carries the pictures and files in Parts, between text parts when the
// picture belongs at a place in the text.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// Parts follow Content. Send them only to a model whose Capabilities
	// say it reads them (Images, PDF).
	Parts []Part `json:"-"`
}

// PartKind is what a content part holds.
type PartKind string

// Content part kinds.
const (
	PartText  PartKind = "text"
	PartImage PartKind = "image" // Data is an encoded picture (PNG, JPEG, WebP, GIF)
	PartFile  PartKind = "file"  // Data is a document the model reads whole (application/pdf)
)

// Part is one piece of a message's content after its Content.
type Part struct {
	Kind PartKind `json:"kind"`
	// Text is a text part's text.
	Text string `json:"text,omitempty"`
	// MediaType is an image's or file's IANA type ("image/png",
	// "application/pdf").
	MediaType string `json:"media_type,omitempty"`
	// Data is the image or file, raw (adapters encode it as their API wants).
	Data []byte `json:"data,omitempty"`
	// Name is a file's name, for the APIs that want one.
	Name string `json:"name,omitempty"`
}

// Equal reports whether two messages are the same, parts and their bytes
// included (a Message with parts is not comparable with ==).
func (m Message) Equal(o Message) bool {
	return m.Role == o.Role && m.Content == o.Content && slices.EqualFunc(m.Parts, o.Parts, func(a, b Part) bool {
		return a.Kind == b.Kind && a.Text == b.Text && a.MediaType == b.MediaType && a.Name == b.Name && bytes.Equal(a.Data, b.Data)
	})
}

// Text is the message's text: Content and its text parts, without the
// pictures and files.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Kind == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Request is one chat call.
type Request struct {
	Messages []Message
	Mode     Mode
	// Schema is the user's compiled schema; the adapter converts it to its
	// provider's form (schema.Schema.ProviderForm) for ModeStrict and ModeTools.
	// Local validation always uses the original schema, never that form.
	Schema *schema.Schema
	// SchemaName names the schema or tool where the API wants a name.
	SchemaName  string
	Temperature float64
	MaxTokens   int
	Stop        []string
	// Timeout bounds this one HTTP call; zero means the context's deadline only.
	Timeout time.Duration
}

// FinishReason is the provider's reason for ending the answer, normalised.
type FinishReason string

// Normalised finish reasons.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length" // cut off by max tokens
	FinishToolCall      FinishReason = "tool_call"
	FinishContentFilter FinishReason = "content_filter"
	FinishRefusal       FinishReason = "refusal"
	FinishOther         FinishReason = "other"
)

// Usage is the token count the provider reported for one call.
//
// PromptTokens counts every input token, cached or not, so totals and token
// budgets mean the same with and without prompt caching. The two cache
// fields say how many of those PromptTokens the provider's prompt cache
// served or stored; they are priced differently (EstimateCost) and never
// added to PromptTokens again.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedPromptTokens is the part of PromptTokens read from the
	// provider's prompt cache: OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens, Gemini's cachedContentTokenCount.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	// CacheCreationTokens is the part of PromptTokens written to the cache
	// (Anthropic's cache_creation_input_tokens, billed above the input
	// price); zero for APIs that cache for free.
	CacheCreationTokens int `json:"cache_creation_tokens,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:        u.PromptTokens + o.PromptTokens,
		CompletionTokens:    u.CompletionTokens + o.CompletionTokens,
		CachedPromptTokens:  u.CachedPromptTokens + o.CachedPromptTokens,
		CacheCreationTokens: u.CacheCreationTokens + o.CacheCreationTokens,
	}
}

// RateLimit is the rate-limit state a provider reported on a response (any
// status). Zero values mean "not reported"; the rate limiter uses what is set.
type RateLimit struct {
	RetryAfter        time.Duration `json:"retry_after,omitempty"`
	LimitRequests     int           `json:"limit_requests,omitempty"`
	RemainingRequests int           `json:"remaining_requests,omitempty"`
	ResetRequests     time.Duration `json:"reset_requests,omitempty"`
	LimitTokens       int           `json:"limit_tokens,omitempty"`
	RemainingTokens   int           `json:"remaining_tokens,omitempty"`
	ResetTokens       time.Duration `json:"reset_tokens,omitempty"`
	// HasRequests and HasTokens tell a reported zero remaining from absence.
	HasRequests bool `json:"has_requests,omitempty"`
	HasTokens   bool `json:"has_tokens,omitempty"`
}

// Response is the outcome of one successful HTTP exchange.
type Response struct {
	// Text is the answer text, or the tool call's arguments in ModeTools.
	Text         string
	FinishReason FinishReason
	// Refusal is the model's refusal message where the API reports one apart
	// from the text (OpenAI's message.refusal).
	Refusal   string
	Usage     Usage
	RateLimit RateLimit
	// Raw is the response body as received (no credentials ever appear in it),
	// capped in size, for the audit trail.
	Raw   []byte
	Model string // the model the provider says answered
	// Batch says the answer came through the provider's batch API, billed
	// at its batch price (see Batcher).
	Batch bool
	// Adjustments lists what the adapter learned during this call: request
	// parts the server refused with a 400, dropped or changed before the
	// call was sent again (an extra call, not a re-ask).
	Adjustments []Adjustment
}

// Capabilities lists the modes a provider (and model) supports and how
// much text it takes.
type Capabilities struct {
	Modes []Mode
	// Batch is what one batch may hold when the provider has a batch API
	// (the adapter then implements Batcher); zero when it has none.
	Batch BatchLimits
	// ContextWindow is the most tokens (prompt plus answer) one call may
	// hold; 0 when unknown, and then a document is never split on its own
	// account (extractq.WithChunking with a size still splits).
	ContextWindow int
	// MaxOutput is the most tokens one answer may hold; 0 when unknown.
	MaxOutput int
	// Images says the model reads pictures in a request (PartImage): a
	// scanned page can be shown to it instead of being read by OCR.
	Images bool
	// PDF says the model reads whole PDF files (PartFile, application/pdf).
	PDF bool
	// StructuredRoles says the API keeps each message's role out of the
	// text the model reads: whatever a message's text holds, it cannot end
	// its message or open another (OpenAI's, Anthropic's and Gemini's own
	// APIs). Servers that render a chat template into text and read the
	// special tokens in it (vLLM, llama.cpp, Ollama) do not promise it.
	// Where it holds and the provider enforces the schema, the engine sends
	// the document alone in its message, unfenced: the message boundary is
	// the fence.
	StructuredRoles bool
}

// Supports reports whether m is among the supported modes.
func (c Capabilities) Supports(m Mode) bool {
	for _, x := range c.Modes {
		if x == m {
			return true
		}
	}
	return false
}

// Auto picks native strict schema where supported, else tools, else JSON
// mode, else text.
func (c Capabilities) Auto() Mode {
	for _, m := range []Mode{ModeStrict, ModeTools, ModeJSON} {
		if c.Supports(m) {
			return m
		}
	}
	return ModeText
}

// Provider is one model behind one API. Implementations are safe for
// concurrent use.
type Provider interface {
	// Name is the provider string it was made from, e.g. "openai:gpt-4o-mini".
	Name() string
	// Model is the model name sent to the API.
	Model() string
	Capabilities() Capabilities
	// Chat performs one HTTP call; it does not retry. Errors are *Error.
	Chat(ctx context.Context, req Request) (*Response, error)
}

// ErrorClass classifies a failed call.
type ErrorClass string

// Error classes. Retryable classes are retried with backoff by the engine and
// never spend a validation re-ask; the rest stop extraction at once.
const (
	ClassRateLimited    ErrorClass = "rate_limited"    // 429 rate limit (retryable)
	ClassOverloaded     ErrorClass = "overloaded"      // 529, 503 overloaded (retryable)
	ClassServer         ErrorClass = "server_error"    // 500, 502, 504, 408, 409, 425 (retryable)
	ClassTimeout        ErrorClass = "timeout"         // call timeout (retryable)
	ClassNetwork        ErrorClass = "network"         // reset, refused, EOF (retryable)
	ClassTruncatedBody  ErrorClass = "truncated_body"  // body ended early (retryable)
	ClassInvalidRequest ErrorClass = "invalid_request" // 400 (fatal)
	ClassContextLength  ErrorClass = "context_length"  // 400 context length exceeded (fatal)
	ClassAuth           ErrorClass = "auth"            // 401 (fatal)
	ClassPermission     ErrorClass = "permission"      // 403 (fatal)
	ClassNotFound       ErrorClass = "not_found"       // 404 unknown model (fatal)
	ClassTooLarge       ErrorClass = "too_large"       // 413 (fatal)
	ClassQuota          ErrorClass = "quota_exhausted" // 429 insufficient_quota (fatal)
	ClassCanceled       ErrorClass = "canceled"        // the caller's context ended (fatal)
	ClassBadResponse    ErrorClass = "bad_response"    // complete 2xx body the adapter cannot use: unparsable, too deep, over the size cap (fatal)
)

// Retryable reports whether a call that failed with this class may succeed
// if repeated after a pause.
func (c ErrorClass) Retryable() bool {
	switch c {
	case ClassRateLimited, ClassOverloaded, ClassServer, ClassTimeout, ClassNetwork, ClassTruncatedBody,
		ClassBatchExpired, ClassBatchCanceled:
		return true
	}
	return false
}

// Error is a failed provider call. It never contains an API key. Return it
// from Provider.Chat so the engine can tell a retryable failure from a fatal
// one.
type Error struct {
	Provider string     // provider name, e.g. "openai:gpt-4o-mini"
	Class    ErrorClass // what kind of failure
	Status   int        // HTTP status, 0 when none was received
	Type     string     // the provider's own error type/code, e.g. "insufficient_quota"
	Message  string     // the provider's own message (redacted)
	// RateLimit is what the failing response reported (Retry-After, resets).
	RateLimit RateLimit
	Err       error // underlying cause, if any (redacted when formatted)
	// Raw is the error response body (redacted, capped) for the audit trail;
	// nil when no body was received.
	Raw []byte
	// Adjustments lists what the adapter learned during the call before it
	// failed anyway (see Response.Adjustments).
	Adjustments []Adjustment
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Provider, e.Class)
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d", e.Status)
		if e.Type != "" {
			msg += " " + e.Type
		}
		msg += ")"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the call may succeed if repeated.
func (e *Error) Retryable() bool { return e.Class.Retryable() }

// IsRetryable reports whether err is a provider error worth retrying.
func IsRetryable(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Retryable()
}
