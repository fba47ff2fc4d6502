package worker

import (
	"encoding/json"
	"net/http"

	"github.com/extractq/extractq/internal/ratelimit"
)

// Handler serves the worker's probes: /healthz answers 200 while the
// process runs; /readyz answers 200 while the worker pulls jobs, its NATS
// connection is up and the audit store accepts writes, 503 otherwise
// (starting, shutting down, disconnected, or paused by the audit circuit),
// with the worker's counters, its circuits and the jobs it holds as JSON.
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		_, _ = rw.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		body := struct {
			Ready     bool   `json:"ready"`
			Worker    string `json:"worker"`
			Connected bool   `json:"nats_connected"`
			// Paused is true while the audit circuit is not closed.
			Paused bool  `json:"paused"`
			Held   int64 `json:"held"`
			Counts
			Circuits []ratelimit.BreakerSnapshot `json:"circuits"`
		}{Worker: w.id, Connected: w.js.Conn().IsConnected(), Counts: w.Counts(), Held: w.Held(), Circuits: w.Circuits()}
		body.Paused = w.auditCircuit.State() != ratelimit.CircuitClosed
		body.Ready = w.Ready() && body.Connected
		rw.Header().Set("Content-Type", "application/json")
		if !body.Ready {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(rw).Encode(body)
	})
	return mux
}
