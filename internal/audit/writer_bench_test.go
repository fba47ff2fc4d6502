package audit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/internal/redact"
)

// BenchmarkWriterVsRawCopy measures attempt rows per second written through
// the group-commit writer (64 concurrent workers, records of 3 attempts plus
// their job and result rows, redaction and JSON encoding included) next to
// raw CopyFrom of the same attempt rows, pre-converted, into the same table
// with the same number of connections, in the same run.
//
//	go test -run '^$' -bench WriterVsRawCopy -benchtime 3x ./internal/audit/
//
// BW sets the number of concurrent writers (default 64), BF the writer's
// flushers (default 2), BRAW the raw COPY streams (default: as many as
// flushers), BSOURCES the sources of each result (default 0: none, as a
// plain text sent whole has; a one-page invoice read from a PDF has about
// a dozen):
//
//	BSOURCES=12 go test -run '^$' -bench WriterVsRawCopy -benchtime 2x ./internal/audit/
func BenchmarkWriterVsRawCopy(b *testing.B) {
	const records, attempts, batchRows = 20000, 3, 4000
	flushers, streams := 2, 0
	if v := os.Getenv("BF"); v != "" {
		flushers, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("BRAW"); v != "" {
		streams, _ = strconv.Atoi(v)
	}
	if streams == 0 {
		streams = flushers
	}
	workers := 64
	if v := os.Getenv("BW"); v != "" {
		workers, _ = strconv.Atoi(v)
	}
	nSources, _ := strconv.Atoi(os.Getenv("BSOURCES"))
	ctx := context.Background()
	s := newTestStore(b)
	var copyTotal, writerTotal time.Duration
	for iter := 0; b.Loop(); iter++ {
		recs := make([]*Record, records)
		var raw [][]any
		for i := range recs {
			recs[i] = testRecord(fmt.Sprintf("b%d-%d", iter, i), fmt.Sprintf("doc-%d", i), 1, attempts, llm.OutcomeOK)
			recs[i].Sources = testSources(nSources)
			raw = append(raw, rawAttemptRows(recs[i])...)
		}
		truncate := func() {
			if _, err := s.pool.Exec(ctx, "TRUNCATE attempts, jobs, results"); err != nil {
				b.Fatal(err)
			}
		}
		truncate()

		// Raw COPY: batches of batchRows over `streams` connections.
		start := time.Now()
		chunks := make(chan [][]any)
		var wg sync.WaitGroup
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range chunks {
					// The columns raw COPY fills; the later ones (cache tokens,
					// locators, batch, adjustments) take their defaults.
					cols := attemptsTable.columns[:len(c[0])]
					if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"attempts"}, cols, pgx.CopyFromRows(c)); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := 0; i < len(raw); i += batchRows {
			chunks <- raw[i:min(i+batchRows, len(raw))]
		}
		close(chunks)
		wg.Wait()
		copyTotal += time.Since(start)
		truncate()

		// The writer, fed by concurrent workers.
		w, err := s.NewWriter(ctx, WithFlushers(flushers), WithMaxBatchRows(batchRows))
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		writeAll(ctx, b, w, recs, workers)
		writerTotal += time.Since(start)
		st := w.Stats()
		if err := w.Close(ctx); err != nil {
			b.Fatal(err)
		}
		if st.AttemptRows != records*attempts {
			b.Fatalf("writer wrote %d attempt rows, want %d", st.AttemptRows, records*attempts)
		}
		b.Logf("iteration %d: writer %d batches, mean flush %v, max flush %v", iter, st.Batches, st.FlushTime/time.Duration(st.Batches), st.MaxFlush)
	}
	rows := float64(records * attempts * b.N)
	copyRate, writerRate := rows/copyTotal.Seconds(), rows/writerTotal.Seconds()
	b.ReportMetric(copyRate, "copy_rows/s")
	b.ReportMetric(writerRate, "writer_rows/s")
	b.ReportMetric(writerRate/copyRate, "writer/copy")
	// The writer also writes a job and a result row per record.
	b.ReportMetric(float64((attempts+2)*records*b.N)/writerTotal.Seconds(), "writer_all_rows/s")
}

// rawAttemptRows converts rec's attempts to rows for pgx's CopyFrom, as
// the writer stores them (redacted, JSON encoded): raw COPY's input.
func rawAttemptRows(rec *Record) [][]any {
	var rows [][]any
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		rows = append(rows, []any{
			rec.JobID, int32(rec.Delivery), int32(i + 1), a.StartedAt, int32(a.N), rec.DocumentID, rec.Run, rec.SchemaName,
			int32(rec.SchemaVersion), a.Provider, a.Model, string(a.Mode), int32(a.PromptChars), int32(a.Usage.PromptTokens),
			int32(a.Usage.CompletionTokens), float64(a.Latency) / float64(time.Millisecond), string(a.FinishReason),
			redact.Credentials(a.Raw), nilIfEmpty(jsonOrEmpty(a.Value, nil)), nilIfEmpty(marshalOrEmpty(a.Repairs, len(a.Repairs))),
			nilIfEmpty(marshalOrEmpty(a.Violations, len(a.Violations))), string(a.Class), redact.Credentials(a.Error),
			int32(a.TransportRetries), rec.WorkerID,
		})
	}
	return rows
}

func nilIfEmpty(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// testSources are n sources as a one-page PDF invoice's result has them:
// a page, ranges, a box and a snippet each.
func testSources(n int) map[string]llm.Source {
	if n == 0 {
		return nil
	}
	out := make(map[string]llm.Source, n)
	for i := range n {
		start := 40 * i
		out[fmt.Sprintf("/items/%d/description", i)] = llm.Source{Start: 900 + start, End: 918 + start, Match: "exact",
			Page: 1, PageStart: start, PageEnd: start + 18, Box: &llm.Box{X0: 72, Y0: float64(200 + 14*i), X1: 540, Y1: float64(212 + 14*i)},
			Snippet: fmt.Sprintf("%d  Consulting hours, March  12.00  85.00  1,020.00", i+1)}
	}
	return out
}
