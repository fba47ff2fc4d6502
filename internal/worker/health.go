package worker

import (
	"encoding/json"
	"net/http"
)

// Handler serves the worker's probes: /healthz answers 200 while the
// process runs; /readyz answers 200 while the worker pulls jobs and its
// NATS connection is up, 503 otherwise (starting, shutting down, or
// disconnected), with the worker's counters as JSON.
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
			Counts
		}{Worker: w.id, Connected: w.js.Conn().IsConnected(), Counts: w.Counts()}
		body.Ready = w.Ready() && body.Connected
		rw.Header().Set("Content-Type", "application/json")
		if !body.Ready {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(rw).Encode(body)
	})
	return mux
}
