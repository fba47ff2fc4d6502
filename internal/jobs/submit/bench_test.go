package submit_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cpustat"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// BenchmarkSubmitDocument submits b.N documents of the fleet benchmark's
// kind in one submission: audit lookups and store in the real Postgres,
// publish to an embedded JetStream server with its acks. allocs/op and
// B/op count the whole process per document, the NATS server's included;
// so does cpu-µs/doc (getrusage), and pg-cpu-µs/doc is the CPU of the
// test database's Postgres backends (from /proc: the server must run on
// this machine). CPU per document is steadier than docs/s on a loaded
// machine.
//
//	go test -run '^$' -bench SubmitDocument -benchmem -benchtime 20000x ./internal/jobs/submit/
func BenchmarkSubmitDocument(b *testing.B) {
	st, _ := audittest.Store(b)
	_, js := jobstest.Connect(b, jobstest.Server(b), jetstream.WithPublishAsyncMaxPending(512))
	if err := jobs.EnsureStreams(b.Context(), js); err != nil {
		b.Fatal(err)
	}
	sub := submit.New(js, st)
	e := &env{js: js, store: st, sub: sub}
	job := e.job(e.register(b, `{"type":"object","properties":{"a":{"type":"string"}}}`))
	in := make([]submit.Doc, b.N)
	for i := range in {
		in[i] = submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: fleettest.Document(i)}
	}
	pg0, err := cpustat.Backends(b.Context(), st.Pool())
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpustat.Self()
	b.ReportAllocs()
	b.ResetTimer()
	sum, err := submitDocs(b.Context(), sub, job, in)
	b.StopTimer()
	cpu := cpustat.Self() - cpu0
	pg, perr := cpustat.Since(b.Context(), st.Pool(), pg0)
	if perr != nil {
		b.Fatal(perr)
	}
	if err != nil {
		b.Fatal(err)
	}
	if sum.Queued != b.N {
		b.Fatalf("queued %d of %d: %+v", sum.Queued, b.N, sum.Rejected)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/doc")
	b.ReportMetric(float64(pg.Nanoseconds())/1e3/float64(b.N), "pg-cpu-µs/doc")
}
