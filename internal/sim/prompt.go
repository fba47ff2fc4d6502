package sim

import (
	"bytes"
	"encoding/json"
	"strings"
)

// prompt is what the simulator reads from a conversation, following the
// engine's prompt conventions (see the package doc).
type prompt struct {
	document string
	docHash  uint64
	// schemaText and example are the prompt's <json-schema> and <example>
	// sections, empty when absent.
	schemaText string
	example    string
	// guide is the <field-guide> section (schema.Schema.FieldGuide) that
	// may accompany an example, "" when absent.
	guide string
	// attempt counts the assistant messages: 0 for a first ask.
	attempt int
	// reask is a conversation with a failed answer followed by feedback.
	reask bool
	chars int
}

// readPrompt finds the document, the embedded schema or example and the
// attempt number. Without a document fence the first user message stands
// for the document, so plain prompts still get document-derived answers.
func readPrompt(msgs []message) prompt {
	var p prompt
	firstUser, docFound := -1, false
	for i, m := range msgs {
		p.chars += len(m.text)
		if m.role == roleAssistant {
			p.attempt++
			continue
		}
		if m.role == roleUser && firstUser < 0 {
			firstUser = i
		}
		if !docFound {
			p.document, docFound = fencedDocument(m.text)
		}
		if p.schemaText == "" {
			p.schemaText = section(m.text, "<json-schema>", "</json-schema>")
		}
		if p.schemaText == "" && m.role == roleSystem {
			p.schemaText = labelledSchema(m.text)
		}
		if p.example == "" {
			p.example = section(m.text, "<example>", "</example>")
		}
		if p.guide == "" {
			p.guide = section(m.text, "<field-guide>", "</field-guide>")
		}
	}
	if !docFound && firstUser >= 0 {
		p.document = msgs[firstUser].text
	}
	last := len(msgs) - 1
	p.reask = p.attempt > 0 && last >= 0 && msgs[last].role == roleUser
	p.docHash = fnv64a(p.document)
	return p
}

// fnv64a is FNV-1a: stable across processes (answers must not change from
// run to run), and it hashes a string without copying it.
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// fencedDocument returns the text between <document-NONCE> and
// </document-NONCE>; a missing closing fence means "to the end".
func fencedDocument(s string) (string, bool) {
	const open = "<document-"
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.IndexByte(rest, '>')
	if j <= 0 || j > 64 {
		return "", false
	}
	nonce := rest[:j]
	for k := 0; k < len(nonce); k++ {
		if c := nonce[k]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	body := rest[j+1:]
	if end := strings.Index(body, "</document-"+nonce+">"); end >= 0 {
		body = body[:end]
	}
	return strings.TrimSpace(body), true
}

// section returns the trimmed text between the first open tag and the next
// close tag, or "".
func section(s, open, close string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	body := s[i+len(open):]
	j := strings.Index(body, close)
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(body[:j])
}

// schemaLabel is how instructor's ports (zod-stream's JSON and MD_JSON
// modes) put the schema in their system prompt, so the simulator can serve
// peers the benchmarks compare with (bench/cost).
const schemaLabel = "json schema: "

// labelledSchema returns the JSON object following schemaLabel, or "".
func labelledSchema(s string) string {
	i := strings.Index(s, schemaLabel)
	if i < 0 {
		return ""
	}
	var raw json.RawMessage
	if json.NewDecoder(strings.NewReader(s[i+len(schemaLabel):])).Decode(&raw) != nil || !bytes.HasPrefix(raw, []byte("{")) {
		return ""
	}
	return string(raw)
}

// tokens estimates a token count the way the simulator reports usage:
// about four characters a token, at least one.
func tokens(chars int) int {
	return max(1, (chars+3)/4)
}
