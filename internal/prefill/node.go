package prefill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/extractq/extractq/schema"
)

// omap is a JSON object that keeps its keys' order: properties are
// generated in the order the schema's author wrote them, which is also the
// order models expect.
type omap struct {
	keys []string
	vals map[string]any
}

func (o *omap) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

// MarshalJSON writes the keys in their original order.
func (o *omap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeOrdered decodes JSON with objects as *omap and numbers as
// json.Number.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the schema")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &omap{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			var list []any
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
	}
	return tok, nil
}

// kind is how a schema node is generated.
type kind uint8

const (
	kindWhole   kind = iota // the model writes the whole value at once
	kindConst               // the program writes the only allowed value
	kindLiteral             // one of a list of literals (enum, boolean, null)
	kindString
	kindNumber
	kindInteger
	kindObject
	kindArray
	kindChoice // anyOf/oneOf/type list of simple branches, picked by the first token
)

// maxDepth bounds nesting (and recursive schemas): deeper subtrees are
// generated whole.
const maxDepth = 12

// defaultMaxItems bounds an array without maxItems, so that a model that
// never says "]" cannot run up the bill.
const defaultMaxItems = 64

// node is one schema location, resolved and classified.
type node struct {
	kind kind
	s    *omap // the schema object, $ref resolved; nil for true/{}
	// literals are the allowed values' JSON texts (kindConst, kindLiteral).
	literals []string
	// props lists an object's properties in schema order; req marks the
	// required ones.
	props []prop
	// items is an array's element; minItems and maxItems its bounds.
	items              *node
	minItems, maxItems int
	// branches are a choice's simple alternatives.
	branches []*node
	// nullable: a choice branch or type list allows null.
	nullable bool

	valOnce sync.Once
	val     *schema.Schema // the node as a schema of its own; nil if it cannot compile
}

type prop struct {
	name string
	req  bool
	n    *node
}

// tree turns a compiled schema into the nodes generation walks.
type tree struct {
	root any // the whole schema document (decodeOrdered)
}

func newTree(s *schema.Schema) (*node, *tree, error) {
	doc, err := decodeOrdered(s.JSON())
	if err != nil {
		return nil, nil, fmt.Errorf("read the schema: %w", err)
	}
	t := &tree{root: doc}
	return t.build(doc, 0), t, nil
}

// resolve follows local $refs ("#/$defs/x", "#/definitions/x"), merging the
// referring object's other keywords over the target.
func (t *tree) resolve(v any) (*omap, bool) {
	o, ok := v.(*omap)
	if !ok {
		return nil, v == true || v == nil
	}
	for i := 0; i < 8; i++ {
		r, ok := o.get("$ref")
		if !ok {
			return o, true
		}
		ref, _ := r.(string)
		target, found := t.pointer(ref)
		to, isObj := target.(*omap)
		if !found || !isObj {
			return nil, false
		}
		merged := &omap{vals: map[string]any{}}
		for _, k := range to.keys {
			merged.keys = append(merged.keys, k)
			merged.vals[k] = to.vals[k]
		}
		for _, k := range o.keys {
			if k == "$ref" {
				continue
			}
			if _, dup := merged.vals[k]; !dup {
				merged.keys = append(merged.keys, k)
			}
			merged.vals[k] = o.vals[k]
		}
		if _, again := to.get("$ref"); !again {
			delete(merged.vals, "$ref")
			merged.keys = without(merged.keys, "$ref")
		}
		o = merged
	}
	return nil, false
}

func without(keys []string, k string) []string {
	out := keys[:0:0]
	for _, x := range keys {
		if x != k {
			out = append(out, x)
		}
	}
	return out
}

