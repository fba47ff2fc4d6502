// Package tracing carries OpenTelemetry traces through the fleet: from
// `submit` (a span per submission) in the W3C trace context of each job
// message's headers, to the worker (a span per job, its document, run and
// pool), each engine attempt (a span with the GenAI semantic conventions:
// model, tokens, finish reason) and each provider HTTP call within it
// (Transport, set on the worker's providers). It is configured by the
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
	"strconv"
	"strings"
	"sync"
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
	ctx, span := Tracer().Start(ctx, "extractq.job", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("extractq.job.id", jobID),
		attribute.String("extractq.document.id", documentID),
		attribute.String("extractq.run", run),
		attribute.String("extractq.pool", pool),
		attribute.Int("extractq.delivery", delivery),
	))
	as := &attempts{}
	ctx = context.WithValue(ctx, attemptsKey{}, as)
	as.job = ctx
	return ctx, jobSpan{span, as}
}

// jobSpan is a job's span: ending it ends an attempt span its HTTP calls
// opened that the engine never reported (a job canceled mid-call).
type jobSpan struct {
	trace.Span
	attempts *attempts
}

func (s jobSpan) End(opts ...trace.SpanEndOption) {
	if open := s.attempts.take(); open != nil {
		open.End()
	}
	s.Span.End(opts...)
}

type attemptsKey struct{}

// attempts holds the span of a job's current attempt. The engine reports an
// attempt only once it is over (Observe), but its HTTP calls happen during
// it: the first call opens the attempt span (Transport) so the calls are
// its children, and Observe completes and ends it.
type attempts struct {
	job   context.Context // the job span's context
	mu    sync.Mutex
	open  trace.Span
	ctx   context.Context // open's context
	calls int             // HTTP calls in the open attempt
}

// call returns the context of the current attempt's span, opening one if
// none is, and how many HTTP calls that attempt made before this one.
func (as *attempts) call() (context.Context, int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.open == nil {
		as.ctx, as.open = Tracer().Start(as.job, "chat", trace.WithSpanKind(trace.SpanKindClient))
		as.calls = 0
	}
	as.calls++
	return as.ctx, as.calls - 1
}

// take returns the open attempt span (nil if none) and forgets it.
func (as *attempts) take() trace.Span {
	as.mu.Lock()
	defer as.mu.Unlock()
	s := as.open
	as.open = nil
	return s
}

// Transport wraps rt so that each HTTP request made for a traced job is a
// span (method, server address and port, status, resend count within its
// attempt), a child of the attempt span. Requests outside a traced job go
// straight to rt. The worker sets it on its providers (HTTPTransport).
func Transport(rt http.RoundTripper) http.RoundTripper { return transport{rt} }

// HTTPTransport is Transport when traces are on, nil (no wrapping, no
// cost) when they are off: for extractq.WithProviderTransport.
func HTTPTransport() func(http.RoundTripper) http.RoundTripper {
	if !on.Load() {
		return nil
	}
	return Transport
}

type transport struct{ rt http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	as, _ := req.Context().Value(attemptsKey{}).(*attempts)
	if as == nil || !on.Load() {
		return t.rt.RoundTrip(req)
	}
	actx, resends := as.call()
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", req.Method),
		attribute.String("server.address", req.URL.Hostname()),
	}
	if port := req.URL.Port(); port != "" {
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", n))
		}
	}
	if resends > 0 {
		attrs = append(attrs, attribute.Int("http.request.resend_count", resends))
	}
	// The URL itself is left out: some APIs take the key as a parameter.
	_, span := Tracer().Start(actx, req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		span.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
		span.SetStatus(codes.Error, err.Error())
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetAttributes(attribute.String("error.type", strconv.Itoa(resp.StatusCode)))
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
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
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", family),
		attribute.String("gen_ai.request.model", a.Model),
		attribute.Int("gen_ai.usage.input_tokens", a.Usage.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", a.Usage.CompletionTokens),
		attribute.Int("extractq.attempt", a.N),
		attribute.String("extractq.mode", string(a.Mode)),
		attribute.Int("extractq.transport_retries", a.TransportRetries),
	}
	var span trace.Span
	if as, _ := ctx.Value(attemptsKey{}).(*attempts); as != nil {
		span = as.take() // opened by the attempt's first HTTP call
	}
	if span != nil {
		span.SetName("chat " + a.Model)
		span.SetAttributes(attrs...)
	} else {
		_, span = Tracer().Start(ctx, "chat "+a.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(a.StartedAt),
			trace.WithAttributes(attrs...))
	}
	if a.FinishReason != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(a.FinishReason)}))
	}
	if a.Class != "" {
		span.SetAttributes(attribute.String("error.type", string(a.Class)))
		span.SetStatus(codes.Error, a.Error)
	}
	span.End(trace.WithTimestamp(a.StartedAt.Add(a.Latency)))
}

// batchLinks bounds the jobs a batch span links to (OpenTelemetry keeps
// 128 links a span by default).
const batchLinks = 100

// StartBatch opens the span of one Batch API operation of a batch pool
// ("batch submit", "batch status", "batch output"), which no job's trace
// holds: a batch serves many jobs. Each HTTP request made with the
// returned context is a child span of it (Transport), as an attempt's are
// of the attempt's. batchID is empty for a submission; jobs are the
// contexts of the jobs whose requests it carries, linked (the first 100).
// With traces off it returns ctx and a span that records nothing.
func StartBatch(ctx context.Context, op, pool, model, batchID string, requests int, jobs []context.Context) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "batch"), attribute.String("gen_ai.request.model", model),
		attribute.String("extractq.pool", pool), attribute.String("extractq.batch.operation", op),
	}
	if batchID != "" {
		attrs = append(attrs, attribute.String("extractq.batch.id", batchID))
	}
	if requests > 0 {
		attrs = append(attrs, attribute.Int("extractq.batch.requests", requests))
	}
	var links []trace.Link
	for _, j := range jobs[:min(len(jobs), batchLinks)] {
		if sc := trace.SpanContextFromContext(j); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	// A new root: the operation outlives the job that happened to start it.
	ctx, span := Tracer().Start(ctx, "batch "+op, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs...), trace.WithLinks(links...))
	as := &attempts{job: ctx, open: span, ctx: ctx}
	return context.WithValue(ctx, attemptsKey{}, as), span
}

// EndBatch ends a batch operation's span, with its error: error.type is
// the provider error's class (auth, not_found, server…) or the Go type.
func EndBatch(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		class := fmt.Sprintf("%T", err)
		var pe *llm.Error
		if errors.As(err, &pe) && pe.Class != "" {
			class = string(pe.Class)
		}
		span.SetAttributes(attribute.String("error.type", class))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// On reports whether traces are on: what a caller checks before it
// gathers what only a span would use.
func On() bool { return on.Load() }
