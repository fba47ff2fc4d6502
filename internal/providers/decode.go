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
func decodeChat(body []byte, doc *oaiResponse) bool {
	d := &jsonx.Scanner{B: body}
	ok := members(d, []string{"model", "choices", "usage"}, func(n int) bool {
		switch n {
		case 0:
			return str(d, &doc.Model)
		case 1:
			if d.Null() {
				return true
			}
			doc.Choices = []oaiChoice{}
			return d.Array(func() bool {
				doc.Choices = append(doc.Choices, oaiChoice{})
				return decodeChoice(d, &doc.Choices[len(doc.Choices)-1])
			})
		default:
			u := &doc.Usage
			return members(d, []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}, func(n int) bool {
				switch n {
				case 0:
					return integer(d, &u.PromptTokens)
				case 1:
					return integer(d, &u.CompletionTokens)
				default:
					return members(d, []string{"cached_tokens"}, func(int) bool {
						return integer(d, &u.PromptTokensDetails.CachedTokens)
					})
				}
			})
		}
	}, "error")
	d.Ws()
	return ok && d.I == len(d.B)
}

func decodeChoice(d *jsonx.Scanner, c *oaiChoice) bool {
	return members(d, []string{"message", "finish_reason"}, func(n int) bool {
		if n == 1 {
			return d.Null() || str(d, &c.FinishReason)
		}
		m := &c.Message
		return members(d, []string{"content", "refusal", "tool_calls"}, func(n int) bool {
			switch n {
			case 0:
				return strPtr(d, &m.Content)
			case 1:
				return strPtr(d, &m.Refusal)
			}
			if d.Null() {
				return true
			}
			m.ToolCalls = []oaiToolCall{}
			return d.Array(func() bool {
				m.ToolCalls = append(m.ToolCalls, oaiToolCall{})
				tc := &m.ToolCalls[len(m.ToolCalls)-1]
				return members(d, []string{"type", "function"}, func(n int) bool {
					if n == 0 {
						return str(d, &tc.Type)
					}
					return members(d, []string{"name", "arguments"}, func(n int) bool {
						if n == 0 {
							return str(d, &tc.Function.Name)
						}
						return str(d, &tc.Function.Arguments)
					})
				})
			})
		})
	})
}

// members reads an object whose known keys are keys (at most 64): member
// reads the value of keys[n]. Another key's value is skipped, unless it
// is one of refuse or matches a key only without regard to case
// (encoding/json would then fill that field). A null for the object
// leaves it as it is, as encoding/json does; a key seen twice ends the
// fast path.
func members(d *jsonx.Scanner, keys []string, member func(n int) bool, refuse ...string) bool {
	if d.Null() {
		return true
	}
	var seen uint64
	return d.Object(func(key []byte) bool {
		// One pass: keys differ from each other even without regard to
		// case, so a key that matches one of them only so matches none
		// exactly.
		for n, k := range keys {
			if len(key) != len(k) {
				continue
			}
			if string(key) == k {
				if seen&(1<<n) != 0 {
					return false
				}
				seen |= 1 << n
				return member(n)
			}
			if equalFoldASCII(key, k) {
				return false
			}
		}
		for _, k := range refuse {
			if equalFoldASCII(key, k) {
				return false
			}
		}
		return d.Skip()
	})
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
