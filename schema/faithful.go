package schema

import (
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// faithfulness appends to reasons every construct at or under node (an
// inlined schema) that form f, which closes every object, would narrow.
// Only the keywords a form converts are followed: what it moves into a
// description only loosens the form.
func faithfulness(f Form, node any, ptr string, reasons *[]string) {
	title := formTitle(f)
	add := func(p, format string, args ...any) {
		*reasons = append(*reasons, ptrLabel(p)+": "+fmt.Sprintf(format, args...))
	}
	if b, ok := node.(bool); ok {
		if b {
			add(ptr, "accepts any value, which %s cannot express", title)
		}
		return
	}
	o, ok := node.(*object)
	if !ok {
		return
	}
	if f == FormOpenAI || f == FormAnthropic || f == FormGemini {
		o = mergeAllOf(o, rules{}) // as every one of these forms does
	}
	if anyValue(o) {
		add(ptr, "accepts any value, which %s cannot express", title)
		return
	}
	props, _ := o.vals["properties"].(*object)
	ap, hasAP := o.get("additionalProperties")
	pp, _ := o.vals["patternProperties"].(*object)
	switch {
	case pp != nil && pp.len() > 0:
		add(ptr, "patternProperties cannot be expressed: %s closes every object, so properties matching %s would be dropped", title, jsonText(pp.keys, 80))
	case hasAP && ap != false:
		add(ptr, "allows properties besides those listed (additionalProperties %s): %s closes every object, so they would be dropped", jsonText(ap, 60), title)
	case isObjectSchema(o) && !hasAP && (props == nil || props.len() == 0):
		add(ptr, "a free-form object (no properties listed): %s would send it closed and empty, so the model could only answer {}", title)
	}
	if up, ok := o.get("unevaluatedProperties"); ok && up != false {
		add(ptr, "allows unevaluated properties (unevaluatedProperties %s): %s closes every object, so they would be dropped", jsonText(up, 60), title)
	}
	// Properties a branch adds to an object that is closed to its own.
	if isObjectSchema(o) && props != nil && props.len() > 0 {
		for _, bp := range branchProperties(o) {
			if _, own := props.get(bp.name); !own {
				add(bp.ptr(ptr), "property %q is declared only here: %s closes the object to the properties it lists itself, so %q would be dropped", bp.name, title, bp.name)
			}
		}
	}
	if arrayLike(o) {
		it, hasItems := o.get("items")
		_, hasPrefix := o.get("prefixItems")
		switch {
		case hasPrefix || isList(it):
			add(ptr, "items by position (a tuple) cannot be expressed in %s", title)
		case !hasItems:
			add(ptr, "an array whose items may be anything: %s needs an item schema", title)
		}
	}
	for _, k := range o.keys {
		v := o.vals[k]
		switch {
		case k == "properties":
			m, _ := v.(*object)
			if m == nil {
				continue
			}
			for _, name := range m.keys {
				faithfulness(f, m.vals[name], joinPointer(ptr, k, name), reasons)
			}
		case k == "items" && !isList(v):
			faithfulness(f, v, joinPointer(ptr, k), reasons)
		case k == "anyOf" || k == "oneOf":
			list, _ := v.([]any)
			for i, e := range list {
				faithfulness(f, e, joinPointer(ptr, k, strconv.Itoa(i)), reasons)
			}
		}
	}
}

// ptrLabel shows a schema pointer, "(root)" for the root.
func ptrLabel(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// anyValue reports a schema that constrains nothing structural: no type,
// no values, no alternatives, no properties or items (e.g. {} or one with
// a description only).
func anyValue(o *object) bool {
	for _, k := range o.keys {
		switch k {
		case "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "not",
			"properties", "patternProperties", "additionalProperties", "required",
			"items", "prefixItems", "contains", "minItems", "maxItems", "uniqueItems",
			"minLength", "maxLength", "pattern", "format",
			"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
			"minProperties", "maxProperties", "propertyNames", "if", "dependentSchemas", "dependentRequired":
			return false
		}
	}
	return true
}

// arrayLike reports a schema whose type says array (alone or in a list), or
// array keywords without a type.
func arrayLike(o *object) bool {
	switch t := o.vals["type"].(type) {
	case string:
		return t == "array"
	case []any:
		for _, e := range t {
			if e == "array" {
				return true
			}
		}
		return false
	}
	for _, k := range []string{"items", "prefixItems", "minItems", "maxItems", "uniqueItems"} {
		if _, ok := o.get(k); ok {
			return true
		}
	}
	return false
}

type branchProp struct {
	rel  string // pointer from the object to the branch's properties
	name string
}

func (b branchProp) ptr(base string) string { return base + b.rel + "/" + escapeToken(b.name) }

// branchProperties lists the properties declared in an object's
// alternatives and conditionals.
func branchProperties(o *object) []branchProp {
	var out []branchProp
	add := func(rel string, branch any) {
		bo, ok := branch.(*object)
		if !ok {
			return
		}
		bo = mergeAllOf(bo, rules{})
		if props, ok := bo.vals["properties"].(*object); ok {
			for _, n := range props.keys {
				out = append(out, branchProp{rel: rel + "/properties", name: n})
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if list, ok := o.vals[k].([]any); ok {
			for i, e := range list {
				add("/"+k+"/"+strconv.Itoa(i), e)
			}
		}
	}
	for _, k := range []string{"then", "else"} {
		if v, ok := o.get(k); ok {
			add("/"+k, v)
		}
	}
	if ds, ok := o.vals["dependentSchemas"].(*object); ok {
		for _, n := range ds.keys {
			add("/dependentSchemas/"+escapeToken(n), ds.vals[n])
		}
	}
	return out
}

// ScalarRoot reports whether every value the schema accepts is a scalar
// (a string, number, integer, boolean or null): {"type":"integer"}, an
// enum or const of such values, an anyOf of scalar schemas. An answer may
// then be a bare scalar ("42", "true", a quoted string), and the provider
// forms wrap the root on the wire (WireWrapped).
func (s *Schema) ScalarRoot() bool {
	t := possibleTypes(s.compiled, 0)
	return t != 0 && t&(typeObject|typeArray) == 0
}

// typeSet is a set of JSON types.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeNumber // integers included
	typeString
	typeArray
	typeObject
	typeAll = typeNull | typeBoolean | typeNumber | typeString | typeArray | typeObject
)

func typeOfValue(v any) typeSet {
	switch v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case []any:
		return typeArray
	case map[string]any:
		return typeObject
	}
	return typeNumber
}

// possibleTypes over-approximates the JSON types a compiled schema accepts
// (a subset is never claimed wrongly: what it leaves out, nothing accepts).
func possibleTypes(sch *jsonschema.Schema, depth int) typeSet {
	if sch == nil || depth > 32 {
		return typeAll
	}
	if sch.Bool != nil {
		if *sch.Bool {
			return typeAll
		}
		return 0
	}
	t := typeAll
	if sch.Types != nil && !sch.Types.IsEmpty() {
		var ts typeSet
		for _, name := range sch.Types.ToStrings() {
			switch name {
			case "null":
				ts |= typeNull
			case "boolean":
				ts |= typeBoolean
			case "number", "integer":
				ts |= typeNumber
			case "string":
				ts |= typeString
			case "array":
				ts |= typeArray
			case "object":
				ts |= typeObject
			}
		}
		t &= ts
	}
	if sch.Const != nil {
		t &= typeOfValue(*sch.Const)
	}
	if sch.Enum != nil {
		var ts typeSet
		for _, v := range sch.Enum.Values {
			ts |= typeOfValue(v)
		}
		t &= ts
	}
	if sch.Ref != nil {
		t &= possibleTypes(sch.Ref, depth+1)
	}
	if sch.RecursiveRef != nil {
		t &= possibleTypes(sch.RecursiveRef, depth+1)
	}
	if sch.DynamicRef != nil && sch.DynamicRef.Ref != nil {
		t &= possibleTypes(sch.DynamicRef.Ref, depth+1)
	}
	for _, a := range sch.AllOf {
		t &= possibleTypes(a, depth+1)
	}
	for _, alts := range [][]*jsonschema.Schema{sch.AnyOf, sch.OneOf} {
		if len(alts) == 0 {
			continue
		}
		var u typeSet
		for _, a := range alts {
			u |= possibleTypes(a, depth+1)
		}
		t &= u
	}
	return t
}
