package providers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/schema"
)

// Minimal successful bodies of each API, for the request-shape tests.
const (
	antOK    = `{"type":"message","model":"m","content":[{"type":"text","text":"{\"name\":\"A\",\"total\":1,\"status\":\"paid\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":5}}`
	oaiOK    = `{"model":"m","choices":[{"message":{"content":"{\"name\":\"A\",\"total\":1,\"status\":\"paid\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`
	geminiOK = `{"candidates":[{"content":{"parts":[{"text":"{\"name\":\"A\",\"total\":1,\"status\":\"paid\"}"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":5}}`
)

// TestRequestFormsByModel asserts, field by field, the body each model is
// sent in each mode: what its server is documented to take, and for a
// model no table knows, the family's safest form.
func TestRequestFormsByModel(t *testing.T) {
	t.Parallel()
	mapSchema, err := schema.Compile([]byte(`{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}},"required":["tags"]}`))
	if err != nil {
		t.Fatal(err)
	}
	const absent = "<absent>"
	tests := []struct {
		name, spec, reply string
		mode              llm.Mode
		sch               *schema.Schema
		// want maps a JSON pointer into the body to its JSON encoding, or
		// absent.
		want map[string]string
	}{
		{"claude 3.5 forced tool with temperature", "anthropic:claude-3-5-haiku-latest", antOK, llm.ModeTools, nil, map[string]string{
			"/temperature": `0`, "/tool_choice": `{"name":"response","type":"tool"}`, "/tools/0/strict": absent, "/output_config": absent}},
		{"claude opus 4.6 strict output_config with temperature", "anthropic:claude-opus-4-6", antOK, llm.ModeStrict, nil, map[string]string{
			"/temperature": `0`, "/output_config/format/type": `"json_schema"`, "/output_config/format/schema/type": `"object"`, "/tools": absent}},
		{"claude opus 4.7 no temperature, forced strict tool", "anthropic:claude-opus-4-7", antOK, llm.ModeTools, nil, map[string]string{
			"/temperature": absent, "/tool_choice": `{"name":"response","type":"tool"}`, "/tools/0/strict": `true`}},
		{"claude fable 5.1 tool offered, not forced", "anthropic:claude-fable-5-1", antOK, llm.ModeTools, nil, map[string]string{
			"/temperature": absent, "/tool_choice": `{"type":"auto"}`, "/tools/0/strict": `true`, "/tools/0/name": `"response"`}},
		{"claude sonnet 5 structured output", "anthropic:claude-sonnet-5-20260901", antOK, llm.ModeAuto, nil, map[string]string{
			"/temperature": absent, "/output_config/format/type": `"json_schema"`, "/tools": absent}},
		{"unknown claude alias: safest form", "anthropic:company-default-claude", antOK, llm.ModeAuto, nil, map[string]string{
			"/temperature": absent, "/tool_choice": `{"type":"auto"}`, "/tools/0/strict": absent, "/output_config": absent}},
		{"gpt-5.4-mini dotted reasoning name", "openai:gpt-5.4-mini", oaiOK, llm.ModeStrict, nil, map[string]string{
			"/temperature": absent, "/max_completion_tokens": `100`, "/response_format/type": `"json_schema"`, "/response_format/json_schema/strict": `true`}},
		{"gpt-4o temperature 0 and strict tool", "openai:gpt-4o", oaiOK, llm.ModeTools, nil, map[string]string{
			"/temperature": `0`, "/tools/0/function/strict": `true`, "/tool_choice/function/name": `"response"`}},
		{"unknown openai model: no temperature", "openai:gpt-7-preview", oaiOK, llm.ModeJSON, nil, map[string]string{
			"/temperature": absent, "/response_format/type": `"json_object"`}},
		{"o1-mini: system prompt as a user turn", "openai:o1-mini", oaiOK, llm.ModeText, nil, map[string]string{
			"/temperature": absent, "/messages/0/role": `"user"`, "/messages/0/content": `"You extract data as JSON."`}},
		{"groq tools: strict never sent", "groq:openai/gpt-oss-120b", oaiOK, llm.ModeTools, nil, map[string]string{
			"/temperature": `0`, "/tools/0/function/strict": absent, "/max_tokens": `100`}},
		{"gemini 2.5 full JSON Schema", "gemini:gemini-2.5-flash", geminiOK, llm.ModeStrict, mapSchema, map[string]string{
			"/generationConfig/responseJsonSchema/properties/tags/additionalProperties": `{"type":"string"}`,
			"/generationConfig/responseSchema":                                          absent, "/generationConfig/responseMimeType": `"application/json"`}},
		{"gemini 2.0 OpenAPI subset", "gemini:gemini-2.0-flash", geminiOK, llm.ModeStrict, nil, map[string]string{
			"/generationConfig/responseSchema/type": `"OBJECT"`, "/generationConfig/responseJsonSchema": absent}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCanned(t, 200, nil, tc.reply)
			p := mustNew(t, tc.spec, env{}, WithBaseURL(srv.URL), WithAPIKey("k-123456"))
			sch := tc.sch
			if sch == nil {
				sch = testSchema(t)
			}
			if _, err := p.Chat(t.Context(), llm.Request{Messages: conversation(), Mode: tc.mode, Schema: sch, MaxTokens: 100}); err != nil {
				t.Fatal(err)
			}
			body := srv.lastJSON(t)
			for ptr, want := range tc.want {
				got := absent
				if v, ok := lookup(body, ptr); ok {
					b, _ := json.Marshal(v)
					got = string(b)
				}
				if got != want {
					t.Errorf("%s = %s, want %s", ptr, got, want)
				}
			}
		})
	}
}

