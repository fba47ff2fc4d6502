/*
Package schema is extractq's schema toolkit: it compiles and validates JSON
Schema (draft 7 and 2020-12), reads a compact notation for people who would
rather not write JSON Schema, lists violations by JSON pointer and renders
them as feedback for a model, builds example instances, converts schemas
to the forms LLM APIs accept, and fingerprints them.

# Input forms

Compile and CompileFile accept JSON or YAML holding any of:

  - a JSON Schema (a schema without "$schema" is 2020-12, or draft 7 with
    WithDraft(Draft7); draft 4, 6 and 2019-09 are accepted when "$schema"
    names them);
  - OpenAI's response_format wrapper {"type":"json_schema","json_schema":{"name":…,"schema":…,"strict":true}}
    (also without its "type": {"json_schema":{…}}), the Responses API form
    {"type":"json_schema","name":…,"schema":…}, or a request holding
    "response_format";
  - a {name, schema, strict} wrapper;
  - compact notation (below).

A document is read as compact notation when its keys are field names rather
than JSON Schema keywords; WithJSONSchema forces the JSON Schema reading.

References ("$ref") to other documents resolve from local files only:
WithRefDir("https://example.com/schemas/", "./schemas") reads
https://example.com/schemas/a.json from ./schemas/a.json, and CompileFile
maps the schema file's own folder so relative references work. The network
is never used; a reference nothing maps is an error naming it.

Patterns use Go's RE2 engine (linear time); a pattern RE2 cannot express
(lookaround, backreferences) falls back to an ECMAScript engine whose every
match is cut off after 100ms. Formats are asserted by default in every
draft; WithFormatAssertion(false) restores the drafts' own default.

Errors about a schema are *Error values naming the file and the JSON
pointer inside it; errors.Is(err, ErrInvalidSchema) holds for all of them.
Schemas of more than 10,000 objects are refused.

# Compact notation

Each key is a field; a trailing "?" makes it optional (every other field is
required). Each value is one of:

	"string"                     a scalar type: string, integer (int), number,
	                             boolean (bool), null, or a string format:
	                             date, datetime, time, email, uri (url), uuid
	"integer 1900..2100"         a numeric range: MIN..MAX, MIN.., ..MAX,
	                             >N, >=N, <N, <=N (several may follow the type)
	"string 1..200"              on a string, a range is its length
	"string /^[A-Z]{3}$/"        a pattern between slashes (RE2 syntax)
	"enum(open, closed)"         one of these strings ("quote, commas" if needed)
	"enum(open "active", closed)" quoted strings after a value are its aliases
	                             (x-aliases, see AliasesKeyword)
	"string -- the ISBN-13"      " -- " starts a description (YAML would read
	                             " #" as a comment)
	["string"]                   a list of items; an optional second element
	                             sets its size and uniqueness and description:
	                             ["string", "1..5 unique -- keywords"]
	{"name": "string", …}        a nested object; its "--" key, if present,
	                             is the object's description
	[{"name": "string"}]         a list of objects

The whole document may itself be a list, e.g. [{"name": "string"}], when the
answer is a top-level array, or one field spec, e.g. "integer 1..5" or
"enum(yes, no)", when the answer is a single value.

A worked example, in YAML:

	title: string -- the book's title as printed on the cover
	authors:
	  - name: string 1..200
	    born?: integer 1000..2100
	isbn?: string /^97[89][0-9]{10}$/
	topics: [string, 1..5 unique]
	status: enum(in print, out of print)
	price?: number >=0 -- in euros

converts to this strict JSON Schema 2020-12 (every object closed, the
required fields listed, the author's order kept):

	{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "type": "object",
	  "properties": {
	    "title": {"type": "string", "description": "the book's title as printed on the cover"},
	    "authors": {"type": "array", "items": {
	      "type": "object",
	      "properties": {
	        "name": {"type": "string", "minLength": 1, "maxLength": 200},
	        "born": {"type": "integer", "minimum": 1000, "maximum": 2100}
	      },
	      "required": ["name"], "additionalProperties": false}},
	    "isbn": {"type": "string", "pattern": "^97[89][0-9]{10}$"},
	    "topics": {"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": true, "items": {"type": "string"}},
	    "status": {"type": "string", "enum": ["in print", "out of print"]},
	    "price": {"type": "number", "minimum": 0, "description": "in euros"}
	  },
	  "required": ["title", "authors", "topics", "status"],
	  "additionalProperties": false
	}

# Validation and feedback

Validate returns []Violation: the instance pointer, the keyword, a short
message, the offending value (JSON, at most about 80 characters) and, for
"type", "enum" and "const", what was wanted; an enum with x-aliases adds
them (Violation.Aliases). Violations are deduplicated and
sorted by pointer (array indexes numerically). A failed anyOf/oneOf is
reported as the closest alternative's problems, or as one "type"/"enum"
violation listing what any alternative accepts. RenderFeedback turns them
into lines a model can act on, within a character budget.

# Examples, provider forms, fingerprints

Example builds a typical valid instance (checked by validating it);
Instance(seed) builds varied ones. When none can be built the error
(matching ErrNoExample) says where and why, e.g. "minLength 5 is greater
than maxLength 3".

ProviderForm converts to OpenAI strict mode, Anthropic, Gemini
(responseSchema) or Ollama. References are resolved: a definition used once
is inlined, one used more often (or recursively) is kept once in $defs,
except for Gemini, which takes no references. (OpenAI's form makes optional
fields nullable; the engine drops such nulls from answers before
validating.) Local validation always uses the original schema.

Any root is allowed. ScalarRoot reports a root that accepts only scalars;
a root the API cannot take (anything but a plain object for OpenAI and
Anthropic, a scalar for Gemini and Ollama) is wrapped on the wire in a
one-property object, which WireWrapped names ("value", or "items" for an
array), so that answers can be unwrapped before validation.

A form is never allowed to forbid what the schema allows: Faithful lists
the constructs a form would narrow (a free-form object, additionalProperties
other than false, patternProperties, … each with its pointer), and for such
a schema ProviderForm returns an *UnfaithfulError (errors.Is
ErrProviderForm) instead of the form; extract in JSON mode with the schema
in the prompt.

FieldGuide writes what an example cannot show (descriptions, allowed
values with their aliases, formats, patterns, bounds, optional fields), one
short line per field, for prompts that show an example instead of the
schema.

Fingerprint hashes the canonical JSON of the normalised schema and of every
document it references: key order and whitespace do not change it, and a
schema written in compact notation has the fingerprint of its JSON Schema.
Cache compiles each source once and shares schemas with equal fingerprints.
*/
package schema
