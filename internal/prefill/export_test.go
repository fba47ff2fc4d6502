package prefill

import (
	"encoding/json"
	"strings"
)

// DecodeNumber is for the external tests: JSON with json.Number numbers,
// as schema.Validate wants.
func DecodeNumber(raw []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
