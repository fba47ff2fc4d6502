package audit

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// clockStore is s with a clock the test steps.
type clockStore struct {
	*Store
	mu sync.Mutex
	t  time.Time
}

func newClockStore(s *Store) *clockStore {
	c := &clockStore{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c.Store = &Store{pool: s.pool, now: c.now}
	return c
}

func (c *clockStore) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clockStore) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func testBatch(id string) Batch {
	return Batch{
		Provider: "openai:gpt-4o-mini", ProviderBatchID: id, Pool: "openai:gpt-4o-mini", Round: 1,
		JobIDs: []string{"job-a", "job-b"}, Requests: 2, Status: "validating", WorkerID: "w1",
	}
}

func TestBatchLeaseResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newClockStore(newTestStore(t))
	const lease = time.Minute
	id, err := s.RecordBatch(ctx, testBatch("batch_1"), lease)
	if err != nil {
		t.Fatal(err)
	}
	// Held by w1: nobody else can claim it.
	if got, err := s.ClaimBatches(ctx, "openai:gpt-4o-mini", "w2", lease, 10); err != nil || len(got) != 0 {
		t.Fatalf("claim of a held batch = %v, %v; want none", got, err)
	}
	// w1 polls and renews.
	s.advance(50 * time.Second)
	if err := s.UpdateBatch(ctx, id, "w1", "in_progress", BatchCounts{Succeeded: 1}, lease); err != nil {
		t.Fatal(err)
	}
	s.advance(50 * time.Second) // 100s after submit, but renewed at 50s
	if got, _ := s.ClaimBatches(ctx, "openai:gpt-4o-mini", "w2", lease, 10); len(got) != 0 {
		t.Fatalf("a renewed lease was claimed: %+v", got)
	}
	// w1 dies: after its lease runs out, w2 takes the batch over.
	s.advance(11 * time.Second)
	got, err := s.ClaimBatches(ctx, "openai:gpt-4o-mini", "w2", lease, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("claimed %d batches; want the one whose lease ran out", len(got))
	}
	b := got[0]
	if b.ID != id || b.WorkerID != "w2" || b.ProviderBatchID != "batch_1" || b.Status != "in_progress" ||
		b.Counts.Succeeded != 1 || !slices.Equal(b.JobIDs, []string{"job-a", "job-b"}) || b.Round != 1 {
		t.Fatalf("claimed %+v", b)
	}
	if want := s.now().Add(lease); !b.LeaseUntil.Equal(want) {
		t.Fatalf("lease until %v, want %v", b.LeaseUntil, want)
	}
	// w1 comes back: its updates are refused, so it stops.
	if err := s.UpdateBatch(ctx, id, "w1", "completed", BatchCounts{}, lease); !errors.Is(err, ErrBatchLeaseLost) {
		t.Fatalf("update by the former holder: %v; want ErrBatchLeaseLost", err)
	}
	lines := []BatchLine{{CustomID: "job-a-r1", JobID: "job-a", Round: 1, Line: []byte(`{"custom_id":"job-a-r1"}`)}}
	if err := s.FinishBatch(ctx, id, "w1", "completed", "ended", nil, BatchCounts{Succeeded: 1}, lines); !errors.Is(err, ErrBatchLeaseLost) {
		t.Fatalf("finish by the former holder: %v; want ErrBatchLeaseLost", err)
	}
	// Until the batch is finished its jobs find it running, without lines.
	if a, err := s.BatchAnswer(ctx, "openai:gpt-4o-mini", "job-a", 1); err != nil || a.Batch.ID != id || a.Line != nil || !a.Batch.ClosedAt.IsZero() {
		t.Fatalf("answer of a running batch = %+v, %v", a, err)
	}
	if err := s.FinishBatch(ctx, id, "w2", "completed", "ended", nil, BatchCounts{Succeeded: 1}, lines); err != nil {
		t.Fatal(err)
	}
	a, err := s.BatchAnswer(ctx, "openai:gpt-4o-mini", "job-a", 1)
	if err != nil || a.Batch.State != "ended" || a.Batch.ClosedAt.IsZero() || string(a.Line) != `{"custom_id":"job-a-r1"}` {
		t.Fatalf("answer of job-a = %+v, %v; want the stored line", a, err)
	}
	if row, got, err := s.ClosedBatch(ctx, id); err != nil || row.ID != id || row.State != "ended" || len(got) != 1 || got[0].JobID != "job-a" || string(got[0].Line) != `{"custom_id":"job-a-r1"}` {
		t.Fatalf("closed batch = %+v, %+v, %v; want the row and its one line", row, got, err)
	}
	// job-b is in the batch but the provider reported nothing for it.
	if a, err := s.BatchAnswer(ctx, "openai:gpt-4o-mini", "job-b", 1); err != nil || a.Line != nil || a.Batch.ID != id {
		t.Fatalf("answer of job-b = %+v, %v; want the closed batch without a line", a, err)
	}
	if _, err := s.BatchAnswer(ctx, "openai:gpt-4o-mini", "job-a", 2); !errors.Is(err, ErrNoBatch) {
		t.Fatalf("round 2 of job-a: %v; want ErrNoBatch", err)
	}
	if closed, err := s.BatchClosed(ctx, []int64{id, id + 1000}); err != nil || !closed[id] || closed[id+1000] {
		t.Fatalf("closed = %v, %v", closed, err)
	}
	// Closed batches are history: never claimed, not listed as open.
	s.advance(time.Hour)
	if got, _ := s.ClaimBatches(ctx, "openai:gpt-4o-mini", "w3", lease, 10); len(got) != 0 {
		t.Fatalf("a closed batch was claimed: %+v", got)
	}
	if open, err := s.OpenBatches(ctx, ""); err != nil || len(open) != 0 {
		t.Fatalf("open batches = %+v, %v; want none", open, err)
	}
}

