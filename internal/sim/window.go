package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// ContextWindow returns the context window and output limit, in tokens,
// the simulator enforces for a model name (0, 0: none, as for the default
// model "sim"). A name ending in "-Nk" ("sim-8k", "tiny-32k") has a window
// of N×1024 tokens and an output limit of a quarter of it (at most 16384),
// so that tests and benchmarks can pick a small model; a few real model
// names get their vendors' published limits.
func ContextWindow(model string) (window, output int) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '-'); i >= 0 && strings.HasSuffix(m, "k") {
		if n, err := strconv.Atoi(m[i+1 : len(m)-1]); err == nil && n > 0 && n <= 1<<20 {
			return n * 1024, min(n*1024/4, 16384)
		}
	}
	for _, w := range knownWindows {
		if strings.HasPrefix(m, w.prefix) {
			return w.window, w.output
		}
	}
	return 0, 0
}

// knownWindows are real models' limits, longest prefixes first.
var knownWindows = []struct {
	prefix         string
	window, output int
}{
	{"gpt-3.5-turbo", 16385, 4096},
	{"gpt-4o", 128000, 16384},
	{"gpt-4.1", 1047576, 32768},
	{"gpt-4", 8192, 8192},
	{"claude", 200000, 8192},
	{"gemini", 1048576, 8192},
}

// contextLength is the 400 a provider answers a request too long for the
// model with; the OpenAI shape carries code context_length_exceeded.
func contextLength(a api, model string, window, requested int) *apiError {
	e := &apiError{status: 400, kind: errInvalid, code: "context_length_exceeded"}
	switch a {
	case apiAnthropic:
		e.msg = fmt.Sprintf("prompt is too long: %d tokens > %d maximum", requested, window)
	case apiGemini:
		e.msg = fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d) for this model's context window.", requested, window)
	default:
		e.msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens. Please reduce the length of the messages or completion.", window, requested)
	}
	return e
}
