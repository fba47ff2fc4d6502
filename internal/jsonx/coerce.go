package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// Coerce applies safe schema-guided changes to doc, guided by the violations
// a validation reported: "42" -> 42 where an integer is wanted, 42 -> "42"
// where a string is, "true" -> true, a lone value -> a one-element array (and
// a one-element array -> its value where a scalar is wanted), a JSON text in
// a string -> the value where an object or array is wanted, and an enum or
// const value matched ignoring case and surrounding space. A null where the
// schema wants no null is dropped from its object: strict provider forms
// make optional fields required-but-nullable, so models answer null for
// "absent"; if the field was required the caller's re-validation says so.
// An object whose only member is an array, where an array is wanted, is
// replaced by that array (JSON modes that can only return an object).
//
// It reads each violation's Pointer, Keyword ("type", "enum", "const"; the
// last segment of a keyword path) and Want. It never invents a value: a
// missing property stays missing. Each change is a Repair whose
// Where is the instance JSON pointer. When nothing changes, doc is returned
// as it is. The caller re-validates; a wrapped array may reveal violations
// inside it, so calling Coerce again after re-validating can help.
func Coerce(doc []byte, vs []schema.Violation) (out []byte, repairs []llm.Repair, changed bool) {
	if len(vs) == 0 {
		return doc, nil, false
	}
	root, err := decodeTree(doc)
	if err != nil {
		return doc, nil, false
	}
	done := make(map[string]bool, len(vs))
	for _, v := range vs {
		kw := v.Keyword
		if i := strings.LastIndexByte(kw, '/'); i >= 0 {
			kw = kw[i+1:]
		}
		if done[v.Pointer+"\x00"+kw] || len(v.Want) == 0 {
			continue
		}
		done[v.Pointer+"\x00"+kw] = true
		n := root.lookup(v.Pointer)
		if n == nil {
			continue
		}
		var r llm.Repair
		var ok bool
		switch {
		case kw == "type" && n.kind == 'z':
			r, ok = root.dropMember(v.Pointer)
		case kw == "type":
			r, ok = coerceType(n, v.Want)
		case kw == "enum" || kw == "const":
			r, ok = coerceEnum(n, v.Want)
		}
		if ok {
			r.Where = v.Pointer // "" is the root
			repairs = append(repairs, r)
		}
	}
	if len(repairs) == 0 {
		return doc, nil, false
	}
	return root.appendTo(nil), repairs, true
}

// node is a decoded JSON value that keeps member order, so that a coerced
// document reads like the model's answer.
type node struct {
	kind byte   // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	text string // string value, number text, "true"/"false"
	keys []string
	kids []*node
}

func decodeTree(doc []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("jsonx: trailing data after the value")
	}
	return n, nil
}

func decodeNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{kind: 'a'}
		if t == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			kid, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := dec.Token(); err != nil { // closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &node{kind: 's', text: t}, nil
	case json.Number:
		return &node{kind: 'n', text: t.String()}, nil
	case bool:
		return &node{kind: 'b', text: strconv.FormatBool(t)}, nil
	default:
		return &node{kind: 'z'}, nil
	}
}

// lookup resolves a JSON pointer ("" is the root), or returns nil.
func (n *node) lookup(ptr string) *node {
	if ptr == "" {
		return n
	}
	if ptr[0] != '/' {
		return nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch n.kind {
		case 'o':
			var next *node
			for i, k := range n.keys {
				if k == tok {
					next = n.kids[i] // the last duplicate wins, as in decoding
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case 'a':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.kids) || strconv.Itoa(i) != tok {
				return nil
			}
			n = n.kids[i]
		default:
			return nil
		}
	}
	return n
}

// dropMember removes the object member ptr points at; it does nothing for
// the root or an array element (removing one would shift the others).
func (n *node) dropMember(ptr string) (llm.Repair, bool) {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return llm.Repair{}, false
	}
	parent := n.lookup(ptr[:i])
	if parent == nil || parent.kind != 'o' {
		return llm.Repair{}, false
	}
	key := strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr[i+1:])
	for j := len(parent.keys) - 1; j >= 0; j-- {
		if parent.keys[j] == key {
			parent.keys = append(parent.keys[:j], parent.keys[j+1:]...)
			parent.kids = append(parent.kids[:j], parent.kids[j+1:]...)
			return llm.Repair{Kind: KindCoerceDropNull, Detail: "null " + clip(key) + " dropped"}, true
		}
	}
	return llm.Repair{}, false
}

