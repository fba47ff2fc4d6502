package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// openAIResponseSchema compiles the official CreateChatCompletionResponse
// schema from the shared test data.
func openAIResponseSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const file = "../../../shared/testdata/openai-chat-completions/CreateChatCompletionResponse.closure.json"
	c := jsonschema.NewCompiler()
	s, err := c.Compile(file + "#/components/schemas/CreateChatCompletionResponse")
	if err != nil {
		t.Fatalf("compile the OpenAI response schema (%s): %v", file, err)
	}
	return s
}

// geminiInvoice is a Gemini-style responseSchema (upper-case types,
// nullable, int64 limits as strings) for a small invoice.
const geminiInvoice = `{"type":"OBJECT","properties":{
 "invoice_number":{"type":"STRING","minLength":"1"},
 "currency":{"type":"STRING","format":"enum","enum":["EUR","USD"]},
 "due_date":{"type":"STRING","nullable":true},
 "total":{"type":"NUMBER","minimum":0}},
 "required":["invoice_number","currency","total"],"propertyOrdering":["invoice_number","currency","due_date","total"]}`

const geminiInvoiceJSONSchema = `{"type":"object","additionalProperties":false,"properties":{
 "invoice_number":{"type":"string","minLength":1},
 "currency":{"type":"string","enum":["EUR","USD"]},
 "due_date":{"type":["string","null"]},
 "total":{"type":"number","minimum":0}},
 "required":["invoice_number","currency","total"]}`

