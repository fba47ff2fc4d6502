package extractq_test

import (
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
)

// The simulator's clean profile answers validly in every mode, also for a
// schema whose field guide is empty (nothing but types to say), where the
// example's placeholder strings must not be copied back.
func TestSimulatorCleanInEveryMode(t *testing.T) {
	t.Parallel()
	schemas := map[string]string{
		"no guide": `{"type":"object","properties":{"name":{"type":"string"},"city":{"type":"string"}},"required":["name","city"],"additionalProperties":false}`,
		"invoice":  invoice,
	}
	p, err := extractqtest.Simulator("clean")
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range schemas {
		s := compile(t, src)
		for _, mode := range []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				res, err := extractq.Extract(t.Context(), "Ada Lovelace lives in London. Invoice from ACME: 2 bolts at 1.50.", s,
					extractq.WithProvider(p), extractq.WithMode(mode), extractq.WithMaxReasks(0))
				if err != nil {
					t.Fatalf("%v (attempt: %+v)", err, res.Attempts)
				}
			})
		}
	}
}
