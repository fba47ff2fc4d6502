package sim

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestRefusalsWordedAsTheRealServers checks each refusal's status and
// body, field by field, against what the real server sends.
func TestRefusalsWordedAsTheRealServers(t *testing.T) {
	t.Parallel()
	user := []map[string]any{{"role": "user", "content": "Invoice ACME"}}
	tests := []struct {
		name    string
		refuses []string
		path    string
		body    map[string]any
		want    string // the error body, compact
	}{
		{"anthropic temperature", []string{RefuseTemperature}, "/v1/messages",
			map[string]any{"model": "claude-opus-4-7", "max_tokens": 100, "temperature": 0, "messages": user},
			`{"error":{"message":"` + "`temperature` is deprecated for this model." + `","type":"invalid_request_error"},"type":"error"}`},
		{"anthropic forced tool", []string{RefuseForcedTool}, "/v1/messages",
			map[string]any{"model": "claude-fable-5-1", "max_tokens": 100, "messages": user,
				"tools": []any{map[string]any{"name": "t", "input_schema": map[string]any{"type": "object"}}}, "tool_choice": map[string]any{"type": "tool", "name": "t"}},
			`{"error":{"message":"tool_choice: type \"tool\" and \"any\" are not supported for this model.","type":"invalid_request_error"},"type":"error"}`},
		{"openai temperature", []string{RefuseTemperature}, "/v1/chat/completions",
			map[string]any{"model": "gpt-5", "temperature": 0, "messages": user},
			`{"error":{"code":"unsupported_value","message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.","param":"temperature","type":"invalid_request_error"}}`},
		{"openai default temperature accepted", []string{RefuseTemperature}, "/v1/chat/completions",
			map[string]any{"model": "gpt-5", "temperature": 1, "messages": user}, ""},
		{"openai system role", []string{RefuseSystemRole}, "/v1/chat/completions",
			map[string]any{"model": "o1-mini", "messages": []map[string]any{{"role": "system", "content": "x"}, {"role": "user", "content": "y"}}},
			`{"error":{"code":"unsupported_value","message":"Unsupported value: 'messages[0].role' does not support 'system' with this model.","param":"messages[0].role","type":"invalid_request_error"}}`},
		{"openai max_tokens", []string{RefuseMaxTokens}, "/v1/chat/completions",
			map[string]any{"model": "o1-mini", "max_tokens": 100, "messages": user},
			`{"error":{"code":"unsupported_parameter","message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","param":"max_tokens","type":"invalid_request_error"}}`},
		{"openai schema keyword", []string{"schema_keyword:minLength"}, "/v1/chat/completions",
			map[string]any{"model": "gpt-4o", "messages": user, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "inv", "strict": true,
				"schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "minLength": 1}}, "required": []string{"a"}, "additionalProperties": false}}}},
			`{"error":{"code":null,"message":"Invalid schema for response_format 'inv': In context=(), 'minLength' is not permitted.","param":"response_format","type":"invalid_request_error"}}`},
		{"gemini responseJsonSchema", []string{RefuseNativeSchema}, "/v1beta/models/gemini-2.0-flash:generateContent",
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "x"}}}},
				"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": map[string]any{"type": "object"}}},
			`{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"responseJsonSchema\" at 'generation_config': Cannot find field.","status":"INVALID_ARGUMENT"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(Profile{Name: "t", FixProbability: 1, Refuses: tc.refuses})
			defer s.Close()
			resp, body := call(t, s, tc.path, tc.body)
			if tc.want == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != 400 || string(compactJSON(t, body)) != tc.want {
				t.Fatalf("status %d body\n%s\nwant\n%s", resp.StatusCode, compactJSON(t, body), tc.want)
			}
		})
	}
}

func TestRefusesValidated(t *testing.T) {
	t.Parallel()
	if _, err := ParseProfile([]byte("name: x\nrefuses: [temprature]\n")); !errors.Is(err, ErrInvalidProfile) {
		t.Fatalf("a misspelt refusal: %v", err)
	}
	if _, err := ParseProfile([]byte("name: x\nrefuses: [temperature, \"schema_keyword:format\"]\n")); err != nil {
		t.Fatal(err)
	}
}

// compactJSON re-encodes a body with sorted keys.
func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	out, _ := json.Marshal(v)
	return out
}
