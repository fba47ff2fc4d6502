package console

import (
	"encoding/json"
	"testing"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/llm"
)

// TestAttemptWhere: an attempt's part of a long document and its prefill
// step show on its timeline entry, read from the audit or from a dead
// letter alike.
func TestAttemptWhere(t *testing.T) {
	t.Parallel()
	part := &llm.Span{Index: 2, Start: 1460, End: 2048}
	tests := []struct {
		name          string
		chunk         *llm.Span
		pointer, step string
		want          string
	}{
		{"whole document", nil, "", "", ""},
		{"a part", part, "", "", "chunk 3 · characters 1460–2048"},
		{"prefill at the root", nil, "", "whole", "prefill whole at /"},
		{"prefill in a part", part, "/items/0/sku", "value", "chunk 3 · characters 1460–2048 · prefill value at /items/0/sku"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stored := attemptFromAudit(audit.AttemptInfo{JobID: "j", N: 1, Chunk: tc.chunk, Pointer: tc.pointer, Step: tc.step})
			b, err := json.Marshal(llm.Attempt{N: 1, Chunk: tc.chunk, Pointer: tc.pointer, Step: tc.step})
			if err != nil {
				t.Fatal(err)
			}
			var wa wireAttempt
			if err := json.Unmarshal(b, &wa); err != nil {
				t.Fatal(err)
			}
			lettered := newAttemptView("j", 1, wa, "w")
			if stored.Where != tc.want || lettered.Where != tc.want {
				t.Errorf("where = %q (audit), %q (dead letter); want %q", stored.Where, lettered.Where, tc.want)
			}
		})
	}
}
