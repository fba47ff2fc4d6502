package providers

import (
	"strings"
	"testing"
)

// toolNameBuilt is toolName without its fast path: the name built rune by
// rune, as it was before validToolName.
func toolNameBuilt(name string) string {
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

// FuzzToolName checks that the fast path gives what building the name
// gives, for any name.
func FuzzToolName(f *testing.F) {
	for _, s := range []string{"", "response", "_", "___", "-", "a_b-C9", "héllo", "a b", strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("_", 70) + "a", "\xff", "_a_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := toolName(name), toolNameBuilt(name); got != want {
			t.Fatalf("toolName(%q) = %q, want %q", name, got, want)
		}
	})
}

// TestToolNameValidAllocatesNothing: a schema name that is already a valid
// tool name is used as it is (it was built anew on every call).
func TestToolNameValidAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = toolName("invoice_v2-fields") }); n != 0 {
		t.Fatalf("toolName of a valid name: %v allocations, want 0", n)
	}
}