func TestRoutesAnswerValidJSONInTheirShape(t *testing.T) {
	inv, invRaw := invoiceSchema(t)
	small := mustCompile(t, geminiInvoiceJSONSchema)
	oaiResp := openAIResponseSchema(t)
	prompt := promptWithSchema(invRaw, testDoc)
	bare := fence(testDoc) // for APIs that carry the schema natively

	type answerOf func(t *testing.T, body []byte) (text, finish string)
	openAI := func(t *testing.T, body []byte) (string, string) {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := oaiResp.Validate(v); err != nil {
			t.Errorf("response breaks the official OpenAI response schema: %v", err)
		}
		text, _, finish := openAIAnswer(t, body)
		if u := obj(t, body)["usage"].(map[string]any); u["prompt_tokens"].(float64) < 1 || u["completion_tokens"].(float64) < 1 ||
			u["total_tokens"].(float64) != u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) {
			t.Errorf("usage = %v", u)
		}
		return text, finish
	}
	anthropic := func(t *testing.T, body []byte) (string, string) {
		m := obj(t, body)
		if m["type"] != "message" || m["role"] != "assistant" || dig(m, "usage", "input_tokens").(float64) < 1 || dig(m, "usage", "output_tokens").(float64) < 1 {
			t.Errorf("not an Anthropic message: %s", body)
		}
		block := dig(m, "content", 0)
		if dig(block, "type") == "tool_use" {
			if dig(block, "name") != "record_invoice" {
				t.Errorf("tool_use name = %v", dig(block, "name"))
			}
			return str(dig(block, "input")), str(m["stop_reason"])
		}
		return str(dig(block, "text")), str(m["stop_reason"])
	}
	ollama := func(t *testing.T, body []byte) (string, string) {
		m := obj(t, body)
		if m["done"] != true || m["eval_count"].(float64) < 1 || m["prompt_eval_count"].(float64) < 1 {
			t.Errorf("not a final Ollama chat response: %s", body)
		}
		return str(dig(m, "message", "content")), str(m["done_reason"])
	}
	ollamaStream := func(t *testing.T, body []byte) (string, string) {
		var text, reason string
		sc := bufio.NewScanner(bytes.NewReader(body))
		lines := 0
		for sc.Scan() {
			m := obj(t, sc.Bytes())
			text += str(dig(m, "message", "content"))
			if m["done"] == true {
				reason = str(m["done_reason"])
			}
			lines++
		}
		if lines != 2 {
			t.Errorf("stream has %d lines, want a chunk and a final object", lines)
		}
		return text, reason
	}
	gemini := func(t *testing.T, body []byte) (string, string) {
		m := obj(t, body)
		if dig(m, "usageMetadata", "totalTokenCount").(float64) < 2 || dig(m, "candidates", 0, "content", "role") != "model" {
			t.Errorf("not a Gemini response: %s", body)
		}
		return str(dig(m, "candidates", 0, "content", "parts", 0, "text")), str(dig(m, "candidates", 0, "finishReason"))
	}

	tests := []struct {
		name       string
		path       string
		body       string
		answer     answerOf
		wantFinish string
		small      bool // validated against the small schema, not the invoice
	}{
		{"openai text, schema in prompt", "/v1/chat/completions",
			jsonOf(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": prompt}}}), openAI, "stop", false},
		{"openai content parts", "/v1/chat/completions",
			jsonOf(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}}}), openAI, "stop", false},
		{"openai json_schema strict", "/v1/chat/completions",
			jsonOf(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": bare}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "invoice", "strict": true, "schema": json.RawMessage(invRaw)}}}), openAI, "stop", false},
		{"openai forced tool", "/v1/chat/completions",
			jsonOf(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": bare}},
				"tools":       []any{map[string]any{"type": "function", "function": map[string]any{"name": "record_invoice", "parameters": json.RawMessage(invRaw)}}},
				"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "record_invoice"}}}), openAI, "tool_calls", false},
		{"anthropic text, schema in prompt", "/v1/messages",
			jsonOf(map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "system": "You extract data.", "messages": []any{map[string]any{"role": "user", "content": prompt}}}), anthropic, "end_turn", false},
		{"anthropic forced tool", "/v1/messages",
			jsonOf(map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "messages": []any{map[string]any{"role": "user", "content": bare}},
				"tools":       []any{map[string]any{"name": "record_invoice", "input_schema": json.RawMessage(invRaw)}},
				"tool_choice": map[string]any{"type": "tool", "name": "record_invoice"}}), anthropic, "tool_use", false},
		{"anthropic output_format", "/v1/messages",
			jsonOf(map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "messages": []any{map[string]any{"role": "user", "content": bare}},
				"output_format": map[string]any{"type": "json_schema", "schema": json.RawMessage(invRaw)}}), anthropic, "end_turn", false},
		{"anthropic output_config.format", "/v1/messages",
			jsonOf(map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "messages": []any{map[string]any{"role": "user", "content": bare}},
				"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": json.RawMessage(invRaw)}}}), anthropic, "end_turn", false},
		{"ollama format schema", "/api/chat",
			jsonOf(map[string]any{"model": "llama3.1:8b", "stream": false, "messages": []any{map[string]any{"role": "user", "content": bare}}, "format": json.RawMessage(invRaw)}), ollama, "stop", false},
		{"ollama json, schema in prompt, streamed", "/api/chat",
			jsonOf(map[string]any{"model": "llama3.1:8b", "messages": []any{map[string]any{"role": "user", "content": prompt}}, "format": "json"}), ollamaStream, "stop", false},
		{"gemini responseSchema", "/v1beta/models/gemini-2.5-flash:generateContent",
			jsonOf(map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": bare}}}},
				"generationConfig": map[string]any{"responseMimeType": "application/json", "responseSchema": json.RawMessage(geminiInvoice)}}), gemini, "STOP", true},
		{"gemini responseJsonSchema", "/v1beta/models/gemini-2.5-flash:generateContent",
			jsonOf(map[string]any{"contents": []any{map[string]any{"parts": []any{map[string]any{"text": bare}}}},
				"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": json.RawMessage(geminiInvoiceJSONSchema)}}), gemini, "STOP", true},
		{"gemini text, schema in prompt", "/v1beta/models/gemini-2.5-flash:generateContent",
			jsonOf(map[string]any{"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "Answer with JSON."}}},
				"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}}), gemini, "STOP", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(builtins["clean"], WithSeed(7))
			resp, body := call(t, s, tt.path, tt.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			text, finish := tt.answer(t, body)
			if finish != tt.wantFinish {
				t.Errorf("finish reason %q, want %q", finish, tt.wantFinish)
			}
			sch := inv
			if tt.small {
				sch = small
			}
			if vs := validate(t, sch, text); vs != nil {
				t.Errorf("answer is not schema-valid: %s\n%s", keywords(vs), text)
			}
			st := s.Stats()
			if st.Requests != 1 || st.ByStatus[200] != 1 || st.PromptTokens < 1 || st.CompletionTokens < 1 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestAnswersComeFromTheDocument(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(builtins["clean"])
	_, body := call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
	text, _, _ := openAIAnswer(t, body)
	v := obj(t, []byte(text))
	// issue_date has format date: the document's date is the plausible one.
	if v["issue_date"] != "2026-03-19" {
		t.Errorf("issue_date = %v, want the document's date 2026-03-19 (answer %s)", v["issue_date"], text)
	}
	// vendor.address is an unconstrained string: words of the document.
	addr := str(dig(v, "vendor", "address"))
	if addr != "" && !strings.Contains(testDoc, strings.Fields(addr)[0]) {
		t.Errorf("vendor.address %q is not taken from the document", addr)
	}
}

func TestExampleInPromptGetsSameShape(t *testing.T) {
	example := `{"title": "A study of things", "year": 2021, "score": 4.5, "open_access": true, "status": "published", "authors": ["Ann Lee", "Bo Chen"], "contact_email": "ann@uni.example"}`
	s := New(builtins["clean"])
	_, body := call(t, s, "/v1/chat/completions", map[string]any{
		"model":    "m",
		"messages": []any{map[string]any{"role": "user", "content": "Answer like this:\n<example>\n" + example + "\n</example>\n" + fence(testDoc)}},
	})
	text, _, _ := openAIAnswer(t, body)
	got, want := obj(t, []byte(text)), obj(t, []byte(example))
	if len(got) != len(want) {
		t.Fatalf("answer has keys %v, example %v", got, want)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("key %q missing from %s", k, text)
			continue
		}
		if jsonKind(g) != jsonKind(w) {
			t.Errorf("%s: %T, want %T", k, g, w)
		}
	}
	if got["status"] != "published" {
		t.Errorf("status = %v; an enum-like word must be kept", got["status"])
	}
	if e := str(got["contact_email"]); !strings.Contains(e, "@") {
		t.Errorf("contact_email = %q, want an address", e)
	}
}

func TestEmptyDocumentIsUnextractable(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(builtins["clean"])
	_, body := call(t, s, "/v1/chat/completions", openAIChat(raw, "   "))
	text, _, _ := openAIAnswer(t, body)
	if !strings.HasPrefix(text, `{"_unextractable":`) {
		t.Errorf("answer = %s, want {\"_unextractable\": ...}", text)
	}
}

func TestMalformedRequestsGetProviderShapedErrors(t *testing.T) {
	openAIErr := func(typ string) func(*testing.T, map[string]any) {
		return func(t *testing.T, m map[string]any) {
			if dig(m, "error", "type") != typ || str(dig(m, "error", "message")) == "" {
				t.Errorf("not an OpenAI %s error: %v", typ, m)
			}
			if _, ok := dig(m, "error").(map[string]any)["param"]; !ok {
				t.Errorf("OpenAI error without param: %v", m)
			}
		}
	}
	anthropicErr := func(typ string) func(*testing.T, map[string]any) {
		return func(t *testing.T, m map[string]any) {
			if m["type"] != "error" || dig(m, "error", "type") != typ || str(dig(m, "error", "message")) == "" {
				t.Errorf("not an Anthropic %s error: %v", typ, m)
			}
		}
	}
	ollamaErr := func(t *testing.T, m map[string]any) {
		if str(m["error"]) == "" || len(m) != 1 {
			t.Errorf("not an Ollama error: %v", m)
		}
	}
	geminiErr := func(status string, code float64) func(*testing.T, map[string]any) {
		return func(t *testing.T, m map[string]any) {
			if dig(m, "error", "status") != status || dig(m, "error", "code") != code {
				t.Errorf("not a Gemini %s error: %v", status, m)
			}
		}
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		check  func(*testing.T, map[string]any)
	}{
		{"openai bad json", "POST", "/v1/chat/completions", `{"model": "x", "messages": [`, 400, openAIErr("invalid_request_error")},
		{"openai missing model", "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, 400, openAIErr("invalid_request_error")},
		{"openai bad role", "POST", "/v1/chat/completions", `{"model": "x", "messages": [{"role": "robot", "content": "hi"}]}`, 400, openAIErr("invalid_request_error")},
		{"openai empty body", "POST", "/v1/chat/completions", ``, 400, openAIErr("invalid_request_error")},
		{"openai unknown route", "POST", "/v1/embeddings", `{}`, 404, openAIErr("invalid_request_error")},
		{"openai completions missing model", "POST", "/v1/completions", `{"prompt": "x"}`, 400, openAIErr("invalid_request_error")},
		{"openai wrong method", "GET", "/v1/chat/completions", ``, 405, openAIErr("invalid_request_error")},
		{"openai bad native schema", "POST", "/v1/chat/completions",
			`{"model": "x", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": 12}}}}`, 400, openAIErr("invalid_request_error")},
		{"anthropic missing max_tokens", "POST", "/v1/messages", `{"model": "claude", "messages": [{"role": "user", "content": "hi"}]}`, 400, anthropicErr("invalid_request_error")},
		{"anthropic missing model", "POST", "/v1/messages", `{"max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}`, 400, anthropicErr("invalid_request_error")},
		{"anthropic bad json", "POST", "/v1/messages", `not json`, 400, anthropicErr("invalid_request_error")},
		{"anthropic unknown route", "POST", "/v1/messages/count_tokens", `{}`, 404, anthropicErr("not_found_error")},
		{"ollama missing model", "POST", "/api/chat", `{"messages": []}`, 400, ollamaErr},
		{"ollama bad format", "POST", "/api/chat", `{"model": "m", "format": 12, "messages": []}`, 400, ollamaErr},
		{"ollama unknown route", "POST", "/api/embed", `{}`, 404, ollamaErr},
		{"ollama generate not raw", "POST", "/api/generate", `{"model": "m", "prompt": "x", "stream": false}`, 400, ollamaErr},
		{"gemini missing model", "POST", "/v1beta/models/:generateContent", `{"contents": [{"parts": [{"text": "hi"}]}]}`, 400, geminiErr("INVALID_ARGUMENT", 400)},
		{"gemini no contents", "POST", "/v1beta/models/gemini-2.5-flash:generateContent", `{}`, 400, geminiErr("INVALID_ARGUMENT", 400)},
		{"gemini bad mime type", "POST", "/v1beta/models/g:generateContent", `{"contents": [{"parts": [{"text": "hi"}]}], "generationConfig": {"responseMimeType": "text/csv"}}`, 400, geminiErr("INVALID_ARGUMENT", 400)},
		{"gemini unknown route", "POST", "/v1beta/models/g:streamGenerateContent", `{}`, 404, geminiErr("NOT_FOUND", 404)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(builtins["clean"])
			req, err := http.NewRequest(tt.method, "http://sim"+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: s.Transport()}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatalf("error body is not JSON: %v", err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %v", resp.StatusCode, tt.status, m)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			tt.check(t, m)
			if got := s.Stats().ByStatus[tt.status]; got != 1 {
				t.Errorf("stats count %d responses with status %d, want 1", got, tt.status)
			}
		})
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func TestUnconstrainedNumbersArePlausible(t *testing.T) {
	// A provider form that lost the original bounds, as strict forms do.
	const form = `{"type":"object","required":["items","year"],"properties":{
		"year":{"type":"integer"},
		"items":{"type":"array","items":{"type":"object","required":["quantity","unit_price"],
			"properties":{"quantity":{"type":"number"},"unit_price":{"type":"number"}}}}}}`
	s := New(builtins["clean"])
	for i := range 20 {
		_, body := call(t, s, "/v1/messages", map[string]any{"model": "c", "max_tokens": 4096,
			"messages":      []any{map[string]any{"role": "user", "content": fence(fmt.Sprintf("%s %d", testDoc, i))}},
			"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": json.RawMessage(form)}}})
		v := obj(t, []byte(str(dig(obj(t, body), "content", 0, "text"))))
		if y := v["year"].(float64); y < 1990 || y >= 2030 || y != float64(int(y)) {
			t.Errorf("year = %v", y)
		}
		for _, it := range v["items"].([]any) {
			for _, k := range []string{"quantity", "unit_price"} {
				if n, ok := dig(it, k).(float64); ok && n <= 0 {
					t.Errorf("%s = %v, want a positive number", k, n)
				}
			}
		}
	}
}
