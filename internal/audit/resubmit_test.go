package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// resubmitFixture stores, for schema "invoice" v1 and v2:
//
//	d1 result v1                       → outdated
//	d2 results v1 and v2               → up to date
//	d3 exhausted v1, dead-lettered     → dead_letter (includeFailed)
//	d4 fatal v2, no result             → failed (includeFailed)
//	d5 result v2                       → up to date
//	d6 result v1, job in flight at v2  → already queued
//	d7 result v1, text never stored    → outdated, not Stored
//	d8 exhausted v1, then result v1    → outdated
func resubmitFixture(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s := newTestStore(t)
	for _, fp := range []string{"fp1", "fp2"} {
		if _, _, err := s.RegisterSchema(ctx, "invoice", []byte(`{"type":"object"}`), fp); err != nil {
			t.Fatal(err)
		}
	}
	var docs []Document
	for i := 1; i <= 8; i++ {
		if i != 7 {
			docs = append(docs, Document{ID: fmt.Sprint("d", i), Text: fmt.Sprint("text of d", i)})
		}
	}
	if err := s.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, s)
	rec := func(job, doc string, version int, outcome llm.Outcome) *Record {
		r := testRecord(job, doc, 1, 1, outcome)
		r.SchemaVersion, r.SchemaFingerprint = version, fmt.Sprint("fp", version)
		r.DocumentHash = HashText("text of " + doc) // the text stored above
		return r
	}
	dead := rec("j3", "d3", 1, llm.OutcomeExhausted)
	dead.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: 7, Reason: "exhausted"}
	inflight := rec("j6b", "d6", 2, llm.OutcomeTransport)
	inflight.Final = false
	for _, r := range []*Record{
		rec("j1", "d1", 1, llm.OutcomeOK),
		rec("j2a", "d2", 1, llm.OutcomeOK), rec("j2b", "d2", 2, llm.OutcomeOK),
		dead,
		rec("j4", "d4", 2, llm.OutcomeFatal),
		rec("j5", "d5", 2, llm.OutcomeOK),
		rec("j6a", "d6", 1, llm.OutcomeOK), inflight,
		rec("j7", "d7", 1, llm.OutcomeOK),
		rec("j8a", "d8", 1, llm.OutcomeExhausted), rec("j8b", "d8", 1, llm.OutcomeOK),
	} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestDocumentsForResubmit(t *testing.T) {
	ctx := context.Background()
	s := resubmitFixture(t)
	tests := []struct {
		includeFailed bool
		want          []string // id:reason
	}{
		{false, []string{"d1:outdated", "d7:outdated", "d8:outdated"}},
		{true, []string{"d1:outdated", "d3:dead_letter", "d4:failed", "d7:outdated", "d8:outdated"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("includeFailed=", tt.includeFailed), func(t *testing.T) {
			got := selectIDs(t, s, tt.includeFailed)
			if !slices.Equal(got, tt.want) {
				t.Errorf("selected %v, want %v", got, tt.want)
			}
			n, err := s.CountForResubmit(ctx, "invoice", 2, tt.includeFailed)
			if err != nil || n != int64(len(tt.want)) {
				t.Errorf("count = %d, %v; want %d", n, err, len(tt.want))
			}
		})
	}
	cands, err := s.DocumentsForResubmit(ctx, "invoice", 2, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if wantStored := c.ID != "d7"; c.Stored != wantStored || (c.Stored && c.Text != "text of "+c.ID) || c.FromVersion != 1 {
			t.Errorf("candidate %+v", c)
		}
	}
}

func selectIDs(t *testing.T, s *Store, includeFailed bool, opts ...ResubmitOption) []string {
	t.Helper()
	cands, err := s.DocumentsForResubmit(context.Background(), "invoice", 2, includeFailed, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cands {
		ids = append(ids, c.ID+":"+c.Reason)
	}
	return ids
}

func TestResubmitTwiceSelectsNothingTwice(t *testing.T) {
	ctx := context.Background()
	s := resubmitFixture(t)
	// Page through with limit 2, marking each page as the fleet does after
	// publishing it.
	var all []string
	for page := 0; ; page++ {
		cands, err := s.DocumentsForResubmit(ctx, "invoice", 2, true, WithResubmitLimit(2))
		if err != nil {
			t.Fatal(err)
		}
		if len(cands) == 0 {
			break
		}
		if page > 5 {
			t.Fatal("paging does not end")
		}
		var ids []string
		for _, c := range cands {
			ids = append(ids, c.ID)
		}
		if err := s.MarkResubmitted(ctx, "invoice", 2, ids); err != nil {
			t.Fatal(err)
		}
		all = append(all, ids...)
	}
	if want := []string{"d1", "d3", "d4", "d7", "d8"}; !slices.Equal(all, want) {
		t.Errorf("resubmitted %v, want %v", all, want)
	}
	if got := selectIDs(t, s, true); len(got) != 0 {
		t.Errorf("second resubmission selects %v, want nothing", got)
	}
	var at *time.Time
	if err := s.pool.QueryRow(ctx, "SELECT resubmitted_at FROM dead_letters WHERE document_id = 'd3'").Scan(&at); err != nil || at == nil {
		t.Errorf("dead letter of d3 not marked resubmitted: %v %v", at, err)
	}
	// A later version is a new target: everything not at v3 qualifies again.
	if _, _, err := s.RegisterSchema(ctx, "invoice", []byte(`{}`), "fp3"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountForResubmit(ctx, "invoice", 3, false); err != nil || n != 6 {
		t.Errorf("count for v3 = %d, %v; want 6 (every document with a result)", n, err)
	}
}

func TestResubmitUnknownVersion(t *testing.T) {
	s := resubmitFixture(t)
	for _, v := range []int{0, 5} {
		if _, err := s.DocumentsForResubmit(context.Background(), "invoice", v, true); err == nil {
			t.Errorf("version %d accepted", v)
		}
	}
	if _, err := s.CountForResubmit(context.Background(), "invoice", 5, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("got %v, want ErrNotFound", err)
	}
}
