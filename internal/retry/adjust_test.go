package retry

import (
	"context"
	"slices"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/extractqtest"
)

// adjusting is a provider whose adapter learned an adjustment during the
// call (a refused part dropped and the call sent again), as the real
// adapters report it.
type adjusting struct {
	llm.Provider
	fail bool
}

func (a adjusting) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if a.fail {
		return nil, &llm.Error{Provider: "p", Class: llm.ClassInvalidRequest, Status: 400, Message: "still refused",
			Adjustments: []llm.Adjustment{llm.AdjustToolAuto}}
	}
	resp, err := a.Provider.Chat(ctx, req)
	if resp != nil {
		resp.Adjustments = []llm.Adjustment{llm.AdjustNoTemperature}
	}
	return resp, err
}

// TestAdjustmentsRecordedOnTheAttempt: what the adapter learned is on the
// attempt, and the extra call it made spent no re-ask.
func TestAdjustmentsRecordedOnTheAttempt(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	tests := []struct {
		name     string
		fail     bool
		want     []llm.Adjustment
		attempts int
	}{
		{"answered", false, []llm.Adjustment{llm.AdjustNoTemperature}, 1},
		{"failed anyway", true, []llm.Adjustment{llm.AdjustToolAuto}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := adjusting{Provider: extractqtest.New([]extractqtest.Reply{{Text: validAnswer}}), fail: tc.fail}
			res, err := Run(t.Context(), p, document, s, DefaultConfig())
			if (err != nil) != tc.fail {
				t.Fatalf("err = %v", err)
			}
			if len(res.Attempts) != tc.attempts || !slices.Equal(res.Attempts[0].Adjustments, tc.want) {
				t.Fatalf("attempts %d, adjustments %v; want %d and %v", len(res.Attempts), res.Attempts[0].Adjustments, tc.attempts, tc.want)
			}
		})
	}
}
