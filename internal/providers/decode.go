package providers

import (
	"github.com/extractq/extractq/internal/jsonx"
)

// decodeChat reads a chat completion into a zero doc as json.Unmarshal
// would, without reflection: decoding every document's answer was about
// 6% of the worker's CPU. It takes the shape OpenAI and the compatible
// servers send: the fields oaiResponse knows, each at most once, nulls only
// where a pointer, a slice or a skipped field takes them, integers as ints
// take them; any other key (id, object, created, index, role, logprobs,
// system_fingerprint, total_tokens, …) is skipped once checked valid, as
// encoding/json skips it. Anything else makes it return false: a key that
// matches a field only without regard to case, a duplicate, an escape or
// a non-ASCII byte in a key, a lone surrogate or invalid UTF-8 in a
// string, an "error" member, bad JSON. parseResponse then reads the body
// with encoding/json, whose result and error stand. So it decides nothing
// on its own: TestDecodeChatMatchesJSON and FuzzDecodeChat check that
// whenever it returns true doc is what json.Unmarshal makes.
//
// Each object's keys are matched by a switch as Scanner.Member reads
// them: a closure per object, a loop over its keys with string compares
// and three calls per key through Scanner.Object were a sixth of its
// instructions (FuzzDecodeChatMatchesOld compares it with that decode).
func decodeChat(body []byte, doc *oaiResponse) bool {
	d := &jsonx.Scanner{B: body}
	ok := decodeTop(d, doc)
	d.Ws()
	return ok && d.I == len(d.B)
}

func decodeTop(d *jsonx.Scanner, doc *oaiResponse) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		switch string(key) {
		case "model":
			ok = once(&seen, 1) && str(d, &doc.Model)
		case "choices":
			ok = once(&seen, 2) && decodeChoices(d, &doc.Choices)
		case "usage":
			ok = once(&seen, 4) && decodeUsage(d, &doc.Usage)
		default:
			// An "error" member, even null, is left to encoding/json,
			// whose RawMessage keeps it for parseResponse.
			ok = !foldsTo(key, "model", "choices", "usage", "error") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

func decodeChoices(d *jsonx.Scanner, cs *[]oaiChoice) bool {
	if d.Null() {
		return true
	}
	// One choice is the usual answer (n=1): made at its size, not grown
	// from empty.
	*cs = make([]oaiChoice, 0, 1)
	return d.Array(func() bool {
		*cs = append(*cs, oaiChoice{})
		return decodeChoice(d, &(*cs)[len(*cs)-1])
	})
}

func decodeChoice(d *jsonx.Scanner, c *oaiChoice) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		switch string(key) {
		case "message":
			ok = once(&seen, 1) && decodeMessage(d, &c.Message)
		case "finish_reason":
			ok = once(&seen, 2) && (d.Null() || str(d, &c.FinishReason))
		default:
			ok = !foldsTo(key, "message", "finish_reason") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

func decodeMessage(d *jsonx.Scanner, m *oaiMessage) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		switch string(key) {
		case "content":
			ok = once(&seen, 1) && strPtr(d, &m.Content)
		case "refusal":
			ok = once(&seen, 2) && strPtr(d, &m.Refusal)
		case "tool_calls":
			ok = once(&seen, 4) && decodeToolCalls(d, &m.ToolCalls)
		default:
			ok = !foldsTo(key, "content", "refusal", "tool_calls") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

func decodeToolCalls(d *jsonx.Scanner, tcs *[]oaiToolCall) bool {
	if d.Null() {
		return true
	}
	*tcs = []oaiToolCall{}
	return d.Array(func() bool {
		*tcs = append(*tcs, oaiToolCall{})
		return decodeToolCall(d, &(*tcs)[len(*tcs)-1])
	})
}

func decodeToolCall(d *jsonx.Scanner, tc *oaiToolCall) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		switch string(key) {
		case "type":
			ok = once(&seen, 1) && str(d, &tc.Type)
		case "function":
			ok = once(&seen, 2) && decodeFunction(d, &tc.Function)
		default:
			ok = !foldsTo(key, "type", "function") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

func decodeFunction(d *jsonx.Scanner, f *oaiCallFunction) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		switch string(key) {
		case "name":
			ok = once(&seen, 1) && str(d, &f.Name)
		case "arguments":
			ok = once(&seen, 2) && str(d, &f.Arguments)
		default:
			ok = !foldsTo(key, "name", "arguments") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

func decodeUsage(d *jsonx.Scanner, u *oaiUsage) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		switch string(key) {
		case "prompt_tokens":
			ok = once(&seen, 1) && integer(d, &u.PromptTokens)
		case "completion_tokens":
			ok = once(&seen, 2) && integer(d, &u.CompletionTokens)
		case "prompt_tokens_details":
			ok = once(&seen, 4) && decodeCached(d, &u.PromptTokensDetails.CachedTokens)
		default:
			ok = !foldsTo(key, "prompt_tokens", "completion_tokens", "prompt_tokens_details") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

// decodeCached reads prompt_tokens_details, of which only cached_tokens
// is kept.
func decodeCached(d *jsonx.Scanner, cached *int) bool {
	if d.Null() {
		return true
	}
	var seen uint8
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return ok
		}
		if string(key) == "cached_tokens" {
			ok = once(&seen, 1) && integer(d, cached)
		} else {
			ok = !foldsTo(key, "cached_tokens") && d.Skip()
		}
		if !ok {
			return false
		}
	}
}

// once marks bit in seen and reports whether it was clear: a key seen
// twice ends the fast path (encoding/json keeps the last value, merging
// objects).
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// foldsTo reports whether key, which is none of keys, matches one of them
// without regard to case: encoding/json would then fill that field.
func foldsTo(key []byte, keys ...string) bool {
	for _, k := range keys {
		if equalFoldASCII(key, k) {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether key and k (ASCII) are equal without
// regard to case.
func equalFoldASCII(key []byte, k string) bool {
	if len(key) != len(k) {
		return false
	}
	for i := range len(k) {
		a, b := key[i], k[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func str(d *jsonx.Scanner, s *string) bool {
	v, ok := d.Str()
	*s = v
	return ok
}

// strPtr reads a string into a new *p, or a null as nil.
func strPtr(d *jsonx.Scanner, p **string) bool {
	if d.Null() {
		*p = nil
		return true
	}
	v, ok := d.Str()
	*p = &v
	return ok
}

func integer(d *jsonx.Scanner, p *int) bool {
	v, ok := d.Int()
	*p = v
	return ok
}
