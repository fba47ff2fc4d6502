package schema

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

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
		case k == AliasesKeyword:
			if note := aliasNote(v, o.vals["enum"]); note != "" {
				notes = append(notes, note)
			}
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
