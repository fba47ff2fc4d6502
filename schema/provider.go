package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Form is an API family's dialect of JSON Schema.
type Form string

// Provider forms.
const (
	FormJSONSchema Form = "jsonschema" // the normalised schema itself
	FormOpenAI     Form = "openai"     // strict structured outputs (response_format json_schema, strict: true)
	FormAnthropic  Form = "anthropic"  // structured outputs (output_format json_schema)
	FormGemini     Form = "gemini"     // generationConfig.responseSchema (an OpenAPI 3.0 subset)
	FormOllama     Form = "ollama"     // the "format" field
)

// ParseForm reads a form name as the CLI spells it.
func ParseForm(s string) (Form, error) {
	switch f := Form(strings.ToLower(strings.TrimSpace(s))); f {
	case FormJSONSchema, FormOpenAI, FormAnthropic, FormGemini, FormOllama:
		return f, nil
	case "json-schema", "json":
		return FormJSONSchema, nil
	case "claude":
		return FormAnthropic, nil
	}
	return "", fmt.Errorf("unknown form %q: use jsonschema, openai, anthropic, gemini or ollama", s)
}

// ErrProviderForm is matched (errors.Is) when a schema cannot be expressed
// in a provider's form (e.g. it exceeds OpenAI's documented limits or is
// recursive where the provider forbids recursion). The message says which
// limit and where.
var ErrProviderForm = errors.New("schema not expressible in the provider's form")

// OpenAI's documented limits for strict structured outputs.
const (
	openAIMaxProperties     = 5000
	openAIMaxDepth          = 10
	openAIMaxEnumValues     = 1000
	openAIMaxStringChars    = 120000
	openAILargeEnum         = 250
	openAILargeEnumMaxChars = 15000
)

// ProviderForm returns the schema as the API family f accepts it:
//
//   - FormOpenAI: every object closed (additionalProperties false) with all
//     properties required, optional ones made nullable; keywords strict mode
//     does not support (minLength, uniqueItems, allOf, not, if/then/else,
//     default, ...) merged or moved into descriptions; the documented limits
//     (5000 properties, 10 levels of nesting, 1000 enum values, 120,000
//     characters of names and values, 15,000 characters for an enum of more
//     than 250 strings) checked. The root must be an object.
//   - FormAnthropic: every object closed; numeric bounds, string lengths and
//     item counts other than minItems 0/1 moved into descriptions; no
//     recursion.
//   - FormGemini: OpenAPI 3.0 subset with upper-case types, nullable instead
//     of null types, propertyOrdering, no $ref and no recursion.
//   - FormOllama: the schema with its references resolved.
//
// References (internal and to local files) are resolved in every form: a
// definition used once is inlined, one used more often or recursively is
// kept once in $defs (Gemini, which takes no references, gets copies).
// Local validation always uses the original schema, never this form.
func (s *Schema) ProviderForm(f Form) (json.RawMessage, error) {
	if f == FormJSONSchema {
		return s.body, nil
	}
	switch f {
	case FormOpenAI, FormAnthropic, FormGemini, FormOllama:
	default:
		return nil, fmt.Errorf("unknown provider form %q: use jsonschema, openai, anthropic, gemini or ollama", f)
	}
	// Gemini's responseSchema has no references: everything is inlined.
	in := newInliner(s, f != FormGemini)
	root, err := in.inline(s.doc, s.baseURL, "")
	if err != nil {
		return nil, err
	}
	if len(in.recursive) > 0 && (f == FormAnthropic || f == FormGemini) {
		return nil, fmt.Errorf("%w: %s does not accept recursive schemas (the definition at %s refers to itself)", ErrProviderForm, formTitle(f), in.recursive[0])
	}
	if ro, ok := root.(*object); ok && in.defs.len() > 0 {
		ro.set("$defs", in.defs)
	}
	var out any
	switch f {
	case FormOpenAI:
		out, err = toOpenAI(root)
	case FormAnthropic:
		out, err = convert(root, "", anthropicRules)
	case FormGemini:
		out, err = toGemini(root, "")
	default: // FormOllama takes the bundled schema as it is
		out = root
	}
	if err != nil {
		return nil, err
	}
	return marshal(out)
}

func formTitle(f Form) string {
	switch f {
	case FormAnthropic:
		return "Anthropic structured outputs"
	case FormGemini:
		return "Gemini's responseSchema"
	}
	return string(f)
}

