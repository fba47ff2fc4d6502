package providers

import (
	"strings"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// toolName makes a schema name acceptable as an OpenAI response-format name
// or a tool/function name for every API: 1-64 of [a-zA-Z0-9_-].
func toolName(name string) string {
	if validToolName(name) {
		return name // what the loop below would build, without building it
	}
	var b strings.Builder
	for _, r := range name {
		if b.Len() == 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if strings.Trim(b.String(), "_") == "" {
		return "extraction"
	}
	return b.String()
}

// validToolName reports whether toolName(name) is name itself: 1-64
// bytes of [a-zA-Z0-9_-], not all underscores. Every call of a schema
// whose name is already such a name (nearly all) then allocates nothing.
func validToolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	other := false // a byte other than '_'
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			other = true
		case c != '_':
			return false
		}
	}
	return other
}

// splitSystem separates system messages (joined, for APIs that take the
// system prompt apart from the turns) from the conversation.
func splitSystem(msgs []llm.Message) (system string, turns []llm.Message) {
	var sys []string
	for _, m := range msgs {
		if m.Role == llm.RoleSystem {
			sys = append(sys, m.Content)
			continue
		}
		turns = append(turns, m)
	}
	return strings.Join(sys, "\n\n"), turns
}

// schemaName is the schema's own name, "" without a schema.
func schemaName(s *schema.Schema) string {
	if s == nil {
		return ""
	}
	return s.Name()
}