func (n *node) appendTo(b []byte) []byte {
	switch n.kind {
	case 'o', 'a':
		open, close := byte('['), byte(']')
		if n.kind == 'o' {
			open, close = '{', '}'
		}
		b = append(b, open)
		for i, kid := range n.kids {
			if i > 0 {
				b = append(b, ',')
			}
			if n.kind == 'o' {
				b = appendQuoted(b, n.keys[i])
				b = append(b, ':')
			}
			b = kid.appendTo(b)
		}
		return append(b, close)
	case 's':
		return appendQuoted(b, n.text)
	case 'z':
		return append(b, "null"...)
	default:
		return append(b, n.text...)
	}
}

// describe renders a node for a repair detail.
func (n *node) describe() string { return clip(string(n.appendTo(nil))) }

var (
	cleanInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	cleanNumber  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// coerceType changes n in place to one of the wanted types when that is
// safe, and describes the change.
func coerceType(n *node, want []string) (llm.Repair, bool) {
	wants := func(t string) bool {
		for _, w := range want {
			if w == t {
				return true
			}
		}
		return false
	}
	before := n.describe()
	set := func(kind string, to node) (llm.Repair, bool) {
		*n = to
		return llm.Repair{Kind: kind, Detail: before + " -> " + n.describe()}, true
	}
	switch n.kind {
	case 's':
		t := strings.TrimSpace(n.text)
		if wants("integer") && cleanInteger.MatchString(t) {
			if _, err := strconv.ParseInt(t, 10, 64); err == nil {
				return set(KindCoerceStringToInteger, node{kind: 'n', text: t})
			}
		}
		if wants("number") && cleanNumber.MatchString(t) {
			if _, err := strconv.ParseFloat(t, 64); err == nil {
				return set(KindCoerceStringToNumber, node{kind: 'n', text: t})
			}
		}
		if wants("boolean") && (strings.EqualFold(t, "true") || strings.EqualFold(t, "false")) {
			return set(KindCoerceStringToBool, node{kind: 'b', text: strings.ToLower(t)})
		}
		if (wants("object") && strings.HasPrefix(t, "{")) || (wants("array") && strings.HasPrefix(t, "[")) {
			if inner, err := decodeTree([]byte(t)); err == nil {
				return set(KindCoerceJSONString, *inner)
			}
		}
	case 'n', 'b':
		if wants("string") {
			return set(KindCoerceToString, node{kind: 's', text: n.text})
		}
	case 'a':
		if len(n.kids) == 1 && !wants("array") {
			k := n.kids[0]
			if k.kind == 'o' && wants("object") || k.kind == 's' && wants("string") || k.kind == 'b' && wants("boolean") ||
				k.kind == 'n' && (wants("number") || wants("integer") && cleanInteger.MatchString(k.text)) {
				return set(KindCoerceUnwrapArray, *k)
			}
		}
		return llm.Repair{}, false
	case 'o':
		if wants("array") && len(n.kids) == 1 && n.kids[0].kind == 'a' {
			return set(KindCoerceUnwrapObject, *n.kids[0])
		}
	case 'z':
		return llm.Repair{}, false // a null is not evidence of any value
	}
	if wants("array") {
		old := *n
		return set(KindCoerceWrapArray, node{kind: 'a', kids: []*node{&old}})
	}
	return llm.Repair{}, false
}

// coerceEnum replaces n by the one allowed value it matches ignoring case
// and surrounding space (or by its number or boolean as text, and back).
func coerceEnum(n *node, allowed []string) (llm.Repair, bool) {
	if n.kind != 's' && n.kind != 'n' && n.kind != 'b' {
		return llm.Repair{}, false
	}
	t := strings.TrimSpace(n.text)
	var exact, folded []*node
	for _, a := range allowed {
		v, err := decodeTree([]byte(a))
		if err != nil {
			continue
		}
		switch {
		case n.kind == 's' && v.kind == 's':
			if v.text == t {
				exact = append(exact, v)
			} else if strings.EqualFold(v.text, t) {
				folded = append(folded, v)
			}
		case n.kind == 's' && (v.kind == 'n' || v.kind == 'b'):
			if strings.EqualFold(v.text, t) {
				exact = append(exact, v)
			}
		case v.kind == 's':
			if v.text == n.text {
				exact = append(exact, v)
			}
		}
	}
	var match *node
	switch {
	case len(exact) == 1:
		match = exact[0]
	case len(exact) == 0 && len(folded) == 1:
		match = folded[0]
	default:
		return llm.Repair{}, false // no match, or ambiguous ("a" and "A" both allowed)
	}
	if match.kind == n.kind && match.text == n.text {
		return llm.Repair{}, false
	}
	before := n.describe()
	*n = *match
	return llm.Repair{Kind: KindCoerceEnum, Detail: before + " -> " + n.describe()}, true
}
