package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/extractq/extractq/llm"
)

// TestEnabled: traces are on only when the standard variables ask for an
// OTLP exporter, and OTEL_SDK_DISABLED or "none" turns them off.
func TestEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tc := range tests {
		if got := Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: Enabled = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// one is the tracing of one job as the fleet does it: the submitter's
// inject, the worker's job span, three attempts, the end.
func one(ctx context.Context, h nats.Header, a llm.Attempt, res *llm.Result) {
	Inject(ctx, h)
	jctx, span := StartJob(ctx, h, "job-1", "doc-1", "run", "pool", 1)
	for range 3 {
		Observe(jctx, a)
	}
	EndJob(span, res)
}

var (
	attempt = llm.Attempt{N: 1, Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", StartedAt: time.Now(), Latency: time.Second,
		Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 40}, FinishReason: llm.FinishStop}
	result = &llm.Result{Outcome: llm.OutcomeOK, Usage: llm.Usage{PromptTokens: 2700, CompletionTokens: 120}}
)

// BenchmarkJobTracesOff is a job's tracing with traces off (no OTEL_*
// variables: OpenTelemetry's no-op provider): no allocation, a few
// nanoseconds.
func BenchmarkJobTracesOff(b *testing.B) {
	if on.Load() {
		b.Skip("traces were turned on in this process: run it alone (-bench JobTracesOff)")
	}
	ctx, h := context.Background(), nats.Header{}
	b.ReportAllocs()
	for b.Loop() {
		one(ctx, h, attempt, result)
	}
}

// BenchmarkJobTracesOn is the same with a recording provider (spans kept
// in memory, reset every 1,000 jobs), for comparison.
func BenchmarkJobTracesOn(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	Use(tp)
	ctx, root := tp.Tracer("bench").Start(context.Background(), "submit")
	defer root.End()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		one(ctx, nats.Header{}, attempt, result)
		if n++; n%1000 == 0 {
			exp.Reset()
		}
	}
}
