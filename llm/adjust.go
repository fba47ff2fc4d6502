package llm

import (
	"context"
	"strings"
)

// Adjustment is a change to the form of a request that a provider's server
// was found to need: a parameter or value it refuses with a 400 that names
// it. Adapters learn adjustments from such refusals (each costs one extra
// call, never a validation re-ask), remember them per model and share them
// through a CapabilityStore, and record them on Response, Error and Attempt.
type Adjustment string

// Adjustments the adapters know. AdjustDropKeyword makes the last kind.
const (
	// AdjustNoTemperature leaves temperature out (the server's default
	// applies): Claude Opus 4.7 and later, OpenAI's reasoning models.
	AdjustNoTemperature Adjustment = "no_temperature"
	// AdjustToolAuto lets the model choose the tool (tool_choice auto)
	// instead of forcing it: Claude 5.1 models refuse forced tool use.
	AdjustToolAuto Adjustment = "tool_choice_auto"
	// AdjustNoSystemRole sends the system prompt as a user turn: o1-mini
	// and o1-preview refuse the system role.
	AdjustNoSystemRole Adjustment = "no_system_role"
	// AdjustNoStrictTool leaves strict out of tool definitions.
	AdjustNoStrictTool Adjustment = "no_strict_tool"
	// AdjustNoNativeSchema stops using the API's newest native schema
	// field: OpenAI's json_schema response format becomes json_object,
	// Anthropic's output_config.format becomes a tool, Gemini's
	// responseJsonSchema becomes the older responseSchema.
	AdjustNoNativeSchema Adjustment = "no_native_schema"
	// AdjustMaxCompletionTokens sends the answer's token limit as
	// max_completion_tokens instead of max_tokens, which OpenAI's reasoning
	// models refuse behind OpenAI-compatible routers and proxies.
	AdjustMaxCompletionTokens Adjustment = "max_completion_tokens"
)

// adjustDropKeyword prefixes the adjustments made by AdjustDropKeyword.
const adjustDropKeyword = "drop_keyword:"

// AdjustDropKeyword is the adjustment that leaves the JSON Schema keyword
// kw out of the schema sent to the provider (local validation still
// applies it).
func AdjustDropKeyword(kw string) Adjustment { return Adjustment(adjustDropKeyword + kw) }

// DroppedKeyword returns the keyword an AdjustDropKeyword adjustment
// leaves out, and false for any other adjustment.
func (a Adjustment) DroppedKeyword() (string, bool) {
	kw, ok := strings.CutPrefix(string(a), adjustDropKeyword)
	return kw, ok && kw != ""
}

// Known reports whether a is an adjustment this version understands; a
// store shared with newer versions may hold others, which are ignored.
func (a Adjustment) Known() bool {
	switch a {
	case AdjustNoTemperature, AdjustToolAuto, AdjustNoSystemRole, AdjustNoStrictTool, AdjustNoNativeSchema, AdjustMaxCompletionTokens:
		return true
	}
	_, ok := a.DroppedKeyword()
	return ok
}

// CapabilityStore shares learned adjustments between the processes that
// call the same model, so that one worker's refused request teaches the
// whole fleet. Keys are provider names ("anthropic:claude-fable-5-1").
// Implementations are safe for concurrent use; the fleet's is a NATS
// key-value bucket.
type CapabilityStore interface {
	// Load returns every adjustment recorded for key (none is not an error).
	Load(ctx context.Context, key string) ([]Adjustment, error)
	// Add records one adjustment for key; adding one already there is a
	// no-op.
	Add(ctx context.Context, key string, a Adjustment) error
}
