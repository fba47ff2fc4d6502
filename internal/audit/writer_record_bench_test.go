package audit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/cpustat"
	"github.com/extractq/extractq/llm"
)

// BenchmarkWriterRecord writes b.N records of one attempt each (what a
// clean document costs: an attempt, a job and a result row) through the
// group-commit writer from 64 concurrent writers, and reports per record
// this process's CPU, the Postgres backends' CPU (from /proc) and the
// allocations. BF sets the writer's flushers (default: the writer's). Compare revisions by running their test binaries
// alternately:
//
//	go test -run '^$' -bench WriterRecord -benchmem -benchtime 20000x -count 3 ./internal/audit/
func BenchmarkWriterRecord(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	recs := make([]*Record, b.N)
	for i := range recs {
		recs[i] = testRecord(fmt.Sprintf("wr-%d", i), fmt.Sprintf("doc-%d", i), 1, 1, llm.OutcomeOK)
	}
	var opts []WriterOption
	if v, _ := strconv.Atoi(os.Getenv("BF")); v > 0 {
		opts = append(opts, WithFlushers(v))
	}
	w, err := s.NewWriter(ctx, opts...)
	if err != nil {
		b.Fatal(err)
	}
	pg, err := cpustat.Backends(ctx, s.pool)
	if err != nil {
		b.Fatal(err)
	}
	self := cpustat.Self()
	start := time.Now()
	b.ResetTimer()
	writeAll(ctx, b, w, recs, 64)
	b.StopTimer()
	wall := time.Since(start)
	cpu := cpustat.Self() - self
	pgCPU, err := cpustat.Since(ctx, s.pool, pg)
	if err != nil {
		b.Fatal(err)
	}
	st := w.Stats()
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/rec")
	b.ReportMetric(float64(pgCPU.Microseconds())/n, "pg-µs/rec")
	b.ReportMetric(n/wall.Seconds(), "rec/s")
	b.ReportMetric(n/float64(max(st.Batches, 1)), "rec/flush")
}

// BenchmarkToPending is the writer's work on the caller's goroutine: a
// clean record (one attempt, a result) checked, redacted and encoded as
// COPY rows.
func BenchmarkToPending(b *testing.B) {
	rec := testRecord("job-1", "doc-1", 1, 1, llm.OutcomeOK)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p, err := toPending(rec, now)
		if err != nil {
			b.Fatal(err)
		}
		recyclePending(p) // as Write does once the record is settled
	}
}

// writeAll writes recs through w from the given number of goroutines and
// returns when every Write has returned.
func writeAll(ctx context.Context, b *testing.B, w *GroupWriter, recs []*Record, workers int) {
	next := make(chan *Record)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rec := range next {
				if err := w.Write(ctx, rec); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, r := range recs {
		next <- r
	}
	close(next)
	wg.Wait()
}

// BenchmarkFlush is a flusher's work on one batch of 32 clean records
// (one attempt and a result each), encoded beforehand: the COPY request
// built and sent, the reply read. Per record: divide by 32.
func BenchmarkFlush(b *testing.B) {
	const perBatch = 32
	ctx := context.Background()
	s := newTestStore(b)
	w, err := s.NewWriter(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	batches := make([][]*pending, b.N)
	for i := range batches {
		for j := range perBatch {
			p, err := toPending(testRecord(fmt.Sprintf("fl-%d-%d", i, j), fmt.Sprintf("doc-%d-%d", i, j), 1, 1, llm.OutcomeOK), time.Now())
			if err != nil {
				b.Fatal(err)
			}
			batches[i] = append(batches[i], p)
		}
	}
	var sc flushScratch
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := w.flush(batches[i], &sc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteWait writes records one after the other through a group
// writer, each waiting for its commit within auditTimeout's 30 s as the
// worker does: with a context.WithTimeout per record, or WriteWithin.
// The flush is the same in both: the difference is the wait's cost.
func BenchmarkWriteWait(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	w, err := s.NewWriter(ctx, WithMaxDelay(0))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	const timeout = 30 * time.Second
	for _, c := range []struct {
		name  string
		write func(*Record) error
	}{
		{"context", func(rec *Record) error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return w.Write(ctx, rec)
		}},
		{"within", func(rec *Record) error { return w.WriteWithin(rec, timeout) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			recs := make([]*Record, b.N)
			for i := range recs {
				recs[i] = testRecord(fmt.Sprintf("ww-%s-%d-%d", c.name, b.N, i), fmt.Sprintf("doc-%d", i), 1, 1, llm.OutcomeOK)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := c.write(recs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
