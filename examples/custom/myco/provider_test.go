package myco_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"example.com/custom/invoices"
	"example.com/custom/myco"
	"github.com/extractq/extractq"
	"github.com/extractq/extractq/llm"
	"golang.org/x/sync/errgroup"
)

// fakeMyCo is a MyCo server whose "model" answers messily the first time
// (prose, a trailing comma, a total that is not the sum), correctly once
// told, and throttles its very first call with a 429.
type fakeMyCo struct {
	mu        sync.Mutex
	calls     int
	feedbacks int
}

func (f *fakeMyCo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt string `json:"prompt"`
	}
	if r.URL.Path != "/generate" || r.Header.Get("Authorization") != "Bearer k-test" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	told := strings.Contains(req.Prompt, "the lines add up to")
	if told {
		f.feedbacks++
	}
	f.mu.Unlock()
	if first {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	vendor := "ACME"
	if i := strings.Index(req.Prompt, "Vendor: "); i >= 0 {
		vendor = strings.Fields(req.Prompt[i+len("Vendor: "):])[0]
	}
	text := fmt.Sprintf(`Here is the invoice: {"vendor": %q, "lines": [{"item": "a", "amount": 1.5}, {"item": "b", "amount": 2},], "total": 2}`, vendor)
	if told {
		text = fmt.Sprintf(`{"vendor": %q, "lines": [{"item": "a", "amount": 1.5}, {"item": "b", "amount": 2}], "total": 3.5}`, vendor)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"text": text, "tokens_in": len(req.Prompt) / 4, "tokens_out": len(text) / 4})
}

// TestOwnProviderEndToEnd is the extract command's loop written by a user:
// their provider, registered by family and built from a provider string,
// their validator, several documents at once.
func TestOwnProviderEndToEnd(t *testing.T) {
	fake := &fakeMyCo{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	if err := myco.Register(); err != nil {
		t.Fatal(err)
	}
	p, err := extractq.NewProvider("myco:small-1", extractq.WithProviderBaseURL(srv.URL), extractq.WithProviderAPIKey("k-test"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := invoices.NewExtractor(p, extractq.WithMode(llm.ModeJSON),
		extractq.WithTransport(extractq.Transport{Retries: 2, Base: 1}))
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"Vendor: ACME\na 1.50\nb 2.00", "Vendor: Globex\na 1.50\nb 2.00", "Vendor: Initech\na 1.50\nb 2.00"}
	results := make([]invoices.Invoice, len(docs))
	var g errgroup.Group
	for i, d := range docs {
		g.Go(func() error {
			inv, res, err := invoices.Extract(t.Context(), x, d)
			if err != nil {
				return fmt.Errorf("document %d: %w", i, err)
			}
			if res.Provider != "myco:small-1" || res.Mode != llm.ModeJSON || res.Usage.Total() == 0 {
				return fmt.Errorf("document %d: result %+v", i, res)
			}
			results[i] = inv
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ACME", "Globex", "Initech"} {
		if results[i].Vendor != want || results[i].Total != 3.5 {
			t.Errorf("document %d: %+v", i, results[i])
		}
	}
	if fake.feedbacks != len(docs) {
		t.Errorf("the model was told about the sum %d times, want once per document", fake.feedbacks)
	}
	if _, err := extractq.NewProvider("myco:small-1"); err == nil || !strings.Contains(err.Error(), "MYCO_BASE_URL") {
		t.Errorf("a missing base URL must name the variable: %v", err)
	}
}
