package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

func TestStatusAndHistory(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	outcomes := []llm.Outcome{llm.OutcomeOK, llm.OutcomeOK, llm.OutcomeOK, llm.OutcomeExhausted}
	for i := range 40 {
		rec := testRecord(fmt.Sprint("j", i), fmt.Sprint("d", i), 1, 3, outcomes[i%4])
		if i >= 20 {
			rec.Run, rec.SchemaVersion = "run2", 2
		}
		if rec.Outcome != llm.OutcomeOK {
			rec.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: uint64(i + 1), Reason: rec.Reason}
		}
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	groups, err := s.Status(ctx, StatusFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2 (run1 v1, run2 v2): %+v", len(groups), groups)
	}
	for i, g := range groups {
		wantRun, wantVersion := []string{"run1", "run2"}[i], i+1
		if g.Run != wantRun || g.SchemaVersion != wantVersion || g.Jobs != 20 || g.ByStatus["ok"] != 15 ||
			g.ByStatus["exhausted"] != 5 || g.DeadLetters != 5 || g.Attempts != 60 ||
			g.PromptTokens != 60*300 || g.CompletionTokens != 60*40 {
			t.Errorf("group %d: %+v", i, g)
		}
		// Latencies are 110, 120 and 130 ms, equally often.
		if g.LatencyP50 != 120*time.Millisecond || g.LatencyP99 < 129*time.Millisecond || g.LatencyP99 > 130*time.Millisecond {
			t.Errorf("group %d latency p50 %v p95 %v p99 %v", i, g.LatencyP50, g.LatencyP95, g.LatencyP99)
		}
		if len(g.Models) != 1 || g.Models[0].Model != "sim-1" || g.Models[0].PromptTokens != g.PromptTokens {
			t.Errorf("group %d models %+v", i, g.Models)
		}
	}
	if only, err := s.Status(ctx, StatusFilter{Run: "run2"}); err != nil || len(only) != 1 || only[0].Run != "run2" {
		t.Errorf("run filter: %+v, %v", only, err)
	}
	if later, err := s.Status(ctx, StatusFilter{Since: time.Now().Add(time.Hour)}); err != nil || later[0].Attempts != 0 || later[0].Jobs != 20 {
		t.Errorf("since filter: %+v, %v", later, err)
	}

	h, err := s.History(ctx, "d3")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Jobs) != 1 || h.Jobs[0].Status != "exhausted" || len(h.Attempts) != 3 || len(h.Results) != 0 || len(h.DeadLetters) != 1 {
		t.Fatalf("history of d3: %+v", h)
	}
	a := h.Attempts[0]
	if a.Raw == "" || !strings.Contains(string(a.Violations), `"/total"`) || !strings.Contains(string(a.Repairs), "trailing_comma") ||
		a.ErrorClass != "schema" || a.Latency != 110*time.Millisecond || a.Mode != "json" {
		t.Errorf("attempt %+v", a)
	}
	if h, err := s.History(ctx, "d0"); err != nil || len(h.Results) != 1 || h.Results[0].SchemaFingerprint != "fp1" {
		t.Errorf("history of d0: %+v, %v", h, err)
	}
	if h, err := s.History(ctx, "nobody"); err != nil || !h.Empty() {
		t.Errorf("history of an unknown document: %+v, %v", h, err)
	}
	dl, err := s.DeadLetters(ctx, DeadLetterFilter{Run: "run2", Pending: true})
	if err != nil || len(dl) != 5 || dl[0].Stream != "EXTRACTQ_DLQ" {
		t.Errorf("dead letters: %+v, %v", dl, err)
	}
	var reasons int
	if err := s.pool.QueryRow(ctx, "SELECT count FROM failure_reasons WHERE source = 'attempt' AND class = 'schema'").Scan(&reasons); err != nil || reasons != 40*3-30 {
		t.Errorf("failure_reasons schema count %d, %v; want %d", reasons, err, 40*3-30)
	}
	var latest int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM latest_valid_results").Scan(&latest); err != nil || latest != 30 {
		t.Errorf("latest_valid_results: %d, %v; want 30", latest, err)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	at := func(job string, ts time.Time) *Record {
		r := testRecord(job, "doc-"+job, 1, 2, llm.OutcomeOK)
		r.StartedAt = ts
		for i := range r.Attempts {
			r.Attempts[i].StartedAt = ts.Add(time.Duration(i) * time.Second)
		}
		return r
	}
	old2019 := time.Date(2019, 6, 1, 0, 0, 0, 0, time.UTC)
	old2020 := time.Date(2020, 1, 15, 0, 0, 0, 0, time.UTC)
	for _, r := range []*Record{at("a", old2019), at("b", old2020), at("c", time.Now())} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// A partition created later takes its rows out of the default partition.
	if _, err := s.pool.Exec(ctx, "SELECT extractq_ensure_attempt_partitions('2020-01-01', 1)"); err != nil {
		t.Fatal(err)
	}
	var inPart, inDefault int
	if err := s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM attempts_y2020m01), (SELECT count(*) FROM attempts_default)").Scan(&inPart, &inDefault); err != nil {
		t.Fatal(err)
	}
	if inPart != 2 || inDefault != 2 {
		t.Fatalf("2020-01 partition %d rows, default %d: want 2 and 2", inPart, inDefault)
	}
	// Two closed batches with a stored line each; one closed in 2020.
	var oldBatch int64
	for i, name := range []string{"batch_old", "batch_new"} {
		id, err := s.RecordBatch(ctx, testBatch(name), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		line := []BatchLine{{CustomID: "job-a-r1", JobID: "job-a", Round: 1, Line: []byte("{}")}}
		if err := s.FinishBatch(ctx, id, "w1", "completed", "ended", nil, BatchCounts{}, line); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			oldBatch = id
			if _, err := s.pool.Exec(ctx, "UPDATE batches SET closed_at = $2 WHERE id = $1", id, old2020); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two old dead letters of run "dead": one resubmitted since, one still
	// on the DLQ.
	for i, doc := range []string{"dead-resubmitted", "dead-pending"} {
		r := testRecord(doc, "doc-"+doc, 1, 1, llm.OutcomeExhausted)
		r.Run = "dead"
		r.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: uint64(10 + i), Reason: "still invalid"}
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, "UPDATE dead_letters SET created_at = $1", old2020); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkResubmitted(ctx, "invoice", 1, []string{"doc-dead-resubmitted"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prune(ctx, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.PartitionsDropped) != 1 || res.PartitionsDropped[0] != "attempts_y2020m01" || res.AttemptsDeleted != 2 || res.BatchesDeleted != 1 || res.DeadLetters != 1 {
		t.Errorf("prune: %+v", res)
	}
	var batches, lines, oldLines int
	if err := s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM batches), (SELECT count(*) FROM batch_lines), (SELECT count(*) FROM batch_lines WHERE batch_id = $1)", oldBatch).
		Scan(&batches, &lines, &oldLines); err != nil || batches != 1 || lines != 1 || oldLines != 0 {
		t.Errorf("after prune: %d batches, %d lines (%d of the old batch), %v; want the recent batch and its line", batches, lines, oldLines, err)
	}
	if got := countRows(t, s); got.attempts != 4 || got.results != 3 {
		t.Errorf("after prune %+v: want the 4 recent attempts (2 of the dead letters) and every result", got)
	}
	// status --run counts the letter still on the DLQ, as dlq list shows it.
	pending, err := s.DeadLetters(ctx, DeadLetterFilter{Run: "dead", Pending: true})
	if err != nil || len(pending) != 1 || pending[0].DocumentID != "doc-dead-pending" {
		t.Errorf("pending dead letters after prune: %+v, %v; want doc-dead-pending", pending, err)
	}
	groups, err := s.Status(ctx, StatusFilter{Run: "dead"})
	if err != nil {
		t.Fatal(err)
	}
	var dlq int64
	for _, g := range groups {
		dlq += g.DeadLetters
	}
	if dlq != 1 {
		t.Errorf("status of run dead after prune counts %d dead letters, want 1", dlq)
	}
}
