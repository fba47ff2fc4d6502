package schema

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// quick is a schema of the plain kind most extraction schemas are (type,
// properties, required, additionalProperties true or false, items, enums
// of strings, annotations), checked without the full validator: a valid
// answer validated by jsonschema cost about 60 allocations and a tenth of
// a worker's CPU per document. It only ever says "valid": Validate calls
// the full validator whenever quick is nil (a schema with any other
// keyword) or quick.valid is false (an invalid value, or one it cannot
// vouch for: an integer written with a fraction or an exponent, a value
// that is not of the kinds JSON decodes to), and that validator's
// violations are the result. TestQuickAgreesWithValidator and
// FuzzQuickValid check that whatever quick calls valid, the full
// validator calls valid.
type quick struct {
	types uint8 // quickType bits; 0: any type
	props map[string]*quick
	// fields are props by name, each marked required or not, and
	// requiredOnly the required names that are not props: an object is
	// checked by one look-up per property instead of a walk of its map
	// plus look-ups of every member and every required name (two fifths
	// of validating the usual answer).
	fields       []quickField
	requiredOnly []string
	closed       bool // additionalProperties: false
	items        *quick
	enum         []string
	hasEnum      bool
}

const (
	qNull uint8 = 1 << iota
	qBoolean
	qObject
	qArray
	qNumber
	qInteger
	qString
)

var quickTypes = map[string]uint8{
	"null": qNull, "boolean": qBoolean, "object": qObject, "array": qArray,
	"number": qNumber, "integer": qInteger, "string": qString,
}

// quickAnnotations are keywords that never make a value invalid.
var quickAnnotations = map[string]bool{
	"$schema": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// maxQuickDepth bounds the schemas quick takes (and so its recursion).
const maxQuickDepth = 32

// quickOf builds the quick form of a plain schema (map[string]any), or
// nil when the schema uses anything it does not know.
func quickOf(plain any, depth int) *quick {
	m, ok := plain.(map[string]any)
	if !ok || depth > maxQuickDepth {
		return nil
	}
	q := &quick{}
	var required []string
	for k, v := range m {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				if q.types = quickTypes[t]; q.types == 0 {
					return nil
				}
			case []any:
				for _, e := range t {
					s, _ := e.(string)
					b := quickTypes[s]
					if b == 0 {
						return nil
					}
					q.types |= b
				}
				if q.types == 0 {
					return nil
				}
			default:
				return nil
			}
		case "properties":
			ps, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			q.props = make(map[string]*quick, len(ps))
			for name, sub := range ps {
				if q.props[name] = quickOf(sub, depth+1); q.props[name] == nil {
					return nil
				}
			}
		case "required":
			rs, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range rs {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				required = append(required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			q.closed = !b
		case "items":
			if q.items = quickOf(v, depth+1); q.items == nil {
				return nil
			}
		case "enum":
			es, ok := v.([]any)
			if !ok {
				return nil
			}
			q.hasEnum = true
			for _, e := range es {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				q.enum = append(q.enum, s)
			}
		default:
			if !quickAnnotations[k] && !strings.HasPrefix(k, "x-") {
				return nil
			}
		}
	}
	q.fields, q.requiredOnly = quickFields(q.props, required)
	return q
}

// quickField is a property of an object schema and whether it is required.
type quickField struct {
	name     string
	q        *quick
	required bool
}

// quickFields lists props in name order, each marked required or not, and
// the required names that are not among them.
func quickFields(props map[string]*quick, required []string) (fields []quickField, requiredOnly []string) {
	for _, name := range slices.Sorted(maps.Keys(props)) {
		fields = append(fields, quickField{name: name, q: props[name], required: slices.Contains(required, name)})
	}
	for _, r := range required {
		if _, ok := props[r]; !ok {
			requiredOnly = append(requiredOnly, r)
		}
	}
	return fields, requiredOnly
}

// validObject reports whether object t is surely valid against q's
// properties, required names and additionalProperties.
func (q *quick) validObject(t map[string]any) bool {
	for _, r := range q.requiredOnly {
		if _, ok := t[r]; !ok {
			return false
		}
	}
	matched := 0
	for i := range q.fields {
		f := &q.fields[i]
		e, ok := t[f.name]
		switch {
		case ok:
			matched++
			if !f.q.valid(e) {
				return false
			}
		case f.required:
			return false
		}
	}
	if matched == len(t) {
		return true // every member is a property
	}
	if q.closed {
		return false
	}
	for k, e := range t {
		if _, ok := q.props[k]; !ok && !plainJSON(e, 0) {
			return false
		}
	}
	return true
}

// valid reports whether v is surely valid against q.
func (q *quick) valid(v any) bool {
	var kind uint8
	switch t := v.(type) {
	case nil:
		kind = qNull
	case bool:
		kind = qBoolean
	case string:
		kind = qString
		if q.hasEnum {
			found := false
			for _, e := range q.enum {
				if e == t {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	case json.Number:
		if !numberLiteral(string(t)) {
			return false
		}
		kind = qNumber
		if isIntegerLiteral(string(t)) {
			kind |= qInteger
		}
	case map[string]any:
		kind = qObject
		if !q.validObject(t) {
			return false
		}
	case []any:
		kind = qArray
		for _, e := range t {
			if q.items != nil && !q.items.valid(e) || q.items == nil && !plainJSON(e, 0) {
				return false
			}
		}
	default:
		return false
	}
	if q.hasEnum && kind != qString {
		return false
	}
	return q.types == 0 || q.types&kind != 0
}

// isIntegerLiteral reports whether a JSON number literal has neither a
// fraction nor an exponent (1.0 and 1e2 are integers to JSON Schema, but
// quick leaves them to the full validator). A loop over the bytes:
// strings.ContainsAny, a call per set byte, was a fiftieth of a clean
// answer's engine work.
func isIntegerLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return s != ""
}

// plainJSON reports whether v is made only of what JSON decodes to, so
// that the full validator, checking no keyword of it, takes it too.
func plainJSON(v any, depth int) bool {
	if depth > maxQuickDepth {
		return false
	}
	switch t := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		return numberLiteral(string(t))
	case map[string]any:
		for _, e := range t {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range t {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// numberLiteral reports whether s is a JSON number literal, as a
// json.Number from a decoder always is.
func numberLiteral(s string) bool {
	i := 0
	digits := func() int {
		k := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - k
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
