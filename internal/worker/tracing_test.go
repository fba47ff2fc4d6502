package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestTraceSpansSubmitToResult: a submitter with its own tracer provider
// publishes a job inside its span; the worker, with another provider (as
// in another process), continues that trace from the message's W3C trace
// context: its job span is a child of the submit span, each engine attempt
// a child of the job span with the GenAI attributes, and each provider HTTP
// call (through tracing.Transport, as the worker sets it) a child of its
// attempt, a transport retry with its resend count.
func TestTraceSpansSubmitToResult(t *testing.T) {
	workerSpans := tracetest.NewInMemoryExporter()
	tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(workerSpans)))
	// An OpenAI-compatible server: a 503 first (retried within attempt 1),
	// then an answer that is not JSON (attempt 1), then a valid one
	// (attempt 2).
	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		content := `{"ok": true}`
		switch calls.Add(1) {
		case 1:
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		case 2:
			content = "not json at all"
		}
		body, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(api.Close)
	prov, err := extractq.NewProvider("openai:m", extractq.WithProviderBaseURL(api.URL+"/v1"), extractq.WithProviderAPIKey("sk-test-not-a-key"),
		extractq.WithProviderTransport(tracing.HTTPTransport()))
	if err != nil {
		t.Fatal(err)
	}
	f := startEngine(t, fastEngine(), fastSettings(3),
		worker.WithProviders(func(string) (llm.Provider, error) { return prov, nil }))

	submitSpans := tracetest.NewInMemoryExporter()
	submitter := sdktrace.NewTracerProvider(sdktrace.WithSyncer(submitSpans))
	ctx, root := submitter.Tracer("submit").Start(context.Background(), "extractq.submit")
	sch, _ := schema.Compile([]byte(`{"type":"object"}`))
	env := &jobs.Envelope{DocumentID: "traced", Provider: "fake:m", Model: "m", Pool: pool, Run: "r-trace",
		Schema: jobs.SchemaRef{Name: "s", Version: 1, Fingerprint: sch.Fingerprint()}, SubmittedAt: time.Now()}
	if _, err := f.pub.Publish(ctx, env, "a traced document"); err != nil {
		t.Fatal(err)
	}
	root.End()

	var job tracetest.SpanStub
	waitFor(t, "the job's span", func() bool {
		for _, s := range workerSpans.GetSpans() {
			for _, a := range s.Attributes {
				if a.Key == "extractq.document.id" && a.Value.AsString() == "traced" && s.Name == "extractq.job" {
					job = s
					return true
				}
			}
		}
		return false
	})
	if job.SpanContext.TraceID() != root.SpanContext().TraceID() || job.Parent.SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("job span in trace %s under %s, want the submit span's trace %s under %s",
			job.SpanContext.TraceID(), job.Parent.SpanID(), root.SpanContext().TraceID(), root.SpanContext().SpanID())
	}
	attrs := func(s tracetest.SpanStub) map[string]string {
		m := map[string]string{}
		for _, a := range s.Attributes {
			m[string(a.Key)] = a.Value.Emit()
		}
		return m
	}
	if a := attrs(job); a["extractq.run"] != "r-trace" || a["extractq.job.id"] != env.JobID || a["extractq.outcome"] != "ok" {
		t.Errorf("job span attributes %v", a)
	}
	var attempts []tracetest.SpanStub
	for _, s := range workerSpans.GetSpans() {
		if s.Parent.SpanID() == job.SpanContext.SpanID() && strings.HasPrefix(s.Name, "chat ") {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans under the job, want 2 (an invalid answer, then a valid one)", len(attempts))
	}
	// Each attempt's HTTP calls, in order: status and resend count.
	host, _, _ := strings.Cut(strings.TrimPrefix(api.URL, "http://"), ":")
	var got []string
	for _, at := range attempts {
		a := attrs(at)
		if a["gen_ai.operation.name"] != "chat" || a["gen_ai.request.model"] != "m" || a["gen_ai.usage.input_tokens"] == "" || a["extractq.attempt"] == "" {
			t.Errorf("attempt span attributes %v, want the GenAI conventions", a)
		}
		var calls []string
		for _, s := range workerSpans.GetSpans() {
			if s.Parent.SpanID() != at.SpanContext.SpanID() {
				continue
			}
			h := attrs(s)
			if s.Name != "POST" || h["http.request.method"] != "POST" || h["server.address"] != host || h["server.port"] == "" {
				t.Errorf("HTTP span %q attributes %v, want POST to %s with its port", s.Name, h, host)
			}
			calls = append(calls, h["http.response.status_code"]+"/"+h["http.request.resend_count"])
		}
		got = append(got, a["extractq.attempt"]+": "+strings.Join(calls, " "))
	}
	slices.Sort(got)
	if want := []string{"1: 503/ 200/1", "2: 200/"}; !slices.Equal(got, want) {
		t.Errorf("HTTP spans under each attempt (status/resend count) %q, want %q", got, want)
	}
}
