package providers

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// wrapKey and wrapValueKey name the one property of the object a
// non-object schema is wrapped in, for APIs that need an object at the
// root: "items" for an array root, "value" for any other, as
// schema.WireWrapped names them for the provider forms.
const (
	wrapKey      = "items"
	wrapValueKey = "value"
)

// schemaForm is the schema as one API takes it. wrapped reports that the
// schema's root was not an object and the API needs one: the form is then
// {"items": <schema>} or {"value": <schema>} and the answer must be
// unwrapped (unwrapAnswer; the engine unwraps what still needs repair).
type schemaForm struct {
	body    json.RawMessage
	wrapped bool
}

// formFor converts s to form f (schema.FormJSONSchema: the schema as is).
// objectRoot says the API accepts only an object at the root (OpenAI's
// json_schema and function parameters, Anthropic's tool input_schema and
// output format); other roots are wrapped.
func formFor(s *schema.Schema, f schema.Form, objectRoot bool) (schemaForm, error) {
	if f != schema.FormJSONSchema {
		// A provider form wraps a root its API cannot take itself.
		body, err := s.ProviderForm(f)
		_, wrapped := s.WireWrapped(f)
		return schemaForm{body: body, wrapped: wrapped}, err
	}
	if !objectRoot || hasObjectRoot(s.JSON()) {
		body, err := s.ProviderForm(f)
		return schemaForm{body: body}, err
	}
	key := wrapValueKey
	if s.WantsArray() {
		key = wrapKey
	}
	w, err := wrapSchema(s.JSON(), key)
	if err != nil {
		return schemaForm{}, err
	}
	body, err := w.ProviderForm(f)
	return schemaForm{body: body, wrapped: true}, err
}

// hasObjectRoot reports whether a JSON Schema describes an object at its
// root.
func hasObjectRoot(doc []byte) bool {
	var root struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(doc, &root) != nil {
		return false
	}
	if len(root.Type) == 0 {
		return len(root.Properties) > 0
	}
	return bytes.Equal(bytes.TrimSpace(root.Type), []byte(`"object"`))
}

// wrapSchema builds {"type":"object","properties":{"items": doc},...} and
// compiles it. Definitions move to the wrapper's root so that the usual
// "#/$defs/…" references still resolve; a reference to the root itself
// ("#") or into its other keywords cannot be wrapped and fails to compile.
func wrapSchema(doc []byte, key string) (*schema.Schema, error) {
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(doc, &inner); err != nil {
		return nil, fmt.Errorf("%w: the schema root is not an object: %v", schema.ErrProviderForm, err)
	}
	outer := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{key: inner},
		"required":             []string{key},
		"additionalProperties": false,
	}
	for _, k := range []string{"$schema", "$defs", "definitions"} {
		if v, ok := inner[k]; ok {
			outer[k] = v
			delete(inner, k)
		}
	}
	src, err := json.Marshal(outer)
	if err != nil {
		return nil, err
	}
	w, err := schema.Compile(src, schema.WithJSONSchema())
	if err != nil {
		return nil, fmt.Errorf("%w: cannot wrap the schema in an object: %v", schema.ErrProviderForm, err)
	}
	return w, nil
}

// unwrapAnswer returns the value of {"items": …} or {"value": …} when the
// answer is that object, else the answer unchanged (a truncated or
// malformed answer is left for the engine to find, repair or re-ask).
func unwrapAnswer(text string) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil || len(obj) != 1 {
		return text
	}
	for _, k := range []string{wrapKey, wrapValueKey} {
		if v, ok := obj[k]; ok {
			return string(v)
		}
	}
	return text
}

// formError is the fatal error of a schema the API cannot take.
func (b *base) formError(err error, fallback llm.Mode) *llm.Error {
	e := b.localError(fmt.Sprintf("the schema cannot be sent to %s: %s; use mode %s", b.name, b.red.String(err.Error()), fallback))
	e.Err = b.red.Error(err)
	return e
}
