package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

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
		{name: "outage", reason: "outage", cause: "The server had an error", status: http.StatusInternalServerError,
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
			dbURL := testenv.Database(t)
			natsURL := jobstest.Server(t)
			base := runWorker(t, natsURL, dbURL, freeAddr(t), "--log-level", "error", "--pool", "openai:gpt-4o-mini=batch,max_requests:1,max_wait:100ms", "--grace", "1s")
			queueOne(t, natsURL, dbURL, "openai:gpt-4o-mini", "gpt-4o-mini", "batch-"+tc.reason)
			pool := jobs.PoolFor("openai:gpt-4o-mini")
			_, js := jobstest.Connect(t, natsURL)

			requirePaused(t, base, js, pool, tc.reason, tc.cause)
		})
	}
}
