// Package fleettest holds what the fleet's end-to-end tests and the fleet
// benchmark share: a throw-away Postgres database, a faulty in-process LLM
// simulator, a schema and generated documents.
package fleettest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
)

// FaultyProfile is a zero-latency model that fails like real ones: 500s,
// dropped connections, broken syntax, schema slips, truncation and
// refusals, and fixes its answer after feedback only sometimes, so some
// documents succeed after re-asks and some end as dead letters. It sends no
// 503/529: those pause the whole rate-limit pool for the provider's
// Retry-After (the rate limiter's own tests cover that), which would turn a
// 10,000-document run from seconds into many minutes.
func FaultyProfile() sim.Profile {
	return sim.Profile{
		Name:   "fleet-faulty",
		Errors: sim.ErrorRates{Status500: 0.06, Drop: 0.03},
		Faults: sim.FaultRates{
			CodeFence: 0.1, Prose: 0.05, TrailingComma: 0.05, SingleQuotes: 0.03,
			MissingRequired: 0.12, WrongType: 0.12, EnumOutside: 0.05, ExtraField: 0.03,
			Truncation: 0.03, Refusal: 0.02,
		},
		FixProbability: 0.3,
		FaultModes:     sim.FaultModesAll,
	}
}

// CleanProfile is a perfect, instant model.
func CleanProfile() sim.Profile { return sim.Profile{Name: "fleet-clean", FixProbability: 1} }

// Provider returns a provider factory that sends every call to srv
// in-process through the OpenAI-compatible API, whatever the job's spec.
func Provider(srv *sim.Server) func(spec string) (llm.Provider, error) {
	hc := &http.Client{Transport: srv.Transport()}
	return func(string) (llm.Provider, error) {
		return providers.New("openai:sim-fleet", providers.WithBaseURL("http://sim.invalid/v1"),
			providers.WithHTTPClient(hc), providers.WithAPIKey("sk-fleet-test-not-a-key"))
	}
}

// Requests reads the simulator's request count from its /stats endpoint.
func Requests(srv *sim.Server) (int64, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://sim.invalid/stats", nil)
	resp, err := srv.Transport().RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st sim.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("decode /stats: %w", err)
	}
	return st.Requests, nil
}

// Schema is the invoice schema the fleet tests extract.
const Schema = `{
  "type": "object",
  "properties": {
    "invoice_number": {"type": "string"},
    "vendor": {"type": "string"},
    "total": {"type": "number"},
    "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
    "paid": {"type": "boolean"},
    "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["name", "qty"]}}
  },
  "required": ["invoice_number", "vendor", "total", "currency", "paid"],
  "additionalProperties": false
}`

// Document is the text of generated document i.
func Document(i int) string {
	cur := [...]string{"EUR", "USD", "GBP"}[i%3]
	return fmt.Sprintf("INVOICE INV-%06d\nFrom: Vendor %d GmbH\nItems: %d x widget, %d x gadget\nTotal due: %d.%02d %s\nStatus: %s\n",
		i, i%97, 1+i%5, i%3, 10+i%990, i%100, cur, [...]string{"paid", "unpaid"}[i%2])
}
