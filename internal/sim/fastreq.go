package sim

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

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
func (r *openAIRequest) decodeFast(body []byte) bool {
	d := reqScanner{b: body}
	ok := d.fields(openAIKeys, func(n int) bool {
		switch n {
		case 0:
			return d.strInto(&r.Model)
		case 1:
			r.Messages = []openAIReqMessage{} // as encoding/json makes an empty array
			return d.array(func() bool {
				r.Messages = append(r.Messages, openAIReqMessage{})
				m := &r.Messages[len(r.Messages)-1]
				return d.fields(messageKeys, func(n int) bool {
					switch n {
					case 0:
						return d.strInto(&m.Role)
					case 1:
						return d.content(&m.Content)
					}
					return false // tool_calls
				})
			})
		case 2:
			r.ResponseFormat = new(openAIResponseFormat)
			rf := r.ResponseFormat
			return d.fields(formatKeys, func(n int) bool {
				switch n {
				case 0:
					return d.strInto(&rf.Type)
				case 1:
					return d.rawInto(&rf.Schema)
				case 2:
					rf.JSONSchema = new(openAIJSONSchema)
					js := rf.JSONSchema
					return d.fields(jsonSchemaKeys, func(n int) bool {
						switch n {
						case 0:
							return d.strInto(&js.Name)
						case 1:
							return d.rawInto(&js.Schema)
						case 2:
							return d.boolInto(&js.Strict)
						}
						return false
					})
				}
				return false
			})
		case 3:
			r.Tools = []openAITool{}
			return d.array(func() bool {
				r.Tools = append(r.Tools, openAITool{})
				t := &r.Tools[len(r.Tools)-1]
				return d.fields(toolKeys, func(n int) bool {
					switch n {
					case 0:
						return d.strInto(&t.Type)
					case 1:
						f := &t.Function
						return d.fields(functionKeys, func(n int) bool {
							switch n {
							case 0:
								return d.strInto(&f.Name)
							case 1:
								return d.strInto(&f.Description)
							case 2:
								return d.rawInto(&f.Parameters)
							case 3:
								return d.boolInto(&f.Strict)
							}
							return false
						})
					}
					return false
				})
			})
		case 4:
			return d.rawInto(&r.ToolChoice)
		case 5:
			return d.intInto(&r.MaxTokens)
		case 6:
			return d.intInto(&r.MaxCompletionTokens)
		case 7:
			return d.boolInto(&r.Stream)
		}
		return false
	})
	if !ok {
		return false
	}
	d.ws()
	return d.i == len(d.b)
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

// reqScanner reads the JSON decodeFast takes, reporting false for anything
// it does not take, leaving i anywhere. It is the worker's envelope
// scanner (internal/jobs) with unknown keys skipped rather than refused.
type reqScanner struct {
	b []byte
	i int
}

func (d *reqScanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *reqScanner) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// fields reads an object whose known keys are keys: member reads the
// value of key number n. A value under any other key is skipped, unless
// the key equals a known one but for case (encoding/json would take it),
// and a known key seen twice ends the fast path.
func (d *reqScanner) fields(keys []string, member func(n int) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen uint64
	for {
		d.ws()
		key, ok := d.plainKey()
		if !ok || !d.next(':') {
			return false
		}
		d.ws()
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
			if !d.skip() {
				return false
			}
		} else {
			if seen&(1<<n) != 0 || !member(n) {
				return false
			}
			seen |= 1 << n
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// array reads [value, …], item reading each value.
func (d *reqScanner) array(item func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		d.ws()
		if !item() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}

// plainKey reads an ASCII string without escapes and returns its bytes.
func (d *reqScanner) plainKey() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			key := d.b[d.i+1 : j]
			d.i = j + 1
			return key, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// literal returns the string literal at i, quotes included, checked for
// raw control characters as encoding/json checks it, and moves past it.
func (d *reqScanner) literal() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '\\':
			j++ // the escaped byte; Unquote checks the escape
		case c == '"':
			lit := d.b[d.i : j+1]
			d.i = j + 1
			return lit, true
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// strInto reads a string field: valid UTF-8, a surrogate only in a pair
// (encoding/json would replace the others).
func (d *reqScanner) strInto(s *string) bool {
	lit, ok := d.literal()
	if !ok {
		return false
	}
	if len(lit) < 16 {
		for _, c := range commonStrings {
			if len(c) == len(lit)-2 && string(lit[1:len(lit)-1]) == c {
				*s = c // no copy of a role or type every request sends
				return true
			}
		}
	}
	v, ok := jsonx.UnquoteStrict(lit)
	if !ok || !utf8.ValidString(v) {
		return false
	}
	*s = v
	return true
}

// content reads message content given as a string or null, as
// content.UnmarshalJSON does; blocks are left to encoding/json.
func (d *reqScanner) content(c *content) bool {
	if d.i+4 <= len(d.b) && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		*c = ""
		return true
	}
	lit, ok := d.literal()
	if !ok {
		return false
	}
	return c.UnmarshalJSON(lit) == nil
}

func (d *reqScanner) boolInto(p *bool) bool {
	switch {
	case d.i+4 <= len(d.b) && string(d.b[d.i:d.i+4]) == "true":
		*p, d.i = true, d.i+4
	case d.i+5 <= len(d.b) && string(d.b[d.i:d.i+5]) == "false":
		*p, d.i = false, d.i+5
	default:
		return false
	}
	return true
}

// intInto reads an integer literal (no fraction, no exponent) into p.
func (d *reqScanner) intInto(p *int) bool {
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	k := j
	for j < len(d.b) && '0' <= d.b[j] && d.b[j] <= '9' {
		j++
	}
	if j == k || (d.b[k] == '0' && j-k > 1) {
		return false
	}
	if j < len(d.b) && (d.b[j] == '.' || d.b[j] == 'e' || d.b[j] == 'E') {
		return false
	}
	n, err := strconv.ParseInt(string(d.b[d.i:j]), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*p, d.i = int(n), j
	return true
}

// rawInto reads a value of any kind but null into p, as encoding/json
// keeps a json.RawMessage (a copy of its bytes: the body's buffer is
// reused once the request is answered).
func (d *reqScanner) rawInto(p *json.RawMessage) bool {
	start := d.i
	if last := lastRaw.Load(); last != nil && bytes.HasPrefix(d.b[start:], *last) {
		// An object or array ends where its brackets close: the value is
		// exactly the one seen before, checked then and never changed.
		d.i += len(*last)
		*p = *last
		return true
	}
	if !d.skip() {
		return false
	}
	v := d.b[start:d.i]
	if string(v) == "null" {
		return false
	}
	*p = json.RawMessage(slices.Clip(append([]byte(nil), v...)))
	if v[0] == '{' || v[0] == '[' {
		lastRaw.Store((*[]byte)(p))
	}
	return true
}

// lastRaw is the last object or array rawInto read (a schema, as every
// request of a run sends the same one), kept so that the next request
// sending the same bytes costs a comparison, not a check and a copy.
var lastRaw atomic.Pointer[[]byte]

// skip moves past one value, checked as JSON.
func (d *reqScanner) skip() bool {
	start, depth := d.i, 0
	for d.i < len(d.b) {
		switch c := d.b[d.i]; c {
		case '"':
			j := d.i + 1
			for j < len(d.b) && d.b[j] != '"' {
				if d.b[j] == '\\' {
					j++
				}
				j++
			}
			d.i = j + 1
			if depth == 0 {
				return d.checked(start)
			}
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return d.checked(start)
			}
			depth--
			d.i++
			if depth == 0 {
				return d.checked(start)
			}
		case ',':
			if depth == 0 {
				return d.checked(start)
			}
			d.i++
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return d.checked(start)
			}
			d.i++
		default:
			d.i++
		}
	}
	return d.checked(start)
}

func (d *reqScanner) checked(start int) bool {
	if d.i > len(d.b) || d.i == start {
		return false
	}
	return json.Valid(d.b[start:d.i])
}
