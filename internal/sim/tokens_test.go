package sim

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// The input is counted as providers count it: a tool's name, description
// and parameters (rendered as OpenAI renders functions, shorter than their
// JSON), message framing, and Anthropic's tool-use system prompt.
func TestPromptTokensCountTools(t *testing.T) {
	t.Parallel()
	_, raw := invoiceSchema(t)
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	schemaJSON := compact.Bytes() // as the request carries it
	msgs := []map[string]any{{"role": "system", "content": "Extract the invoice."}, {"role": "user", "content": fence(testDoc)}}
	tool := func(desc string) map[string]any {
		return map[string]any{
			"model": "gpt-4o-mini", "messages": msgs,
			"tools":       []map[string]any{{"type": "function", "function": map[string]any{"name": "invoice", "description": desc, "parameters": json.RawMessage(schemaJSON)}}},
			"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "invoice"}},
		}
	}
	usage := func(t *testing.T, path string, body map[string]any) int {
		t.Helper()
		s := New(mustProfile(t, "name: plain\n"))
		resp, b := call(t, s, path, body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		m := obj(t, b)
		for _, k := range []string{"prompt_tokens", "input_tokens"} {
			if n, ok := dig(m, "usage", k).(float64); ok {
				return int(n)
			}
		}
		t.Fatalf("no usage in %s", b)
		return 0
	}
	plain := usage(t, "/v1/chat/completions", map[string]any{"model": "gpt-4o-mini", "messages": msgs})
	short := usage(t, "/v1/chat/completions", tool("Record the invoice."))
	long := usage(t, "/v1/chat/completions", tool("Record the invoice. "+strings.Repeat("Every field comes from the document. ", 10)))
	rendered := tokens(len(renderFunction("invoice", "Record the invoice.", schemaJSON)))
	switch {
	case short-plain != rendered:
		t.Errorf("the tool added %d tokens, want its rendering's %d", short-plain, rendered)
	case rendered >= tokens(len(schemaJSON)):
		t.Errorf("the rendering (%d tokens) is not shorter than the schema's JSON (%d)", rendered, tokens(len(schemaJSON)))
	case long-short < 80:
		t.Errorf("a description 370 characters longer added %d tokens", long-short)
	}
	if want := tokens(len("Extract the invoice.")) + tokens(len(fence(testDoc))) + 2*messageFraming + replyPriming; plain != want {
		t.Errorf("messages only: %d tokens, want %d", plain, want)
	}
	anth := func(tools bool) int {
		b := map[string]any{"model": "claude-haiku-4-5", "max_tokens": 1000, "system": "Extract the invoice.",
			"messages": []map[string]any{{"role": "user", "content": fence(testDoc)}}}
		if tools {
			b["tools"] = []map[string]any{{"name": "invoice", "description": "Record the invoice.", "input_schema": json.RawMessage(schemaJSON)}}
			b["tool_choice"] = map[string]any{"type": "tool", "name": "invoice"}
		}
		return usage(t, "/v1/messages", b)
	}
	if d := anth(true) - anth(false); d != anthropicToolPrompt+tokens(len("invoice")+len("Record the invoice.")+len(schemaJSON)) {
		t.Errorf("an Anthropic tool added %d tokens", d)
	}
}

func TestRenderFunction(t *testing.T) {
	t.Parallel()
	got := renderFunction("extract", "Record it.", []byte(`{"type":"object","properties":{
		"name":{"type":"string","description":"full name"},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},
		"age":{"type":["integer","null"],"minimum":0},
		"home":{"$ref":"#/$defs/place"}},
		"required":["name"],"$defs":{"place":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`))
	want := "namespace functions {\n\n// Record it.\ntype extract = (_: {\n  age?: number | null, // minimum: 0\n  home?: {\n    city: string,\n  },\n  // full name\n  name: string,\n  tags?: Array<\"a\" | \"b\">,\n}) => any;\n\n} // namespace functions"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestFnTokenCache: the cached count is the rendering's count, a second
// ask does not render again, a name, description or schema that differs
// is counted afresh, and a full cache starts over.
func TestFnTokenCache(t *testing.T) {
	t.Parallel()
	var c fnTokenCache
	calls := 0
	count := func(s string) int { calls++; return len(s) }
	schemaA := []byte(`{"type":"object","properties":{"total":{"type":"number","description":"the total"}}}`)
	schemaB := []byte(`{"type":"object","properties":{"id":{"type":"string"}}}`)
	cases := []struct {
		name, desc string
		schema     []byte
		renders    int // calls of count after this ask
	}{
		{"invoice", "Record it.", schemaA, 1},
		{"invoice", "Record it.", schemaA, 1},
		{"invoice", "Record it!", schemaA, 2},
		{"invoicex", "Record it.", schemaA, 3},
		{"invoice", "Record it.", schemaB, 4},
		{"invoice", "Record it.", schemaA, 4},
	}
	for i, tc := range cases {
		got := c.tokens(tc.name, tc.desc, tc.schema, count)
		if want := len(renderFunction(tc.name, tc.desc, tc.schema)); got != want {
			t.Errorf("ask %d: %d tokens, want %d", i, got, want)
		}
		if calls != tc.renders {
			t.Errorf("ask %d: rendered %d times in all, want %d", i, calls, tc.renders)
		}
	}
	// The last entry keeps its own copy of a schema read from a buffer
	// the next request reuses.
	buf := append([]byte(nil), schemaB...)
	c.tokens("reused", "", buf, count)
	rendered := calls
	copy(buf, `{"TYPE"`)
	if got, want := c.tokens("reused", "", buf, count), len(renderFunction("reused", "", buf)); got != want || calls != rendered+1 {
		t.Errorf("after the buffer changed: %d tokens (want %d), %d renders (want %d)", got, want, calls, rendered+1)
	}
	for i := range fnTokenCacheMax {
		c.tokens(strconv.Itoa(i), "", schemaB, count)
	}
	if len(c.m) > fnTokenCacheMax {
		t.Errorf("cache holds %d entries, want at most %d", len(c.m), fnTokenCacheMax)
	}
}
