package llm

// PromptData is what prompt templates (extractq.WithTemplates) are
// executed with: write {{.Document}}, {{.Errors}} and so on.
type PromptData struct {
	// Document is the document text, unchanged.
	Document string
	// Nonce is 16 random hex characters that do not occur in Document.
	Nonce string
	// Open and Close fence the document: "<document-NONCE>" and
	// "</document-NONCE>". The document cannot contain them, so text inside
	// it cannot pose as the end of the data and the start of instructions.
	Open, Close string
	// SchemaIn is the resolved placement: example, schema or none.
	SchemaIn string
	// Schema is the JSON Schema as JSON text.
	Schema string
	// Example is a valid example instance as JSON text ("" when none could be
	// built; SchemaIn is then schema).
	Example string
	// FieldGuide lists, for the example placement, what the example cannot
	// show: each field's description, allowed values and format, one line
	// per field ("" when the schema states none).
	FieldGuide string
	// Mode is the resolved mode of every call.
	Mode Mode

	// The fields below are set for the feedback of a re-ask.

	// Attempt is the number of the attempt that failed (1-based).
	Attempt int
	// Next is the number of the attempt the feedback asks for (Attempt+1),
	// and MaxAttempts the most there will be (MaxReasks+1).
	Next, MaxAttempts int
	// Class is why it failed: schema, no_json, truncated, refusal, lossy,
	// example_echo or ambiguous.
	Class AttemptClass
	// Errors says what was wrong, ready to send: the violation list (pointer,
	// expected, got; deduplicated and bounded, with the form a number must
	// take), or the truncation, missing JSON, lossy repair, repeated example,
	// ambiguity or refusal notice; then, when the model repeats a mistake
	// it was told about, which one and how often (This is the second time
	// /issued was "3 March 2024".).
	Errors string
	// Repeats are those repetition notes alone (also part of Errors).
	Repeats []string
	// Violations is the raw violation list behind Errors (class schema only).
	Violations []Violation
	// Previous is the failed answer as the model gave it.
	Previous string
}
