package schema

import (
	"encoding/json"
	"fmt"

	invopop "github.com/invopop/jsonschema"
)

// FromStruct derives a schema from a Go value's type (a struct or a pointer
// to one) with github.com/invopop/jsonschema: json tags name the fields,
// fields without omitempty are required, objects are closed, and
// `jsonschema:"..."` tags add descriptions, enums and limits.
func FromStruct(v any, opts ...Option) (*Schema, error) {
	if v == nil {
		return nil, &Error{Message: "FromStruct needs a struct value, got nil"}
	}
	r := &invopop.Reflector{Anonymous: true, DoNotReference: true, ExpandedStruct: true}
	gen := r.Reflect(v)
	src, err := json.Marshal(gen)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("cannot encode the schema derived from %T: %v", v, err), Err: err}
	}
	return Compile(src, append([]Option{WithJSONSchema()}, opts...)...)
}
