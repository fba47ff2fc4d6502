package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
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
//     default, x-aliases, ...) merged or moved into descriptions; the
//     documented limits (5000 properties, 10 levels of nesting, 1000 enum
//     values, 120,000 characters of names and values, 15,000 characters for
//     an enum of more than 250 strings) checked.
//   - FormAnthropic: every object closed; allOf merged; numeric bounds,
//     string lengths and item counts other than minItems 0/1 moved into
//     descriptions; no recursion.
//   - FormGemini: OpenAPI 3.0 subset with upper-case types, nullable instead
//     of null types, propertyOrdering, no $ref and no recursion.
//   - FormOllama: the schema with its references resolved.
//
// A root the API cannot take is wrapped in a one-property object on the
// wire: every root other than a plain object for OpenAI and Anthropic
// (whose structured outputs and tool inputs must be objects), a scalar root
// (ScalarRoot) for Gemini and Ollama. WireWrapped names the property, so
// that the answer can be unwrapped before it is validated.
//
// A schema the form would narrow (a free-form object, additionalProperties
// other than false, patternProperties, ... see Faithful) is not converted
// silently: the error is an *UnfaithfulError listing why. Every error means
// errors.Is(err, ErrProviderForm): use JSON mode with the schema in the
// prompt instead.
//
// References (internal and to local files) are resolved in every form: a
// definition used once is inlined, one used more often or recursively is
// kept once in $defs (Gemini, which takes no references, gets copies).
// Local validation always uses the original schema, never this form.
// The result is shared between callers: do not modify it.
func (s *Schema) ProviderForm(f Form) (json.RawMessage, error) {
	if f == FormJSONSchema {
		return s.body, nil
	}
	r := s.form(f)
	return r.body, r.err
}

// Faithful lists what form f cannot express without forbidding values the
// schema allows, one human-readable reason per construct, each starting
// with its JSON pointer into the schema ("/properties/meta: a free-form
// object …"). Nil means the form is faithful: every value the schema
// accepts, the form accepts too (the form may be looser; answers are
// validated against the schema anyway). FormJSONSchema is always
// faithful. Every other form resolves references statically, so a
// $dynamicRef or $recursiveRef is reported; OpenAI, Anthropic and Gemini
// also close every object, so these are reported too:
//
//   - a free-form object (type object, or a map, with no properties listed);
//   - additionalProperties or unevaluatedProperties other than false;
//   - patternProperties;
//   - properties declared only under anyOf, oneOf, then, else or
//     dependentSchemas of an object that would be closed to its own;
//   - a value that may be anything ({} or true), and an array whose items
//     may be anything or are given by position (a tuple).
//
// The result is memoised like ProviderForm's; do not modify it.
func (s *Schema) Faithful(f Form) []string {
	if f == FormJSONSchema {
		return nil
	}
	return s.form(f).reasons
}

// WireWrapped reports whether ProviderForm(f) wraps the schema's root in a
// one-property object, and the property: "value" for a scalar or mixed
// root, "items" for an array root. An answer given in that form is
// {"<property>": <the value>}; unwrap it before validating.
// FormJSONSchema is never wrapped.
func (s *Schema) WireWrapped(f Form) (property string, ok bool) {
	if f == FormJSONSchema {
		return "", false
	}
	r := s.form(f)
	return r.wrap, r.wrap != ""
}

// Wire property names of a wrapped root (WireWrapped).
const (
	wrapValue = "value"
	wrapItems = "items"
)

// UnfaithfulError is ProviderForm's error for a schema the form would
// narrow: sending the form would forbid values the schema allows (a
// free-form object sent as an empty closed one lets the model answer only
// {}). errors.Is(err, ErrProviderForm) holds; callers branch with
// errors.As and extract in JSON mode with the schema in the prompt.
type UnfaithfulError struct {
	Form Form
	// Reasons are Faithful(Form): one per construct, each starting with its
	// JSON pointer into the schema.
	Reasons []string
	// BestEffort is the closest form the API takes, which forbids what
	// Reasons say. Send it only when losing that is acceptable.
	BestEffort json.RawMessage
}

func (e *UnfaithfulError) Error() string {
	const show = 3
	rs := e.Reasons
	more := ""
	if len(rs) > show {
		more = fmt.Sprintf("; and %d more", len(rs)-show)
		rs = rs[:show]
	}
	return fmt.Sprintf("%s: %s cannot express this schema faithfully: %s%s; extract in JSON mode with the schema in the prompt (mode auto does so)",
		ErrProviderForm, formTitle(e.Form), strings.Join(rs, "; "), more)
}

// Is makes errors.Is(err, ErrProviderForm) true.
func (e *UnfaithfulError) Is(target error) bool { return target == ErrProviderForm }

