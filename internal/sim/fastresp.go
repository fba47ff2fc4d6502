package sim

import (
	"strconv"
	"unicode/utf8"
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
	b = appendJSONString(b, r.req.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	finish := "stop"
	switch {
	case r.ans.refusal != "":
		b = append(b, `null,"refusal":`...)
		b = appendJSONString(b, r.ans.refusal)
	case r.req.tool != "":
		b = append(b, `null,"refusal":null,"tool_calls":[{"id":"call_`...)
		b = appendHex16(b, r.id)
		b = append(b, `","type":"function","function":{"name":`...)
		b = appendJSONString(b, r.req.tool)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, r.ans.text)
		b = append(b, `}}]`...)
		finish = "tool_calls"
	default:
		b = appendJSONString(b, r.ans.text)
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

// appendJSONString quotes s as encoding/json does without HTML escaping:
// short escapes for \b \f \n \r \t, \u00XX for other control characters,
// U+FFFD for each invalid UTF-8 byte, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
