package providers

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
)

// TestAdaptersParseCachedTokens feeds each adapter a response body as its
// API reports prompt caching, and checks the cache parts land in Usage.
func TestAdaptersParseCachedTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, base, body string
		mode                   llm.Mode
		want                   llm.Usage
	}{
		{"openai cached_tokens", "openai:gpt-4o-mini", "/v1",
			`{"model":"gpt-4o-mini","choices":[{"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],
			  "usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920}}}`,
			llm.ModeJSON, llm.Usage{PromptTokens: 2006, CompletionTokens: 300, CachedPromptTokens: 1920}},
		{"openai without details", "openai:gpt-4o-mini", "/v1",
			`{"model":"gpt-4o-mini","choices":[{"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],
			  "usage":{"prompt_tokens":50,"completion_tokens":3}}`,
			llm.ModeJSON, llm.Usage{PromptTokens: 50, CompletionTokens: 3}},
		{"anthropic read", "anthropic:claude-haiku-4-5", "",
			`{"type":"message","model":"claude-haiku-4-5","content":[{"type":"text","text":"{}"}],"stop_reason":"end_turn",
			  "usage":{"input_tokens":40,"output_tokens":7,"cache_read_input_tokens":1500,"cache_creation_input_tokens":0}}`,
			llm.ModeText, llm.Usage{PromptTokens: 1540, CompletionTokens: 7, CachedPromptTokens: 1500}},
		{"anthropic write", "anthropic:claude-haiku-4-5", "",
			`{"type":"message","model":"claude-haiku-4-5","content":[{"type":"text","text":"{}"}],"stop_reason":"end_turn",
			  "usage":{"input_tokens":40,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":1500}}`,
			llm.ModeText, llm.Usage{PromptTokens: 1540, CompletionTokens: 7, CacheCreationTokens: 1500}},
		{"gemini cachedContentTokenCount", "gemini:gemini-2.5-flash", "",
			`{"candidates":[{"content":{"parts":[{"text":"{}"}]},"finishReason":"STOP"}],
			  "usageMetadata":{"promptTokenCount":3000,"candidatesTokenCount":20,"cachedContentTokenCount":2048},"modelVersion":"gemini-2.5-flash"}`,
			llm.ModeJSON, llm.Usage{PromptTokens: 3000, CompletionTokens: 20, CachedPromptTokens: 2048}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCanned(t, 200, nil, tc.body)
			p := mustNew(t, tc.spec, env{}, WithBaseURL(srv.URL+tc.base), WithAPIKey("sk-test-cache-000"))
			resp, err := p.Chat(t.Context(), llm.Request{Messages: conversation(), Mode: tc.mode, Schema: testSchema(t)})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tc.want {
				t.Fatalf("usage %+v, want %+v", resp.Usage, tc.want)
			}
		})
	}
}

// TestAnthropicMarksCachePrefix checks the cache_control mark sits at the
// end of the constant prefix: on the system prompt, or on the tool when
// there is no system prompt, never on the document's turn.
func TestAnthropicMarksCachePrefix(t *testing.T) {
	t.Parallel()
	const okTool = `{"type":"message","model":"m","content":[{"type":"tool_use","name":"x","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`
	noSystem := []llm.Message{{Role: llm.RoleUser, Content: "<document-00112233aabbccdd>doc</document-00112233aabbccdd>"}}
	tests := []struct {
		name              string
		msgs              []llm.Message
		wantSys, wantTool bool
	}{
		{"system", conversation(), true, false},
		{"no system", noSystem, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCanned(t, 200, nil, okTool)
			p := mustNew(t, "anthropic:claude-sonnet-4-5", env{}, WithBaseURL(srv.URL), WithAPIKey("sk-test-cache-000"))
			if _, err := p.Chat(t.Context(), llm.Request{Messages: tc.msgs, Mode: llm.ModeTools, Schema: testSchema(t)}); err != nil {
				t.Fatal(err)
			}
			body := string(srv.last(t).Body)
			b := srv.lastJSON(t)
			sys, _ := b["system"].([]any)
			gotSys := len(sys) == 1 && sys[0].(map[string]any)["cache_control"] != nil
			gotTool := b["tools"].([]any)[0].(map[string]any)["cache_control"] != nil
			if gotSys != tc.wantSys || gotTool != tc.wantTool {
				t.Fatalf("cache_control on system %v tool %v, want %v %v\n%s", gotSys, gotTool, tc.wantSys, tc.wantTool, body)
			}
			if n := strings.Count(body, `"cache_control"`); n != 1 {
				t.Fatalf("%d cache_control marks, want 1", n)
			}
		})
	}
}