func TestClaimBatchesConcurrentClaimersSplit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newClockStore(newTestStore(t))
	const n = 20
	for i := range n {
		b := testBatch("batch_" + string(rune('a'+i)))
		if i%2 == 1 {
			b.Pool = "anthropic:claude-haiku-4-5"
		}
		if _, err := s.RecordBatch(ctx, b, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	s.advance(2 * time.Second)
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			worker := "w" + string(rune('0'+w))
			for {
				got, err := s.ClaimBatches(ctx, "openai:gpt-4o-mini", worker, time.Minute, 2)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, b := range got {
					if prev, dup := seen[b.ID]; dup {
						t.Errorf("batch %d claimed by %s and %s", b.ID, prev, worker)
					}
					if b.Pool != "openai:gpt-4o-mini" {
						t.Errorf("claimed a batch of pool %s", b.Pool)
					}
					seen[b.ID] = worker
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n/2 {
		t.Fatalf("claimed %d batches; want the pool's %d", len(seen), n/2)
	}
}

func TestRecordBatchRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	if _, err := s.RecordBatch(ctx, testBatch("batch_dup"), time.Minute); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Batch){
		"duplicate": func(*Batch) {},
		"no pool":   func(b *Batch) { b.Pool = "" },
		"round 0":   func(b *Batch) { b.Round = 0; b.ProviderBatchID = "batch_r0" },
		"no worker": func(b *Batch) { b.WorkerID = ""; b.ProviderBatchID = "batch_nw" },
	}
	for name, mod := range cases {
		b := testBatch("batch_dup")
		mod(&b)
		if _, err := s.RecordBatch(ctx, b, time.Minute); err == nil {
			t.Errorf("%s: recorded; want an error", name)
		}
	}
}

func TestWorkerGrantsCoverBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	owner := newTestStore(t)
	s := newClockStore(roleStore(t, owner, WorkerGrants))
	id, err := s.RecordBatch(ctx, testBatch("batch_role"), time.Second)
	if err != nil {
		t.Fatalf("worker role cannot record a batch: %v", err)
	}
	if err := s.UpdateBatch(ctx, id, "w1", "in_progress", BatchCounts{}, time.Second); err != nil {
		t.Fatalf("worker role cannot update a batch: %v", err)
	}
	s.advance(2 * time.Second)
	if got, err := s.ClaimBatches(ctx, "openai:gpt-4o-mini", "w2", time.Minute, 1); err != nil || len(got) != 1 {
		t.Fatalf("worker role claim = %v, %v", got, err)
	}
	failure := &BatchFailure{Class: "rate_limited", Type: "token_limit_exceeded", Message: "too many enqueued tokens"}
	if err := s.FinishBatch(ctx, id, "w2", "failed", "failed", failure, BatchCounts{}, []BatchLine{{CustomID: "j-r1", JobID: "j", Round: 1, Line: []byte("{}")}}); err != nil {
		t.Fatalf("worker role cannot finish a batch: %v", err)
	}
	// The job list is not the worker's to rewrite.
	if _, err := s.pool.Exec(ctx, "UPDATE batches SET job_ids = '{}' WHERE id = $1", id); err == nil {
		t.Fatal("worker role rewrote a batch's job ids")
	}
}
