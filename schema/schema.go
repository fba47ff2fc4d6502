// Package schema compiles and validates JSON Schema (draft 7 and 2020-12),
// lists violations by instance JSON pointer, renders them as feedback for a
// model, and derives what extractq needs from a schema: fingerprints,
// example instances and provider-specific forms.
package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Draft is the JSON Schema dialect a schema without "$schema" is read as.
type Draft string

// Supported drafts.
const (
	Draft7    Draft = "7"
	Draft2020 Draft = "2020-12"
)

// Option configures compilation.
type Option func(*options)

type options struct {
	draft Draft
}

// WithDraft sets what a schema without "$schema" means (default 2020-12).
func WithDraft(d Draft) Option { return func(o *options) { o.draft = d } }

// Schema is a compiled schema. It is immutable and safe for concurrent use.
type Schema struct {
	body        []byte // normalised JSON Schema
	fingerprint string
	compiled    *jsonschema.Schema
}

// ErrInvalidSchema is matched (errors.Is) by every error that means the
// schema itself is wrong, as opposed to an instance failing it.
var ErrInvalidSchema = errors.New("invalid schema")

// Compile compiles a JSON Schema document.
func Compile(src []byte, opts ...Option) (*Schema, error) {
	o := options{draft: Draft2020}
	for _, f := range opts {
		f(&o)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if o.draft == Draft7 {
		c.DefaultDraft(jsonschema.Draft7)
	} else {
		c.DefaultDraft(jsonschema.Draft2020)
	}
	const loc = "extractq:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	sum := sha256.Sum256(body) // encoding/json sorts map keys: canonical
	return &Schema{body: body, fingerprint: "sha256:" + hex.EncodeToString(sum[:]), compiled: compiled}, nil
}

// JSON returns the normalised JSON Schema.
func (s *Schema) JSON() []byte { return s.body }

// Fingerprint is a canonical hash of the schema, insensitive to key order and
// whitespace, e.g. "sha256:3f…".
func (s *Schema) Fingerprint() string { return s.fingerprint }

// Violation is one way an instance fails its schema.
type Violation struct {
	Pointer string `json:"pointer"`         // instance JSON pointer, "" for the root
	Keyword string `json:"keyword"`         // the failing keyword, e.g. "type", "required"
	Message string `json:"message"`         // short, model-readable message
	Value   string `json:"value,omitempty"` // offending value as JSON, truncated to ~80 chars
	// Want carries what the keyword wanted where it is a list: the allowed
	// types for "type", the allowed values (as JSON) for "enum"/"const".
	Want []string `json:"want,omitempty"`
}

// ValidateJSON parses data and validates it. The error is non-nil only when
// data is not JSON.
func (s *Schema) ValidateJSON(data []byte) ([]Violation, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return s.Validate(v), nil
}

// Validate validates a value decoded from JSON with numbers as json.Number
// (as jsonschema.UnmarshalJSON or a json.Decoder with UseNumber produce).
// A nil result means valid.
func (s *Schema) Validate(v any) []Violation {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Keyword: "error", Message: err.Error()}}
	}
	var out []Violation
	collect(ve, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

func collect(ve *jsonschema.ValidationError, out *[]Violation) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, out)
		}
		return
	}
	kw := strings.Join(ve.ErrorKind.KeywordPath(), "/")
	*out = append(*out, Violation{
		Pointer: pointer(ve.InstanceLocation),
		Keyword: kw,
		Message: ve.ErrorKind.LocalizedString(nil),
	})
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
