package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Field guide limits: the guide goes into every prompt that shows an
// example, so it is cut at guideMaxChars (a last line says how many fields
// were left out), and one line, a description and an enum's value list are
// each bounded too.
const (
	guideMaxChars      = 2000
	guideMaxLine       = 800
	guideMaxDesc       = 160
	guideMaxValueChars = 600
	guideMaxDepth      = 16
	guideMaxKeyword    = 100
)

// FieldGuide returns what a model shown only an example instance cannot
// see: one line per field that the schema says more about than its type,
// in the schema's order, "" when there is nothing to say. Deterministic
// and at most about 2,000 characters ("- … N more fields" ends a cut
// guide). Each line reads
//
//	"- " POINTER [": " CLAUSE *("; " CLAUSE)] [" — " DESCRIPTION]
//
// where POINTER is the field's JSON pointer in
// the answer, "*" standing for every array item and every other key of a
// map, "(root)" for the answer itself, and the clauses are, in this order:
//
//	optional                      the property may be left out
//	or null                       null is allowed too
//	string or integer             the types allowed, when several
//	one of "a" (or "x", "y"), "b" the allowed values, aliases in brackets
//	                              ("… (N values)" ends a cut list)
//	exactly V                     a const
//	format date (YYYY-MM-DD)      a string format
//	matches "^[A-Z]{3}$"          a pattern (as a JSON string)
//	1..300 characters             also "at least N", "at most N", "exactly N"
//	1950..2100                    bounds; also ">= N", "> N", "<= N", "< N"
//	multiple of 0.01
//	1..10 items, unique items     also "at least N items", ...
//	1..3 properties               also "at least N properties", ...
//	other keys allowed            an object that takes keys besides its own
//	KEYWORD: JSON                 anything else (not, if, dependentRequired,
//	                              a union of shapes, ...), as written
//
// The description is the schema's description (else its title), on one
// line, cut to 160 characters.
func (s *Schema) FieldGuide() string {
	s.guide.once.Do(func() { s.guide.text = s.buildGuide() })
	return s.guide.text
}

