package extractq_test

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
)

// TestRefusedPartsCostNoReask extracts through a simulated Claude 5.1
// server (which refuses temperature and forced tool use, worded as
// Anthropic words it) with a model name the tables take for Claude 4.5
// (a stale table): the one attempt learns both adjustments, records them,
// and is answered; no re-ask is spent. The same model named as it is gets
// the right form at once.
func TestRefusedPartsCostNoReask(t *testing.T) {
	t.Parallel()
	prof, err := sim.LoadProfile("claude-fable-5-1")
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(prof)
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	s := compile(t, invoice)
	tests := []struct {
		spec string
		want []llm.Adjustment
	}{
		{"anthropic:claude-sonnet-4-5", []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustToolAuto}},
		{"anthropic:claude-fable-5-1", nil},
	}
	for _, tc := range tests {
		p, err := extractq.NewProvider(tc.spec, extractq.WithProviderBaseURL(hs.URL), extractq.WithProviderAPIKey("sk-ant-test-123456"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := extractq.Extract(t.Context(), "Invoice from ACME: 2 bolts at 1.50", s, extractq.WithProvider(p), extractq.WithMode(llm.ModeTools))
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if len(res.Attempts) != 1 || !slices.Equal(res.Attempts[0].Adjustments, tc.want) {
			t.Fatalf("%s: %d attempts, adjustments %v; want 1 attempt with %v", tc.spec, len(res.Attempts), res.Attempts[0].Adjustments, tc.want)
		}
	}
}
