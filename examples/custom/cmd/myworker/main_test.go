package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"example.com/custom/invoices"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/fleet/fleettest"
)

// myCo is a MyCo server whose model gets the total wrong until told the
// lines' sum, as the invoice rule tells it.
type myCo struct{ calls, told atomic.Int32 }

func (m *myCo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt string `json:"prompt"`
	}
	if r.URL.Path != "/generate" || r.Header.Get("Authorization") != "Bearer k-test" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	m.calls.Add(1)
	vendor := "ACME"
	if i := strings.Index(req.Prompt, "Vendor: "); i >= 0 {
		vendor = strings.Fields(req.Prompt[i+len("Vendor: "):])[0]
	}
	total := 2.0
	if strings.Contains(req.Prompt, "the lines add up to") {
		m.told.Add(1)
		total = 3.5
	}
	text := fmt.Sprintf(`{"vendor": %q, "lines": [{"item": "a", "amount": 1.5}, {"item": "b", "amount": 2}], "total": %g}`, vendor, total)
	_ = json.NewEncoder(w).Encode(map[string]any{"text": text, "tokens_in": len(req.Prompt) / 4, "tokens_out": len(text) / 4})
}

// TestWorkerEndToEnd runs this module's worker against an embedded NATS
// server, a throwaway audit database and a fake MyCo server, queues
// invoices with the fleet client and reads the results: each was re-asked
// once by the invoice rule and stored with the right total.
func TestWorkerEndToEnd(t *testing.T) {
	f := fleettest.Start(t)
	model := &myCo{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	t.Setenv("MYCO_BASE_URL", srv.URL)
	t.Setenv("MYCO_API_KEY", "k-test")

	fleettest.Serve(t, serve, f.Config("myco:small-1=concurrency:2"))

	c, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	docs := []fleet.Document{{ID: "inv-1", Text: "Vendor: ACME\na 1.50\nb 2.00"}, {ID: "inv-2", Text: "Vendor: Globex\na 1.50\nb 2.00"}}
	sub, err := c.Submit(t.Context(), fleet.Job{Schema: invoices.Schema, SchemaName: "invoice", Provider: "myco:small-1", Run: "custom"}, slices.Values(docs))
	if err != nil || sub.Queued != 2 {
		t.Fatalf("submit: %+v, %v", sub, err)
	}
	fctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if p, err := c.Follow(fctx, sub.JobIDs, 100*time.Millisecond, nil); err != nil || p.Done != 2 {
		t.Fatalf("follow: %+v, %v; want 2 done", p, err)
	}
	for i, want := range []string{"ACME", "Globex"} {
		rs, err := c.Results(t.Context(), docs[i].ID)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: results %+v, %v", docs[i].ID, rs, err)
		}
		var inv invoices.Invoice
		if err := json.Unmarshal(rs[0].Value, &inv); err != nil || inv.Vendor != want || inv.Total != 3.5 || rs[0].Attempts != 2 || rs[0].Model != "myco:small-1" {
			t.Errorf("%s: %+v (%d attempts, model %q), want %s with total 3.5 after one re-ask", docs[i].ID, inv, rs[0].Attempts, rs[0].Model, want)
		}
	}
	if model.told.Load() != 2 {
		t.Errorf("the model was told the lines' sum %d times, want once per invoice", model.told.Load())
	}
}
