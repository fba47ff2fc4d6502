package extractq_test

import (
	"os"
	"path/filepath"
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

// Strict wire forms make optional fields required and nullable; undoing
// the form maps their nulls back to "absent" without any repair, so the
// bundled invoices all validate on the clean profile with repair off.
func TestStrictNullsAreAbsentWithRepairOff(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("examples/invoice.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s := compile(t, string(src))
	docs, err := filepath.Glob("examples/invoices/*")
	if err != nil || len(docs) < 20 {
		t.Fatalf("bundled invoices: %d, %v", len(docs), err)
	}
	p, err := extractqtest.Simulator("clean")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []llm.Mode{llm.ModeStrict, llm.ModeTools} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			for _, d := range docs {
				text, err := os.ReadFile(d)
				if err != nil {
					t.Fatal(err)
				}
				res, err := extractq.Extract(t.Context(), string(text), s, extractq.WithProvider(p), extractq.WithMode(mode),
					extractq.WithRepair(extractq.RepairOff), extractq.WithMaxReasks(0))
				if err != nil {
					t.Errorf("%s: %v", filepath.Base(d), err)
					continue
				}
				if len(res.Attempts[0].Repairs) > 0 {
					t.Errorf("%s: repairs %v with repair off", filepath.Base(d), res.Attempts[0].Repairs)
				}
			}
		})
	}
}
