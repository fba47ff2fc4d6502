package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sink"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestFleetKeepsPagesToTheEnd: a two-page PDF from examples/documents (a
// cover letter on page 1, the invoice on page 2) goes through submit's
// reader, a real worker and the simulator. Its result's sources reach the
// audit with their pages and snippets, in the same write as the result;
// History reads them back and every export format carries them. The same
// PDF before a model that never answers a currency of the enum ends as a dead letter
// whose pages PlaceLetter names.
func TestFleetKeepsPagesToTheEnd(t *testing.T) {
	ctx := t.Context()
	st, _ := audittest.Store(t)
	js := natsForTest(t)
	clean := sim.New(sim.Profile{Name: "pages-clean", FixProbability: 1}, sim.WithSeed(3))
	defer clean.Close()
	faulty := sim.New(sim.Profile{Name: "pages-faulty", Faults: sim.FaultRates{EnumOutside: 1}, FaultModes: sim.FaultModesAll}, sim.WithSeed(3))
	defer faulty.Close()
	factory := func(spec string) (llm.Provider, error) {
		srv := clean
		if strings.Contains(spec, "faulty") {
			srv = faulty
		}
		return providers.New("openai:sim-pages", providers.WithBaseURL("http://sim.invalid/v1"),
			providers.WithHTTPClient(&http.Client{Transport: srv.Transport()}), providers.WithAPIKey("sk-pages-test-not-a-key"))
	}

	const pdf = "../../examples/documents/invoice-two-pages.pdf"
	var doc intake.Doc
	r := intake.Reader{}
	if err := r.Read(ctx, []string{pdf}, func(d intake.Doc) error { doc = d; return d.Err }); err != nil {
		t.Fatal(err)
	}
	if doc.Document == nil || len(doc.Document.Pages) != 2 {
		t.Fatalf("%s read as %+v, want two pages", pdf, doc.Document)
	}
	sub := submit.New(js, st)
	sc, err := schema.CompileFile("../../examples/invoice.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sub.RegisterSchema(ctx, "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	var pools []worker.Pool
	for _, run := range []struct{ id, provider string }{{"pages-ok.pdf", "openai:sim-clean"}, {"pages-dead.pdf", "openai:sim-faulty"}} {
		model, pool, err := submit.ResolveProvider(run.provider)
		if err != nil {
			t.Fatal(err)
		}
		job := submit.Job{Schema: ref, Provider: run.provider, Model: model, Pool: pool, Run: "pages", Options: jobs.Options{MaxReasks: new(1)}}
		d := doc
		d.ID = run.id
		sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error { return fn(d) }, nil)
		if err != nil || sum.Queued != 1 {
			t.Fatalf("submit %s: %+v, %v", run.id, sum, err)
		}
		pools = append(pools, worker.Pool{Name: pool, Concurrency: 2, Budget: ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: 2}, ratelimit.WithLogger(quietLogger()))})
	}
	writer, err := st.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, writer, fastEngine(), worker.WithID("pages-worker"), worker.WithPools(pools...),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 10}),
		worker.WithProviders(factory), worker.WithLogger(quietLogger()), worker.WithPullWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitSettled(t, st, 2, 2*time.Minute)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// The result: sources with pages and snippets, stored with it.
	h, err := st.History(ctx, "pages-ok.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Results) != 1 {
		t.Fatalf("%d results of the clean document, want 1; jobs %+v", len(h.Results), h.Jobs)
	}
	list := audit.SourceList(h.Results[0].Sources)
	text := strings.Join(strings.Fields(doc.Text), " ")
	onPage2 := false
	for _, f := range list {
		if f.Page < 1 || f.Page > 2 || f.Snippet == "" || f.Start > f.End {
			t.Errorf("source %+v: want page 1 or 2, a range and a snippet", f)
		}
		if !strings.Contains(text, strings.Trim(f.Snippet, "…")) {
			t.Errorf("snippet %q of %s is not the document's text", f.Snippet, f.Field)
		}
		onPage2 = onPage2 || f.Page == 2
	}
	if len(list) == 0 || !onPage2 {
		t.Errorf("sources %+v: want values found on page 2, where the invoice is", list)
	}
	t.Logf("%d sources, e.g. %+v", len(list), list[0])

	// Every export carries them.
	var jl, csvOut, pq bytes.Buffer
	f := audit.ExportFilter{Schema: "invoice"}
	if _, err := st.Export(ctx, f, audit.FormatJSONL, &jl); err != nil {
		t.Fatal(err)
	}
	var line struct{ Sources []audit.FieldSource }
	if err := json.Unmarshal(jl.Bytes(), &line); err != nil || len(line.Sources) != len(list) || line.Sources[0] != list[0] {
		t.Errorf("JSONL sources %+v (%v), want %+v", line.Sources, err, list)
	}
	if _, err := st.Export(ctx, f, audit.FormatCSV, &csvOut); err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(list[0].Snippet); !strings.Contains(csvOut.String(), `""page"":`) || !strings.Contains(csvOut.String(), strings.ReplaceAll(string(want), `"`, `""`)) {
		t.Errorf("CSV lacks the sources:\n%s", csvOut.String())
	}
	si, err := st.SchemaByName(ctx, "invoice", 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sink.ExportParquet(ctx, st.Pool(), sink.Filter{Schema: "invoice"}, si.Body, &pq)
	if err != nil {
		t.Fatal(err)
	}
	e.Rollback(ctx)
	pf, err := parquet.OpenFile(bytes.NewReader(pq.Bytes()), int64(pq.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rows := []map[string]any{{}}
	pr := parquet.NewGenericReader[map[string]any](pf, pf.Schema())
	if n, _ := pr.Read(rows); n != 1 {
		t.Fatalf("read %d Parquet rows, want 1", n)
	}
	pr.Close()
	if got, _ := rows[0]["_sources"].([]any); len(got) != len(list) {
		t.Errorf("Parquet _sources = %v, want %d sources", rows[0]["_sources"], len(list))
	}

	// The dead letter: the pages of the document that failed.
	var seq int64
	if err := st.Pool().QueryRow(ctx, "SELECT seq FROM dead_letters WHERE document_id = 'pages-dead.pdf'").Scan(&seq); err != nil {
		t.Fatalf("dead letter of the faulty document: %v", err)
	}
	l, err := jobs.NewDLQ(js).Get(ctx, uint64(seq))
	if err != nil {
		t.Fatal(err)
	}
	letterText, err := jobs.NewDocuments(js).Text(ctx, &l.Job)
	if err != nil {
		t.Fatal(err)
	}
	places := fleetview.PlaceLetter(&l.DeadLetter, letterText)
	if places.Pages() != "pages 1-2" {
		t.Errorf("letter places %+v, want pages 1-2", places)
	}
	for _, v := range places.Violations {
		if v.Page < 1 || v.Snippet == "" {
			t.Errorf("misread value %+v: want its page and snippet", v)
		}
	}
	t.Logf("letter: %s, misread %+v", places.Pages(), places.Violations)
}
