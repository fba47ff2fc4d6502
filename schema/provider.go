package schema

import (
	"encoding/json"
	"errors"
)

// Form is an API family's dialect of JSON Schema.
type Form string

// Provider forms.
const (
	FormJSONSchema Form = "jsonschema" // the normalised schema itself
	FormOpenAI     Form = "openai"     // strict structured outputs
	FormAnthropic  Form = "anthropic"  // structured outputs / tool input_schema
	FormGemini     Form = "gemini"     // responseSchema (OpenAPI 3.0 subset)
	FormOllama     Form = "ollama"     // the "format" field
)

// ProviderForm returns the schema as the API family f accepts it. Local
// validation always uses the original schema, never this form.
func (s *Schema) ProviderForm(f Form) (json.RawMessage, error) {
	if f == FormJSONSchema {
		return s.body, nil
	}
	return nil, &Error{Message: "provider forms are not implemented yet", Err: errors.ErrUnsupported}
}
