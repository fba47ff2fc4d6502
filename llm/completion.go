package llm

import (
	"context"
	"time"
)

// ModePrefill generates a value field by field: the program writes the JSON
// structure and the model continues a prefix with one value at a time,
// stopped at the value's end by stop sequences. It needs a provider that
// can continue a prefix (a Completer listing ModePrefill in its
// Capabilities); Capabilities.Auto never picks it.
const ModePrefill Mode = "prefill"

// CompletionRequest is one call that asks the model to continue a text.
// Completion endpoints (OpenAI-compatible /v1/completions, Ollama's raw
// /api/generate) receive Instructions followed by Prefix as one prompt; a
// chat API with assistant prefill (Anthropic) sends Instructions as the user
// turn and Prefix as the start of the assistant's answer.
type CompletionRequest struct {
	// Instructions are the task, the schema and the fenced document.
	Instructions string
	// Prefix is the text the model continues: the JSON written so far.
	Prefix string
	// Stop ends the generation at the first occurrence of any of these
	// strings (not included in the answer). Callers should still cut the
	// answer at a stop themselves: not every server honours them exactly.
	Stop        []string
	Temperature float64
	// MaxTokens caps the continuation; zero means the provider's default.
	MaxTokens int
	// Timeout bounds this one HTTP call; zero means the context's deadline only.
	Timeout time.Duration
}

// Completer is implemented by providers that can continue a prefix. A
// provider that implements it lists ModePrefill in its Capabilities.
type Completer interface {
	// Complete performs one HTTP call; it does not retry. Errors are *Error.
	// Response.Text is the continuation only, without the prefix.
	Complete(ctx context.Context, req CompletionRequest) (*Response, error)
}

// CanPrefill reports whether p can serve ModePrefill: it implements
// Completer and its Capabilities list ModePrefill.
func CanPrefill(p Provider) bool {
	_, ok := p.(Completer)
	return ok && p.Capabilities().Supports(ModePrefill)
}
