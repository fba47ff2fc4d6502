package batchpool_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/tracing"
	"github.com/extractq/extractq/llm"
)

// TestBatchSpans: with traces on, each Batch API operation of a batch
// pool is a span (submit, status, output) with the pool, the model and
// the batch's id and size, the submission linked to the jobs whose
// requests it carries, and each HTTP request of the operation (through
// tracing.Transport, as the worker sets it on its providers) a child span
// of it. Not parallel: it turns traces on for the process.
func TestBatchSpans(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	tracing.Use(tp)
	store, _ := audittest.Store(t)
	prof := fleettest.CleanProfile()
	prof.Batch = sim.BatchProfile{Delay: 30 * time.Millisecond}
	srv := sim.New(prof, sim.WithSeed(5))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: tracing.Transport(srv.Transport())}
	f := openAIFamily
	build := func(string) (llm.Provider, error) {
		return providers.New(f.spec, providers.WithBaseURL(f.baseURL), providers.WithHTTPClient(hc), providers.WithAPIKey(f.key))
	}
	sh := &shape{t: t, f: f, srv: srv, build: build}
	const n = 3
	x := sh.extractor(sh.runner(store, "w1", fast(n)))
	s := invoiceSchema(t)
	jobSpans := make([]trace.SpanContext, n)
	done := make(chan error, n)
	for i := range n {
		ctx, job := tp.Tracer("test").Start(t.Context(), "job")
		jobSpans[i] = job.SpanContext()
		go func() {
			defer job.End()
			ctx, cancel := context.WithTimeout(batchpool.WithJob(ctx, jobIDs("t", n)[i], 1), 20*time.Second)
			defer cancel()
			_, err := x.Extract(ctx, fleettest.Document(i), s)
			done <- err
		}()
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	got := spans.GetSpans()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range got {
		byID[sp.SpanContext.SpanID()] = sp
	}
	ops := map[string]tracetest.SpanStub{}
	httpUnder := map[string][]string{} // operation → its HTTP spans' names
	for _, sp := range got {
		if parent, ok := byID[sp.Parent.SpanID()]; ok && parent.Name != "job" && sp.SpanKind == trace.SpanKindClient && (sp.Name == "GET" || sp.Name == "POST") {
			httpUnder[parent.Name] = append(httpUnder[parent.Name], sp.Name)
			continue
		}
		if len(sp.Name) > 6 && sp.Name[:6] == "batch " {
			ops[sp.Name] = sp
		}
	}
	for _, op := range []string{"batch submit", "batch status", "batch output"} {
		sp, ok := ops[op]
		if !ok {
			t.Fatalf("no %q span among %d spans", op, len(got))
		}
		attrs := map[string]string{}
		for _, a := range sp.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		if attrs["extractq.pool"] != f.spec || attrs["gen_ai.request.model"] != f.spec || attrs["extractq.batch.requests"] != "3" {
			t.Errorf("%s attributes %v: want the pool, the model and 3 requests", op, attrs)
		}
		if op != "batch submit" && attrs["extractq.batch.id"] == "" {
			t.Errorf("%s has no batch id: %v", op, attrs)
		}
		if len(httpUnder[op]) == 0 {
			t.Errorf("%s has no HTTP span under it", op)
		}
	}
	var linked []trace.SpanContext
	for _, l := range ops["batch submit"].Links {
		linked = append(linked, l.SpanContext)
	}
	for i, sc := range jobSpans {
		if !slices.ContainsFunc(linked, sc.Equal) {
			t.Errorf("the submission is not linked to job %d", i)
		}
	}
	if len(httpUnder["batch submit"]) < 2 {
		t.Errorf("batch submit's HTTP spans %v: want the file upload and the batch's creation", httpUnder["batch submit"])
	}
}