// lookup follows a JSON pointer (without escapes) into a decoded body.
func lookup(v any, ptr string) (any, bool) {
	for _, tok := range splitPointer(ptr) {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[tok]; !ok {
				return nil, false
			}
		case []any:
			i := 0
			for _, r := range tok {
				i = i*10 + int(r-'0')
			}
			if i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func splitPointer(ptr string) []string {
	var out []string
	cur := ""
	for _, r := range ptr[1:] {
		if r == '/' {
			out = append(out, cur)
			cur = ""
			continue
		}
		cur += string(r)
	}
	return append(out, cur)
}

// TestRefusedPart reads refusals as the real servers word them.
func TestRefusedPart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   llm.Adjustment
	}{
		{"anthropic temperature deprecated", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"` + "`temperature` is deprecated for this model." + `"},"request_id":"req_011CdiGoqGztGDh6yhEmTzLF"}`, llm.AdjustNoTemperature},
		{"openai temperature 0", 400, `{"error":{"message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}`, llm.AdjustNoTemperature},
		{"openai temperature parameter", 400, `{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}`, llm.AdjustNoTemperature},
		{"anthropic forced tool", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice: type \"tool\" and \"any\" are not supported for this model."},"request_id":"req_011CedBqNQu6djk3P3sSGdTe"}`, llm.AdjustToolAuto},
		{"o1 system role", 400, `{"error":{"message":"Unsupported value: 'messages[0].role' does not support 'system' with this model.","type":"invalid_request_error","param":"messages[0].role","code":"unsupported_value"}}`, llm.AdjustNoSystemRole},
		{"gemma system instruction", 400, `{"error":{"code":400,"message":"Developer instruction is not enabled for models/gemma-3-27b-it","status":"INVALID_ARGUMENT"}}`, llm.AdjustNoSystemRole},
		{"anthropic strict tool", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.custom.strict: Extra inputs are not permitted"}}`, llm.AdjustNoStrictTool},
		{"openai json_schema", 400, `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}`, llm.AdjustNoNativeSchema},
		{"anthropic output_config", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"output_config: Extra inputs are not permitted"}}`, llm.AdjustNoNativeSchema},
		{"gemini responseJsonSchema", 400, `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"responseJsonSchema\" at 'generation_config': Cannot find field.","status":"INVALID_ARGUMENT"}}`, llm.AdjustNoNativeSchema},
		{"openai schema keyword", 400, `{"error":{"message":"Invalid schema for response_format 'invoice': In context=('properties', 'name'), 'minLength' is not permitted.","type":"invalid_request_error","param":"response_format","code":null}}`, llm.AdjustDropKeyword("minLength")},
		{"gemini schema keyword", 400, `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"patternProperties\" at 'generation_config.response_schema.properties[0].value': Cannot find field.","status":"INVALID_ARGUMENT"}}`, llm.AdjustDropKeyword("patternProperties")},
		{"openai max_tokens", 400, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`, llm.AdjustMaxCompletionTokens},
		{"a structural keyword is never dropped", 400, `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"$ref\" at 'generation_config.response_schema.properties[0].value': Cannot find field.","status":"INVALID_ARGUMENT"}}`, ""},
		{"a malformed request is no capability", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice may only be specified while providing tools."}}`, ""},
		{"context length is no capability", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, ""},
		{"a 500 is never learned from", 500, `{"error":{"message":"temperature is not supported","type":"server_error"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ae := parseAPIError([]byte(tc.body))
			got, ok := refusedPart(&llm.Error{Status: tc.status, Type: ae.Type, Message: ae.Message, Raw: []byte(tc.body)})
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("refusedPart = %q %v, want %q", got, ok, tc.want)
			}
		})
	}
}

// memStore is an in-memory llm.CapabilityStore.
type memStore struct {
	mu   sync.Mutex
	m    map[string][]llm.Adjustment
	adds int // calls to Add
}

func (s *memStore) Load(_ context.Context, key string) ([]llm.Adjustment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.m[key]), nil
}

func (s *memStore) Add(_ context.Context, key string, a llm.Adjustment) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.adds++
	if s.m == nil {
		s.m = map[string][]llm.Adjustment{}
	}
	if !slices.Contains(s.m[key], a) {
		s.m[key] = append(s.m[key], a)
	}
	return nil
}

// TestLearnsFromSimulatorRefusals sends each rule's request to a
// simulator profile that refuses it as the real server does, from a model
// the tables take for one that accepts it (a stale table): the first call
// learns and succeeds with one extra request, the next sends the learned
// form at once, and a second provider sharing the store never meets the
// refusal.
func TestLearnsFromSimulatorRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, profile, spec string
		prefix              string // the base URL's path
		mode                llm.Mode
		learned             []llm.Adjustment
	}{
		{"anthropic temperature", "claude-opus-4-7", "anthropic:claude-opus-4-6", "", llm.ModeStrict, []llm.Adjustment{llm.AdjustNoTemperature}},
		{"anthropic temperature then forced tool", "claude-fable-5-1", "anthropic:claude-sonnet-4-5", "", llm.ModeTools, []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustToolAuto}},
		{"openai temperature then system role", "openai-o1-mini", "openai:gpt-4o", "/v1", llm.ModeText, []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustNoSystemRole}},
		{"a router's max_tokens too", "openai-o1-mini", "openrouter:openai/o1-mini", "/v1", llm.ModeText, []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustNoSystemRole, llm.AdjustMaxCompletionTokens}},
		{"gemini responseJsonSchema", "gemini-2.0", "gemini:gemini-2.5-flash", "", llm.ModeStrict, []llm.Adjustment{llm.AdjustNoNativeSchema}},
		// The same profile refuses each API's native schema field.
		{"openai json_schema", "gemini-2.0", "openai:gpt-4o", "/v1", llm.ModeStrict, []llm.Adjustment{llm.AdjustNoNativeSchema}},
		{"anthropic output_config", "gemini-2.0", "anthropic:claude-sonnet-4-5", "", llm.ModeStrict, []llm.Adjustment{llm.AdjustNoNativeSchema}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, url := simServer(t, tc.profile)
			store := &memStore{}
			newP := func() llm.Provider {
				return mustNew(t, tc.spec, env{}, WithBaseURL(url+tc.prefix), WithAPIKey("k-123456"), WithCapabilityStore(store))
			}
			sch := testSchema(t)
			req := llm.Request{Messages: nativePrompt("Invoice ACME, total 12.50, paid"), Mode: tc.mode, Schema: sch, MaxTokens: 200}
			if tc.mode == llm.ModeText {
				req.Messages = simPrompt(sch, "Invoice ACME, total 12.50, paid")
			}

			p := newP()
			resp, err := p.Chat(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resp.Adjustments, tc.learned) {
				t.Fatalf("first call learned %v, want %v", resp.Adjustments, tc.learned)
			}
			if got := srv.Stats().Requests; got != int64(len(tc.learned)+1) {
				t.Fatalf("first call made %d requests, want %d (one per refused part)", got, len(tc.learned)+1)
			}
			assertValid(t, sch, resp.Text)

			resp, err = p.Chat(t.Context(), req)
			if err != nil || len(resp.Adjustments) != 0 {
				t.Fatalf("second call: %v, adjustments %v; want none (already learned)", err, resp)
			}
			if got := srv.Stats().Requests; got != int64(len(tc.learned)+2) {
				t.Fatalf("second call was refused again: %d requests in all", got)
			}
			if got := learnedBy(t, p); !sameSet(got, tc.learned) {
				t.Fatalf("learned %v, want %v", got, tc.learned)
			}

			// Another worker, sharing the store: no refusal at all.
			resp, err = newP().Chat(t.Context(), req)
			if err != nil || len(resp.Adjustments) != 0 {
				t.Fatalf("a provider sharing the store: %v %v", err, resp)
			}
			if got := srv.Stats().Requests; got != int64(len(tc.learned)+3) {
				t.Fatalf("a provider sharing the store was refused: %d requests in all", got)
			}
		})
	}
}

// simServer serves a simulator with the named built-in profile over HTTP
// and returns it and its root URL.
func simServer(t *testing.T, profile string) (*sim.Server, string) {
	t.Helper()
	prof, err := sim.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(prof)
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// learnedBy lists what an adapter of this package learned.
func learnedBy(t *testing.T, p llm.Provider) []llm.Adjustment {
	t.Helper()
	var l *learner
	switch a := p.(type) {
	case *openAIProvider:
		l = a.learn
	case *anthropicProvider:
		l = a.learn
	case *geminiProvider:
		l = a.learn
	default:
		t.Fatalf("%T does not learn", p)
	}
	var out []llm.Adjustment
	for a := range l.snapshot() {
		out = append(out, a)
	}
	return out
}

func sameSet(a, b []llm.Adjustment) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x llm.Adjustment) bool { return !slices.Contains(b, x) })
}

// TestRefusalNotLearnedTwice: a server that refuses the part the
// adjustment changes again gets the error, not a loop.
func TestRefusalNotLearnedTwice(t *testing.T) {
	t.Parallel()
	body := `{"type":"error","error":{"type":"invalid_request_error","message":"` + "`temperature` is deprecated for this model." + `"}}`
	srv := newCanned(t, 400, nil, body)
	p := mustNew(t, "anthropic:claude-3-5-haiku-latest", env{}, WithBaseURL(srv.URL), WithAPIKey("k-123456"))
	_, err := p.Chat(t.Context(), llm.Request{Messages: conversation(), Mode: llm.ModeText})
	var pe *llm.Error
	if !errors.As(err, &pe) || pe.Class != llm.ClassInvalidRequest {
		t.Fatalf("err = %v, want the server's invalid_request", err)
	}
	if srv.count() != 2 || !slices.Equal(pe.Adjustments, []llm.Adjustment{llm.AdjustNoTemperature}) {
		t.Fatalf("%d requests, adjustments %v; want 2 and [no_temperature]", srv.count(), pe.Adjustments)
	}
	if _, ok := lookup(srv.lastJSON(t), "/temperature"); ok {
		t.Fatal("the second request still carried temperature")
	}
}

// TestGroqToolUseFailedIsAnAnswer: Groq's 400 tool_use_failed is the
// model's invalid answer (failed_generation), returned for the engine to
// re-ask; the simulator answers the re-ask.
func TestGroqToolUseFailedIsAnAnswer(t *testing.T) {
	t.Parallel()
	_, url := simServer(t, "groq-tool-use-failed")
	p := mustNew(t, "groq:llama-3.3-70b-versatile", env{}, WithBaseURL(url+"/v1"), WithAPIKey("k-123456"))
	sch := testSchema(t)
	resp, err := p.Chat(t.Context(), llm.Request{Messages: nativePrompt("Invoice ACME, total 12.50, paid"), Mode: llm.ModeTools, Schema: sch})
	if err != nil {
		t.Fatalf("tool_use_failed must come back as an answer, got %v", err)
	}
	if resp.Text != `<function=response>{"` || resp.FinishReason != llm.FinishStop || len(resp.Raw) == 0 {
		t.Fatalf("answer %q finish %s", resp.Text, resp.FinishReason)
	}
	if _, err := sch.ValidateJSON([]byte(resp.Text)); err == nil {
		t.Fatal("the failed generation should not validate")
	}
	reask := append(nativePrompt("Invoice ACME, total 12.50, paid"),
		llm.Message{Role: llm.RoleAssistant, Content: resp.Text}, llm.Message{Role: llm.RoleUser, Content: "not JSON; answer again"})
	resp, err = p.Chat(t.Context(), llm.Request{Messages: reask, Mode: llm.ModeTools, Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	assertValid(t, sch, resp.Text)
}

// TestDropKeywords leaves a property named like the keyword alone.
func TestDropKeywords(t *testing.T) {
	t.Parallel()
	in := `{"type":"object","properties":{"format":{"type":"string","format":"date","minLength":1}},"$defs":{"minLength":{"minLength":2}},"minLength":3}`
	got := string(dropKeywords(json.RawMessage(in), []string{"format", "minLength"}))
	want := `{"type":"object","properties":{"format":{"type":"string"}},"$defs":{"minLength":{}}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := string(dropKeywords(json.RawMessage(in), []string{"pattern"})); got != in {
		t.Fatalf("a schema without the keyword was rewritten: %s", got)
	}
}

// TestGeminiFullJSONSchemaAgainstSimulator: what Gemini's responseSchema
// cannot carry (a map, a tuple, a recursive definition) travels in
// responseJsonSchema as it is, in strict mode, and the answer validates:
// no fallback to JSON mode.
func TestGeminiFullJSONSchemaAgainstSimulator(t *testing.T) {
	t.Parallel()
	sch, err := schema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"labels": {"type": "object", "additionalProperties": {"type": "string"}},
			"point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": false, "minItems": 2},
			"root": {"$ref": "#/$defs/node"}
		},
		"required": ["labels", "point", "root"],
		"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(sch.Faithful(schema.FormGemini)) == 0 {
		t.Fatal("the schema should be one responseSchema cannot carry")
	}
	_, url := simServer(t, "clean")
	p := mustNew(t, "gemini:gemini-2.5-flash", env{}, WithBaseURL(url), WithAPIKey("k-123456"))
	resp, err := p.Chat(t.Context(), llm.Request{Messages: nativePrompt("Point 1,2; labels a=b; tree root x"), Mode: llm.ModeStrict, Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	assertValid(t, sch, resp.Text)
}

// TestConcurrentCallsLearnOnce: calls in flight together when the refusal
// comes each learn it, but the store records it once and every call is
// answered; later calls are never refused.
func TestConcurrentCallsLearnOnce(t *testing.T) {
	t.Parallel()
	srv, url := simServer(t, "claude-opus-4-7")
	store := &memStore{}
	p := mustNew(t, "anthropic:claude-opus-4-6", env{}, WithBaseURL(url), WithAPIKey("k-123456"), WithCapabilityStore(store))
	sch := testSchema(t)
	req := llm.Request{Messages: nativePrompt("Invoice ACME, total 12.50, paid"), Mode: llm.ModeStrict, Schema: sch, MaxTokens: 200}
	const n = 16
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := p.Chat(t.Context(), req)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	first := srv.Stats().Requests
	if first < n+1 || first > 2*n {
		t.Fatalf("%d requests for %d calls; want between %d and %d", first, n, n+1, 2*n)
	}
	if got, _ := store.Load(t.Context(), "anthropic:claude-opus-4-6"); !slices.Equal(got, []llm.Adjustment{llm.AdjustNoTemperature}) || store.adds != 1 {
		t.Fatalf("store holds %v after %d writes; want [no_temperature] written once", got, store.adds)
	}
	if _, err := p.Chat(t.Context(), req); err != nil || srv.Stats().Requests != first+1 {
		t.Fatalf("a later call: %v, %d requests (want %d)", err, srv.Stats().Requests, first+1)
	}
}

// TestBatchLineRefusalIsLearned: a batch line refused for a request part
// fails (it cannot be sent again inside its batch) but records the
// adjustment, and the next batch line is built without the part.
func TestBatchLineRefusalIsLearned(t *testing.T) {
	t.Parallel()
	req := llm.BatchRequest{CustomID: "job-r1", Request: llm.Request{Messages: conversation(), Mode: llm.ModeText, MaxTokens: 100}}
	tests := []struct {
		name, spec, line string
	}{
		{"anthropic errored line", "anthropic:claude-opus-4-6",
			`{"custom_id":"job-r1","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"` + "`temperature` is deprecated for this model." + `"}}}}`},
		{"openai 400 line", "openai:gpt-4o",
			`{"custom_id":"job-r1","response":{"status_code":400,"body":{"error":{"message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, tc.spec, env{}, WithBaseURL("http://127.0.0.1:1"), WithAPIKey("k-123456"))
			var res llm.BatchResult
			var line func() ([]byte, error)
			switch a := p.(type) {
			case *anthropicProvider:
				var l antBatchResultLine
				if err := json.Unmarshal([]byte(tc.line), &l); err != nil {
					t.Fatal(err)
				}
				res, line = a.batchResult(req, l), func() ([]byte, error) { return a.batchEntry(req) }
			case *openAIProvider:
				var l oaiBatchResultLine
				if err := json.Unmarshal([]byte(tc.line), &l); err != nil {
					t.Fatal(err)
				}
				res, line = a.batchResult(req, l), func() ([]byte, error) { return a.batchLine(req) }
			}
			var pe *llm.Error
			if !errors.As(res.Err, &pe) || pe.Class != llm.ClassInvalidRequest || !slices.Equal(pe.Adjustments, []llm.Adjustment{llm.AdjustNoTemperature}) {
				t.Fatalf("line error %+v; want invalid_request with [no_temperature]", res.Err)
			}
			b, err := line()
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if _, ok := lookup(doc, "/params/temperature"); ok {
				t.Fatalf("the next line still sends temperature: %s", b)
			}
			if _, ok := lookup(doc, "/body/temperature"); ok {
				t.Fatalf("the next line still sends temperature: %s", b)
			}
		})
	}
}
