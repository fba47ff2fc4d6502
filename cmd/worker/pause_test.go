package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/testenv"
)

// TestRevokedKeyPauseIsVisible runs `worker run` against a provider that
// answers 401 to every call (a key revoked at run time): the pool pauses,
// and the pause shows with its reason, key, and the provider's answer in
// the heartbeat status and the console read, and on /metrics as
// extractq_pool_paused{reason="key"} (and no other reason: not as an
// outage), not only as a transport circuit.
func TestRevokedKeyPauseIsVisible(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer api.Close()
	t.Setenv("OPENAI_API_KEY", "sk-revoked-0000000000")
	t.Setenv("OPENAI_BASE_URL", api.URL+"/v1")
	dbURL := testenv.Database(t)
	natsURL := jobstest.Server(t)
	base := runWorker(t, natsURL, dbURL, freeAddr(t), "--log-level", "error", "--pool", "openai:gpt-4o-mini=concurrency:1", "--grace", "1s")
	queueOne(t, natsURL, dbURL, "openai:gpt-4o-mini", "gpt-4o-mini", "revoked")
	pool := jobs.PoolFor("openai:gpt-4o-mini")
	_, js := jobstest.Connect(t, natsURL)

	requirePaused(t, base, js, pool, "key", "Incorrect API key")
}

// requirePaused waits until /metrics at base shows pool paused for reason
// (extractq_pool_paused{reason} 1, no other reason) and its heartbeat
// says so, what `extractq status` and the console read, with the
// provider's answer (cause) and without the API key.
func requirePaused(t *testing.T, base string, js jetstream.JetStream, pool, reason, cause string) {
	t.Helper()
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
	eventually(t, "/metrics shows the pool paused for "+reason, func() bool {
		_, body = get(base + "/metrics")
		return strings.Contains(body, `extractq_pool_paused{pool="`+pool+`",reason="`+reason+`"} 1`)
	})
	for _, other := range ratelimit.PauseReasons {
		if other != reason && strings.Contains(body, `extractq_pool_paused{pool="`+pool+`",reason="`+other+`"} 1`) {
			t.Errorf("paused for %s also shows as %s:\n%s", reason, other, body)
		}
	}
	var p fleetview.Pool
	eventually(t, "the heartbeat shows the pause", func() bool {
		pools, err := fleetview.Pools(t.Context(), js)
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
	if p.PauseText() != "yes ("+reason+")" || len(p.Workers) != 1 || !strings.Contains(p.Workers[0].PauseText(), cause) {
		t.Errorf("pool %+v: want paused for %s with the provider's answer", p, reason)
	}
	if strings.Contains(p.Workers[0].PauseText()+body, "sk-revoked") {
		t.Error("the API key leaked into the pause cause")
	}
}
