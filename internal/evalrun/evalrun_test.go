package evalrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/eval"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

const totalSchema = `{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}}`

func labels(n int) []eval.Label {
	var out []eval.Label
	for i := range n {
		out = append(out, eval.Label{ID: fmt.Sprintf("doc-%d", i), Text: fmt.Sprintf("Total due: %d EUR", i), Expected: json.RawMessage(fmt.Sprintf(`{"total":%d}`, i))})
	}
	return out
}

// answerTotal answers each document with the number in its text, except
// that documents listed in wrong get one more.
func answerTotal(wrong map[int]bool) extractqtest.Responder {
	return func(_ int, req llm.Request) extractqtest.Reply {
		var n int
		for _, m := range req.Messages {
			if i := strings.Index(m.Content, "Total due: "); i >= 0 {
				fmt.Sscanf(m.Content[i:], "Total due: %d", &n)
			}
		}
		if wrong[n] {
			n++
		}
		return extractqtest.Text(fmt.Sprintf(`{"total": %d}`, n))
	}
}

func TestRunScoresAndResumesAfterProviderFailure(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ls := labels(10)
	c := Combination{Provider: "fake:model", Mode: llm.ModeJSON}

	// First pass: the provider answers 4 documents, then refuses the key.
	var first *extractqtest.Provider
	failing := answerTotal(map[int]bool{2: true})
	first = extractqtest.New(nil, extractqtest.WithResponder(func(call int, req llm.Request) extractqtest.Reply {
		if call > 4 {
			return extractqtest.Fail(llm.ClassAuth, 0)
		}
		return failing(call, req)
	}))
	st := Settings{Schema: s, Labels: ls, MaxReasks: 0, Concurrency: 1, StateDir: dir,
		NewProvider: func(string) (llm.Provider, error) { return first, nil }}
	sum, _, err := Run(t.Context(), st, c)
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a ProviderError", err)
	}
	if !sum.Incomplete || sum.Done != 4 || sum.Docs != 10 {
		t.Fatalf("first pass: %+v", sum)
	}
	if sum.Correct != 3 || sum.Valid != 4 {
		t.Errorf("first pass: %d valid, %d correct; want 4 and 3 (doc-2 answered wrong)", sum.Valid, sum.Correct)
	}
	b, err := os.ReadFile(StateFile(dir, c))
	if err != nil || strings.Count(string(b), "\n") != 4 {
		t.Fatalf("state file: %v, %q", err, b)
	}

	// Resume with a working provider: only the 6 missing documents are asked.
	second := extractqtest.New(nil, extractqtest.WithResponder(answerTotal(nil)))
	st.NewProvider = func(string) (llm.Provider, error) { return second, nil }
	st.Resume = true
	sum, outs, err := Run(t.Context(), st, c)
	if err != nil {
		t.Fatal(err)
	}
	if second.Calls() != 6 {
		t.Errorf("resume asked %d documents, want the 6 not done", second.Calls())
	}
	if sum.Incomplete || sum.Done != 10 || sum.Correct != 9 || len(outs) != 10 {
		t.Errorf("after resume: %+v", sum)
	}
	if got := sum.Fields[0]; got.Field != "/total" || got.Matched != 9 || got.Examples[0].ID != "doc-2" {
		t.Errorf("field /total: %+v", got)
	}
}

func TestFromRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, _ := audittest.Store(t)
	s, _ := schema.Compile([]byte(totalSchema))
	other, _ := schema.Compile([]byte(`{"type":"object","required":["total"],"properties":{"total":{"type":"integer"}}}`))
	w, err := store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	ls := labels(3)
	now := time.Now()
	rec := func(run, doc, text string, sc *schema.Schema, value string) *audit.Record {
		r := &audit.Record{JobID: run + "-" + doc, DocumentID: doc, DocumentHash: jobs.HashText(text), Run: run, SchemaName: "t", SchemaVersion: 1,
			SchemaFingerprint: sc.Fingerprint(), Provider: "sim:clean", Model: "sim:clean", Pool: "p", Delivery: 1, WorkerID: "w",
			StartedAt: now, FinishedAt: now.Add(time.Second), Final: true,
			Attempts: []llm.Attempt{{N: 1, Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 100}}}, Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 100}}
		if value == "" {
			r.Outcome, r.Reason = llm.OutcomeExhausted, "gave up"
			r.DeadLetter = &audit.DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: 1, Reason: "gave up"}
		} else {
			r.Outcome, r.Value = llm.OutcomeOK, json.RawMessage(value)
		}
		return r
	}
	for _, r := range []*audit.Record{
		rec("r1", "doc-0", ls[0].Text, s, `{"total":0}`),
		rec("r1", "renamed", ls[1].Text, s, `{"total":7}`), // matched by its text's hash
		rec("r1", "doc-2", ls[2].Text, s, ""),
		rec("r2", "doc-0", ls[0].Text, other, `{"total":0}`),
		rec("r1", "doc-x", "another schema's document", other, `{"total":1}`), // not scored: another schema
	} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	sum, outs, err := FromRun(ctx, store, "r1", s, ls, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 3 || sum.Valid != 2 || sum.Correct != 1 || sum.Calls != 3 || !sum.CostKnown || sum.CostUSD <= 0 {
		t.Errorf("run r1: %+v", sum)
	}
	for _, o := range outs {
		if o.ID == "doc-1" && (o.Score == nil || o.Score.Correct) {
			t.Errorf("doc-1 (stored as 'renamed') scored %+v, want a mismatch on /total", o.Score)
		}
	}
	if _, _, err := FromRun(ctx, store, "r2", s, ls, eval.Options{}); err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Errorf("a run made with another schema: err = %v", err)
	}
	if _, _, err := FromRun(ctx, store, "nope", s, ls, eval.Options{}); !errors.Is(err, audit.ErrNoSuchRun) {
		t.Errorf("unknown run: err = %v", err)
	}
}
