package providers

import (
	"encoding/json"
	"reflect"
	"testing"
)

// chatCorpus holds chat completion bodies: the usual shapes first (fast
// says decodeChat must take them), then unusual ones it may leave to
// encoding/json.
var chatCorpus = []struct {
	body string
	fast bool
}{
	{`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"{\"a\":\"b\"}","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`, true},
	{"{\n  \"model\": \"m\",\n  \"choices\": [ {\n \"message\": {\"content\": null, \"tool_calls\": [{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"invoice\",\"arguments\":\"{\\\"total\\\": 12.5, \\\"note\\\": \\\"\\u00fc\\\\n\\\"}\"}}]},\n \"finish_reason\": \"tool_calls\" } ],\n  \"usage\": {\"prompt_tokens\": 5, \"completion_tokens\": 7}\n}\n", true},
	{`{"model":"m","choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`, true},
	{`{"model":"m","choices":[{"message":{"content":"ünïcödé 😀 \u2028 \ud83d\ude00 \"q\""},"finish_reason":"length"},{"message":{"content":"second"},"finish_reason":null}],"usage":null}`, true},
	{`{"model":"m","choices":[]}`, true},
	{`{"choices":null,"usage":{"prompt_tokens_details":null}}`, true},
	{`{"model":"m","choices":[null,{"message":null}]}`, true},
	{`null`, true},
	{`{}`, true},
	{`{"model":"m","extra":{"deep":[1,2,{"x":null}],"s":"\u0041"},"choices":[{"message":{"content":"x","role":"assistant"},"finish_reason":"stop","index":0}]}`, true},
	// Unusual: left to encoding/json, or taken only if equal.
	{`{"Model":"m","choices":[]}`, false},
	{`{"model":"m","model":"n"}`, false},
	{`{"model":"m","choices":[{"message":{"content":"x","CONTENT":"y"}}]}`, false},
	{`{"error":{"message":"upstream failed","code":502}}`, false},
	{`{"model":"m","error":null,"choices":[]}`, false},
	{`{"model":null}`, false},
	{`{"model":"m","usage":{"prompt_tokens":1.5}}`, false},
	{`{"model":"m","usage":{"prompt_tokens":99999999999999999999}}`, false},
	{`{"model":"m","usage":{"prompt_tokens":1e3}}`, false},
	{`{"model":"\ud800 lone"}`, false},
	{"{\"model\":\"bad \xff utf8\"}", false},
	{`{"model":"m",}`, false},
	{`{"model":"m"} trailing`, false},
	{`{"model":"m","extra":[1,2}`, false},
	{`{"model":"m","extra":nul}`, false},
	{`{"mod\u0065l":"m"}`, false},
	{`{"model":"m","choices":{"message":{}}}`, false},
	{`[]`, false},
	{``, false},
	{`{"model":"m","choices":[{"message":{"content":"a	tab"}}]}`, false},
}

// TestDecodeChatMatchesJSON checks decodeChat against json.Unmarshal on the
// corpus: whenever it takes a body, it fills what encoding/json fills, and
// it takes the usual shapes.
func TestDecodeChatMatchesJSON(t *testing.T) {
	for i, c := range chatCorpus {
		var got oaiResponse
		ok := decodeChat([]byte(c.body), &got)
		if c.fast && !ok {
			t.Errorf("%d: decodeChat left a usual body to encoding/json: %s", i, c.body)
		}
		if ok {
			checkChatAgainstJSON(t, []byte(c.body), &got)
		}
	}
}

func checkChatAgainstJSON(t *testing.T, body []byte, got *oaiResponse) {
	t.Helper()
	var want oaiResponse
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("decodeChat took %q, which encoding/json refuses: %v", body, err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("decodeChat(%q)\n got %+v\nwant %+v", body, *got, want)
	}
}

// FuzzDecodeChat checks that whatever decodeChat takes, encoding/json
// takes too and reads the same.
func FuzzDecodeChat(f *testing.F) {
	for _, c := range chatCorpus {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got oaiResponse
		if decodeChat(body, &got) {
			checkChatAgainstJSON(t, body, &got)
		}
	})
}

// BenchmarkDecodeChat reads the usual chat completion: by decodeChat and
// by encoding/json.
func BenchmarkDecodeChat(b *testing.B) {
	body := []byte(chatCorpus[0].body)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var doc oaiResponse
			if !decodeChat(body, &doc) {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var doc oaiResponse
			if err := json.Unmarshal(body, &doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
