package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
)

// TestRevokedKeyPauseIsVisible runs `worker run` against a provider that
// answers 401 to every call (a key revoked at run time): the pool pauses,
// and the pause shows with its reason, key, and the provider's answer in
// the heartbeat status and the console read, and on /metrics as
// extractq_pool_paused{reason="key"}, not only as a transport circuit.
func TestRevokedKeyPauseIsVisible(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer api.Close()
	t.Setenv("OPENAI_API_KEY", "sk-revoked-0000000000")
	t.Setenv("OPENAI_BASE_URL", api.URL+"/v1")
	ctx := context.Background()
	dbURL := testenv.Database(t)
	natsURL := jobstest.Server(t)
	base := runWorker(t, natsURL, dbURL, freeAddr(t), "--log-level", "error", "--pool", "openai:gpt-4o-mini=concurrency:1", "--grace", "1s")
	queueOne(t, natsURL, dbURL, "openai:gpt-4o-mini", "gpt-4o-mini", "revoked")
	pool := jobs.PoolFor("openai:gpt-4o-mini")
	_, js := jobstest.Connect(t, natsURL)

	var body string
	eventually(t, `/metrics shows the pool paused for its key`, func() bool {
		_, body = get(base + "/metrics")
		return strings.Contains(body, `extractq_pool_paused{pool="`+pool+`",reason="key"} 1`)
	})
	if strings.Contains(body, `extractq_pool_paused{pool="`+pool+`",reason="outage"} 1`) {
		t.Errorf("a refused key also shows as an outage:\n%s", body)
	}
	// What `extractq status` and the console read: the heartbeats.
	var p fleetview.Pool
	eventually(t, "the heartbeat shows the pause", func() bool {
		pools, err := fleetview.Pools(ctx, js)
		if err != nil {
			return false
		}
		for _, q := range pools {
			if q.Name == pool {
				p = q
			}
		}
		return p.Paused
	})
	if p.PauseText() != "yes (key)" || len(p.Workers) != 1 || !strings.Contains(p.Workers[0].PauseText(), "Incorrect API key") {
		t.Errorf("pool %+v: want paused for key with the provider's answer", p)
	}
	if strings.Contains(p.Workers[0].PauseText()+body, "sk-revoked") {
		t.Error("the API key leaked into the pause cause")
	}
}
