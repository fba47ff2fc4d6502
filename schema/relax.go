package schema

// relaxedKeywords are what one part of a document cannot be expected to
// satisfy: a required field may be stated in another part, an array's items
// may all sit elsewhere. They are removed wherever they appear as keywords
// of a (sub)schema; a property that happens to be named "required" stays.
var relaxedKeywords = []string{"required", "minItems", "minProperties", "dependentRequired", "contains", "minContains"}

// relaxMaps are keywords whose value maps names to subschemas.
var relaxMaps = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}

// relaxLists are keywords whose value is a list of subschemas.
var relaxLists = []string{"allOf", "anyOf", "oneOf", "prefixItems"}

// relaxOne are keywords whose value is one subschema.
var relaxOne = []string{"items", "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "not", "if", "then", "else", "propertyNames"}

// Relaxed returns the schema a part of a document is extracted with (see
// extractq.WithChunking): the same schema with "required", "minItems",
// "minProperties", "dependentRequired" and "contains" removed at every
// level, so that a chunk holding only some of the fields, or none of an
// array's items, can still answer validly. Types, formats, enums and
// bounds on values stay: a value a chunk does give must be as good as in a
// whole-document answer. The original schema checks the merged value.
//
// Documents loaded through WithRefDir are not relaxed (their keywords
// stay); a schema that needs them fails to compile here and the error says
// so.
func (s *Schema) Relaxed() (*Schema, error) {
	doc := clone(s.doc)
	relaxNode(doc, 0)
	r, err := compileDoc(doc, unwrapped{body: doc, name: s.name}, &options{draft: Draft2020})
	if err != nil {
		return nil, &Error{Message: "the relaxed schema for a document part does not compile (external $ref documents are not supported when chunking)", Err: err}
	}
	r.name = s.name
	return r, nil
}

// relaxNode removes relaxedKeywords from a schema node and its subschemas.
func relaxNode(v any, depth int) {
	o, ok := v.(*object)
	if !ok || depth > 64 {
		return
	}
	for _, k := range relaxedKeywords {
		o.del(k)
	}
	for _, k := range relaxMaps {
		if m, ok := o.vals[k].(*object); ok {
			for _, name := range m.keys {
				relaxNode(m.vals[name], depth+1)
			}
		}
	}
	for _, k := range relaxLists {
		if l, ok := o.vals[k].([]any); ok {
			for _, e := range l {
				relaxNode(e, depth+1)
			}
		}
	}
	for _, k := range relaxOne {
		switch x := o.vals[k].(type) {
		case *object:
			relaxNode(x, depth+1)
		case []any: // draft 7 tuple items
			for _, e := range x {
				relaxNode(e, depth+1)
			}
		}
	}
}
