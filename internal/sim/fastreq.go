package sim

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/extractq/extractq/internal/jsonx"
)

// decodeFast reads an OpenAI chat request as json.Unmarshal would into a
// zero r, without reflection: decoding was about a fifth of the
// simulator's CPU per request in the fleet benchmark. It takes the
// requests OpenAI clients send: each known key once and spelt as the API
// spells it, string content, no nulls but content's, numbers as the fields'
// types take them; keys it does not read are skipped (checked as JSON).
// Anything else (a key differing from a known one only in case, a
// duplicate, content as blocks, tool_calls, bad JSON) makes it return
// false, and parseOpenAI decodes the body with encoding/json instead,
// whose result and errors stand. So it decides nothing on its own:
// TestDecodeFastMatchesJSON checks that whenever it returns true r is what
// json.Unmarshal makes.
func (r *openAIRequest) decodeFast(body []byte, seen *rawCache) bool {
	d := jsonx.Scanner{B: body}
	ok := fields(&d, openAIKeys, func(n int) bool {
		switch n {
		case 0:
			return strInto(&d, &r.Model)
		case 1:
			r.Messages = []openAIReqMessage{} // as encoding/json makes an empty array
			return d.Array(func() bool {
				r.Messages = append(r.Messages, openAIReqMessage{})
				m := &r.Messages[len(r.Messages)-1]
				return fields(&d, messageKeys, func(n int) bool {
					switch n {
					case 0:
						return strInto(&d, &m.Role)
					case 1:
						return contentInto(&d, &m.Content)
					}
					return false // tool_calls
				})
			})
		case 2:
			r.ResponseFormat = new(openAIResponseFormat)
			rf := r.ResponseFormat
			return fields(&d, formatKeys, func(n int) bool {
				switch n {
				case 0:
					return strInto(&d, &rf.Type)
				case 1:
					return seen.into(&d, &rf.Schema)
				case 2:
					rf.JSONSchema = new(openAIJSONSchema)
					js := rf.JSONSchema
					return fields(&d, jsonSchemaKeys, func(n int) bool {
						switch n {
						case 0:
							return strInto(&d, &js.Name)
						case 1:
							return seen.into(&d, &js.Schema)
						case 2:
							return boolInto(&d, &js.Strict)
						}
						return false
					})
				}
				return false
			})
		case 3:
			r.Tools = []openAITool{}
			return d.Array(func() bool {
				r.Tools = append(r.Tools, openAITool{})
				t := &r.Tools[len(r.Tools)-1]
				return fields(&d, toolKeys, func(n int) bool {
					switch n {
					case 0:
						return strInto(&d, &t.Type)
					case 1:
						f := &t.Function
						return fields(&d, functionKeys, func(n int) bool {
							switch n {
							case 0:
								return strInto(&d, &f.Name)
							case 1:
								return strInto(&d, &f.Description)
							case 2:
								return seen.into(&d, &f.Parameters)
							case 3:
								return boolInto(&d, &f.Strict)
							}
							return false
						})
					}
					return false
				})
			})
		case 4:
			return seen.into(&d, &r.ToolChoice)
		case 5:
			return intInto(&d, &r.MaxTokens)
		case 6:
			return intInto(&d, &r.MaxCompletionTokens)
		case 7:
			return boolInto(&d, &r.Stream)
		}
		return false
	})
	if !ok {
		return false
	}
	d.Ws()
	return d.I == len(d.B)
}

// The keys of each object decodeFast reads, numbered as its cases are.
var (
	openAIKeys     = []string{"model", "messages", "response_format", "tools", "tool_choice", "max_tokens", "max_completion_tokens", "stream"}
	messageKeys    = []string{"role", "content", "tool_calls"}
	formatKeys     = []string{"type", "schema", "json_schema"}
	jsonSchemaKeys = []string{"name", "schema", "strict"}
	toolKeys       = []string{"type", "function"}
	functionKeys   = []string{"name", "description", "parameters", "strict"}
)

// commonStrings are values strInto returns without allocating.
var commonStrings = []string{"system", "user", "assistant", "developer", "tool", "json_schema", "json_object", "text", "function", "response"}

// fields reads an object whose known keys are keys: member reads the
// value of key number n. A value under any other key is skipped, unless
// the key equals a known one but for case (encoding/json would take it),
// and a known key seen twice ends the fast path.
func fields(d *jsonx.Scanner, keys []string, member func(n int) bool) bool {
	var seen uint64
	return d.Object(func(key []byte) bool {
		n := -1
		for k, name := range keys {
			if name == string(key) {
				n = k
				break
			}
			if strings.EqualFold(name, string(key)) {
				return false
			}
		}
		if n < 0 {
			return d.Skip()
		}
		if seen&(1<<n) != 0 {
			return false
		}
		seen |= 1 << n
		return member(n)
	})
}

// strInto reads a string field: valid UTF-8, a surrogate only in a pair
// (encoding/json would replace the others).
func strInto(d *jsonx.Scanner, s *string) bool {
	if d.I < len(d.B) && d.B[d.I] == '"' {
		for _, c := range commonStrings {
			if end := d.I + 1 + len(c); end < len(d.B) && d.B[end] == '"' && string(d.B[d.I+1:end]) == c {
				*s, d.I = c, end+1 // no copy of a role or type every request sends
				return true
			}
		}
	}
	v, ok := d.Str()
	*s = v
	return ok
}

// contentInto reads message content given as a string or null, as
// content.UnmarshalJSON does; blocks are left to encoding/json.
func contentInto(d *jsonx.Scanner, c *content) bool {
	if d.Null() {
		*c = ""
		return true
	}
	v, ok := d.Str()
	*c = content(v)
	return ok
}

func boolInto(d *jsonx.Scanner, p *bool) bool {
	v, ok := d.Bool()
	*p = v
	return ok
}

func intInto(d *jsonx.Scanner, p *int) bool {
	v, ok := d.Int()
	*p = v
	return ok
}

// rawCache keeps the last object or array read as a raw value (a schema,
// as every request of a run sends the same one), so that the next request
// sending the same bytes costs a comparison, not a check and a copy. One
// per Server; a nil one keeps nothing.
type rawCache struct{ last atomic.Pointer[[]byte] }

// into reads a value of any kind but null into p, as encoding/json keeps a
// json.RawMessage (a copy of its bytes: the body's buffer is reused once
// the request is answered).
func (c *rawCache) into(d *jsonx.Scanner, p *json.RawMessage) bool {
	if c != nil {
		if last := c.last.Load(); last != nil && bytes.HasPrefix(d.B[d.I:], *last) {
			// An object or array ends where its brackets close: the value
			// is exactly the one seen before, checked then and never
			// changed.
			d.I += len(*last)
			*p = *last
			return true
		}
	}
	v, ok := d.Raw()
	if !ok {
		return false
	}
	*p = json.RawMessage(slices.Clip(append([]byte(nil), v...)))
	if c != nil && (v[0] == '{' || v[0] == '[') {
		c.last.Store((*[]byte)(p))
	}
	return true
}
