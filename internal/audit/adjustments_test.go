package audit

import (
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestAttemptAdjustmentsRoundTrip: the adjustments a provider adapter
// learned during an attempt are stored (migration 9) and read back by
// History; an attempt without any stores NULL.
func TestAttemptAdjustmentsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	tests := []struct {
		name     string
		adj      []llm.Adjustment
		want     string
		wantNull bool
	}{
		{"none", nil, "", true},
		{"two learned", []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustToolAuto}, `["no_temperature", "tool_choice_auto"]`, false},
		{"a schema keyword", []llm.Adjustment{llm.AdjustDropKeyword("minLength")}, `["drop_keyword:minLength"]`, false},
	}
	rec := testRecord("adj", "doc-adj", 1, len(tests), llm.OutcomeOK)
	for i, tc := range tests {
		rec.Attempts[i].Adjustments = tc.adj
	}
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "doc-adj")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != len(tests) {
		t.Fatalf("history has %d attempts, want %d", len(h.Attempts), len(tests))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(h.Attempts[i].Adjustments); got != tc.want {
				t.Errorf("adjustments read back %s, want %s", got, tc.want)
			}
			var null bool
			if err := s.pool.QueryRow(ctx, `SELECT adjustments IS NULL FROM attempts WHERE job_id = 'adj' AND seq = $1`, i+1).Scan(&null); err != nil {
				t.Fatal(err)
			}
			if null != tc.wantNull {
				t.Errorf("adjustments IS NULL = %v, want %v", null, tc.wantNull)
			}
		})
	}
}
