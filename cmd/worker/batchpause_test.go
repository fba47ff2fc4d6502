package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/testenv"
)

// TestBatchPoolPauseIsVisible runs `worker run` with a batch pool against
// a Batch API that refuses every call (a revoked key, a model that does
// not exist, an outage), or only the polls of a batch it took (a key
// revoked while the batch runs): the pool pauses, and the pause shows with its
// reason in the heartbeat status and on /metrics as
// extractq_pool_paused{reason}, as an online pool's does.
func TestBatchPoolPauseIsVisible(t *testing.T) {
	const revokedKey = `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`
	tests := []struct {
		name, reason, cause string
		api                 func(t *testing.T) http.Handler
	}{
		{name: "revoked key", reason: "key", cause: "Incorrect API key", api: refuse(http.StatusUnauthorized, revokedKey)},
		{name: "no such model", reason: "model", cause: "does not exist",
			api: refuse(http.StatusNotFound, `{"error":{"message":"The model gpt-nope does not exist","type":"invalid_request_error","code":"model_not_found"}}`)},
		{name: "outage", reason: "outage", cause: "The server had an error",
			api: refuse(http.StatusInternalServerError, `{"error":{"message":"The server had an error","type":"server_error"}}`)},
		// The batch is taken, then the key is revoked: only its polls are
		// refused, and the pool's jobs, which only wait, show why.
		{name: "key revoked while a batch runs", reason: "key", cause: "Incorrect API key", api: func(t *testing.T) http.Handler {
			prof := fleettest.CleanProfile()
			prof.Batch = sim.BatchProfile{Delay: time.Hour}
			srv := sim.New(prof)
			t.Cleanup(srv.Close)
			var created atomic.Bool
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if created.Load() && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/batches/") {
					refuse(http.StatusUnauthorized, revokedKey)(t).ServeHTTP(w, r)
					return
				}
				srv.Handler().ServeHTTP(w, r)
				if r.Method == http.MethodPost && r.URL.Path == "/v1/batches" {
					created.Store(true)
				}
			})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := httptest.NewServer(tc.api(t))
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

// refuse is an API answering every request with status and body.
func refuse(status int, body string) func(*testing.T) http.Handler {
	return func(*testing.T) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		})
	}
}
