package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Token counting: what a request's input costs, counted as the providers
// count it, each piece counted by the server's tokenizer (by default about
// four characters a token, tokens; WithTokenCounter plugs in a real one).
//
//   - Messages: their text (tool calls sent back included, name and
//     arguments), 3 tokens of framing each and 3 that prime the reply
//     (OpenAI's documented count for its chat models).
//   - OpenAI tool definitions and json_schema response formats (also the
//     json_object schema Anyscale and Together take): OpenAI shows them to
//     the model as TypeScript-like declarations in its own system text
//     ("namespace functions { // description \n type name = (_: {…}) =>
//     any; }"), with each field's description as a comment; that text is
//     counted (renderFunction). It is shorter than the schema's JSON.
//   - Anthropic tools: the tool's name, description and input schema as
//     JSON, plus the tool-use system prompt Anthropic documents (313 tokens
//     with a forced tool).
//   - Other schemas (Gemini, Ollama, Anthropic's output format): their JSON.
const (
	messageFraming      = 3
	replyPriming        = 3
	anthropicToolPrompt = 313
)

// promptTokens counts the input of req as the API a counts it, each piece
// with count.
// fns caches what OpenAI's rendering of a tool or response format counts
// (nil: rendered every time).
func promptTokens(a api, req *chatRequest, count func(string) int, fns *fnTokenCache) int {
	n := messageFraming*len(req.messages) + replyPriming
	for _, m := range req.messages {
		n += count(m.text)
	}
	if len(req.schema) == 0 {
		return n
	}
	switch {
	case a == apiOpenAI:
		name := req.tool
		if name == "" {
			name = req.schemaName
		}
		n += fns.tokens(name, req.toolDesc, req.schema, count)
	case a == apiAnthropic && req.tool != "":
		n += anthropicToolPrompt + count(req.tool+req.toolDesc+string(req.schema))
	default:
		n += count(string(req.schema))
	}
	return n
}

// renderFunction writes a tool (or a response format) the way OpenAI
// presents it to its models: a TypeScript-like declaration of the
// parameters, descriptions and constraints as comments.
func renderFunction(name, desc string, schemaJSON []byte) string {
	var root any
	if json.Unmarshal(schemaJSON, &root) != nil {
		return string(schemaJSON)
	}
	var b strings.Builder
	b.WriteString("namespace functions {\n\n")
	if desc != "" {
		fmt.Fprintf(&b, "// %s\n", desc)
	}
	fmt.Fprintf(&b, "type %s = (_: ", name)
	r := tsRenderer{root: root, b: &b}
	r.render(root, 0, 0)
	b.WriteString(") => any;\n\n} // namespace functions")
	return b.String()
}

// fnTokenCache keeps the token count of rendered functions by name,
// description and schema: a client sends the same tool with every
// document, and rendering it (decoding the schema) cost more than the rest
// of counting a request. It holds at most fnTokenCacheMax entries and is
// emptied when full.
type fnTokenCache struct {
	mu sync.Mutex
	m  map[string]int
	// last is the entry found last: every request of a run sends the same
	// tool or format, which then costs comparisons, not a key to build.
	last atomic.Pointer[fnTokenEntry]
}

type fnTokenEntry struct {
	name, desc string
	schema     []byte
	n          int
}

const fnTokenCacheMax = 512

func (c *fnTokenCache) tokens(name, desc string, schemaJSON []byte, count func(string) int) int {
	if c == nil {
		return count(renderFunction(name, desc, schemaJSON))
	}
	if e := c.last.Load(); e != nil && e.name == name && e.desc == desc && bytes.Equal(e.schema, schemaJSON) {
		return e.n
	}
	n := c.lookup(name, desc, schemaJSON, count)
	// schemaJSON may be the request's buffer: the entry keeps a copy.
	c.last.Store(&fnTokenEntry{name: name, desc: desc, schema: bytes.Clone(schemaJSON), n: n})
	return n
}

