package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// TestWriterSurvivesPostgresRestart stops and starts the local PostgreSQL
// cluster while 8 workers write; each worker retries a failed Write with
// the same record, as a redelivered job would. Afterwards every record is
// stored exactly once. It disturbs every user of the server, so it runs
// only when EXTRACTQ_TEST_PG_RESTART=1 (.ci/run sets it).
func TestWriterSurvivesPostgresRestart(t *testing.T) {
	if os.Getenv("EXTRACTQ_TEST_PG_RESTART") != "1" {
		t.Skip("set EXTRACTQ_TEST_PG_RESTART=1 to stop and start the PostgreSQL 15 cluster during this test")
	}
	pgctl := func(action string) {
		out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", "15", "main", action).CombinedOutput()
		if err != nil {
			t.Fatalf("pg_ctlcluster 15 main %s: %v\n%s", action, err, out)
		}
	}
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s, WithFlushTimeout(5*time.Second))
	const workers, perWorker = 8, 150
	var written, failures atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				rec := testRecord(fmt.Sprintf("r-%d-%d", g, i), fmt.Sprintf("doc-%d-%d", g, i), 1, 2, llm.OutcomeOK)
				for try := 0; ; try++ {
					wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
					err := w.Write(wctx, rec)
					cancel()
					if err == nil {
						break
					}
					failures.Add(1)
					if try == 100 {
						t.Errorf("record %s never written: %v", rec.JobID, err)
						return
					}
					time.Sleep(200 * time.Millisecond) // nak with delay, then redelivery
				}
				written.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	for written.Load() < workers*perWorker/4 {
		time.Sleep(10 * time.Millisecond)
	}
	pgctl("stop")
	time.Sleep(2 * time.Second)
	pgctl("start")
	wg.Wait()
	st := w.Stats()
	t.Logf("restart: %d failed writes retried, writer stats %+v", failures.Load(), st)
	if failures.Load() == 0 || st.FlushErrors == 0 {
		t.Error("no write failed: the restart happened outside the writes and proves nothing")
	}
	want := counts{jobs: workers * perWorker, attempts: workers * perWorker * 2, results: workers * perWorker}
	if got := countRows(t, s); got != want {
		t.Errorf("rows after restart = %+v, want exactly %+v", got, want)
	}
}
