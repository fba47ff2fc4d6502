package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/extractq/extractq/schema"
)

// shape is what the simulator knows about the answer a request wants: a
// compiled schema, or an example to imitate, or neither (a generic object),
// plus the fields its faults and plausible values aim at. Shapes are cached,
// so this work is done once per distinct schema, not once per request.
type shape struct {
	schema  *schema.Schema // nil without a schema
	example any            // the decoded <example>, nil without one
	// required lists the top-level required properties (every key of an
	// example): the targets of a missing-field fault.
	required []string
	enums    []enumField
	// texts are unconstrained string fields that get document-derived,
	// name-appropriate values instead of the schema's placeholder; numbers
	// are unconstrained numbers that get positive, human-sized values.
	texts   []textField
	numbers []numberField
	// reads are the top-level fields read from the document's text, and
	// textOnly says the answer comes from the text alone (reading.go).
	reads    []readField
	textOnly bool
	// err is set when a schema the API carries natively does not compile:
	// the API rejects such a request.
	err error
	// templates are instances of the schema, built on first use: answers
	// start from one of them (picked by the document) instead of building
	// and validating a fresh instance per request, which costs far more
	// than all the rest of a request.
	templates [numTemplates]atomic.Pointer[template]
}

// numTemplates is how many distinct instances a schema's answers start
// from; the document-derived strings make answers differ beyond that.
const numTemplates = 256

type template struct {
	v any
	// plan says where the containers in v are, so that an answer copies
	// and checks them without iterating over every key of every object.
	plan *containers
	// skel is v encoded with holes for the filled values (skeleton.go),
	// built on the first answer that uses it (after buildShape has settled
	// the fields it fills); nil where answers take value's path.
	skelOnce sync.Once
	skel     *skeleton
}

// skeleton returns t's skeleton for sh, building it on first use.
func (t *template) skeleton(sh *shape) *skeleton {
	t.skelOnce.Do(func() { t.skel = sh.skeletonOf(t.v) })
	return t.skel
}

// containers is where the objects and arrays inside a decoded JSON value
// are: for an object, the keys that hold one (and theirs, in kids); for an
// array, kids has one entry per element, nil for an element that holds
// none. A value with none has an empty plan.
type containers struct {
	keys []string
	kids []*containers
}

// planOf maps the containers of v; nil if v is not one.
func planOf(v any) *containers {
	switch x := v.(type) {
	case map[string]any:
		p := &containers{}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if kp := planOf(x[k]); kp != nil {
				p.keys = append(p.keys, k)
				p.kids = append(p.kids, kp)
			}
		}
		return p
	case []any:
		p := &containers{kids: make([]*containers, len(x))}
		for i, e := range x {
			p.kids[i] = planOf(e)
		}
		return p
	}
	return nil
}

// clone is clone(v) for a v with the plan's containers (the template the
// plan was made of): only they are copied one by one.
func (p *containers) clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := maps.Clone(x)
		for i, k := range p.keys {
			m[k] = p.kids[i].clone(x[k])
		}
		return m
	case []any:
		a := slices.Clone(x)
		for i, kp := range p.kids {
			if kp != nil {
				a[i] = kp.clone(x[i])
			}
		}
		return a
	}
	return v
}

// distinct is distinct(v, template) for a v with the plan's containers
// in the same places as template's (an answer cloned from the template
// and its strings and numbers replaced, as value does): the objects and
// arrays are visited without iterating over the other keys. Anything
// else falls back to distinct.
func (p *containers) distinct(v, template any) any {
	switch x := v.(type) {
	case map[string]any:
		t, ok := template.(map[string]any)
		if !ok {
			return distinct(v, template)
		}
		for i, k := range p.keys {
			x[k] = p.kids[i].distinct(x[k], t[k])
		}
		return v
	case []any:
		t, ok := template.([]any)
		if !ok || len(t) != len(x) || len(p.kids) != len(x) {
			return distinct(v, template)
		}
		for i, kp := range p.kids {
			if kp != nil {
				x[i] = kp.distinct(x[i], t[i])
			}
		}
		return distinctItems(x, t, template)
	}
	return v
}

// pathSeg is one step into a value: an object key, or every array element.
type pathSeg struct {
	key  string
	each bool
}

type enumField struct {
	path   []pathSeg
	values []string
}

type numberField struct {
	path    []pathSeg
	integer bool
	year    bool
}

