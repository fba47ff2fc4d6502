package sim

import (
	"strconv"

	"github.com/extractq/extractq/internal/jsonx"
)

// appendOpenAIBody appends the OpenAI chat completion of r, byte for byte
// what marshal writes for openAIBody(r) (the trailing newline included),
// without reflection or the intermediate structs: encoding it was a tenth
// of the handler's CPU per request. TestAppendOpenAIBodyMatchesMarshal
// holds it to that.
func appendOpenAIBody(b []byte, r *reply) []byte {
	b = append(b, `{"id":"chatcmpl-sim`...)
	b = appendHex16(b, r.id)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, r.now.Unix(), 10)
	b = append(b, `,"model":`...)
	b = jsonx.AppendString(b, r.req.model, false)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	finish := "stop"
	switch {
	case r.ans.refusal != "":
		b = append(b, `null,"refusal":`...)
		b = jsonx.AppendString(b, r.ans.refusal, false)
	case r.req.tool != "":
		b = append(b, `null,"refusal":null,"tool_calls":[{"id":"call_`...)
		b = appendHex16(b, r.id)
		b = append(b, `","type":"function","function":{"name":`...)
		b = jsonx.AppendString(b, r.req.tool, false)
		b = append(b, `,"arguments":`...)
		b = r.ans.appendText(b)
		b = append(b, `}}]`...)
		finish = "tool_calls"
	default:
		b = r.ans.appendText(b)
		b = append(b, `,"refusal":null`...)
	}
	if r.ans.truncated {
		finish = "length"
	}
	b = append(b, `,"annotations":[]},"logprobs":null,"finish_reason":"`...)
	b = append(b, finish...)
	b = append(b, `"}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(r.promptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(r.completionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(r.promptTokens+r.completionTokens), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(r.cache.read), 10)
	return append(b, "}},\"system_fingerprint\":\"fp_extractq_sim\",\"service_tier\":\"default\"}\n"...)
}

// appendHex16 writes x as fmt's %016x does.
func appendHex16(b []byte, x uint64) []byte {
	const hex = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hex[x>>uint(shift)&0xF])
	}
	return b
}
