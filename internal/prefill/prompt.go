package prefill

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/extractq/extractq/schema"
)

// AnswerMarker ends the instructions; the JSON written so far follows it.
// The simulator finds the prefix after its last occurrence.
const AnswerMarker = "\nJSON:\n"

// instructions are the task, the schema and the fenced document, as in the
// other modes: the document sits between <document-NONCE> fences whose
// nonce it does not contain, so its text cannot pose as instructions.
func instructions(document string, s *schema.Schema) string {
	nonce := newNonce(document)
	var b strings.Builder
	b.Grow(len(document) + len(s.JSON()) + 600)
	b.WriteString("Extract the data of the document below as JSON that follows this JSON Schema. " +
		"The JSON is written for you one field at a time: continue it with only the next value, as the document gives it. " +
		"Write numbers in digits, without units or thousands separators. " +
		"Write null for an optional field the document does not give.\n\n<json-schema>\n")
	b.Write(s.JSON())
	b.WriteString("\n</json-schema>\n\n<document-" + nonce + ">\n")
	b.WriteString(document)
	b.WriteString("\n</document-" + nonce + ">\n")
	return b.String()
}

// prompt is what one call continues: the instructions, the current field's
// feedback, the marker, then the JSON so far (the prefix).
func (g *gen) instructionsNow() string {
	if g.feedback == "" {
		return g.head + AnswerMarker
	}
	return g.head + "\n" + g.feedback + "\n" + AnswerMarker
}

// newNonce returns 16 hex characters that do not occur in document.
func newNonce(document string) string {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		n := hex.EncodeToString(b[:])
		if !strings.Contains(document, n) {
			return n
		}
	}
}
