package audit

import (
	"fmt"
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestAttemptLocatorsRoundTrip: each attempt's part of a long document
// (index and character offsets) and prefill pointer and step are stored
// (migration 6) and read back by History, as NULL where the attempt had
// none (chunk 0 and the root pointer "" are values, not absence), through
// the first write and the duplicate path of a rewrite alike.
func TestAttemptLocatorsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	tests := []struct {
		name          string
		chunk         *llm.Span
		pointer, step string
		// wantNulls has a 1 for each of chunk_index, chunk_start,
		// chunk_end, prefill_pointer and prefill_step that is NULL.
		wantNulls string
	}{
		{"whole document", nil, "", "", "11111"},
		{"first part", &llm.Span{Index: 0, Start: 0, End: 512}, "", "", "00011"},
		{"a later part", &llm.Span{Index: 3, Start: 1460, End: 2048}, "", "", "00011"},
		{"prefill root", nil, "", "whole", "11100"},
		{"prefill value", nil, "/items/2/sku", "value", "11100"},
		{"prefill in a part", &llm.Span{Index: 1, Start: 460, End: 980}, "/items", "more", "00000"},
	}
	rec := testRecord("loc", "doc-loc", 1, len(tests), llm.OutcomeOK)
	for i, tc := range tests {
		rec.Attempts[i].Chunk, rec.Attempts[i].Pointer, rec.Attempts[i].Step = tc.chunk, tc.pointer, tc.step
	}
	for range 2 { // the second write takes the duplicate path and stores nothing new
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "doc-loc")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != len(tests) {
		t.Fatalf("history has %d attempts, want %d", len(h.Attempts), len(tests))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := h.Attempts[i]
			if fmt.Sprint(a.Chunk) != fmt.Sprint(tc.chunk) || a.Pointer != tc.pointer || a.Step != tc.step {
				t.Errorf("read back chunk %v pointer %q step %q; want %v %q %q", a.Chunk, a.Pointer, a.Step, tc.chunk, tc.pointer, tc.step)
			}
			var nulls string
			if err := s.pool.QueryRow(ctx, `SELECT concat((chunk_index IS NULL)::int, (chunk_start IS NULL)::int, (chunk_end IS NULL)::int,
				(prefill_pointer IS NULL)::int, (prefill_step IS NULL)::int) FROM attempts WHERE job_id = 'loc' AND seq = $1`, i+1).Scan(&nulls); err != nil {
				t.Fatal(err)
			}
			if nulls != tc.wantNulls {
				t.Errorf("NULL columns %s, want %s (1: NULL)", nulls, tc.wantNulls)
			}
		})
	}
}