// maxInlinedNodes bounds the size of a schema after references are inlined
// (a definition used many times is copied each time).
const maxInlinedNodes = 200000

// inliner resolves every $ref: it copies the target in place, except that a
// reference back into a definition being inlined (recursion) and, when
// bundling, a target used more than once become references into $defs.
type inliner struct {
	s         *Schema
	docs      map[string]any // by document URL, ordered
	defs      *object        // recursive definitions, by generated name
	defNames  map[string]string
	recursive []string
	nodes     int
	stack     map[string]bool
	bundle    bool           // keep definitions used more than once in $defs
	uses      map[string]int // reference target -> times written
}

// newInliner prepares to inline s; with bundle, definitions used more than
// once stay in $defs instead (no copies, no blow-up).
func newInliner(s *Schema, bundle bool) *inliner {
	docs := map[string]any{s.baseURL: s.doc}
	for u, d := range s.external {
		docs[u] = fromPlain(d)
	}
	in := &inliner{s: s, docs: docs, defs: newObject(), defNames: map[string]string{}, stack: map[string]bool{}, bundle: bundle, uses: map[string]int{}}
	if bundle {
		for u, d := range docs {
			in.countUses(d, u, true)
		}
	}
	return in
}

// schemaKeys lists the keywords whose values are subschemas, by shape.
var (
	subschemaOne  = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	subschemaList = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	subschemaMap  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

func (in *inliner) inline(node any, docURL, ptr string) (any, error) {
	in.nodes++
	if in.nodes > maxInlinedNodes {
		return nil, fmt.Errorf("%w: the schema grows beyond %d subschemas when its references are inlined", ErrProviderForm, maxInlinedNodes)
	}
	o, ok := node.(*object)
	if !ok {
		return node, nil
	}
	if id, ok := o.vals["$id"].(string); ok && ptr != "" {
		docURL = resolveURL(docURL, id)
	}
	out := newObject()
	var refTarget any
	for _, k := range o.keys {
		v := o.vals[k]
		switch {
		case k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef":
			r, ok := v.(string)
			if !ok {
				continue
			}
			t, err := in.ref(r, docURL, joinPointer(ptr, k))
			if err != nil {
				return nil, err
			}
			refTarget = t
		case k == "$defs" || k == "definitions" || k == "$schema" || k == "$id" || k == "$anchor" ||
			k == "$dynamicAnchor" || k == "$recursiveAnchor" || k == "$comment" || k == "$vocabulary":
			// Inlined where used; identifiers mean nothing once inlined.
		case contains(subschemaMap, k):
			m, ok := v.(*object)
			if !ok {
				out.set(k, v)
				continue
			}
			mo := newObject()
			for _, mk := range m.keys {
				c, err := in.inline(m.vals[mk], docURL, joinPointer(ptr, k, mk))
				if err != nil {
					return nil, err
				}
				mo.set(mk, c)
			}
			out.set(k, mo)
		case contains(subschemaList, k) && isList(v):
			arr := v.([]any)
			ao := make([]any, len(arr))
			for i, e := range arr {
				c, err := in.inline(e, docURL, joinPointer(ptr, k, strconv.Itoa(i)))
				if err != nil {
					return nil, err
				}
				ao[i] = c
			}
			out.set(k, ao)
		case contains(subschemaOne, k):
			c, err := in.inline(v, docURL, joinPointer(ptr, k))
			if err != nil {
				return nil, err
			}
			out.set(k, c)
		default:
			out.set(k, v)
		}
	}
	if refTarget == nil {
		return out, nil
	}
	if out.len() == 0 {
		return refTarget, nil
	}
	// Keywords beside a $ref: merge where they do not clash, else allOf.
	t, ok := refTarget.(*object)
	if !ok {
		return &object{keys: []string{"allOf"}, vals: map[string]any{"allOf": []any{refTarget, out}}}, nil
	}
	merged := clone(t).(*object)
	for _, k := range out.keys {
		if _, clash := merged.get(k); clash && !annotation[k] {
			return &object{keys: []string{"allOf"}, vals: map[string]any{"allOf": []any{refTarget, out}}}, nil
		}
	}
	for _, k := range out.keys {
		merged.set(k, out.vals[k])
	}
	return merged, nil
}

var annotation = map[string]bool{"title": true, "description": true, "default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true}

func contains(list []string, k string) bool {
	for _, e := range list {
		if e == k {
			return true
		}
	}
	return false
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// ref returns the inlined target of reference r.
func (in *inliner) ref(r, docURL, at string) (any, error) {
	target := resolveURL(docURL, r)
	u, frag, _ := strings.Cut(target, "#")
	doc, ok := in.docs[u]
	if !ok {
		return nil, fmt.Errorf("%w: at %s: cannot inline $ref %q", ErrProviderForm, at, r)
	}
	var node any
	if frag == "" || strings.HasPrefix(frag, "/") {
		node, ok = resolveOrdered(doc, frag)
	} else {
		node, ok = findAnchor(doc, frag)
	}
	if !ok {
		return nil, fmt.Errorf("%w: at %s: cannot inline $ref %q", ErrProviderForm, at, r)
	}
	key := u + "#" + frag
	if name, ok := in.defNames[key]; ok { // already (being) defined
		if in.stack[key] {
			in.noteRecursion(key)
		}
		return refTo(name), nil
	}
	if in.stack[key] || (in.bundle && in.uses[key] > 1) {
		// A cycle, or (when bundling) a definition used more than once:
		// one copy in $defs, referenced wherever it is used.
		if in.stack[key] {
			in.noteRecursion(key)
		}
		name := in.defName(u, frag)
		in.defNames[key] = name
		in.defs.set(name, true) // placeholder until built
		was := in.stack[key]
		in.stack[key] = true
		def, err := in.inline(node, u, frag)
		in.stack[key] = was
		if err != nil {
			return nil, err
		}
		in.defs.set(name, def)
		return refTo(name), nil
	}
	in.stack[key] = true
	defer delete(in.stack, key)
	return in.inline(node, u, frag)
}

func refTo(name string) *object {
	return &object{keys: []string{"$ref"}, vals: map[string]any{"$ref": "#/$defs/" + name}}
}

func (in *inliner) noteRecursion(key string) {
	at := refText(key, in.s.baseURL)
	for _, r := range in.recursive {
		if r == at {
			return
		}
	}
	in.recursive = append(in.recursive, at)
}

// countUses counts how often each reference target is written, so that
// bundling keeps a definition used more than once in $defs.
func (in *inliner) countUses(node any, docURL string, top bool) {
	switch t := node.(type) {
	case *object:
		if id, ok := t.vals["$id"].(string); ok && !top {
			docURL = resolveURL(docURL, id)
		}
		for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
			if r, ok := t.vals[k].(string); ok {
				in.uses[resolveURL(docURL, r)]++
			}
		}
		for _, k := range t.keys {
			in.countUses(t.vals[k], docURL, false)
		}
	case []any:
		for _, e := range t {
			in.countUses(e, docURL, false)
		}
	}
}

func (in *inliner) defName(u, frag string) string {
	base := frag[strings.LastIndex(frag, "/")+1:]
	if frag == "" && u != in.s.baseURL { // a whole referenced document
		base = strings.TrimSuffix(u[strings.LastIndex(u, "/")+1:], ".json")
	}
	base = strings.Trim(nameRe.ReplaceAllString(unescapeToken(base), "_"), "_")
	if base == "" {
		base = "root"
	}
	name := base
	for i := 2; ; i++ {
		if _, taken := in.defs.get(name); !taken {
			return name
		}
		name = base + strconv.Itoa(i)
	}
}

// resolveURL resolves ref against base (enough of RFC 3986 for schema refs).
func resolveURL(base, ref string) string {
	switch {
	case ref == "":
		return base
	case strings.HasPrefix(ref, "#"):
		b, _, _ := strings.Cut(base, "#")
		return b + ref
	case strings.Contains(ref, "://") || strings.HasPrefix(ref, "urn:"):
		return ref
	}
	b, _, _ := strings.Cut(base, "#")
	scheme, rest, ok := strings.Cut(b, "://")
	if !ok {
		return ref
	}
	if strings.HasPrefix(ref, "/") {
		host, _, _ := strings.Cut(rest, "/")
		return scheme + "://" + host + ref
	}
	dir := b[:strings.LastIndex(b, "/")+1]
	joined := dir + ref
	// Collapse "./" and "../" segments after the host.
	prefixLen := len(scheme) + 3 + strings.Index(rest, "/")
	if prefixLen < len(scheme)+3 {
		return joined
	}
	head, path := joined[:prefixLen], joined[prefixLen:]
	var segs []string
	for _, s := range strings.Split(path, "/") {
		switch s {
		case ".":
		case "..":
			if len(segs) > 1 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	return head + strings.Join(segs, "/")
}

// findAnchor finds the subschema with "$anchor" (or "$dynamicAnchor") name.
func findAnchor(doc any, name string) (any, bool) {
	switch t := doc.(type) {
	case *object:
		if a, _ := t.vals["$anchor"].(string); a == name {
			return t, true
		}
		if a, _ := t.vals["$dynamicAnchor"].(string); a == name {
			return t, true
		}
		for _, k := range t.keys {
			if n, ok := findAnchor(t.vals[k], name); ok {
				return n, true
			}
		}
	case []any:
		for _, e := range t {
			if n, ok := findAnchor(e, name); ok {
				return n, true
			}
		}
	}
	return nil, false
}

// rules says how a provider form treats keywords.
type rules struct {
	name          string
	closeObjects  bool            // additionalProperties: false everywhere
	allRequired   bool            // every property required, optional ones nullable
	keep          map[string]bool // keywords passed through
	formats       map[string]bool // formats passed through (others described)
	minItemsUpTo1 bool            // only minItems 0 or 1 supported
}

var commonKeep = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "anyOf": true, "description": true, "title": true, "$ref": true, "$defs": true,
}

func withKeep(extra ...string) map[string]bool {
	m := map[string]bool{}
	for k := range commonKeep {
		m[k] = true
	}
	for _, k := range extra {
		m[k] = true
	}
	return m
}

var openAIRules = rules{
	name:         "OpenAI strict mode",
	closeObjects: true,
	allRequired:  true,
	keep:         withKeep("pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems"),
	formats:      setOf("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"),
}

var anthropicRules = rules{
	name:          "Anthropic structured outputs",
	closeObjects:  true,
	keep:          withKeep("allOf", "pattern", "format", "minItems", "default"),
	formats:       setOf("date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"),
	minItemsUpTo1: true,
}

func setOf(ss ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// convert rewrites a (reference-free) schema node under r.
func convert(node any, ptr string, r rules) (any, error) {
	o, ok := node.(*object)
	if !ok {
		if b, isBool := node.(bool); isBool {
			if !b {
				return nil, fmt.Errorf("%w: at %s: %s cannot express a schema that allows nothing (false)", ErrProviderForm, ptrText(ptr), r.name)
			}
			return newObject(), nil
		}
		return node, nil
	}
	o = mergeAllOf(o, r)
	out := newObject()
	var notes []string
	isObj := isObjectSchema(o)
	for _, k := range o.keys {
		v := o.vals[k]
		switch {
		case k == "oneOf": // exclusive choice: as anyOf (validation checks exclusivity)
			list, err := convertList(v, joinPointer(ptr, k), r)
			if err != nil {
				return nil, err
			}
			if prev, ok := out.get("anyOf"); ok {
				list = append(prev.([]any), list...)
			}
			out.set("anyOf", list)
		case k == "anyOf" || k == "allOf" || (k == "items" && isList(v)):
			if k == "items" { // draft 7 tuple: describe, keep the first shape
				notes = append(notes, "items by position: "+jsonText(v, 200))
				continue
			}
			list, err := convertList(v, joinPointer(ptr, k), r)
			if err != nil {
				return nil, err
			}
			if prev, ok := out.get(k); ok {
				list = append(prev.([]any), list...)
			}
			out.set(k, list)
		case k == "properties" || k == "$defs":
			m, ok := v.(*object)
			if !ok {
				continue
			}
			mo := newObject()
			for _, mk := range m.keys {
				c, err := convert(m.vals[mk], joinPointer(ptr, k, mk), r)
				if err != nil {
					return nil, err
				}
				mo.set(mk, c)
			}
			out.set(k, mo)
		case k == "items":
			c, err := convert(v, joinPointer(ptr, k), r)
			if err != nil {
				return nil, err
			}
			out.set(k, c)
		case k == "additionalProperties":
			if r.closeObjects {
				if v != false {
					if sub, ok := v.(*object); ok && sub.len() > 0 {
						notes = append(notes, "other properties: "+jsonText(sub, 120))
					} else if v != false {
						notes = append(notes, "other properties may appear in the source; only the listed ones are extracted")
					}
				}
				continue
			}
			out.set(k, v)
		case k == "format":
			f, _ := v.(string)
			if r.formats[f] {
				out.set(k, v)
			} else {
				notes = append(notes, "format: "+f)
			}
		case k == "minItems" && r.minItemsUpTo1:
			if n, _ := v.(json.Number).Int64(); n <= 1 {
				out.set(k, v)
			} else {
				notes = append(notes, describe(k, v))
			}
		case r.keep[k]:
			out.set(k, v)
		case k == "nullable" || k == "examples" || k == "example" || k == "readOnly" || k == "writeOnly" || k == "deprecated" || strings.HasPrefix(k, "x-"):
			// annotations the provider does not need
		default:
			notes = append(notes, describe(k, v))
		}
	}
	if isObj {
		if _, ok := out.get("type"); !ok {
			out.set("type", "object")
		}
	}
	if isObj && r.closeObjects {
		out.set("additionalProperties", false)
		if _, ok := out.get("properties"); !ok {
			out.set("properties", newObject())
		}
	}
	if isObj && r.allRequired {
		props, _ := out.vals["properties"].(*object)
		req := map[string]bool{}
		if list, ok := o.vals["required"].([]any); ok {
			for _, e := range list {
				if s, ok := e.(string); ok {
					req[s] = true
				}
			}
		}
		all := make([]any, 0)
		if props != nil {
			for _, name := range props.keys {
				all = append(all, name)
				if !req[name] {
					props.set(name, nullable(props.vals[name]))
				}
			}
		}
		out.set("required", all)
	}
	if len(notes) > 0 {
		desc, _ := out.vals["description"].(string)
		extra := "(" + strings.Join(notes, "; ") + ")"
		if desc != "" {
			desc += " " + extra
		} else {
			desc = extra
		}
		out.set("description", desc)
	}
	return out, nil
}

func convertList(v any, ptr string, r rules) ([]any, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, nil
	}
	out := make([]any, 0, len(arr))
	for i, e := range arr {
		c, err := convert(e, joinPointer(ptr, strconv.Itoa(i)), r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func ptrText(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// describe turns an unsupported keyword into words for the description.
func describe(k string, v any) string {
	count := func(word string) string {
		n, err := strconv.Atoi(jsonText(v, 20))
		if err != nil {
			return jsonText(v, 20) + " " + word
		}
		return plural(n, word)
	}
	switch k {
	case "minLength":
		return "at least " + count("character")
	case "maxLength":
		return "at most " + count("character")
	case "minimum":
		return "minimum " + jsonText(v, 30)
	case "maximum":
		return "maximum " + jsonText(v, 30)
	case "exclusiveMinimum":
		return "greater than " + jsonText(v, 30)
	case "exclusiveMaximum":
		return "less than " + jsonText(v, 30)
	case "multipleOf":
		return "a multiple of " + jsonText(v, 30)
	case "minItems":
		return "at least " + count("item")
	case "maxItems":
		return "at most " + count("item")
	case "uniqueItems":
		if v == true {
			return "items must be unique"
		}
		return ""
	case "pattern":
		return "must match " + jsonText(v, 200)
	case "default":
		return "default " + jsonText(v, 80)
	case "minProperties":
		return "at least " + count("property")
	case "maxProperties":
		return "at most " + count("property")
	}
	return k + ": " + jsonText(v, 160)
}

// isObjectSchema reports whether a schema node describes objects.
func isObjectSchema(o *object) bool {
	switch t := o.vals["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
		return false
	}
	_, hasProps := o.get("properties")
	return hasProps
}

// mergeAllOf folds allOf branches into the schema where the provider does
// not keep allOf: properties and required are united, other keywords kept
// from the schema itself or the first branch that has them.
func mergeAllOf(o *object, r rules) *object {
	list, ok := o.vals["allOf"].([]any)
	if !ok || r.keep["allOf"] {
		return o
	}
	out := clone(o).(*object)
	out.del("allOf")
	for _, b := range list {
		bo, ok := b.(*object)
		if !ok {
			continue
		}
		bo = mergeAllOf(bo, r)
		for _, k := range bo.keys {
			v := bo.vals[k]
			switch k {
			case "properties":
				props, _ := out.vals["properties"].(*object)
				if props == nil {
					props = newObject()
				}
				if bp, ok := v.(*object); ok {
					for _, pk := range bp.keys {
						if _, exists := props.get(pk); !exists {
							props.set(pk, bp.vals[pk])
						}
					}
				}
				out.set("properties", props)
			case "required":
				req, _ := out.vals["required"].([]any)
				seen := map[any]bool{}
				for _, e := range req {
					seen[e] = true
				}
				for _, e := range v.([]any) {
					if !seen[e] {
						req = append(req, e)
						seen[e] = true
					}
				}
				out.set("required", req)
			case "description":
				if d, ok := out.vals["description"].(string); ok && d != "" {
					if bd, _ := v.(string); bd != "" && bd != d {
						out.set("description", d+" "+bd)
					}
					continue
				}
				out.set(k, v)
			default:
				if _, exists := out.get(k); !exists {
					out.set(k, v)
				}
			}
		}
	}
	return out
}

// nullable lets a schema also accept null (OpenAI's way of marking an
// optional field).
func nullable(v any) any {
	o, ok := v.(*object)
	if !ok {
		return v
	}
	o = clone(o).(*object)
	if _, isRef := o.get("$ref"); isRef || o.vals["anyOf"] != nil {
		if list, ok := o.vals["anyOf"].([]any); ok && !isRef {
			for _, e := range list {
				if eo, ok := e.(*object); ok && eo.vals["type"] == "null" {
					return o
				}
			}
			o.set("anyOf", append(list, nullSchema()))
			return o
		}
		return &object{keys: []string{"anyOf"}, vals: map[string]any{"anyOf": []any{o, nullSchema()}}}
	}
	switch t := o.vals["type"].(type) {
	case string:
		if t != "null" {
			o.set("type", []any{t, "null"})
		}
	case []any:
		has := false
		for _, e := range t {
			has = has || e == "null"
		}
		if !has {
			o.set("type", append(append([]any{}, t...), "null"))
		}
	default:
		if _, ok := o.get("const"); ok {
			return &object{keys: []string{"anyOf"}, vals: map[string]any{"anyOf": []any{o, nullSchema()}}}
		}
	}
	if e, ok := o.vals["enum"].([]any); ok {
		has := false
		for _, x := range e {
			has = has || x == nil
		}
		if !has {
			o.set("enum", append(append([]any{}, e...), nil))
		}
	}
	return o
}

func nullSchema() *object {
	return &object{keys: []string{"type"}, vals: map[string]any{"type": "null"}}
}

// toOpenAI converts to strict mode and checks the documented limits.
func toOpenAI(root any) (any, error) {
	ro, ok := root.(*object)
	if !ok || !isObjectSchema(ro) {
		return nil, fmt.Errorf("%w: OpenAI strict mode needs an object at the root (not an array, anyOf or scalar); wrap the value in an object with one property", ErrProviderForm)
	}
	if _, ok := ro.get("anyOf"); ok {
		return nil, fmt.Errorf("%w: OpenAI strict mode does not accept anyOf at the root", ErrProviderForm)
	}
	out, err := convert(ro, "", openAIRules)
	if err != nil {
		return nil, err
	}
	var st openAIStats
	st.walk(out, "", 0)
	switch {
	case st.err != nil:
		return nil, st.err
	case st.properties > openAIMaxProperties:
		return nil, fmt.Errorf("%w: OpenAI strict mode allows at most %d object properties in all; this schema has %d", ErrProviderForm, openAIMaxProperties, st.properties)
	case st.enumValues > openAIMaxEnumValues:
		return nil, fmt.Errorf("%w: OpenAI strict mode allows at most %d enum values in all; this schema has %d", ErrProviderForm, openAIMaxEnumValues, st.enumValues)
	case st.chars > openAIMaxStringChars:
		return nil, fmt.Errorf("%w: OpenAI strict mode allows at most %d characters of property names, definition names, enum and const values in all; this schema has %d", ErrProviderForm, openAIMaxStringChars, st.chars)
	}
	return out, nil
}

type openAIStats struct {
	properties, enumValues, chars int
	err                           error
}

// walk counts what OpenAI limits; depth counts nested objects.
func (st *openAIStats) walk(node any, ptr string, depth int) {
	o, ok := node.(*object)
	if !ok || st.err != nil {
		return
	}
	if isObjectSchema(o) {
		depth++
		if depth > openAIMaxDepth {
			st.err = fmt.Errorf("%w: at %s: OpenAI strict mode allows at most %d levels of nested objects", ErrProviderForm, ptrText(ptr), openAIMaxDepth)
			return
		}
	}
	if e, ok := o.vals["enum"].([]any); ok {
		st.enumValues += len(e)
		n := 0
		allStrings := true
		for _, v := range e {
			if s, ok := v.(string); ok {
				n += utf8.RuneCountInString(s)
			} else if v != nil {
				allStrings = false
			}
		}
		st.chars += n
		if allStrings && len(e) > openAILargeEnum && n > openAILargeEnumMaxChars {
			st.err = fmt.Errorf("%w: at %s: an enum of more than %d strings may total at most %d characters in OpenAI strict mode; this one has %d", ErrProviderForm, ptrText(ptr), openAILargeEnum, openAILargeEnumMaxChars, n)
			return
		}
	}
	if c, ok := o.vals["const"].(string); ok {
		st.chars += utf8.RuneCountInString(c)
	}
	for _, k := range o.keys {
		v := o.vals[k]
		switch k {
		case "properties", "$defs":
			m, _ := v.(*object)
			if m == nil {
				continue
			}
			for _, mk := range m.keys {
				if k == "properties" {
					st.properties++
				}
				st.chars += utf8.RuneCountInString(mk)
				d := depth
				if k == "$defs" {
					d = 0
				}
				st.walk(m.vals[mk], joinPointer(ptr, k, mk), d)
			}
		case "items":
			st.walk(v, joinPointer(ptr, k), depth)
		case "anyOf":
			for i, e := range v.([]any) {
				st.walk(e, joinPointer(ptr, k, strconv.Itoa(i)), depth)
			}
		}
	}
}

// geminiKeep lists the OpenAPI subset fields responseSchema accepts.
var geminiKeep = setOf("format", "title", "description", "minItems", "maxItems", "minimum", "maximum",
	"minLength", "maxLength", "pattern", "minProperties", "maxProperties", "default")

// toGemini converts to responseSchema: upper-case single types, nullable,
// string enums, anyOf, propertyOrdering; everything else described.
func toGemini(node any, ptr string) (any, error) {
	o, ok := node.(*object)
	if !ok {
		if b, isBool := node.(bool); isBool && !b {
			return nil, fmt.Errorf("%w: at %s: Gemini's responseSchema cannot express a schema that allows nothing (false)", ErrProviderForm, ptrText(ptr))
		}
		return newObject(), nil
	}
	o = mergeAllOf(o, rules{})
	out := newObject()
	var notes []string
	nullable := false
	var types []string
	switch t := o.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	var nonNull []string
	for _, t := range types {
		if t == "null" {
			nullable = true
		} else {
			nonNull = append(nonNull, t)
		}
	}
	if len(nonNull) > 1 { // several types: one anyOf branch per type
		var alts []any
		for _, t := range nonNull {
			b := clone(o).(*object)
			b.set("type", t)
			c, err := toGemini(b, ptr)
			if err != nil {
				return nil, err
			}
			alts = append(alts, c)
		}
		out.set("anyOf", alts)
		if nullable {
			out.set("nullable", true)
		}
		return out, nil
	}
	if len(nonNull) == 1 {
		out.set("type", strings.ToUpper(nonNull[0]))
	}
	if nullable {
		out.set("nullable", true)
	}
	if b, ok := o.vals["nullable"].(bool); ok && b {
		out.set("nullable", true)
	}
	for _, k := range o.keys {
		v := o.vals[k]
		switch {
		case k == "type" || k == "nullable":
		case k == "properties":
			m, _ := v.(*object)
			if m == nil {
				continue
			}
			mo := newObject()
			order := make([]any, 0, m.len())
			for _, mk := range m.keys {
				c, err := toGemini(m.vals[mk], joinPointer(ptr, k, mk))
				if err != nil {
					return nil, err
				}
				mo.set(mk, c)
				order = append(order, mk)
			}
			out.set("properties", mo)
			out.set("propertyOrdering", order)
			if _, ok := out.get("type"); !ok {
				out.set("type", "OBJECT")
			}
		case k == "required":
			out.set(k, v)
		case k == "items" && !isList(v):
			c, err := toGemini(v, joinPointer(ptr, k))
			if err != nil {
				return nil, err
			}
			out.set(k, c)
		case k == "anyOf" || k == "oneOf":
			list, _ := v.([]any)
			var alts []any
			if prev, ok := out.get("anyOf"); ok {
				alts = prev.([]any)
			}
			for i, e := range list {
				if eo, ok := e.(*object); ok && eo.vals["type"] == "null" && eo.len() == 1 {
					out.set("nullable", true)
					continue
				}
				c, err := toGemini(e, joinPointer(ptr, k, strconv.Itoa(i)))
				if err != nil {
					return nil, err
				}
				alts = append(alts, c)
			}
			if len(alts) == 1 { // "X or null": just X, nullable
				if ao, ok := alts[0].(*object); ok {
					for _, ak := range ao.keys {
						if _, exists := out.get(ak); !exists {
							out.set(ak, ao.vals[ak])
						}
					}
					continue
				}
			}
			out.set("anyOf", alts)
		case k == "enum":
			list, _ := v.([]any)
			var strs []any
			for _, e := range list {
				if s, ok := e.(string); ok {
					strs = append(strs, s)
				} else if e == nil {
					out.set("nullable", true)
				} else {
					strs = nil
					break
				}
			}
			if strs == nil {
				notes = append(notes, "one of "+jsonText(v, 200))
				continue
			}
			out.set("enum", strs)
			if _, ok := out.get("type"); !ok {
				out.set("type", "STRING")
			}
		case k == "const":
			if s, ok := v.(string); ok {
				out.set("enum", []any{s})
				if _, ok := out.get("type"); !ok {
					out.set("type", "STRING")
				}
			} else {
				notes = append(notes, "exactly "+jsonText(v, 80))
			}
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			notes = append(notes, describe(k, v))
		case geminiKeep[k]:
			if k == "minItems" || k == "maxItems" || k == "minLength" || k == "maxLength" || k == "minProperties" || k == "maxProperties" {
				out.set(k, jsonText(v, 30)) // int64 fields are strings in the proto's JSON
				continue
			}
			out.set(k, v)
		case k == "additionalProperties" || k == "examples" || k == "example" || k == "readOnly" || k == "writeOnly" || k == "deprecated" || strings.HasPrefix(k, "x-"):
		default:
			notes = append(notes, describe(k, v))
		}
	}
	if len(notes) > 0 {
		sort.Strings(notes)
		desc, _ := out.vals["description"].(string)
		extra := "(" + strings.Join(notes, "; ") + ")"
		if desc != "" {
			desc += " " + extra
		} else {
			desc = extra
		}
		out.set("description", desc)
	}
	return out, nil
}

// DropNullOptionals undoes what FormOpenAI does to optional properties: it
// removes every property whose value is null where the schema does not
// require the property and its own schema rejects null. An engine using
// OpenAI strict mode calls it on the answer before validating against the
// original schema. It returns the input unchanged (and false) when there is
// nothing to drop or the input is not JSON.
func (s *Schema) DropNullOptionals(doc []byte) ([]byte, bool) {
	v, err := decodeOrdered(doc)
	if err != nil {
		return doc, false
	}
	if !dropNulls(v, []*jsonschema.Schema{s.compiled}, 0) {
		return doc, false
	}
	out, err := marshal(v)
	if err != nil {
		return doc, false
	}
	return out, true
}

func dropNulls(v any, conj []*jsonschema.Schema, depth int) bool {
	if depth > maxNesting {
		return false
	}
	all := expand(conj)
	changed := false
	switch t := v.(type) {
	case *object:
		required := map[string]bool{}
		for _, s := range all {
			for _, r := range s.Required {
				required[r] = true
			}
		}
		for _, k := range append([]string(nil), t.keys...) {
			var sub []*jsonschema.Schema
			for _, s := range all {
				if p, ok := s.Properties[k]; ok {
					sub = append(sub, p)
				}
			}
			if len(sub) == 0 {
				continue
			}
			if t.vals[k] == nil && !required[k] && !validAll(sub, nil) {
				t.del(k)
				changed = true
				continue
			}
			changed = dropNulls(t.vals[k], sub, depth+1) || changed
		}
	case []any:
		for i, e := range t {
			var sub []*jsonschema.Schema
			for _, s := range all {
				switch {
				case i < len(s.PrefixItems):
					sub = append(sub, s.PrefixItems[i])
				case s.Items2020 != nil:
					sub = append(sub, s.Items2020)
				}
				if it, ok := s.Items.(*jsonschema.Schema); ok {
					sub = append(sub, it)
				}
			}
			if len(sub) > 0 {
				changed = dropNulls(e, sub, depth+1) || changed
			}
		}
	}
	return changed
}
