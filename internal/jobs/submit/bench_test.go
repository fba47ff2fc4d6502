package submit_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
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
	pg0 := backendsCPU(b, st)
	cpu0 := selfCPU()
	b.ReportAllocs()
	b.ResetTimer()
	sum, err := submitDocs(b.Context(), sub, job, in)
	b.StopTimer()
	cpu := selfCPU() - cpu0
	var pg time.Duration
	for pid, t := range backendsCPU(b, st) {
		pg += t - pg0[pid]
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

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendsCPU is the CPU time of each backend connected to st's database.
func backendsCPU(b *testing.B, st *audit.Store) map[int]time.Duration {
	rows, err := st.Pool().Query(b.Context(), "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		b.Fatal(err)
	}
	var pid int
	out := map[int]time.Duration{}
	if _, err := pgx.ForEachRow(rows, []any{&pid}, func() error {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			return nil
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		sys, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(ut+sys) * (time.Second / 100) // USER_HZ
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return out
}