type textField struct {
	path           []pathSeg
	kind           textKind
	minLen, maxLen int // in runes; maxLen -1 for none
}

// fits reports whether a plausible value meets the field's length limits.
func (t *textField) fits(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= t.minLen && (t.maxLen < 0 || n <= t.maxLen)
}

// source says where a shape came from; each has its own cache map.
type source uint8

const (
	srcNative  source = iota // the API's own schema field
	srcGemini                // Gemini's OpenAPI-style responseSchema
	srcPrompt                // <json-schema> in the prompt
	srcExample               // <example> in the prompt
	numSources
)

// exampleGuideSep joins an example and its field guide in a cache key.
const exampleGuideSep = "\x00"

// shapeCacheSize bounds each source's map; when full it starts over, which
// only costs recompiling the schemas still in use.
const shapeCacheSize = 128

// shapeCache maps a schema's exact text to its shape. Lookups hash the raw
// text, which is far cheaper than canonicalising it for a fingerprint; the
// schema cache behind it shares compiled schemas between spellings.
type shapeCache struct {
	mu       sync.RWMutex
	m        [numSources]map[string]*shape
	compiler *schema.Cache
}

func newShapeCache() *shapeCache {
	c := &shapeCache{compiler: schema.NewCache(shapeCacheSize)}
	for i := range c.m {
		c.m[i] = make(map[string]*shape)
	}
	return c
}

// get returns the shape for the schema (or example) text raw.
func (c *shapeCache) get(src source, raw []byte) *shape {
	c.mu.RLock()
	sh, ok := c.m[src][string(raw)] // no copy: the compiler elides it for lookups
	c.mu.RUnlock()
	if ok {
		return sh
	}
	return c.add(src, string(raw))
}

// getString is get for text taken from a prompt.
func (c *shapeCache) getString(src source, raw string) *shape {
	c.mu.RLock()
	sh, ok := c.m[src][raw]
	c.mu.RUnlock()
	if ok {
		return sh
	}
	return c.add(src, raw)
}

func (c *shapeCache) add(src source, raw string) *shape {
	sh := buildShape(c.compiler, src, []byte(raw))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m[src]) >= shapeCacheSize {
		clear(c.m[src])
	}
	c.m[src][raw] = sh
	return sh
}

// plausibilityProbe is the document a shape's plausible values are tried
// on once, to prove they keep answers valid for that schema.
const plausibilityProbe = "Invoice INV-2024 from Acme Corp, billing@acme.example, issued 2024-03-15 to Jane Doe."

func buildShape(compiler *schema.Cache, src source, raw []byte) *shape {
	text := raw
	if src == srcExample {
		ex, guide, _ := strings.Cut(string(raw), exampleGuideSep)
		v, err := decodeJSON([]byte(ex))
		if err != nil {
			return &shape{} // a broken example: answer generically, as a model would
		}
		// The example and its field guide stand for the schema.
		gs, gerr := guidedSchema(v, guide)
		var s *schema.Schema
		if gerr == nil {
			s, gerr = compiler.Compile(gs, schema.WithJSONSchema())
		}
		if gerr == nil {
			_, gerr = s.Instance(0)
		}
		if gerr != nil {
			sh := &shape{example: v}
			if m, ok := v.(map[string]any); ok {
				sh.required = slices.Sorted(maps.Keys(m))
			}
			return sh
		}
		text = gs
	}
	if src == srcGemini {
		var err error
		if text, err = fromGeminiSchema(raw); err != nil {
			return &shape{err: err}
		}
	}
	if src == srcNative || src == srcGemini {
		text = restoreNotes(text)
	}
	s, err := compiler.Compile(text)
	if err != nil {
		if src == srcPrompt {
			return &shape{} // a model reading a broken schema still answers
		}
		return &shape{err: err}
	}
	sh := &shape{schema: s}
	var doc any
	if err := json.Unmarshal(s.JSON(), &doc); err == nil {
		if root, ok := doc.(map[string]any); ok {
			sh.required = stringList(root["required"])
			sh.plan(root, nil, "", 0)
			sh.planReading(root)
		}
	}
	// Plausible values are an embellishment: drop them for a schema they
	// would break (constraints met through $ref, allOf, dependencies…).
	if len(sh.texts)+len(sh.numbers) > 0 {
		v, err := sh.value(0, 1, plausibilityProbe)
		if err != nil || sh.schema.Validate(v) != nil {
			sh.texts, sh.numbers = nil, nil
		}
	}
	return sh
}

