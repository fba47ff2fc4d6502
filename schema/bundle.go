package schema

import (
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"
)

// maxInlinedNodes bounds the size of a schema after references are inlined
// (a definition used many times is copied each time).
const maxInlinedNodes = 200000

// inliner resolves every $ref: it copies the target in place, except that a
// reference back into a definition being inlined (recursion) and, when
// bundling, a target used more than once become references into $defs.
type inliner struct {
	s         *Schema
	docs      map[string]any     // by document URL (and embedded resource URL), ordered
	bases     map[*object]string // the base URL of every subschema with an "$id"
	dynamic   []string           // where a $dynamicRef/$recursiveRef was resolved statically
	defs      *object            // recursive definitions, by generated name
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
	// Subschemas with an "$id" are documents of their own: references
	// relative to them, or naming them, resolve there.
	bases := map[*object]string{}
	for u, d := range maps.Clone(docs) {
		indexResources(d, u, docs, bases)
	}
	in := &inliner{s: s, docs: docs, bases: bases, defs: newObject(), defNames: map[string]string{}, stack: map[string]bool{}, bundle: bundle, uses: map[string]int{}}
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
	if b, ok := in.bases[o]; ok { // a subschema with an "$id": its own base
		docURL = b
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
			if k != "$ref" {
				at := joinPointer(ptr, k)
				if docURL != in.s.baseURL {
					at = docURL + "#" + at
				}
				if !contains(in.dynamic, at) {
					in.dynamic = append(in.dynamic, at)
				}
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
	if strings.Contains(frag, "%") { // a URI fragment: percent-encoded
		if f, err := url.PathUnescape(frag); err == nil {
			frag = f
		}
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
		if id, ok := t.vals["$id"].(string); ok && !strings.HasPrefix(id, "#") {
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

// indexResources registers every subschema of doc that has an "$id" (a
// URL, not a draft 7 "#anchor") under its resolved URL, following only
// the keywords that hold subschemas (an "$id" inside an enum is data).
func indexResources(node any, base string, docs map[string]any, bases map[*object]string) {
	o, ok := node.(*object)
	if !ok {
		return
	}
	if id, ok := o.vals["$id"].(string); ok && !strings.HasPrefix(id, "#") {
		base = resolveURL(base, id)
		u, _, _ := strings.Cut(base, "#")
		if _, known := docs[u]; !known {
			docs[u] = o
		}
		bases[o] = u
	}
	for _, k := range o.keys {
		v := o.vals[k]
		switch {
		case contains(subschemaMap, k) || k == "dependencies":
			if m, ok := v.(*object); ok {
				for _, mk := range m.keys {
					indexResources(m.vals[mk], base, docs, bases)
				}
			}
		case contains(subschemaList, k) && isList(v):
			for _, e := range v.([]any) {
				indexResources(e, base, docs, bases)
			}
		case contains(subschemaOne, k):
			indexResources(v, base, docs, bases)
		}
	}
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
		if id, _ := t.vals["$id"].(string); id == "#"+name { // draft 7's anchors
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
