package fleetview

import (
	"slices"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
)

// TestInFlight: open batches only, grouped by pool under the name the
// fleet's subjects use, oldest first within a pool; none on a fleet that
// never ran a batch.
func TestInFlight(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, _ := audittest.Store(t)
	if got, err := InFlight(ctx, st); err != nil || len(got) != 0 {
		t.Fatalf("InFlight on an online-only fleet = %v, %v; want none", got, err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second) // Postgres keeps microseconds
	record := func(pool, id string, at time.Time) int64 {
		t.Helper()
		n, err := st.RecordBatch(ctx, audit.Batch{Provider: pool, ProviderBatchID: id, Pool: pool, Round: 2, JobIDs: []string{"j"},
			Requests: 7, Status: "in_progress", Counts: audit.BatchCounts{Succeeded: 3, Canceled: 1}, WorkerID: "w1", SubmittedAt: at}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	record("sim:clean", "batch_s2", t0.Add(2*time.Minute))
	record("openai:gpt-4o-mini", "batch_o1", t0.Add(time.Minute))
	record("sim:clean", "batch_s1", t0)
	closed := record("openai:gpt-4o-mini", "batch_done", t0)
	if err := st.FinishBatch(ctx, closed, "w1", "completed", "ended", nil, audit.BatchCounts{}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := InFlight(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var ids, pools []string
	for _, b := range got {
		ids, pools = append(ids, b.ProviderBatchID), append(pools, b.Pool)
	}
	if !slices.Equal(ids, []string{"batch_o1", "batch_s1", "batch_s2"}) || !slices.Equal(pools, []string{"openai_gpt-4o-mini", "sim_clean", "sim_clean"}) {
		t.Fatalf("InFlight = %v in pools %v", ids, pools)
	}
	b := got[0]
	if b.Round != 2 || b.Requests != 7 || b.Succeeded != 3 || b.Canceled != 1 || b.Worker != "w1" || !b.Open() ||
		b.Age(t0.Add(time.Hour)) != 59*time.Minute || b.LeaseLeft(time.Now()) <= 0 {
		t.Errorf("batch view %+v", b)
	}
}