// maxPlanDepth stops the walk on absurdly deep schemas.
const maxPlanDepth = 16

// plan records the enum and plain-string fields reachable through
// properties and items (not through $ref or combinators).
func (sh *shape) plan(node map[string]any, path []pathSeg, field string, depth int) {
	if depth > maxPlanDepth {
		return
	}
	if props, ok := node["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			child, ok := props[k].(map[string]any)
			if !ok {
				continue
			}
			sh.field(child, append(slices.Clip(path), pathSeg{key: k}), k, depth)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		sh.field(items, append(slices.Clip(path), pathSeg{each: true}), field, depth)
	}
}

func (sh *shape) field(node map[string]any, path []pathSeg, name string, depth int) {
	if vals := stringList(node["enum"]); len(vals) > 0 {
		sh.enums = append(sh.enums, enumField{path: path, values: vals})
	} else if t, ok := textSpec(node, name); ok {
		t.path = path
		sh.texts = append(sh.texts, t)
	} else if n, ok := numberSpec(node, name); ok {
		n.path = path
		sh.numbers = append(sh.numbers, n)
	}
	sh.plan(node, path, name, depth+1)
}

// numberSpec reports a number schema with no constraint on the value. A
// model writes positive, human-sized numbers there (quantities, prices,
// years), where a schema instance may hold -54; provider forms often drop
// the bounds the original schema had, so this keeps answers valid too.
func numberSpec(node map[string]any, name string) (numberField, bool) {
	f := numberField{year: strings.Contains(strings.ToLower(name), "year")}
	switch node["type"] {
	case "integer":
		f.integer = true
	case "number":
	default:
		return f, false
	}
	for k := range node {
		switch k {
		case "type", "description", "title", "examples", "$comment", "default":
		default:
			return f, false
		}
	}
	return f, true
}

// plausible returns a positive number fit for the field.
func (f *numberField) plausible(r *rng) json.Number {
	switch {
	case f.year:
		return json.Number(strconv.Itoa(1990 + r.intn(40)))
	case f.integer:
		return json.Number(strconv.Itoa(1 + r.intn(999)))
	}
	return json.Number(strconv.FormatFloat(float64(1+r.intn(99999))/100, 'f', -1, 64))
}

// textSpec reports a string schema whose only constraints are ones a
// plausible value can be checked against (length, and the formats the
// simulator writes itself), and the kind of value it should get.
func textSpec(node map[string]any, name string) (textField, bool) {
	t := textField{kind: kindOf(name), maxLen: -1}
	switch ty := node["type"].(type) {
	case string:
		if ty != "string" {
			return t, false
		}
	case []any:
		if !slices.Contains(ty, any("string")) {
			return t, false
		}
	default:
		return t, false
	}
	for k, v := range node {
		switch k {
		case "type", "description", "title", "examples", "$comment", "default":
		case "minLength", "maxLength":
			n, ok := v.(float64)
			if !ok {
				return t, false
			}
			if k == "minLength" {
				t.minLen = int(n)
			} else {
				t.maxLen = int(n)
			}
		case "format":
			switch v {
			case "date":
				t.kind = kindDate
			case "date-time":
				t.kind = kindDateTime
			case "email":
				t.kind = kindEmail
			case "uri", "url":
				t.kind = kindURL
			default:
				return t, false
			}
		default:
			return t, false
		}
	}
	return t, true
}