// formResult is one memoised form: the body or the error, the wire wrapper
// and the reasons it is not faithful.
type formResult struct {
	body    json.RawMessage
	err     error
	wrap    string
	reasons []string
}

// form builds form f once: every request in strict or tools mode asks for
// it, and a Schema is immutable.
func (s *Schema) form(f Form) formResult {
	if cached, ok := s.forms.Load(f); ok {
		return cached.(formResult)
	}
	r := s.buildProviderForm(f)
	s.forms.Store(f, r)
	return r
}

func (s *Schema) buildProviderForm(f Form) formResult {
	switch f {
	case FormOpenAI, FormAnthropic, FormGemini, FormOllama:
	default:
		return formResult{err: fmt.Errorf("unknown provider form %q: use jsonschema, openai, anthropic, gemini or ollama", f)}
	}
	// Gemini's responseSchema has no references: everything is inlined.
	in := newInliner(s, f != FormGemini)
	root, err := in.inline(s.doc, s.baseURL, "")
	if err != nil {
		return formResult{err: err}
	}
	var res formResult
	res.wrap = s.wireProperty(f, root)
	for _, at := range in.dynamic {
		res.reasons = append(res.reasons, at+": a dynamic reference is resolved statically in "+formTitle(f)+", which may then reject values the schema allows")
	}
	if f != FormOllama {
		faithfulness(f, root, "", &res.reasons)
		for _, k := range in.defs.keys {
			faithfulness(f, in.defs.vals[k], joinPointer("/$defs", k), &res.reasons)
		}
	}
	if len(in.recursive) > 0 && (f == FormAnthropic || f == FormGemini) {
		res.err = fmt.Errorf("%w: %s does not accept recursive schemas (the definition at %s refers to itself)", ErrProviderForm, formTitle(f), in.recursive[0])
		return res
	}
	if res.wrap != "" {
		w := newObject()
		w.set("type", "object")
		props := newObject()
		props.set(res.wrap, root)
		w.set("properties", props)
		w.set("required", []any{res.wrap})
		w.set("additionalProperties", false)
		root = w
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
		if d, ok := s.doc.(*object); ok && hasKey(d, "$schema") {
			if ro, ok := root.(*object); ok && !hasKey(ro, "$schema") {
				// The dialect still matters (draft 7's "items" list is a
				// tuple): keep saying which it is.
				ro = clone(ro).(*object)
				ro.keys = append([]string{"$schema"}, ro.keys...)
				ro.vals["$schema"] = d.vals["$schema"]
				out = ro
			}
		}
	}
	if err == nil {
		res.body, err = marshal(out)
	}
	switch {
	case err != nil:
		res.err = err
	case len(res.reasons) > 0:
		res.err = &UnfaithfulError{Form: f, Reasons: res.reasons, BestEffort: res.body}
		res.body = nil
	}
	return res
}

// wireProperty decides whether form f wraps the (inlined) root, and in
// which property.
func (s *Schema) wireProperty(f Form, root any) string {
	name := wrapValue
	if s.WantsArray() {
		name = wrapItems
	}
	switch f {
	case FormOpenAI, FormAnthropic:
		if ro, ok := root.(*object); ok && plainObjectRoot(ro) {
			return ""
		}
		return name
	case FormGemini, FormOllama:
		if s.ScalarRoot() {
			return name
		}
	}
	return ""
}

// plainObjectRoot reports whether a root is an object and nothing else,
// as OpenAI's and Anthropic's roots must be: type "object" (or properties
// without a type), no alternatives at the root.
func plainObjectRoot(o *object) bool {
	o = mergeAllOf(o, rules{})
	for _, k := range []string{"anyOf", "oneOf", "enum", "const", "not", "$ref"} {
		if _, ok := o.get(k); ok {
			return false
		}
	}
	switch t := o.vals["type"].(type) {
	case string:
		return t == "object"
	case nil:
		_, hasProps := o.get("properties")
		return hasProps
	}
	return false
}

func formTitle(f Form) string {
	switch f {
	case FormOpenAI:
		return "OpenAI strict mode"
	case FormOllama:
		return "Ollama's format"
	case FormAnthropic:
		return "Anthropic structured outputs"
	case FormGemini:
		return "Gemini's responseSchema"
	}
	return string(f)
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
	keep:          withKeep("pattern", "format", "minItems", "default"), // allOf merged: closed branches would contradict each other
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
		case k == AliasesKeyword:
			if note := aliasNote(v, o.vals["enum"]); note != "" {
				notes = append(notes, note)
			}
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
		if jsonText(v, 20) == "1" {
			return "non-empty" // the common case, said in the fewest words
		}
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
	if !ok || !plainObjectRoot(ro) { // cannot happen: such roots are wrapped
		return nil, fmt.Errorf("%w: OpenAI strict mode needs an object at the root", ErrProviderForm)
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
