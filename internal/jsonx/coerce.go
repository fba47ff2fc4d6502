package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// Coerce applies safe schema-guided changes to doc, guided by the violations
// a validation reported:
//
//   - "42" -> 42 where an integer is wanted, 42 -> "42" where a string is,
//     "true" -> true;
//   - numbers written for people ("$1,234.50", "1 234,50 €", "12,5",
//     "1'000", "-€12") -> a JSON number where a number is wanted, by the
//     rule below;
//   - a lone value -> a one-element array (a single object where an array
//     of objects is wanted), and a one-element array -> its value where a
//     scalar is wanted;
//   - a JSON text in a string -> the value where an object or array is
//     wanted; an object whose only member is an array, where an array is
//     wanted, -> that array (JSON modes that can only return an object); an
//     object whose only member is a scalar, where that scalar is wanted
//     ({"answer": 42} for an integer root) -> the scalar;
//   - an enum or const value matched ignoring surrounding space, then case,
//     then case, accents and punctuation ("in-progress" for "In Progress",
//     "Café" for "cafe"), then by the schema's aliases for the value (see
//     MatchEnum); a match must be unique at the first level that has one;
//   - a key matched to the one property it stands for, ignoring case,
//     surrounding space and '-', '_' or space ("First Name" for
//     "first_name"): when a required property is missing and exactly one
//     key of the object matches it, or when an additionalProperties
//     violation's allowed names hold exactly one match that the object
//     lacks (see renameKeys);
//   - a required property whose schema says it is an array, missing -> []
//     (lossy: the answer did not say it is empty);
//   - a null where the schema wants no null is dropped from its object:
//     strict provider forms make optional fields required-but-nullable, so
//     models answer null for "absent"; if the field was required the
//     caller's re-validation says so.
//
// Numbers: a lone ',' or '.' followed by exactly three digits ("1,234",
// "2.500") is ambiguous: it takes the decimal convention the other strings
// to be read as numbers show ('.' as decimal mark or ',' as grouping, or
// the reverse); with none shown it is read as grouping only where an
// integer and no other number is wanted (1234: the decimal reading could
// not be an integer), else left as it is. When those strings show both
// conventions ("1.234,56" and "1,234.56", or "3.5" and "12,50"), none of
// them that holds a ',' or '.' is converted. A percent sign is dropped only
// where an integer is wanted ("12%" -> 12; "12.5%" is 12.5 or 0.125). A
// reading with a fraction is never written where only an integer is
// wanted. What is left stays a violation, for feedback (see NumberHint).
//
// It reads each violation's Pointer, Keyword ("type", "enum", "const",
// "required", "additionalProperties"; the last segment of a keyword path)
// and Want. It invents no value other than the empty array above, which is
// marked lossy, and drops no content: each change is a Repair whose Where is
// the instance JSON pointer (lossy where the Kind constants say). When
// nothing changes, doc is returned as it is. The caller re-validates and
// accepts the value only if it then validates; a wrapped array may reveal
// violations inside it, so calling Coerce again after re-validating can help.
func Coerce(doc []byte, vs []schema.Violation) (out []byte, repairs []llm.Repair, changed bool) {
	if len(vs) == 0 {
		return doc, nil, false
	}
	root, err := decodeTree(doc)
	if err != nil {
		return doc, nil, false
	}
	nums := readNumbers(root, vs)
	done := make(map[string]bool, len(vs))
	for _, v := range vs {
		kw := keyword(v)
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
			r, ok = coerceType(n, v.Want, nums, v.Pointer == "")
		case kw == "enum" || kw == "const":
			r, ok = coerceEnum(n, v.Want, v.Aliases)
		}
		if ok {
			r.Where = v.Pointer // "" is the root
			repairs = append(repairs, r)
		}
	}
	repairs = append(repairs, root.renameKeys(vs)...)
	if len(repairs) == 0 {
		return doc, nil, false
	}
	return root.appendTo(nil), repairs, true
}

