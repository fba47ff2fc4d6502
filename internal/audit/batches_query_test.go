package audit

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"
)

// batchRows records, on a fresh database: two open batches of the OpenAI
// pool, one closed one of it, one open batch of the Anthropic pool, and a
// provider batch id two providers share. It returns the row ids by
// provider batch id (the shared one under its provider).
func batchRows(t *testing.T) (*Store, map[string]int64) {
	t.Helper()
	ctx := t.Context()
	s := newTestStore(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ids := map[string]int64{}
	add := func(provider, pool, pbid string, submitted time.Time, closed bool) {
		t.Helper()
		b := Batch{Provider: provider, ProviderBatchID: pbid, Pool: pool, Round: 1, JobIDs: []string{pbid + "-job"}, Requests: 1,
			Status: "in_progress", WorkerID: "w1", SubmittedAt: submitted}
		id, err := s.RecordBatch(ctx, b, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if closed {
			if err := s.FinishBatch(ctx, id, "w1", "completed", "ended", nil, BatchCounts{}, nil); err != nil {
				t.Fatal(err)
			}
		}
		ids[provider+" "+pbid] = id
	}
	add("openai:gpt-4o-mini", "openai:gpt-4o-mini", "batch_old", t0.Add(-time.Hour), true)
	add("openai:gpt-4o-mini", "openai:gpt-4o-mini", "batch_a", t0, false)
	add("openai:gpt-4o-mini", "openai:gpt-4o-mini", "batch_b", t0.Add(time.Minute), false)
	add("anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5", "msgbatch_c", t0.Add(30*time.Second), false)
	add("sim:clean", "sim:clean", "batch_dup", t0.Add(-2*time.Hour), true)
	add("openai:gpt-4o", "openai:gpt-4o", "batch_dup", t0.Add(-3*time.Hour), true)
	return s, ids
}

func providerIDs(bs []Batch) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.ProviderBatchID
	}
	return out
}

func TestBatchesFilter(t *testing.T) {
	t.Parallel()
	s, _ := batchRows(t)
	tests := []struct {
		name string
		f    BatchFilter
		want []string
	}{
		{"open, oldest first", BatchFilter{}, []string{"batch_a", "msgbatch_c", "batch_b"}},
		{"all, newest first", BatchFilter{All: true}, []string{"batch_b", "msgbatch_c", "batch_a", "batch_old", "batch_dup", "batch_dup"}},
		{"pool as recorded", BatchFilter{Pool: "openai:gpt-4o-mini"}, []string{"batch_a", "batch_b"}},
		{"pool as subjects name it", BatchFilter{Pool: "openai_gpt-4o-mini", All: true}, []string{"batch_b", "batch_a", "batch_old"}},
		{"pool subject name of another model", BatchFilter{Pool: "openai_gpt-4o", All: true}, []string{"batch_dup"}},
		{"limit", BatchFilter{Limit: 2}, []string{"batch_a", "msgbatch_c"}},
		{"limit with all", BatchFilter{All: true, Limit: 1}, []string{"batch_b"}},
		{"unknown pool", BatchFilter{Pool: "nosuch"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Batches(t.Context(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if ids := providerIDs(got); !slices.Equal(ids, tt.want) {
				t.Errorf("Batches(%+v) = %v, want %v", tt.f, ids, tt.want)
			}
		})
	}
	if _, err := s.Batches(t.Context(), BatchFilter{Limit: -1}); err == nil {
		t.Error("a negative limit was accepted")
	}
}

func TestBatchByRef(t *testing.T) {
	t.Parallel()
	s, ids := batchRows(t)
	a := ids["openai:gpt-4o-mini batch_a"]
	tests := []struct {
		name, ref string
		wantID    int64
		wantErr   func(error) bool
	}{
		{"row id", strconv.FormatInt(a, 10), a, nil},
		{"provider batch id", "msgbatch_c", ids["anthropic:claude-haiku-4-5 msgbatch_c"], nil},
		{"closed batch", "batch_old", ids["openai:gpt-4o-mini batch_old"], nil},
		{"unknown provider id", "batch_nosuch", 0, func(err error) bool {
			var nf *BatchNotFoundError
			return errors.As(err, &nf) && nf.Ref == "batch_nosuch" && errors.Is(err, ErrBatchNotFound)
		}},
		{"unknown row id", "999999", 0, func(err error) bool { return errors.Is(err, ErrBatchNotFound) }},
		{"empty", " ", 0, func(err error) bool { return errors.Is(err, ErrBatchNotFound) }},
		{"shared provider id", "batch_dup", 0, func(err error) bool {
			var amb *AmbiguousBatchError
			return errors.As(err, &amb) && slices.Equal(amb.IDs, []int64{ids["sim:clean batch_dup"], ids["openai:gpt-4o batch_dup"]})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := s.BatchByRef(t.Context(), tt.ref)
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr(err) {
					t.Fatalf("BatchByRef(%q) = %+v, %v; want the error", tt.ref, b, err)
				}
				return
			}
			if err != nil || b.ID != tt.wantID {
				t.Fatalf("BatchByRef(%q) = row %d, %v; want row %d", tt.ref, b.ID, err, tt.wantID)
			}
		})
	}
	// A closed batch comes back with its closing time; an open one without.
	if b, _ := s.BatchByRef(t.Context(), "batch_old"); b.ClosedAt.IsZero() || b.Status != "completed" {
		t.Errorf("closed batch: %+v", b)
	}
	if b, _ := s.BatchByRef(t.Context(), "batch_a"); !b.ClosedAt.IsZero() || len(b.JobIDs) != 1 {
		t.Errorf("open batch: %+v", b)
	}
}