func stringList(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// value builds the clean answer for a document: one of the schema's
// instances with plausible strings, a variation of the example, or a
// generic summary object. seed is the server's seed; docHash picks the
// instance and seeds the strings, so the answer depends on nothing else.
func (sh *shape) value(seed, docHash uint64, doc string) (any, error) {
	r := newRNG(mix(seed, docHash), 0x5eed)
	switch {
	case sh.schema != nil:
		t, err := sh.template(seed, mix(seed, docHash)%numTemplates)
		if err != nil {
			return nil, err
		}
		v := t.plan.clone(t.v)
		for i := range sh.texts {
			f := filler{text: &sh.texts[i], doc: doc, r: r}
			v = f.at(v, f.text.path)
		}
		for i := range sh.numbers {
			f := filler{number: &sh.numbers[i], r: r}
			v = f.at(v, f.number.path)
		}
		return sh.readText(t.plan.distinct(v, t.v), doc), nil
	case sh.example != nil:
		return vary(sh.example, "", doc, r), nil
	}
	return map[string]any{"summary": phrase(doc, r, 12), "characters": json.Number(fmt.Sprint(len(doc)))}, nil
}

// template returns instance number slot, building it on first use. Two
// requests racing to build it build the same value; either may win.
func (sh *shape) template(seed, slot uint64) (*template, error) {
	if t := sh.templates[slot].Load(); t != nil {
		return t, nil
	}
	raw, err := sh.schema.Instance(mix(seed, slot))
	if err != nil {
		return nil, fmt.Errorf("simulator cannot build an instance of this schema: %w", err)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	t := &template{v: v, plan: planOf(v)}
	sh.templates[slot].Store(t)
	return t, nil
}

// clone deep-copies a decoded JSON value, so that a template survives the
// changes made to one answer.
//
// A map is copied whole (maps.Clone copies the table as it is, without
// hashing and inserting each key again, which was most of an answer's
// cost), and only the containers in it are copied deeply; strings,
// numbers, booleans and nil are immutable and shared.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := maps.Clone(x)
		for k, e := range m {
			switch e.(type) {
			case map[string]any, []any:
				m[k] = clone(e)
			}
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

// filler puts a plausible value of a text or number field in place of
// the template's, as update with a function would, without a closure to
// allocate per field and request.
type filler struct {
	text   *textField
	number *numberField
	doc    string
	r      *rng
}

// at replaces the values at path.
func (f *filler) at(v any, path []pathSeg) any {
	if len(path) == 0 {
		return f.value(v)
	}
	seg := path[0]
	if seg.each {
		if arr, ok := v.([]any); ok {
			for i := range arr {
				arr[i] = f.at(arr[i], path[1:])
			}
		}
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if old, ok := m[seg.key]; ok {
		m[seg.key] = f.at(old, path[1:])
	}
	return v
}

func (f *filler) value(old any) any {
	if f.text != nil {
		if _, ok := old.(string); !ok {
			return old
		}
		if s := docText(f.text.kind, f.doc, f.r); f.text.fits(s) {
			return s
		}
		return old
	}
	if _, ok := old.(json.Number); !ok {
		return old
	}
	return f.number.plausible(f.r)
}

// updateOK replaces the values at path with f(value); f reports whether it
// changed anything, and so does updateOK.
func updateOK(v any, path []pathSeg, f func(any) (any, bool)) (any, bool) {
	if len(path) == 0 {
		return f(v)
	}
	seg := path[0]
	if seg.each {
		arr, ok := v.([]any)
		if !ok {
			return v, false
		}
		changed := false
		for i := range arr {
			var c bool
			arr[i], c = updateOK(arr[i], path[1:], f)
			changed = changed || c
		}
		return v, changed
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	old, ok := m[seg.key]
	if !ok {
		return v, false
	}
	nv, changed := updateOK(old, path[1:], f)
	m[seg.key] = nv
	return v, changed
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// fromGeminiSchema translates Gemini's OpenAPI-style schema (upper-case
// types, "nullable", "propertyOrdering", int64 limits as strings) to JSON
// Schema.
func fromGeminiSchema(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("responseSchema is not JSON: %w", err)
	}
	return json.Marshal(geminiNode(v))
}

func geminiNode(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch k {
			case "propertyOrdering", "nullable":
			case "format":
				if e != "enum" { // Gemini's marker for enum strings; JSON Schema has none
					out[k] = e
				}
			case "properties":
				props, _ := e.(map[string]any)
				np := make(map[string]any, len(props))
				for pk, pv := range props {
					np[pk] = geminiNode(pv)
				}
				out[k] = np
			case "type":
				t, _ := e.(string)
				out[k] = strings.ToLower(t)
			case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
				// int64 fields, which proto JSON writes as strings
				if n, ok := e.(string); ok {
					out[k] = json.Number(n)
				} else {
					out[k] = e
				}
			default:
				out[k] = geminiNode(e)
			}
		}
		if n, _ := x["nullable"].(bool); n {
			if t, ok := out["type"].(string); ok {
				out["type"] = []any{t, "null"}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = geminiNode(e)
		}
		return out
	}
	return v
}
