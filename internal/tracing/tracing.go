// Package tracing carries OpenTelemetry traces through the fleet: from
// `submit` (a span per submission) in the W3C trace context of each job
// message's headers, to the worker (a span per job, its document, run and
// pool) and each engine attempt (a span with the GenAI semantic
// conventions: model, tokens, finish reason). It is configured by the
// standard OTEL_* variables and off by default: with no exporter set, the
// global tracer provider stays OpenTelemetry's no-op one, and every
// function here returns after a check that the context's span records.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/extractq/extractq/llm"
)

// Name is the instrumentation scope of extractq's spans.
const Name = "github.com/extractq/extractq"

// Enabled reports whether the environment asks for traces: OTEL_TRACES_EXPORTER
// set to otlp, or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) without OTEL_TRACES_EXPORTER=none;
// never when OTEL_SDK_DISABLED=true.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "otlp":
		return true
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	}
	return false
}

// ErrExporter is matched by Setup's error for an OTEL_TRACES_EXPORTER
// this build does not have.
var ErrExporter = errors.New("unsupported OTEL_TRACES_EXPORTER")

// Setup installs a tracer provider exporting over OTLP/HTTP (the exporter
// reads OTEL_EXPORTER_OTLP_* itself; the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, service defaulting to service) when Enabled,
// with the W3C trace-context propagator. shutdown flushes the spans; call
// it before exiting. When traces are off it does nothing.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	if exp := strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" && exp != "none" {
		return none, fmt.Errorf("%w %q: use otlp (with OTEL_EXPORTER_OTLP_ENDPOINT) or none", ErrExporter, exp)
	}
	if !Enabled(os.Getenv) {
		return none, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return none, fmt.Errorf("OpenTelemetry OTLP exporter: %w (check OTEL_EXPORTER_OTLP_* )", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		_ = os.Setenv("OTEL_SERVICE_NAME", service)
	}
	res, err := resource.Merge(resource.Default(), resource.Environment())
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	Use(tp)
	return tp.Shutdown, nil
}

// on is set once traces are on (Use): until then every function here
// returns at once, building no attributes.
var on atomic.Bool

// Use makes tp the global tracer provider, with the W3C trace-context
// propagator, and turns extractq's spans on: what Setup does when the
// environment asks for traces, and what a program (or a test) with its
// own provider calls.
func Use(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	on.Store(true)
}

// Tracer is extractq's tracer from the global provider.
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// StartSubmit starts the span of one submission (its jobs' traces start
// there); EndSubmit ends it.
func StartSubmit(ctx context.Context, subject, run, pool, model string) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return Tracer().Start(ctx, "extractq.submit", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", subject),
		attribute.String("extractq.run", run), attribute.String("extractq.pool", pool), attribute.String("gen_ai.request.model", model)))
}

// EndSubmit ends a submission's span with what it queued.
func EndSubmit(span trace.Span, queued, rejected int, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("extractq.queued", queued), attribute.Int("extractq.rejected", rejected))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Inject writes ctx's trace context into a message's headers, so that the
// worker's job span continues the submitter's trace.
func Inject(ctx context.Context, h nats.Header) {
	if !on.Load() || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(http.Header(h)))
}

// StartJob starts the span of one delivery of a job, continuing the trace
// of the message's headers (none: a new trace).
func StartJob(ctx context.Context, h nats.Header, jobID, documentID, run, pool string, delivery int) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	if len(h) > 0 {
		ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(http.Header(h)))
	}
	return Tracer().Start(ctx, "extractq.job", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("extractq.job.id", jobID),
		attribute.String("extractq.document.id", documentID),
		attribute.String("extractq.run", run),
		attribute.String("extractq.pool", pool),
		attribute.Int("extractq.delivery", delivery),
	))
}

// EndJob ends a job's span with its outcome; a job without a valid result
// is an error.
func EndJob(span trace.Span, res *llm.Result) {
	if !span.IsRecording() {
		return
	}
	if res != nil {
		span.SetAttributes(attribute.String("extractq.outcome", string(res.Outcome)), attribute.Int("extractq.attempts", len(res.Attempts)),
			attribute.Int("gen_ai.usage.input_tokens", res.Usage.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", res.Usage.CompletionTokens))
		if res.Outcome != llm.OutcomeOK {
			span.SetStatus(codes.Error, res.Reason)
		}
	}
	span.End()
}

// Observe records one engine attempt, a call to the model, as a span of
// the job's trace with the GenAI semantic conventions; it is an
// extractq.Observer. Without a recording span in ctx it does nothing.
func Observe(ctx context.Context, a llm.Attempt) {
	if !on.Load() || !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	family, _, _ := strings.Cut(a.Provider, ":")
	_, span := Tracer().Start(ctx, "chat "+a.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(a.StartedAt),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", family),
			attribute.String("gen_ai.request.model", a.Model),
			attribute.Int("gen_ai.usage.input_tokens", a.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", a.Usage.CompletionTokens),
			attribute.Int("extractq.attempt", a.N),
			attribute.String("extractq.mode", string(a.Mode)),
			attribute.Int("extractq.transport_retries", a.TransportRetries),
		))
	if a.FinishReason != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(a.FinishReason)}))
	}
	if a.Class != "" {
		span.SetAttributes(attribute.String("error.type", string(a.Class)))
		span.SetStatus(codes.Error, a.Error)
	}
	span.End(trace.WithTimestamp(a.StartedAt.Add(a.Latency)))
}
