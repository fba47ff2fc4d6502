package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestTraceSpansSubmitToResult: a submitter with its own tracer provider
// publishes a job inside its span; the worker, with another provider (as
// in another process), continues that trace from the message's W3C trace
// context: its job span is a child of the submit span, and each engine
// attempt a child of the job span with the GenAI attributes.
func TestTraceSpansSubmitToResult(t *testing.T) {
	workerSpans := tracetest.NewInMemoryExporter()
	tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(workerSpans)))
	f := startEngine(t, worker.NewEngine(), fastSettings(3),
		worker.WithProviders(func(string) (llm.Provider, error) {
			return extractqtest.New(nil, extractqtest.WithResponder(func(n int, _ llm.Request) extractqtest.Reply {
				if n == 1 {
					return extractqtest.Text(`not json at all`)
				}
				return extractqtest.Text(`{"ok": true}`)
			})), nil
		}))

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
	var attempts []map[string]string
	for _, s := range workerSpans.GetSpans() {
		if s.Parent.SpanID() == job.SpanContext.SpanID() && strings.HasPrefix(s.Name, "chat ") {
			attempts = append(attempts, attrs(s))
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans under the job, want 2 (an invalid answer, then a valid one)", len(attempts))
	}
	for _, a := range attempts {
		if a["gen_ai.operation.name"] != "chat" || a["gen_ai.request.model"] != "model" || a["gen_ai.usage.input_tokens"] == "" || a["extractq.attempt"] == "" {
			t.Errorf("attempt span attributes %v, want the GenAI conventions", a)
		}
	}
}
