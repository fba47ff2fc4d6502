package sim

import (
	"strings"
	"testing"
)

// TestPromptCacheReporting sends two requests sharing a long prefix to each
// API and checks the second reports the prefix as cached, in that API's
// usage fields and by its rules.
func TestPromptCacheReporting(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Every value comes from the document. ", 170) // ≈1,600 tokens
	short := "Extract the invoice."
	sysBlock := func(text string, mark bool) []map[string]any {
		b := map[string]any{"type": "text", "text": text}
		if mark {
			b["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		return []map[string]any{b}
	}
	openAI := func(system string) func(doc string) (string, any) {
		return func(doc string) (string, any) {
			return "/v1/chat/completions", map[string]any{"model": "gpt-4o-mini", "messages": []map[string]any{
				{"role": "system", "content": system}, {"role": "user", "content": fence(doc)}}}
		}
	}
	anthropic := func(system string, mark bool) func(doc string) (string, any) {
		return func(doc string) (string, any) {
			return "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 500,
				"system": sysBlock(system, mark), "messages": []map[string]any{{"role": "user", "content": fence(doc)}}}
		}
	}
	gemini := func(doc string) (string, any) {
		return "/v1beta/models/gemini-2.5-flash:generateContent", map[string]any{
			"systemInstruction": map[string]any{"parts": []map[string]any{{"text": long}}},
			"contents":          []map[string]any{{"role": "user", "parts": []map[string]any{{"text": fence(doc)}}}}}
	}
	ollama := func(doc string) (string, any) {
		return "/api/chat", map[string]any{"model": "llama3.1", "stream": false, "messages": []map[string]any{
			{"role": "system", "content": long}, {"role": "user", "content": fence(doc)}}}
	}
	// cached reads a response's cache fields: read, written, and the
	// prompt total (Anthropic's input_tokens plus both cache fields).
	openAIUsage := func(m map[string]any) (int, int, int) {
		return num(dig(m, "usage", "prompt_tokens_details", "cached_tokens")), 0, num(dig(m, "usage", "prompt_tokens"))
	}
	anthropicUsage := func(m map[string]any) (int, int, int) {
		r, w := num(dig(m, "usage", "cache_read_input_tokens")), num(dig(m, "usage", "cache_creation_input_tokens"))
		return r, w, num(dig(m, "usage", "input_tokens")) + r + w
	}
	geminiUsage := func(m map[string]any) (int, int, int) {
		return num(dig(m, "usageMetadata", "cachedContentTokenCount")), 0, num(dig(m, "usageMetadata", "promptTokenCount"))
	}
	ollamaUsage := func(m map[string]any) (int, int, int) { return 0, 0, num(dig(m, "prompt_eval_count")) }
	tests := []struct {
		name                string
		req                 func(doc string) (string, any)
		usage               func(map[string]any) (read, written, prompt int)
		firstWrite, hit     bool
		secondReadAtLeast   int
		secondReadMultiples int // reads come in steps of this many tokens past 1,024 (0: any)
	}{
		{"openai long prefix", openAI(long), openAIUsage, false, true, 1024, cacheStep},
		{"openai short prompt", openAI(short), openAIUsage, false, false, 0, 0},
		{"anthropic marked", anthropic(long, true), anthropicUsage, true, true, 1024, 0},
		{"anthropic unmarked", anthropic(long, false), anthropicUsage, false, false, 0, 0},
		{"anthropic marked but short", anthropic(short, true), anthropicUsage, false, false, 0, 0},
		{"gemini implicit", gemini, geminiUsage, false, true, 1024, cacheStep},
		{"ollama none", ollama, ollamaUsage, false, false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(Profile{Name: "clean"})
			t.Cleanup(s.Close)
			get := func(doc string) (int, int, int) {
				path, body := tc.req(doc)
				resp, b := call(t, s, path, body)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				return tc.usage(obj(t, b))
			}
			r1, w1, _ := get("Invoice INV-1 from ACME, total 12.50.")
			r2, w2, p2 := get("Invoice INV-2 from Globex, total 99.00.")
			if r1 != 0 {
				t.Fatalf("first request read %d cached tokens from an empty cache", r1)
			}
			if (w1 > 0) != tc.firstWrite {
				t.Fatalf("first request wrote %d tokens; want a write: %v", w1, tc.firstWrite)
			}
			if w2 != 0 {
				t.Fatalf("second request wrote %d tokens again", w2)
			}
			if (r2 > 0) != tc.hit || r2 < tc.secondReadAtLeast || r2 >= max(p2, 1) && tc.hit {
				t.Fatalf("second request read %d of %d prompt tokens; want hit %v, at least %d, less than the prompt",
					r2, p2, tc.hit, tc.secondReadAtLeast)
			}
			if tc.secondReadMultiples > 0 && (r2-cacheMinTokens)%tc.secondReadMultiples != 0 {
				t.Fatalf("read %d tokens, not 1,024 plus a multiple of %d", r2, tc.secondReadMultiples)
			}
			st := s.Stats()
			if st.CachedPromptTokens != int64(r2) || st.CacheCreationTokens != int64(w1) {
				t.Fatalf("stats cached %d created %d, want %d %d", st.CachedPromptTokens, st.CacheCreationTokens, r2, w1)
			}
		})
	}
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// TestLabelledSchema checks the simulator finds a schema where instructor's
// ports put it ("json schema: {...}" in the system prompt) and answers with
// its shape, and ignores the label without a JSON object after it.
func TestLabelledSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"Given a prompt...\n  description: x\n  json schema: {\"type\":\"object\",\"required\":[\"a\"]}\n  ", `{"type":"object","required":["a"]}`},
		{"json schema: not json", ""},
		{"json schema: [1, 2]", ""},
		{"no label here", ""},
	}
	for _, tc := range tests {
		if got := labelledSchema(tc.text); got != tc.want {
			t.Errorf("labelledSchema(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	s := New(Profile{Name: "clean"})
	t.Cleanup(s.Close)
	sys := "Return JSON.\njson schema: " + `{"type":"object","additionalProperties":false,"required":["vendor_code"],"properties":{"vendor_code":{"type":"string"}}}`
	_, b := call(t, s, "/v1/chat/completions", map[string]any{"model": "m", "response_format": map[string]any{"type": "json_object"},
		"messages": []map[string]any{{"role": "system", "content": sys}, {"role": "user", "content": "Invoice from ACME."}}})
	text, _, _ := openAIAnswer(t, b)
	if !strings.Contains(text, `"vendor_code"`) {
		t.Fatalf("answer %s lacks the labelled schema's field", text)
	}
}
