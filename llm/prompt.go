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
	// Mode is the resolved mode of every call.
	Mode Mode

	// The fields below are set for the feedback of a re-ask.

	// Attempt is the number of the attempt that failed (1-based).
	Attempt int
	// Class is why it failed: schema, no_json, truncated or refusal.
	Class AttemptClass
	// Errors says what was wrong, ready to send: the violation list (pointer,
	// expected, got; deduplicated and bounded) or the truncation, missing
	// JSON or refusal notice.
	Errors string
	// Violations is the raw violation list behind Errors (class schema only).
	Violations []Violation
	// Previous is the failed answer as the model gave it.
	Previous string
}
