package providers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

func TestHasObjectRoot(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"type":"object","properties":{"a":{}}}`, true},
		{`{"properties":{"a":{}}}`, true},
		{`{"type":"array","items":{}}`, false},
		{`{"type":["object","null"]}`, false},
		{`{"anyOf":[{"type":"object"},{"type":"string"}]}`, false},
		{`{"type":"string"}`, false},
		{`true`, false},
	}
	for _, tc := range tests {
		if got := hasObjectRoot([]byte(tc.doc)); got != tc.want {
			t.Errorf("hasObjectRoot(%s) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

func TestUnwrapAnswer(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"items":[1,2]}`, `[1,2]`},
		{`{"items": "x"}`, `"x"`},
		{`{"value": 42}`, `42`},                                // a scalar root as schema.WireWrapped names it
		{`{"items":[1],"other":2}`, `{"items":[1],"other":2}`}, // not the wrapper: left alone
		{`{"items":[1,`, `{"items":[1,`},                       // truncated: left for the engine
		{`[1,2]`, `[1,2]`},
		{"", ""},
	}
	for _, tc := range tests {
		if got := unwrapAnswer(tc.in); got != tc.want {
			t.Errorf("unwrapAnswer(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func arraySchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(`{
		"$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["sku", "qty"], "additionalProperties": false}},
		"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1
	}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestArraySchemaIsWrappedForObjectOnlyAPIs(t *testing.T) {
	reqSchema := openAPIClosure(t, "CreateChatCompletionRequest.closure.json")
	arr := arraySchema(t)
	const answer = `{"items":[{"sku":"A-1","qty":2}]}`

	t.Run("openai strict", func(t *testing.T) {
		body := `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":` + jsonString(answer) + `,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
		srv := newCanned(t, 200, nil, body)
		p := mustNew(t, "openai:gpt-4o-mini", env{"OPENAI_API_KEY": "sk-x"}, WithBaseURL(srv.URL+"/v1"))
		resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeStrict, Schema: arr})
		if err != nil {
			t.Fatal(err)
		}
		if vs, err := reqSchema.ValidateJSON(srv.last(t).Body); err != nil || vs != nil {
			t.Fatalf("request violates the official schema: %v %+v", err, vs)
		}
		sent := srv.lastJSON(t)["response_format"].(map[string]any)["json_schema"].(map[string]any)["schema"].(map[string]any)
		items := sent["properties"].(map[string]any)[wrapKey].(map[string]any)
		if sent["type"] != "object" || items["type"] != "array" {
			t.Fatalf("sent schema %v", sent)
		}
		if !strings.Contains(string(srv.last(t).Body), `"sku"`) {
			t.Fatal("the $defs item was lost in wrapping")
		}
		if resp.Text != `[{"sku":"A-1","qty":2}]` {
			t.Fatalf("Text = %q, want the unwrapped array", resp.Text)
		}
		assertValid(t, arr, resp.Text)
	})

	t.Run("anthropic tools", func(t *testing.T) {
		body := `{"id":"m","type":"message","role":"assistant","model":"claude-3-5-haiku-latest","content":[{"type":"tool_use","id":"t","name":"response","input":` + answer + `}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`
		srv := newCanned(t, 200, nil, body)
		p := mustNew(t, "anthropic:claude-3-5-haiku-latest", env{"ANTHROPIC_API_KEY": "k-123456"}, WithBaseURL(srv.URL))
		resp, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeTools, Schema: arr})
		if err != nil {
			t.Fatal(err)
		}
		in := srv.lastJSON(t)["tools"].([]any)[0].(map[string]any)["input_schema"].(map[string]any)
		if in["type"] != "object" {
			t.Fatalf("input_schema %v", in)
		}
		assertValid(t, arr, resp.Text)
	})

	t.Run("gemini takes arrays as they are", func(t *testing.T) {
		srv := newCanned(t, 200, nil, `{"candidates":[{"content":{"parts":[{"text":"[{\"sku\":\"A\",\"qty\":1}]"}]},"finishReason":"STOP"}]}`)
		p := mustNew(t, "gemini:gemini-2.5-flash", env{"GEMINI_API_KEY": "k-123456"}, WithBaseURL(srv.URL))
		if _, err := p.Chat(context.Background(), llm.Request{Messages: conversation(), Mode: llm.ModeStrict, Schema: arr}); err != nil {
			t.Fatal(err)
		}
		rs := srv.lastJSON(t)["generationConfig"].(map[string]any)["responseJsonSchema"].(map[string]any)
		if rs["type"] != "array" {
			t.Fatalf("responseJsonSchema %v", rs)
		}
	})

	t.Run("against the simulator", func(t *testing.T) {
		p := simOpenAI(t, "clean")
		for _, mode := range []llm.Mode{llm.ModeStrict, llm.ModeTools} {
			resp, err := p.Chat(context.Background(), llm.Request{Messages: simPrompt(arr, "2 of A-1"), Mode: mode, Schema: arr})
			if err != nil {
				t.Fatal(err)
			}
			assertValid(t, arr, resp.Text)
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestAutoWithoutSchema(t *testing.T) {
	tests := []struct {
		spec string
		want llm.Mode
	}{
		{"openai:gpt-4o", llm.ModeJSON},
		{"anthropic:claude-haiku-4-5", llm.ModeText},
		{"lmstudio:m", llm.ModeText},
	}
	for _, tc := range tests {
		p := mustNew(t, tc.spec, env{}, WithBaseURL("http://127.0.0.1:1"))
		got, err := baseOf(t, p).prepare(llm.Request{Messages: conversation(), Mode: llm.ModeAuto})
		if err != nil || got != tc.want {
			t.Errorf("%s: auto without a schema = %s, %v; want %s", tc.spec, got, err, tc.want)
		}
	}
}
