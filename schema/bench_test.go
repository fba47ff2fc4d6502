package schema

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// benchSchema has 20 properties at three levels of nesting.
const benchSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "title": {"type": "string", "minLength": 1, "maxLength": 200},
    "published": {"type": "string", "format": "date"},
    "pages": {"type": "integer", "minimum": 1},
    "price": {"type": "number", "exclusiveMinimum": 0},
    "currency": {"enum": ["EUR", "USD", "GBP"]},
    "inPrint": {"type": "boolean"},
    "isbn": {"type": "string", "pattern": "^97[89][0-9]{10}$"},
    "summary": {"type": "string", "maxLength": 2000},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10, "uniqueItems": true},
    "publisher": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "city": {"type": "string"},
        "email": {"type": "string", "format": "email"},
        "address": {
          "type": "object",
          "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}, "country": {"type": "string", "minLength": 2, "maxLength": 2}},
          "required": ["street", "country"], "additionalProperties": false
        }
      },
      "required": ["name"], "additionalProperties": false
    },
    "authors": {
      "type": "array", "minItems": 1,
      "items": {"type": "object", "properties": {"name": {"type": "string"}, "born": {"type": ["integer", "null"]}}, "required": ["name"], "additionalProperties": false}
    }
  },
  "required": ["id", "title", "authors", "publisher"],
  "additionalProperties": false
}`

// benchInstance is about 1.3 KB.
var benchInstance = []byte(`{
  "id": "123e4567-e89b-12d3-a456-426614174000",
  "title": "The Structure and Interpretation of Extracted Documents, Second Edition",
  "published": "2024-01-31",
  "pages": 657,
  "price": 49.95,
  "currency": "EUR",
  "inPrint": true,
  "isbn": "9780262510875",
  "summary": "A book about turning unstructured documents into validated structured data with language models, covering schemas, validation, feedback loops, retries, rate limits, audit trails and the operation of extraction fleets. It has exercises at the end of every chapter and a long bibliography that readers praise. The second edition adds chapters on provider forms, compact schema notation, example instances, fingerprints and caches, and on running the whole pipeline as a fleet.",
  "tags": ["extraction", "llm", "json-schema", "validation", "fleet", "audit", "retry"],
  "publisher": {
    "name": "Open Press",
    "city": "Lisbon",
    "email": "orders@openpress.example",
    "address": {"street": "Rua Augusta 100", "zip": "11000", "country": "PT"}
  },
  "authors": [
    {"name": "Ada Lovelace", "born": 1815},
    {"name": "Grace Hopper", "born": 1906},
    {"name": "Alan Turing", "born": 1912},
    {"name": "Anonymous Contributor", "born": null}
  ]
}`)

func benchCompiled(b *testing.B) *Schema {
	b.Helper()
	s, err := Compile([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	if vs, err := s.ValidateJSON(benchInstance); err != nil || vs != nil {
		b.Fatalf("bench instance invalid: %v %v", vs, err)
	}
	return s
}

// BenchmarkValidate measures parse + validate of a ~1.3 KB instance (what
// the engine does per answer); the target is >= 10,000 per second on one core.
func BenchmarkValidate(b *testing.B) {
	s := benchCompiled(b)
	b.SetBytes(int64(len(benchInstance)))
	b.ReportAllocs()
	cpu0, ok := cpuTime()
	for b.Loop() {
		if vs, err := s.ValidateJSON(benchInstance); err != nil || vs != nil {
			b.Fatal(vs, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "validations/s")
	if cpu1, _ := cpuTime(); ok && cpu1 > cpu0 {
		b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "validations/cpu-s")
	}
}

// BenchmarkValidateDecoded measures validation alone of an already decoded
// instance.
func BenchmarkValidateDecoded(b *testing.B) {
	s := benchCompiled(b)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(benchInstance))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if vs := s.Validate(v); vs != nil {
			b.Fatal(vs)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "validations/s")
}

// BenchmarkValidateInvalid measures an invalid answer: violations are
// collected, sorted and rendered as feedback.
func BenchmarkValidateInvalid(b *testing.B) {
	s := benchCompiled(b)
	bad := bytes.Replace(benchInstance, []byte(`"pages": 657`), []byte(`"pages": "657"`), 1)
	bad = bytes.Replace(bad, []byte(`"currency": "EUR"`), []byte(`"currency": "eur"`), 1)
	b.ReportAllocs()
	for b.Loop() {
		vs, err := s.ValidateJSON(bad)
		if err != nil || len(vs) != 2 {
			b.Fatal(vs, err)
		}
		_ = RenderFeedback(vs, 2000)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "validations/s")
}

// BenchmarkCacheHit measures a worker looking up an already compiled schema.
func BenchmarkCacheHit(b *testing.B) {
	c := NewCache(64)
	if _, err := c.Compile([]byte(benchSchema)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Compile([]byte(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile measures compiling the benchmark schema from source.
func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		if _, err := Compile([]byte(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}