// pointer finds a local reference "#/a/b" in the schema document.
func (t *tree) pointer(ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	cur := t.root
	if frag == "" {
		return cur, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *omap:
			v, ok := c.get(tok)
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// build classifies one schema location.
func (t *tree) build(v any, depth int) *node {
	o, ok := t.resolve(v)
	n := &node{s: o}
	if !ok || depth > maxDepth {
		return n // kindWhole
	}
	if o == nil {
		return n
	}
	if c, ok := o.get("const"); ok {
		n.kind, n.literals = kindConst, []string{canonical(c)}
		return n
	}
	if e, ok := o.get("enum"); ok {
		list, _ := e.([]any)
		for _, x := range list {
			n.literals = append(n.literals, canonical(x))
		}
		n.kind = kindLiteral
		if len(n.literals) == 1 {
			n.kind = kindConst
		}
		return n
	}
	if _, ok := o.get("allOf"); ok {
		return n // whole: merging constraints is for the final validation
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := o.get(kw); ok {
			list, _ := alts.([]any)
			return t.choice(n, list, depth)
		}
	}
	types := typeList(o)
	if len(types) > 1 {
		var alts []any
		for _, ty := range types {
			c := &omap{vals: map[string]any{}}
			for _, k := range o.keys {
				if k != "type" {
					c.keys = append(c.keys, k)
					c.vals[k] = o.vals[k]
				}
			}
			c.keys = append(c.keys, "type")
			c.vals["type"] = ty
			alts = append(alts, c)
		}
		return t.choice(n, alts, depth)
	}
	ty := ""
	if len(types) == 1 {
		ty = types[0]
	} else if _, ok := o.get("properties"); ok {
		ty = "object"
	} else if _, ok := o.get("items"); ok {
		ty = "array"
	}
	switch ty {
	case "string":
		n.kind = kindString
	case "number":
		n.kind = kindNumber
	case "integer":
		n.kind = kindInteger
	case "boolean":
		n.kind, n.literals = kindLiteral, []string{"true", "false"}
	case "null":
		n.kind, n.literals = kindConst, []string{"null"}
	case "object":
		t.object(n, o, depth)
	case "array":
		t.array(n, o, depth)
	}
	return n
}

func typeList(o *omap) []string {
	switch ty := o.vals["type"].(type) {
	case string:
		return []string{ty}
	case []any:
		var out []string
		for _, x := range ty {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (t *tree) object(n *node, o *omap, depth int) {
	props, _ := o.vals["properties"].(*omap)
	if props == nil {
		return // free-form object: whole
	}
	if _, ok := o.get("patternProperties"); ok {
		return
	}
	required := map[string]bool{}
	if r, ok := o.vals["required"].([]any); ok {
		for _, x := range r {
			if s, ok := x.(string); ok {
				required[s] = true
			}
		}
	}
	for k := range required {
		if _, ok := props.get(k); !ok {
			return // a required key with no schema: only the whole value can say it
		}
	}
	n.kind = kindObject
	for _, k := range props.keys {
		n.props = append(n.props, prop{name: k, req: required[k], n: t.build(props.vals[k], depth+1)})
	}
}

func (t *tree) array(n *node, o *omap, depth int) {
	if _, ok := o.get("prefixItems"); ok {
		return
	}
	items, ok := o.get("items")
	if _, isList := items.([]any); isList {
		return // draft-7 tuple: whole
	}
	n.kind = kindArray
	if ok {
		n.items = t.build(items, depth+1)
	} else {
		n.items = &node{}
	}
	n.minItems = intOf(o.vals["minItems"], 0)
	n.maxItems = intOf(o.vals["maxItems"], defaultMaxItems)
}

func intOf(v any, def int) int {
	if num, ok := v.(json.Number); ok {
		if i, err := num.Int64(); err == nil && i >= 0 {
			return int(min(i, 1<<20))
		}
	}
	return def
}

// choice keeps anyOf/oneOf (or a type list) as a first-token choice when
// every branch is a simple scalar and no two start alike; else the whole
// subtree is generated at once.
func (t *tree) choice(n *node, alts []any, depth int) *node {
	seen := map[byte]bool{}
	var branches []*node
	for _, a := range alts {
		b := t.build(a, depth+1)
		lead, ok := leadOf(b)
		if !ok || seen[lead] {
			n.kind = kindWhole
			return n
		}
		seen[lead] = true
		if lead == 'n' {
			n.nullable = true
		}
		branches = append(branches, b)
	}
	if len(branches) == 0 {
		return n
	}
	n.kind, n.branches = kindChoice, branches
	return n
}

// leadOf is the first character class of a simple branch's values: '"'
// strings, '0' numbers, 't' booleans, 'n' null.
func leadOf(b *node) (byte, bool) {
	switch b.kind {
	case kindString:
		return '"', true
	case kindNumber, kindInteger:
		return '0', true
	case kindConst, kindLiteral:
		var lead byte
		for _, l := range b.literals {
			c := l[0]
			switch {
			case c == '-' || (c >= '0' && c <= '9'):
				c = '0'
			case c == 'f':
				c = 't'
			case c == '{' || c == '[':
				return 0, false
			}
			if lead != 0 && c != lead {
				return 0, false
			}
			lead = c
		}
		return lead, lead != 0
	}
	return 0, false
}

// canonical is the compact JSON text of a decoded value.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// validator compiles the node as a schema of its own (the document's $defs
// and definitions carried along so that local references still resolve),
// once. nil means it cannot stand alone; the final validation still runs.
func (t *tree) validator(n *node) *schema.Schema {
	n.valOnce.Do(func() {
		if n.s == nil {
			return
		}
		o := &omap{vals: map[string]any{}}
		for _, k := range n.s.keys {
			o.keys = append(o.keys, k)
			o.vals[k] = n.s.vals[k]
		}
		if root, ok := t.root.(*omap); ok {
			for _, k := range []string{"$schema", "$defs", "definitions"} {
				if v, ok := root.get(k); ok {
					if _, have := o.vals[k]; !have {
						o.keys = append(o.keys, k)
						o.vals[k] = v
					}
				}
			}
		}
		raw, err := json.Marshal(o)
		if err != nil {
			return
		}
		if s, err := schema.Compile(raw, schema.WithJSONSchema()); err == nil {
			n.val = s
		}
	})
	return n.val
}