func (s *Schema) buildGuide() string {
	in := newInliner(s, false)
	root, err := in.inline(s.doc, s.baseURL, "")
	if err != nil {
		return ""
	}
	var g guide
	g.node(root, "", false, 0)
	var b strings.Builder
	for i, l := range g.lines {
		if b.Len()+len(l)+1 > guideMaxChars {
			fmt.Fprintf(&b, "- … %d more fields", len(g.lines)-i)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type guide struct{ lines []string }

// node adds the line of the field at ptr (an instance pointer) and those of
// its fields.
func (g *guide) node(n any, ptr string, optional bool, depth int) {
	o, ok := n.(*object)
	if !ok || depth > guideMaxDepth {
		if optional {
			g.add(ptr, []string{"optional"}, "")
		}
		return
	}
	o = mergeAllOf(o, rules{})
	var clauses []string
	if optional {
		clauses = append(clauses, "optional")
	}
	o, nullable := nonNullBranch(o)
	types := typeList(o.vals["type"])
	var nonNull []string
	for _, t := range types {
		if t == "null" {
			nullable = true
		} else {
			nonNull = append(nonNull, t)
		}
	}
	if e, ok := o.vals["enum"].([]any); ok {
		for _, v := range e {
			nullable = nullable || v == nil
		}
	}
	if nullable && !(len(nonNull) == 0 && len(types) > 0) {
		clauses = append(clauses, "or null")
	}
	if len(nonNull) > 1 {
		clauses = append(clauses, strings.Join(nonNull, " or "))
	}
	if e, ok := o.vals["enum"].([]any); ok {
		clauses = append(clauses, enumClause(e, o.vals[AliasesKeyword]))
	}
	if c, ok := o.get("const"); ok {
		clauses = append(clauses, "exactly "+jsonText(c, guideMaxValueChars))
	}
	if f, ok := o.vals["format"].(string); ok {
		c := "format " + f
		if h := formatHints[f]; strings.HasPrefix(h, " (") {
			c += h
		}
		clauses = append(clauses, c)
	}
	if p, ok := o.vals["pattern"].(string); ok {
		clauses = append(clauses, "matches "+jsonText(p, -1))
	}
	clauses = appendCount(clauses, o, "minLength", "maxLength", "character")
	clauses = appendBounds(clauses, o)
	if m, ok := o.get("multipleOf"); ok {
		clauses = append(clauses, "multiple of "+jsonText(m, 30))
	}
	clauses = appendCount(clauses, o, "minItems", "maxItems", "item")
	if o.vals["uniqueItems"] == true {
		clauses = append(clauses, "unique items")
	}
	clauses = appendCount(clauses, o, "minProperties", "maxProperties", "property")
	props, _ := o.vals["properties"].(*object)
	ap, hasAP := o.get("additionalProperties")
	if (hasAP && ap != false) || (!hasAP && isObjectSchema(o) && (props == nil || props.len() == 0)) {
		clauses = append(clauses, "other keys allowed")
	}
	for _, k := range o.keys {
		if guideShown[k] {
			continue
		}
		if k == "items" && !isList(o.vals[k]) {
			continue
		}
		clauses = append(clauses, k+": "+jsonText(o.vals[k], guideMaxKeyword))
	}
	desc, _ := o.vals["description"].(string)
	if desc == "" {
		desc, _ = o.vals["title"].(string)
	}
	g.add(ptr, clauses, desc)

	if props != nil {
		req := map[string]bool{}
		if list, ok := o.vals["required"].([]any); ok {
			for _, r := range list {
				if s, ok := r.(string); ok {
					req[s] = true
				}
			}
		}
		for _, name := range props.keys {
			g.node(props.vals[name], ptr+"/"+escapeToken(name), !req[name], depth+1)
		}
	}
	if it, ok := o.get("items"); ok && !isList(it) {
		g.node(it, ptr+"/*", false, depth+1)
	}
	if apo, ok := ap.(*object); ok {
		g.node(apo, ptr+"/*", false, depth+1)
	}
}

// guideShown are the keywords node turns into clauses or follows (or that
// say nothing a model needs).
var guideShown = map[string]bool{
	"type": true, "enum": true, "const": true, "format": true, "pattern": true,
	"minLength": true, "maxLength": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "minProperties": true, "maxProperties": true,
	"properties": true, "required": true, "additionalProperties": true, "items": true,
	"description": true, "title": true, "default": true, "examples": true, "example": true,
	"$ref": true, "$defs": true, "readOnly": true, "writeOnly": true, "deprecated": true,
	"nullable": true, "contentEncoding": true, "contentMediaType": true, "$comment": true,
	AliasesKeyword: true, // shown with the enum
}

// nonNullBranch reads "X or null" written as anyOf/oneOf [X, {"type":"null"}]
// as X (merged with the keywords beside the anyOf) and nullable.
func nonNullBranch(o *object) (*object, bool) {
	for _, k := range []string{"anyOf", "oneOf"} {
		list, ok := o.vals[k].([]any)
		if !ok {
			continue
		}
		var rest []any
		nullable := false
		for _, e := range list {
			if eo, ok := e.(*object); ok && eo.len() == 1 && eo.vals["type"] == "null" {
				nullable = true
				continue
			}
			rest = append(rest, e)
		}
		if !nullable {
			continue
		}
		out := clone(o).(*object)
		out.del(k)
		switch len(rest) {
		case 0:
			out.set("type", "null")
			return out, false
		case 1:
			if ro, ok := rest[0].(*object); ok {
				for _, rk := range ro.keys {
					if _, exists := out.get(rk); !exists {
						out.set(rk, ro.vals[rk])
					}
				}
			}
		default:
			out.set(k, rest)
		}
		return out, true
	}
	return o, false
}

func typeList(t any) []string {
	switch x := t.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// enumClause writes one of "a" (or "x", "y"), "b", cut to about
// guideMaxValueChars with "… (N values)".
func enumClause(values []any, rawAliases any) string {
	aliases, _ := rawAliases.(*object)
	var b strings.Builder
	b.WriteString("one of ")
	shown := 0
	for _, v := range values {
		if v == nil {
			continue // said as "or null"
		}
		item := jsonText(v, -1)
		if s, ok := v.(string); ok && aliases != nil {
			var al []string
			switch a := aliases.vals[s].(type) {
			case string:
				al = []string{a}
			case []any:
				for _, e := range a {
					if es, ok := e.(string); ok {
						al = append(al, es)
					}
				}
			}
			if len(al) > 0 {
				q := make([]string, len(al))
				for i, a := range al {
					q[i] = jsonText(a, -1)
				}
				item += " (or " + strings.Join(q, ", ") + ")"
			}
		}
		if shown > 0 && b.Len()+len(item) > guideMaxValueChars {
			n := 0
			for _, v := range values {
				if v != nil {
					n++
				}
			}
			fmt.Fprintf(&b, ", … (%d values)", n)
			return b.String()
		}
		if shown > 0 {
			b.WriteString(", ")
		}
		b.WriteString(item)
		shown++
	}
	return b.String()
}

// appendCount adds "1..300 characters", "at least 1 item", ...
func appendCount(clauses []string, o *object, minKey, maxKey, word string) []string {
	lo, hasLo := o.vals[minKey].(json.Number)
	hi, hasHi := o.vals[maxKey].(json.Number)
	count := func(n json.Number) string {
		i, err := strconv.Atoi(string(n))
		if err != nil {
			return string(n) + " " + word + "s"
		}
		return plural(i, word)
	}
	switch {
	case hasLo && hasHi && lo == hi:
		return append(clauses, "exactly "+count(hi))
	case hasLo && hasHi:
		return append(clauses, string(lo)+".."+count(hi))
	case hasLo && lo != "0":
		return append(clauses, "at least "+count(lo))
	case hasHi:
		return append(clauses, "at most "+count(hi))
	}
	return clauses
}

// appendBounds adds "1950..2100", ">= 0", "< 1", ...
func appendBounds(clauses []string, o *object) []string {
	lo, hasLo := o.get("minimum")
	hi, hasHi := o.get("maximum")
	if hasLo && hasHi {
		clauses = append(clauses, jsonText(lo, 30)+".."+jsonText(hi, 30))
	} else if hasLo {
		clauses = append(clauses, ">= "+jsonText(lo, 30))
	} else if hasHi {
		clauses = append(clauses, "<= "+jsonText(hi, 30))
	}
	if v, ok := o.get("exclusiveMinimum"); ok {
		if _, isNum := v.(json.Number); isNum {
			clauses = append(clauses, "> "+jsonText(v, 30))
		}
	}
	if v, ok := o.get("exclusiveMaximum"); ok {
		if _, isNum := v.(json.Number); isNum {
			clauses = append(clauses, "< "+jsonText(v, 30))
		}
	}
	return clauses
}

// add writes a line when there is something to say.
func (g *guide) add(ptr string, clauses []string, desc string) {
	desc = strings.Join(strings.Fields(desc), " ")
	if len(clauses) == 0 && desc == "" {
		return
	}
	label := ptr
	if label == "" {
		label = "(root)"
	}
	line := "- " + label
	if len(clauses) > 0 {
		line += ": " + strings.Join(clauses, "; ")
	}
	if desc != "" {
		line += " — " + truncate(desc, guideMaxDesc)
	}
	g.lines = append(g.lines, truncate(line, guideMaxLine))
}
