package worker

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jobs/jobstest"
	_ "github.com/extractq/extractq/internal/sim/simprovider" // the "sim" family
	"github.com/extractq/extractq/schema"
)

// TestFleetProvidersShareLearnedCapabilities: a worker whose provider's
// server refuses a request part learns it and writes it to the fleet's
// bucket; another worker (its own connection, its own provider) sends the
// adjusted form from its first call.
func TestFleetProvidersShareLearnedCapabilities(t *testing.T) {
	t.Parallel()
	url := jobstest.Server(t)
	_, js1 := jobstest.Connect(t, url)
	_, js2 := jobstest.Connect(t, url)
	log := slog.New(slog.DiscardHandler)
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"vendor":{"type":"string"}},"required":["vendor"]}`))
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Mode: llm.ModeJSON, Schema: s, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract the fields as JSON."},
		{Role: llm.RoleUser, Content: "<document-00112233aabbccdd>Invoice from ACME</document-00112233aabbccdd>"},
	}}
	// The simulator's OpenAI route refuses any temperature but 1 in this
	// profile, as OpenAI does for reasoning models.
	const spec = "sim:openai-o1-mini"
	tests := []struct {
		name    string
		workers func(string) (llm.Provider, error)
		want    []llm.Adjustment
	}{
		{"the first worker learns", fleetProviders(js1, log), []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustNoSystemRole}},
		{"another worker knows", fleetProviders(js2, log), nil},
	}
	for _, tc := range tests {
		p, err := tc.workers(spec)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Chat(t.Context(), req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(resp.Adjustments, tc.want) {
			t.Fatalf("%s: learned %v, want %v", tc.name, resp.Adjustments, tc.want)
		}
	}
}
