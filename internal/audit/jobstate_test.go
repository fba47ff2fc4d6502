package audit

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/extractq/extractq/llm"
)

func TestJobStates(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	rec := func(job, doc string, o llm.Outcome, final bool) *Record {
		r := &Record{JobID: job, DocumentID: doc, SchemaFingerprint: "fp", Model: "m", Outcome: o, Final: final,
			Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}
		if o == llm.OutcomeOK {
			r.Value = json.RawMessage(`{}`)
		}
		return r
	}
	dead := rec("j-dead", "d-dead", llm.OutcomeExhausted, true)
	dead.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: 1, Reason: "still invalid"}
	pending := rec("j-pending", "d-pending", llm.OutcomeExhausted, true)
	pending.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Reason: "recorded, not published"}
	redone := rec("j-failed", "d-redone", llm.OutcomeExhausted, true)
	for _, r := range []*Record{
		rec("j-ok", "d-ok", llm.OutcomeOK, true),
		rec("j-open", "d-open", llm.OutcomeTransport, false),
		dead, pending, redone,
		rec("j-redo", "d-redone", llm.OutcomeOK, true), // a resubmission of d-redone succeeded
	} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"j-ok", "j-open", "j-dead", "j-pending", "j-failed", "j-unknown"}
	states, err := s.JobStates(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	// LookUpSubmitted answers what JobStates and HaveResults answer, in
	// one round trip, also when one of its lists is empty.
	keys := []TextKey{{"d-ok", ""}, {"d-redone", ""}, {"d-open", ""}, {"d-none", ""}}
	done, err := s.HaveResults(ctx, "fp", "m", keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 {
		t.Errorf("HaveResults = %v, want d-ok and d-redone", done)
	}
	for _, tc := range []struct {
		ids  []string
		keys []TextKey
	}{{ids, keys}, {nil, keys}, {ids, nil}} {
		gotStates, gotDone, err := s.LookUpSubmitted(ctx, "fp", "m", tc.ids, tc.keys)
		if err != nil {
			t.Fatal(err)
		}
		wantStates, wantDone := states, done
		if tc.ids == nil {
			wantStates = map[string]JobState{}
		}
		if tc.keys == nil {
			wantDone = map[TextKey]bool{}
		}
		if !maps.Equal(gotStates, wantStates) || !maps.Equal(gotDone, wantDone) {
			t.Errorf("LookUpSubmitted(%d ids, %d keys) = %v, %v; want %v, %v", len(tc.ids), len(tc.keys), gotStates, gotDone, wantStates, wantDone)
		}
	}
	tests := []struct {
		job       string
		known     bool
		final, ok bool
	}{
		{"j-ok", true, true, true},
		{"j-open", true, false, false},
		{"j-dead", true, true, false},
		{"j-pending", true, true, false},
		{"j-failed", true, true, true},
		{"j-unknown", false, false, false},
	}
	for _, tc := range tests {
		st, known := states[tc.job]
		if known != tc.known || st.Final() != tc.final || st.OK() != tc.ok {
			t.Errorf("%s: %+v (known %v), want known %v, final %v, ok %v", tc.job, st, known, tc.known, tc.final, tc.ok)
		}
	}
	if got := states["j-ok"].Tokens; got != 15 {
		t.Errorf("j-ok tokens = %d, want 15", got)
	}
	if st := states["j-dead"]; !st.DeadLettered || st.DeadLetterSeq != 1 || st.DeadLetterReason != "still invalid" {
		t.Errorf("j-dead: %+v, want dead-lettered at 1 with its reason", st)
	}
	// A letter recorded before it was published: sequence 0 until set,
	// then set once.
	if st := states["j-pending"]; !st.DeadLettered || st.DeadLetterSeq != 0 {
		t.Errorf("j-pending: %+v, want dead-lettered, sequence 0", st)
	}
	for _, seq := range []uint64{7, 9} {
		if err := s.SetDeadLetterSeq(ctx, "j-pending", seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDeadLetterSeq(ctx, "j-dead", 5); err != nil {
		t.Fatal(err)
	}
	states, err = s.JobStates(ctx, []string{"j-pending", "j-dead"})
	if err != nil {
		t.Fatal(err)
	}
	if got, dead := states["j-pending"].DeadLetterSeq, states["j-dead"].DeadLetterSeq; got != 7 || dead != 1 {
		t.Errorf("sequences after setting: pending %d (want 7, the first set), published %d (want 1, unchanged)", got, dead)
	}
}
