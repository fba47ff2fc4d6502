package fleetview

import (
	"context"
	"sort"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
)

// Batch is one provider batch of a batch pool (audit table batches) as
// `extractq status` and `extractq batch list` show it.
type Batch struct {
	ID int64 `json:"id"`
	// Pool is the pool as the fleet's subjects name it (Pool.Name, e.g.
	// "openai_gpt-4o-mini"), whatever form the batch recorded.
	Pool            string `json:"pool"`
	Provider        string `json:"provider"`
	ProviderBatchID string `json:"provider_batch_id"`
	Round           int    `json:"round"`
	Requests        int    `json:"requests"`
	// Status is the provider's status word as last polled ("in_progress",
	// "finalizing", "ended", …); the counts are of that poll.
	Status    string `json:"status"`
	Succeeded int    `json:"succeeded"`
	Errored   int    `json:"errored"`
	Expired   int    `json:"expired"`
	Canceled  int    `json:"canceled"`
	// Worker polls the batch until LeaseUntil; after that the next worker
	// of the pool that asks takes it over.
	Worker      string    `json:"worker"`
	LeaseUntil  time.Time `json:"lease_until"`
	SubmittedAt time.Time `json:"submitted_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	ClosedAt    time.Time `json:"closed_at,omitzero"`
}

// NewBatch is the view of an audit batch.
func NewBatch(b audit.Batch) Batch {
	return Batch{
		ID: b.ID, Pool: jobs.PoolFor(b.Pool), Provider: b.Provider, ProviderBatchID: b.ProviderBatchID, Round: b.Round,
		Requests: b.Requests, Status: b.Status, Succeeded: b.Counts.Succeeded, Errored: b.Counts.Errored,
		Expired: b.Counts.Expired, Canceled: b.Counts.Canceled, Worker: b.WorkerID, LeaseUntil: b.LeaseUntil,
		SubmittedAt: b.SubmittedAt, UpdatedAt: b.UpdatedAt, ClosedAt: b.ClosedAt,
	}
}

// Open reports whether the batch is still in flight (not closed).
func (b Batch) Open() bool { return b.ClosedAt.IsZero() }

// Age is how long ago the batch was submitted, at now.
func (b Batch) Age(now time.Time) time.Duration { return max(0, now.Sub(b.SubmittedAt)) }

// LeaseLeft is how long its worker still holds an open batch at now;
// zero or less means the lease ran out and any worker of the pool may
// take the batch over.
func (b Batch) LeaseLeft(now time.Time) time.Duration { return b.LeaseUntil.Sub(now) }

// InFlight returns the open batches of every pool, by pool, oldest first
// within a pool: none for a fleet without batch pools.
func InFlight(ctx context.Context, s *audit.Store) ([]Batch, error) {
	open, err := s.Batches(ctx, audit.BatchFilter{})
	if err != nil {
		return nil, err
	}
	out := make([]Batch, len(open))
	for i, b := range open {
		out[i] = NewBatch(b)
	}
	// Batches come oldest first; a stable sort by pool keeps that order
	// within each pool.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out, nil
}