func (c *fnTokenCache) lookup(name, desc string, schemaJSON []byte, count func(string) int) int {
	key := make([]byte, 0, len(name)+len(desc)+len(schemaJSON)+2)
	key = append(append(append(append(append(key, name...), 0), desc...), 0), schemaJSON...)
	c.mu.Lock()
	n, ok := c.m[string(key)] // no copy of key for the lookup
	c.mu.Unlock()
	if ok {
		return n
	}
	n = count(renderFunction(name, desc, schemaJSON))
	c.mu.Lock()
	if c.m == nil || len(c.m) >= fnTokenCacheMax {
		c.m = make(map[string]int)
	}
	c.m[string(key)] = n
	c.mu.Unlock()
	return n
}

type tsRenderer struct {
	root any
	b    *strings.Builder
}

// constraintKeys are the keywords written as comments beside a field.
var constraintKeys = []string{"format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "minItems", "maxItems", "default"}

func (r *tsRenderer) render(v any, indent, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > 32 {
		r.b.WriteString("any")
		return
	}
	if ref, ok := m["$ref"].(string); ok {
		r.render(resolveRef(r.root, ref), indent, depth+1)
		return
	}
	if c, ok := m["const"]; ok {
		j, _ := json.Marshal(c)
		r.b.Write(j)
		return
	}
	if e, ok := m["enum"].([]any); ok {
		for i, x := range e {
			if i > 0 {
				r.b.WriteString(" | ")
			}
			j, _ := json.Marshal(x)
			r.b.Write(j)
		}
		return
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok {
			for i, x := range list {
				if i > 0 {
					r.b.WriteString(" | ")
				}
				r.render(x, indent, depth+1)
			}
			return
		}
	}
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
	}
	if len(types) == 0 {
		r.b.WriteString("any")
		return
	}
	for i, t := range types {
		if i > 0 {
			r.b.WriteString(" | ")
		}
		switch t {
		case "object":
			r.object(m, indent, depth)
		case "array":
			r.b.WriteString("Array<")
			r.render(m["items"], indent, depth+1)
			r.b.WriteString(">")
		case "integer":
			r.b.WriteString("number")
		default:
			r.b.WriteString(t)
		}
	}
}

func (r *tsRenderer) object(m map[string]any, indent, depth int) {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		r.b.WriteString("object")
		return
	}
	required := map[string]bool{}
	if req, ok := m["required"].([]any); ok {
		for _, x := range req {
			if s, ok := x.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	pad := strings.Repeat("  ", indent+1)
	r.b.WriteString("{\n")
	for _, k := range names {
		p, _ := props[k].(map[string]any)
		if d, ok := p["description"].(string); ok && d != "" {
			fmt.Fprintf(r.b, "%s// %s\n", pad, d)
		}
		r.b.WriteString(pad + k)
		if !required[k] {
			r.b.WriteByte('?')
		}
		r.b.WriteString(": ")
		r.render(p, indent+1, depth+1)
		r.b.WriteString(",")
		var notes []string
		for _, c := range constraintKeys {
			if x, ok := p[c]; ok {
				j, _ := json.Marshal(x)
				notes = append(notes, c+": "+string(j))
			}
		}
		if len(notes) > 0 {
			r.b.WriteString(" // " + strings.Join(notes, ", "))
		}
		r.b.WriteByte('\n')
	}
	r.b.WriteString(strings.Repeat("  ", indent) + "}")
}

// unescapePointer undoes a JSON Pointer token's escapes.
var unescapePointer = strings.NewReplacer("~1", "/", "~0", "~")

// resolveRef follows a local reference ("#/$defs/line") in root; nil when
// it cannot.
func resolveRef(root any, ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	v := root
	for _, tok := range strings.Split(ref[2:], "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[unescapePointer.Replace(tok)]
	}
	return v
}
