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

// TestBatchPoolPauseIsVisible runs `worker run` with a batch pool against
// a Batch API that refuses every call (a revoked key, a model that does
// not exist, an outage): the pool pauses, and the pause shows with its
// reason in the heartbeat status and on /metrics as
// extractq_pool_paused{reason}, as an online pool's does.
func TestBatchPoolPauseIsVisible(t *testing.T) {
	tests := []struct {
		name, reason, cause string
		status              int
		body                string
	}{
		{name: "revoked key", reason: "key", cause: "Incorrect API key", status: http.StatusUnauthorized,
			body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`},
		{name: "no such model", reason: "model", cause: "does not exist", status: http.StatusNotFound,
			body: `{"error":{"message":"The model gpt-nope does not exist","type":"invalid_request_error","code":"model_not_found"}}`},
		{name: "outage", reason: "outage", status: http.StatusInternalServerError,
			body: `{"error":{"message":"The server had an error","type":"server_error"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer api.Close()
			t.Setenv("OPENAI_API_KEY", "sk-revoked-0000000000")
			t.Setenv("OPENAI_BASE_URL", api.URL+"/v1")
			t.Setenv("EXTRACTQ_BATCH_POLL", "200ms") // the submission's retries come fast
			t.Setenv("EXTRACTQ_CIRCUIT_FAILURES", "1")
			ctx := context.Background()
			dbURL := testenv.Database(t)
			natsURL := jobstest.Server(t)
			base := runWorker(t, natsURL, dbURL, freeAddr(t), "--log-level", "error", "--pool", "openai:gpt-4o-mini=batch,max_requests:1,max_wait:100ms", "--grace", "1s")
			queueOne(t, natsURL, dbURL, "openai:gpt-4o-mini", "gpt-4o-mini", "batch-"+tc.reason)
			pool := jobs.PoolFor("openai:gpt-4o-mini")
			_, js := jobstest.Connect(t, natsURL)

			var body string
			t.Cleanup(func() {
				if t.Failed() {
					for l := range strings.Lines(body) {
						if strings.Contains(l, "paused") || strings.Contains(l, "circuit") {
							t.Log(strings.TrimSpace(l))
						}
					}
				}
			})
			eventually(t, "/metrics shows the batch pool paused for "+tc.reason, func() bool {
				_, body = get(base + "/metrics")
				return strings.Contains(body, `extractq_pool_paused{pool="`+pool+`",reason="`+tc.reason+`"} 1`)
			})
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
			if p.PauseText() != "yes ("+tc.reason+")" || len(p.Workers) != 1 || !strings.Contains(p.Workers[0].PauseText(), tc.cause) {
				t.Errorf("pool %+v: want paused for %s with the provider's answer", p, tc.reason)
			}
			if strings.Contains(p.Workers[0].PauseText()+body, "sk-revoked") {
				t.Error("the API key leaked into the pause cause")
			}
		})
	}
}
