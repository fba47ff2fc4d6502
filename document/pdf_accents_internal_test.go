package document

import (
	"strings"
	"testing"
)

// TestSpellAccents: an accent over a dotless i or j (TeX's \"\i) is the
// letter's (ï), one beside a letter stays, and an ASCII ^ is no accent.
func TestSpellAccents(t *testing.T) {
	tests := []struct {
		name   string
		pieces []piece
		want   string
	}{
		{"dieresis over dotless i", []piece{{"n", 0, 5}, {"a", 5, 5}, {"¨", 10, 5}, {"ı", 10.5, 3}, {"v", 13.5, 5}, {"e", 18.5, 5}}, "naïve"},
		{"acute over dotless j", []piece{{"´", 0, 5}, {"ȷ", 1, 3}}, "j\u0301"},
		{"cedilla under dotless i", []piece{{"ı", 0, 3}, {"¸", 0, 3}}, "ı̧"},
		{"caron after its letter", []piece{{"c", 0, 5}, {"ˇ", 0, 5}, {"a", 5, 5}}, "ča"},
		{"beside", []piece{{"a", 0, 5}, {"´", 5, 5}, {"b", 10, 5}}, "a´b"},
		{"ascii caret", []piece{{"^", 0, 5}, {"x", 0, 5}}, "^x"},
	}
	for _, tt := range tests {
		var b strings.Builder
		spellAccents(&b, tt.pieces)
		if got := b.String(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
