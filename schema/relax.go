package schema

import "strings"

// objectKeywords are what one part of a document cannot be expected to
// satisfy about the document's own objects (its "required" fields become
// nullable instead: see nullableRequired). arrayKeywords are the same for
// arrays: their items may all sit elsewhere. Both are removed from the
// document-level (sub)schemas; a property that happens to be named
// "required" stays.
var (
	objectKeywords = []string{"minProperties", "dependentRequired"}
	arrayKeywords  = []string{"minItems", "contains", "minContains"}
)

// relaxMaps are keywords whose value maps names to subschemas.
var relaxMaps = []string{"properties", "patternProperties", "dependentSchemas"}

// relaxDefs are keywords holding definitions reached through $ref.
var relaxDefs = []string{"$defs", "definitions"}

// relaxLists are keywords whose value is a list of subschemas.
var relaxLists = []string{"allOf", "anyOf", "oneOf"}

// relaxOne are keywords whose value is one subschema of the same instance
// or of an object's members.
var relaxOne = []string{"additionalProperties", "unevaluatedProperties", "not", "if", "then", "else"}

// itemKeywords are keywords whose subschemas describe an array's items.
var itemKeywords = []string{"items", "prefixItems", "additionalItems", "unevaluatedItems"}

// Relaxed returns the schema a part of a document is extracted with (see
// extractq.WithChunking): the same schema with what a part cannot satisfy
// relaxed. At the document level (the root object and the objects it holds
// directly) a required field may be null: a part states every required
// field, null when it does not hold it, so that a field the model drops is
// re-asked rather than read as "not in this part"; "minProperties" and
// "dependentRequired" go. On arrays "minItems", "contains" and
// "minContains" go, so a part holding none of the items answers validly.
// An array's items keep everything: an item a part reports lies within
// that part (the overlap between parts sees to that), so an item missing a
// required field is a bad answer to re-ask, not a piece to merge. Types,
// formats, enums and bounds on values stay everywhere. The original schema
// checks the merged value.
//
// A local $ref ("#/$defs/…") into a definition used by items keeps that
// definition whole; one used only at the document level is relaxed.
// Documents loaded through WithRefDir are not relaxed (their keywords
// stay); a schema that needs them fails to compile here and the error says
// so.
func (s *Schema) Relaxed() (*Schema, error) {
	doc := clone(s.doc)
	r := &relaxer{root: doc, kept: map[string]bool{}}
	r.markItems(doc, false, 0)
	r.relax(doc, "", 0)
	rs, err := compileDoc(doc, unwrapped{body: doc, name: s.name}, &options{draft: Draft2020})
	if err != nil {
		return nil, &Error{Message: "the relaxed schema for a document part does not compile (external $ref documents are not supported when chunking)", Err: err}
	}
	rs.name = s.name
	return rs, nil
}

type relaxer struct {
	root any
	// kept holds the pointers of definitions an item schema reaches
	// ("/$defs/item"): they are left whole.
	kept map[string]bool
}

// markItems walks v and records in kept every local definition reached
// from an item schema (inItem), following $refs transitively.
func (r *relaxer) markItems(v any, inItem bool, depth int) {
	o, ok := v.(*object)
	if !ok || depth > 64 {
		return
	}
	if ref, ok := o.vals["$ref"].(string); ok && inItem {
		if p, ok := strings.CutPrefix(ref, "#"); ok && !r.kept[p] {
			r.kept[p] = true
			r.markItems(resolveLocal(r.root, p), true, depth+1)
		}
	}
	walkSubschemas(o, func(sub any, item bool) { r.markItems(sub, inItem || item, depth+1) })
}

// relax removes the relaxed keywords from v and its document-level
// subschemas; it does not descend into item schemas. def is v's pointer
// when v is a definition, else "".
func (r *relaxer) relax(v any, def string, depth int) {
	o, ok := v.(*object)
	if !ok || depth > 64 || def != "" && r.kept[def] {
		return
	}
	for _, k := range objectKeywords {
		o.del(k)
	}
	nullableRequired(o)
	for _, k := range arrayKeywords {
		o.del(k)
	}
	for _, k := range relaxDefs {
		if m, ok := o.vals[k].(*object); ok {
			for _, name := range m.keys {
				r.relax(m.vals[name], def+"/"+escapeToken(k)+"/"+escapeToken(name), depth+1)
			}
		}
	}
	for _, k := range relaxMaps {
		if m, ok := o.vals[k].(*object); ok {
			for _, name := range m.keys {
				r.relax(m.vals[name], "", depth+1)
			}
		}
	}
	for _, k := range relaxLists {
		if l, ok := o.vals[k].([]any); ok {
			for _, e := range l {
				r.relax(e, "", depth+1)
			}
		}
	}
	for _, k := range relaxOne {
		r.relax(o.vals[k], "", depth+1)
	}
}

// nullableRequired lets each of an object's required properties be null:
// a part states a field as null when it does not hold it. A required
// array (or a property whose schema does not say it is no array) stays
// required: a model that drops it by a slip is re-asked instead of read as
// "not in this part", which would silently lose the part's items. Any
// other required field may also be left out, as OpenAI-compatible servers
// do with a nullable key whose value is null: the chunk's answer is judged
// by this schema, not by the strict wire form made from it. Required
// names without a property schema are dropped. (nullable is the OpenAI
// strict form's.)
func nullableRequired(o *object) {
	req, ok := o.vals["required"].([]any)
	if !ok {
		return
	}
	props, _ := o.vals["properties"].(*object)
	var keep []any
	for _, n := range req {
		name, _ := n.(string)
		if props == nil {
			break
		}
		p, ok := props.vals[name]
		if !ok {
			continue
		}
		props.vals[name] = nullable(p)
		if mayBeArray(p) {
			keep = append(keep, name)
		}
	}
	if len(keep) == 0 {
		o.del("required")
		return
	}
	o.vals["required"] = keep
}

// walkSubschemas calls f with every direct subschema of o; item is true for
// those that describe an array's items (and "contains", which matches
// items too).
func walkSubschemas(o *object, f func(sub any, item bool)) {
	for _, k := range append(append([]string{}, relaxMaps...), relaxDefs...) {
		if m, ok := o.vals[k].(*object); ok {
			for _, name := range m.keys {
				f(m.vals[name], false)
			}
		}
	}
	for _, k := range relaxLists {
		if l, ok := o.vals[k].([]any); ok {
			for _, e := range l {
				f(e, false)
			}
		}
	}
	for _, k := range append(relaxOne, "propertyNames") {
		f(o.vals[k], false)
	}
	for _, k := range append(itemKeywords, "contains") {
		switch x := o.vals[k].(type) {
		case *object:
			f(x, true)
		case []any: // prefixItems, draft 7 tuple items
			for _, e := range x {
				f(e, true)
			}
		}
	}
}

// resolveLocal follows a JSON pointer ("/$defs/item") from root; nil when
// it does not lead to a node.
func resolveLocal(root any, ptr string) any {
	if ptr == "" {
		return root
	}
	v := root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		o, ok := v.(*object)
		if !ok {
			return nil
		}
		v = o.vals[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	return v
}

// mayBeArray reports whether the schema v may describe an array: its type
// or its keywords say so (arrayLike), or it states no type (a $ref, a
// combination) and is no enum or const, so it cannot be ruled out here.
func mayBeArray(v any) bool {
	o, ok := v.(*object)
	if !ok || arrayLike(o) {
		return true
	}
	_, typed := o.vals["type"]
	_, hasEnum := o.vals["enum"]
	_, hasConst := o.vals["const"]
	return !typed && !hasEnum && !hasConst
}
