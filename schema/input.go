package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
)

// parseDocument reads JSON, or YAML when the text is not JSON-shaped or
// yamlHint says so (a .yaml/.yml file). Objects keep their key order.
func parseDocument(src []byte, yamlHint bool) (any, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")))
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty document")
	}
	if !yamlHint && (trimmed[0] == '{' || trimmed[0] == '[') {
		v, err := decodeOrdered(trimmed)
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		return v, nil
	}
	if flowDepth(trimmed) > maxNesting {
		// The YAML parser slows down with the square of the depth: refuse
		// before parsing.
		return nil, fmt.Errorf("not valid YAML: nested more than %d levels deep", maxNesting)
	}
	js, err := yaml.YAMLToJSON(trimmed)
	if err != nil {
		// The YAML library's message spans several lines with a source
		// excerpt; its first line carries the position and the reason.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return nil, fmt.Errorf("not valid JSON or YAML: %s", strings.TrimSpace(msg))
	}
	v, err := decodeOrdered(js)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	return v, nil
}

// flowDepth is the deepest nesting of [ and { in src (brackets inside
// strings count too: an over-estimate is harmless at the limits used).
func flowDepth(src []byte) int {
	depth, deepest := 0, 0
	for _, c := range src {
		switch c {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// unwrapped is a schema document with its wrapper (if any) removed.
type unwrapped struct {
	body    any    // the schema or the compact notation
	pointer string // where body sits in the original document
	name    string // the wrapper's name, if any
}

// unwrap removes OpenAI's response_format wrapper ({"type":"json_schema",
// "json_schema":{...}}, also without its "type"), the Responses API form ({"type":"json_schema",
// "name":..., "schema":...}), a request-level {"response_format": ...}, and
// the plain {name, schema, strict} wrapper.
func unwrap(doc any) unwrapped {
	u := unwrapped{body: doc}
	for range 3 { // wrappers nest at most three deep
		o, ok := u.body.(*object)
		if !ok {
			return u
		}
		if rf, ok := o.get("response_format"); ok && o.len() <= 3 && isObject(rf) {
			if _, hasMsgs := o.get("messages"); hasMsgs || o.len() == 1 {
				u.body, u.pointer = rf, u.pointer+"/response_format"
				continue
			}
		}
		// {"json_schema": {"name":…, "schema":…}}: the response_format
		// wrapper with its "type" left out. The inner object must hold a
		// schema, so that a compact field called json_schema is not taken
		// for it.
		if js, ok := o.get("json_schema"); ok && o.len() == 1 {
			if inner, ok := js.(*object); ok && hasKey(inner, "schema") && (isObject(inner.vals["schema"]) || isBool(inner.vals["schema"])) {
				u.body, u.pointer = js, u.pointer+"/json_schema"
				continue
			}
		}
		if t, _ := o.get("type"); t == "json_schema" {
			if js, ok := o.get("json_schema"); ok && isObject(js) {
				u.body, u.pointer = js, u.pointer+"/json_schema"
				continue
			}
			if s, ok := o.get("schema"); ok {
				u.name = stringOf(o, "name")
				u.body, u.pointer = s, u.pointer+"/schema"
				return u
			}
		}
		if s, ok := o.get("schema"); ok && (isObject(s) || isBool(s)) && onlyKeys(o, "name", "schema", "strict", "description") {
			if _, hasName := o.get("name"); hasName || o.len() == 1 || hasKey(o, "strict") {
				u.name = stringOf(o, "name")
				u.body, u.pointer = s, u.pointer+"/schema"
			}
		}
		return u
	}
	return u
}

func isObject(v any) bool { _, ok := v.(*object); return ok }
func isBool(v any) bool   { _, ok := v.(bool); return ok }

func hasKey(o *object, k string) bool { _, ok := o.get(k); return ok }

func stringOf(o *object, k string) string {
	s, _ := o.vals[k].(string)
	return s
}

func onlyKeys(o *object, allowed ...string) bool {
	for _, k := range o.keys {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// schemaKeywords are the JSON Schema keywords of draft 4 to 2020-12 (and the
// common OpenAPI additions). A key outside this set is either a compact
// field name or an unknown (ignored) keyword.
var schemaKeywords = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$ref": true, "$defs": true, "definitions": true,
	"$anchor": true, "$dynamicRef": true, "$dynamicAnchor": true, "$recursiveRef": true,
	"$recursiveAnchor": true, "$vocabulary": true, "$comment": true,
	"type": true, "enum": true, "const": true, "allOf": true, "anyOf": true, "oneOf": true,
	"not": true, "if": true, "then": true, "else": true, "format": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "required": true,
	"propertyNames": true, "minProperties": true, "maxProperties": true, "dependencies": true,
	"dependentRequired": true, "dependentSchemas": true, "unevaluatedProperties": true,
	"items": true, "prefixItems": true, "additionalItems": true, "contains": true,
	"minContains": true, "maxContains": true, "minItems": true, "maxItems": true,
	"uniqueItems": true, "unevaluatedItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "contentEncoding": true,
	"contentMediaType": true, "contentSchema": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true,
	"title":      true, "description": true, "default": true, "examples": true, "example": true,
	"readOnly": true, "writeOnly": true, "deprecated": true, "nullable": true,
}

var jsonTypes = map[string]bool{
	"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true,
}

// looksLikeJSONSchema decides whether a document is a JSON Schema rather
// than compact notation. Booleans and anything with a "$" keyword are JSON
// Schema; an object with a structural keyword (a JSON type in "type",
// "properties" of schemas, ...) is JSON Schema unless its other keys are
// field names whose values read as compact field specs; an object whose
// keys are all keywords (e.g. only "description") is JSON Schema; an object
// with field names and no structural keyword is compact notation.
func looksLikeJSONSchema(doc any) bool {
	switch t := doc.(type) {
	case bool:
		return true
	case []any, string:
		return false
	case *object:
		structural := false
		var unknown []string
		for _, k := range t.keys {
			v := t.vals[k]
			if strings.HasPrefix(k, "$") {
				return true
			}
			if !schemaKeywords[k] {
				if !strings.HasPrefix(k, "x-") {
					unknown = append(unknown, k)
				}
				continue
			}
			if isStructural(k, v) {
				structural = true
			}
		}
		if !structural && len(unknown) == 0 && t.len() > 0 {
			// Only annotation keywords ({"title": "string"}): compact if
			// every value reads as a field spec.
			for _, k := range t.keys {
				if !isCompactSpec(t.vals[k]) {
					return true
				}
			}
			return false
		}
		if len(unknown) == 0 {
			return true
		}
		if !structural {
			return false
		}
		// Structural keywords plus field names: compact only if every
		// field name holds a compact spec (a field called "type").
		for _, k := range unknown {
			if !isCompactSpec(t.vals[k]) {
				return true
			}
		}
		return false
	}
	return true
}

// isStructural reports whether key/value has the shape the keyword has in
// a JSON Schema (as opposed to a compact field that happens to share the
// keyword's name).
func isStructural(k string, v any) bool {
	switch k {
	case "type":
		switch t := v.(type) {
		case string:
			return jsonTypes[t]
		case []any:
			for _, e := range t {
				if s, ok := e.(string); !ok || !jsonTypes[s] {
					return false
				}
			}
			return len(t) > 0
		}
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
		o, ok := v.(*object)
		if !ok {
			return false
		}
		for _, e := range o.vals {
			if !isObject(e) && !isBool(e) {
				return false
			}
		}
		return true
	case "allOf", "anyOf", "oneOf", "prefixItems":
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return false
		}
		for _, e := range arr {
			if !isObject(e) && !isBool(e) {
				return false
			}
		}
		return true
	case "items", "not", "if", "then", "else", "additionalProperties", "contains", "propertyNames":
		if isObject(v) || isBool(v) {
			return true
		}
		if arr, ok := v.([]any); ok && k == "items" {
			for _, e := range arr {
				if !isObject(e) && !isBool(e) {
					return false
				}
			}
			return true
		}
	case "enum", "required":
		_, ok := v.([]any)
		return ok
	case "const":
		return true
	case "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "multipleOf":
		_, ok := v.(json.Number)
		return ok
	}
	return false
}
