package audit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/internal/retry"
)

// TEMPORARY decomposition experiment (deleted before report).
func TestScratchDecompose(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	const records = 20000
	ctx := context.Background()
	s := newTestStore(t)
	mk := func(iter int) []*pending {
		ps := make([]*pending, records)
		for i := range ps {
			p, err := toPending(testRecord(fmt.Sprintf("b%d-%d", iter, i), fmt.Sprintf("doc-%d", i), 1, 3, retry.OutcomeOK), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			ps[i] = p
		}
		return ps
	}
	truncate := func() {
		if _, err := s.pool.Exec(ctx, "TRUNCATE attempts, jobs, results"); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_ = mk(99)
	t.Logf("toPending x%d single goroutine: %v", records, time.Since(start))
	run := func(name string, per int, streams int, tables []table) {
		var tot time.Duration
		for iter := range 3 {
			ps := mk(iter)
			truncate()
			start := time.Now()
			ch := make(chan []*pending)
			var wg sync.WaitGroup
			for range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for b := range ch {
						var att, jobs, res [][]any
						for _, p := range b {
							att = append(att, p.attempts...)
							jobs = append(jobs, p.job)
							res = append(res, p.result)
						}
						tx, err := s.pool.Begin(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						for _, tb := range tables {
							rows := map[string][][]any{"attempts": att, "jobs": jobs, "results": res}[tb.name]
							if _, err := tx.CopyFrom(ctx, pgx.Identifier{tb.name}, tb.columns, pgx.CopyFromRows(rows)); err != nil {
								t.Error(err)
							}
						}
						if err := tx.Commit(ctx); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			for i := 0; i < records; i += per {
				ch <- ps[i:min(i+per, records)]
			}
			close(ch)
			wg.Wait()
			tot += time.Since(start)
		}
		t.Logf("%-40s per=%-5d streams=%d: %8.0f attempt rows/s", name, per, streams, float64(3*3*records)/tot.Seconds())
	}
	per := []int{1334, 16, 32, 64, 128}
	if v := os.Getenv("PER"); v != "" {
		n, _ := strconv.Atoi(v)
		per = []int{n}
	}
	st := 2
	if v := os.Getenv("ST"); v != "" {
		st, _ = strconv.Atoi(v)
	}
	for _, n := range per {
		run("attempts only", n, st, []table{attemptsTable})
		run("attempts+jobs", n, st, []table{attemptsTable, jobsTable})
		run("attempts+jobs+results", n, st, []table{attemptsTable, jobsTable, resultsTable})
	}
}