// TestAdaptersReadSimulatorCache runs the same long-prefixed request twice
// through each adapter against the simulator: the second call must report
// the shared prefix as cached, as each API does.
func TestAdaptersReadSimulatorCache(t *testing.T) {
	t.Parallel()
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(prof)
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	// About 1,500 tokens of constant system prompt: above every minimum.
	system := "Rules for the extraction. " + strings.Repeat("Take every value from the document as written. ", 125)
	tests := []struct {
		spec, base   string
		wantCreation bool // the first call writes the cache (Anthropic)
	}{
		{"openai:gpt-4o-mini", hs.URL + "/v1", false},
		{"anthropic:claude-sonnet-4-5", hs.URL, true},
		{"gemini:gemini-2.5-flash", hs.URL, false},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, tc.spec, env{}, WithBaseURL(tc.base), WithAPIKey("sk-sim-test-key-000"))
			call := func(doc string) llm.Usage {
				msgs := []llm.Message{{Role: llm.RoleSystem, Content: system + tc.spec},
					{Role: llm.RoleUser, Content: "<document-00112233aabbccdd>" + doc + "</document-00112233aabbccdd>"}}
				resp, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Mode: llm.ModeText, MaxTokens: 500})
				if err != nil {
					t.Fatal(err)
				}
				return resp.Usage
			}
			first := call("Invoice INV-1 from ACME, total 12.50.")
			second := call("Invoice INV-2 from Globex, total 99.00.")
			if first.CachedPromptTokens != 0 {
				t.Fatalf("first call cached %d tokens; nothing was cached yet", first.CachedPromptTokens)
			}
			if (first.CacheCreationTokens > 0) != tc.wantCreation {
				t.Fatalf("first call cache creation %d, want creation %v", first.CacheCreationTokens, tc.wantCreation)
			}
			if second.CachedPromptTokens < 1024 || second.CachedPromptTokens >= second.PromptTokens {
				t.Fatalf("second call cached %d of %d prompt tokens; want the shared prefix (≥1,024, less than all)",
					second.CachedPromptTokens, second.PromptTokens)
			}
			if second.CacheCreationTokens != 0 {
				t.Fatalf("second call wrote %d tokens to the cache; the prefix was already there", second.CacheCreationTokens)
			}
		})
	}
}

func TestEstimateCostCached(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		model string
		u     llm.Usage
		usd   float64
	}{
		{"openai cached price", "gpt-4o-mini", llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 600_000},
			0.4*0.15 + 0.6*0.075},
		{"anthropic read is a tenth", "claude-sonnet-4-5", llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 1_000_000},
			0.30},
		{"anthropic write is 1.25x", "anthropic:claude-sonnet-4-5", llm.Usage{PromptTokens: 1_000_000, CacheCreationTokens: 1_000_000},
			3.75},
		{"anthropic mixed", "claude-haiku-4-5", llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000,
			CachedPromptTokens: 500_000, CacheCreationTokens: 250_000}, 0.25*1.00 + 0.5*0.10 + 0.25*1.25 + 5.00},
		{"sim", "sim:flaky", llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 1_000_000}, SimCachedInputPrice},
		{"cache fields beyond the prompt are capped", "gpt-4o-mini", llm.Usage{PromptTokens: 100, CachedPromptTokens: 1_000}, 100 * 0.075 / 1e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			usd, known := EstimateCost(tc.model, tc.u)
			if !known || math.Abs(usd-tc.usd) > 1e-9 {
				t.Fatalf("EstimateCost(%q, %+v) = %v, %v; want %v", tc.model, tc.u, usd, known, tc.usd)
			}
			plain, _ := EstimateCost(tc.model, llm.Usage{PromptTokens: tc.u.PromptTokens, CompletionTokens: tc.u.CompletionTokens})
			if tc.u.CacheCreationTokens == 0 && tc.model != "gpt-3.5-turbo" && usd >= plain {
				t.Fatalf("cached reads cost %v, no less than uncached %v", usd, plain)
			}
		})
	}
}