// keyword returns the last segment of a violation's keyword path.
func keyword(v schema.Violation) string {
	kw := v.Keyword
	if i := strings.LastIndexByte(kw, '/'); i >= 0 {
		kw = kw[i+1:]
	}
	return kw
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
func coerceType(n *node, want []string, nums numbers, root bool) (llm.Repair, bool) {
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
		if wants("integer") || wants("number") {
			if num, note, ok := nums.read(t, wants("integer"), wants("number")); ok {
				kind := KindCoerceStringToNumber
				if wants("integer") && cleanInteger.MatchString(num) {
					kind = KindCoerceStringToInteger
				}
				r, _ := set(kind, node{kind: 'n', text: num})
				r.Detail += note
				return r, true
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
			if k := n.kids[0]; k.kind == 'o' && wants("object") || scalarWanted(k, wants) {
				return set(KindCoerceUnwrapArray, *k)
			}
		}
		return llm.Repair{}, false
	case 'o':
		// {"items": [...]} where an array is wanted, {"answer": 42} where
		// a number is: an object that only wraps the value. Not a string
		// where the root wants a string: {"hi": "hello"} may as well be
		// the text as written, and taking "hello" would be a guess.
		if len(n.kids) == 1 {
			if k := n.kids[0]; k.kind == 'a' && wants("array") || scalarWanted(k, wants) && !(root && k.kind == 's' && wants("string")) {
				return set(KindCoerceUnwrapObject, *k)
			}
		}
	case 'z':
		return llm.Repair{}, false // a null is not evidence of any value
	}
	if wants("array") {
		old := *n
		r, _ := set(KindCoerceWrapArray, node{kind: 'a', kids: []*node{&old}})
		// "red, green" wrapped whole may have been meant as two items; an
		// object holding an array may be a wrapper around the wanted items.
		r.Lossy = old.kind == 's' && strings.ContainsAny(old.text, ",;\n") || old.kind == 'o' && slices.ContainsFunc(old.kids, func(k *node) bool { return k.kind == 'a' })
		return r, true
	}
	return llm.Repair{}, false
}

// scalarWanted reports whether k is a scalar of a wanted type.
func scalarWanted(k *node, wants func(string) bool) bool {
	switch k.kind {
	case 's':
		return wants("string")
	case 'b':
		return wants("boolean")
	case 'n':
		return wants("number") || wants("integer") && cleanInteger.MatchString(k.text)
	}
	return false
}

// numbers holds what the strings to be read as numbers say about the
// writer's decimal convention.
type numbers struct {
	convention byte // '.' or ',' when the strings show one, 0 otherwise
	conflict   bool // they show both
}

// readNumbers gathers the convention from the strings at the "type"
// violations that want a number or an integer.
func readNumbers(root *node, vs []schema.Violation) numbers {
	var dot, comma bool
	for _, v := range vs {
		if keyword(v) != "type" || !slices.Contains(v.Want, "number") && !slices.Contains(v.Want, "integer") {
			continue
		}
		n := root.lookup(v.Pointer)
		if n == nil || n.kind != 's' {
			continue
		}
		if h, ok := readHumanNumber(n.text); ok {
			switch h.convention() {
			case '.':
				dot = true
			case ',':
				comma = true
			}
		}
	}
	switch {
	case dot && comma:
		return numbers{conflict: true}
	case dot:
		return numbers{convention: '.'}
	case comma:
		return numbers{convention: ','}
	}
	return numbers{}
}

// read returns s as JSON number text by the rule Coerce documents, with a
// note on what was interpreted, or false.
func (ns numbers) read(s string, integer, number bool) (string, string, bool) {
	h, human := readHumanNumber(s)
	if ns.conflict && human && strings.ContainsAny(s, ",.") {
		return "", "", false
	}
	if cleanNumber.MatchString(s) && (!human || h.ambiguous == 0) {
		// JSON already: 42, 3.5, -1.5e3.
		if integer && !number && !cleanInteger.MatchString(s) || !finiteNumber(s) {
			return "", "", false
		}
		return s, "", true
	}
	if !human {
		return "", "", false
	}
	var notes []string
	dec := true
	switch {
	case h.percent:
		if !integer || number || h.frac != "" || h.ambiguous != 0 {
			return "", "", false
		}
		notes = append(notes, `dropped "%"`)
	case h.ambiguous != 0:
		switch {
		case ns.convention != 0:
			dec = h.ambiguous == ns.convention
		case integer && !number:
			dec = false
		default:
			return "", "", false
		}
		if dec {
			notes = append(notes, strconv.Quote(string(h.ambiguous))+" read as the decimal mark, as in the answer's other numbers")
		} else {
			notes = append(notes, strconv.Quote(string(h.ambiguous))+" read as a thousands separator")
		}
	case h.mark == ',':
		notes = append(notes, `"," read as the decimal mark`)
	}
	if h.group != 0 {
		notes = append(notes, "dropped the thousands separator "+strconv.Quote(string(h.group)))
	}
	if h.currency != "" {
		notes = append(notes, "dropped the currency "+strconv.Quote(h.currency))
	}
	out := h.reading(dec)
	if integer && !number && strings.Contains(out, ".") || !finiteNumber(out) {
		return "", "", false // a fraction where only an integer is wanted
	}
	note := ""
	if len(notes) > 0 {
		note = " (" + strings.Join(notes, "; ") + ")"
	}
	return out, note, true
}

// coerceEnum replaces n by the allowed value it stands for (see
// matchEnum), or its number or boolean written as text (and back).
func coerceEnum(n *node, allowed []string, aliases map[string][]string) (llm.Repair, bool) {
	if n.kind != 's' && n.kind != 'n' && n.kind != 'b' {
		return llm.Repair{}, false
	}
	var match *node
	if n.kind == 's' {
		if m, ok := matchEnum(n.text, allowed, aliases); ok {
			match, _ = decodeTree([]byte(m))
		}
	} else {
		var exact []*node
		for _, a := range allowed {
			if v, err := decodeTree([]byte(a)); err == nil && v.kind == 's' && v.text == n.text {
				exact = append(exact, v)
			}
		}
		if len(exact) == 1 {
			match = exact[0]
		}
	}
	if match == nil || match.kind == n.kind && match.text == n.text {
		return llm.Repair{}, false
	}
	before := n.describe()
	*n = *match
	return llm.Repair{Kind: KindCoerceEnum, Detail: before + " -> " + n.describe()}, true
}

// matchEnum returns the allowed value (JSON text, as in a violation's
// Want) that the string s stands for. It compares, in turn: the text with
// surrounding space trimmed (a number or boolean allowed value matches its
// text: "3" for 3); ignoring case; ignoring case, accents and everything but
// letters and digits ("in-progress" for "In Progress", "Cafe" for "café");
// and then the aliases of each string value (aliases maps a value, as a
// plain string, to its other spellings), compared ignoring case, accents
// and punctuation too. The first comparison that matches decides, and only
// when it matches exactly one allowed value: "Ab" matches nothing when "AB"
// and "ab" are both allowed.
func matchEnum(s string, allowed []string, aliases map[string][]string) (string, bool) {
	t := strings.TrimSpace(s)
	type value struct {
		json string
		n    *node
	}
	var vals []value
	for _, a := range allowed {
		if v, err := decodeTree([]byte(a)); err == nil {
			vals = append(vals, value{a, v})
		}
	}
	levels := []func(v *node) bool{
		func(v *node) bool {
			return v.text == t || v.kind != 's' && v.kind != 'z' && strings.EqualFold(v.text, t)
		},
		func(v *node) bool { return v.kind == 's' && strings.EqualFold(v.text, t) },
		func(v *node) bool { k := foldKey(t); return v.kind == 's' && k != "" && foldKey(v.text) == k },
		func(v *node) bool {
			if v.kind != 's' {
				return false
			}
			k := foldKey(t)
			for _, al := range aliases[v.text] {
				if k != "" && foldKey(al) == k {
					return true
				}
			}
			return false
		},
	}
	for _, match := range levels {
		found := ""
		n := 0
		for _, v := range vals {
			if match(v.n) {
				found = v.json
				n++
			}
		}
		switch {
		case n == 1:
			return found, true
		case n > 1:
			return "", false // ambiguous ("a" and "A" both allowed)
		}
	}
	return "", false
}

// foldKey reduces s to its lower-case letters and digits without accents:
// "In-Progress" and "in_progress" give "inprogress", "Café" gives "cafe".
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// keyKey reduces a property name for matching: lower case, without
// white space, '-' and '_' ("First Name", "first_name" and "firstName"
// give "firstname"). Accents and other punctuation stay significant.
func keyKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || r == '-' || r == '_':
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// renameKeys applies the key coercions of Coerce from the "required" and
// "additionalProperties" violations, and adds [] for a missing required
// array:
//
//   - a required property M is missing and exactly one key K of the object
//     matches it (keyKey), no other missing property matches K, and, when
//     the object has additionalProperties violations, K is one of them and
//     their allowed names hold no other match: K is renamed M;
//   - an additionalProperties violation for K lists the allowed names, and
//     exactly one of them, absent from the object, matches K: K is renamed;
//   - a required property still missing whose schema's type includes
//     "array" is added as [] (lossy).
//
// A renamed member keeps its place and value.
func (n *node) renameKeys(vs []schema.Violation) []llm.Repair {
	type object struct {
		missing []schema.Violation
		extra   map[string][]string // key -> allowed names
	}
	objs := map[string]*object{}
	var order []string
	at := func(ptr string) *object {
		o := objs[ptr]
		if o == nil {
			o = &object{extra: map[string][]string{}}
			objs[ptr] = o
			order = append(order, ptr)
		}
		return o
	}
	for _, v := range vs {
		i := strings.LastIndexByte(v.Pointer, '/')
		if i < 0 {
			continue
		}
		parent, name := v.Pointer[:i], unescapeToken(v.Pointer[i+1:])
		switch keyword(v) {
		case "required":
			o := at(parent)
			o.missing = append(o.missing, v)
		case "additionalProperties":
			at(parent).extra[name] = v.Want
		}
	}
	var repairs []llm.Repair
	for _, ptr := range order {
		o := objs[ptr]
		obj := n.lookup(ptr)
		if obj == nil || obj.kind != 'o' {
			continue
		}
		has := func(k string) bool { return slices.Contains(obj.keys, k) }
		rename := func(from, to string) {
			for i, k := range obj.keys {
				if k == from {
					obj.keys[i] = to
				}
			}
			repairs = append(repairs, llm.Repair{Kind: KindCoerceKey, Where: joinPointer(ptr, to),
				Detail: strconv.Quote(clip(from)) + " -> " + strconv.Quote(clip(to))})
		}
		renamed := map[string]bool{}
		for _, m := range o.missing {
			name := unescapeToken(m.Pointer[len(ptr)+1:])
			key := keyKey(name)
			var match []string
			for _, k := range obj.keys {
				if k != name && keyKey(k) == key && !slices.Contains(match, k) {
					match = append(match, k)
				}
			}
			if len(match) != 1 || has(name) {
				continue
			}
			k := match[0]
			others := 0
			for _, m2 := range o.missing {
				if keyKey(unescapeToken(m2.Pointer[len(ptr)+1:])) == keyKey(k) {
					others++
				}
			}
			if others != 1 {
				continue // two missing properties match the key
			}
			if len(o.extra) > 0 {
				allowed, isExtra := o.extra[k]
				if !isExtra || countMatches(allowed, k) > 1 {
					continue
				}
			}
			rename(k, name)
			renamed[k] = true
		}
		for k, allowed := range o.extra {
			if renamed[k] || !has(k) || countMatches(allowed, k) != 1 {
				continue
			}
			for _, a := range allowed {
				if a != k && keyKey(a) == keyKey(k) && !has(a) {
					rename(k, a)
				}
			}
		}
		for _, m := range o.missing {
			name := unescapeToken(m.Pointer[len(ptr)+1:])
			if has(name) || !slices.Contains(m.Want, "array") {
				continue
			}
			obj.keys = append(obj.keys, name)
			obj.kids = append(obj.kids, &node{kind: 'a'})
			repairs = append(repairs, llm.Repair{Kind: KindCoerceEmptyArray, Where: m.Pointer,
				Detail: "missing array " + strconv.Quote(clip(name)) + " set to []", Lossy: true})
		}
	}
	return repairs
}

// countMatches counts the names that match key k (keyKey).
func countMatches(names []string, k string) int {
	n := 0
	for _, a := range names {
		if keyKey(a) == keyKey(k) {
			n++
		}
	}
	return n
}

// unescapeToken decodes one JSON pointer token.
func unescapeToken(t string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
}

// joinPointer appends one token to a JSON pointer.
func joinPointer(ptr, tok string) string {
	return ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}
