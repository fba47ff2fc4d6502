package audit

import (
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestCachedTokensAndCostByMode writes jobs whose attempts were partly
// served from the prompt cache and checks the cache columns of attempts and
// jobs (through the merge function, a redelivery included) and the
// cost_by_mode view.
func TestCachedTokensAndCostByMode(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	cached := func(rec *Record, read, written int) *Record {
		rec.Usage = llm.Usage{}
		for i := range rec.Attempts {
			rec.Attempts[i].Usage.CachedPromptTokens, rec.Attempts[i].Usage.CacheCreationTokens = read, written
			rec.Usage = rec.Usage.Add(rec.Attempts[i].Usage)
		}
		return rec
	}
	ok := cached(testRecord("c-ok", "doc-1", 1, 2, llm.OutcomeOK), 256, 0)        // 2 attempts, valid
	bad := cached(testRecord("c-bad", "doc-2", 1, 3, llm.OutcomeExhausted), 0, 0) // 3 attempts, paid, not valid
	retry := cached(testRecord("c-re", "doc-3", 1, 1, llm.OutcomeOK), 0, 100)     // delivery 1 not final...
	retry.Final = false
	redo := cached(testRecord("c-re", "doc-3", 2, 1, llm.OutcomeOK), 128, 0) // ...delivery 2 is, and wins
	for _, rec := range []*Record{ok, bad, retry, redo} {
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	var aRead, aWritten int64
	if err := s.pool.QueryRow(ctx, `SELECT sum(cached_prompt_tokens), sum(cache_creation_tokens) FROM attempts`).Scan(&aRead, &aWritten); err != nil {
		t.Fatal(err)
	}
	if aRead != 2*256+128 || aWritten != 100 {
		t.Fatalf("attempts cached %d written %d, want %d %d", aRead, aWritten, 2*256+128, 100)
	}
	for job, want := range map[string][2]int64{"c-ok": {512, 0}, "c-bad": {0, 0}, "c-re": {128, 0}} {
		var read, written int64
		if err := s.pool.QueryRow(ctx, `SELECT cached_prompt_tokens, cache_creation_tokens FROM jobs WHERE job_id = $1`, job).Scan(&read, &written); err != nil {
			t.Fatal(err)
		}
		if [2]int64{read, written} != want {
			t.Fatalf("job %s cached %d written %d, want %v", job, read, written, want)
		}
	}
	var requests, prompt, cachedTok, valid int64
	var perValid float64
	if err := s.pool.QueryRow(ctx, `SELECT requests, prompt_tokens, cached_prompt_tokens, valid_documents, prompt_tokens_per_valid_document
		FROM cost_by_mode WHERE run = 'run1' AND mode = 'json'`).Scan(&requests, &prompt, &cachedTok, &valid, &perValid); err != nil {
		t.Fatal(err)
	}
	// 2 + 3 + 1 + 1 attempts of 300 prompt tokens; 2 valid documents.
	if requests != 7 || prompt != 7*300 || cachedTok != 2*256+128 || valid != 2 || perValid != 7*300/2.0 {
		t.Fatalf("cost_by_mode: requests %d prompt %d cached %d valid %d per valid %v", requests, prompt, cachedTok, valid, perValid)
	}
	st, err := s.Status(ctx, StatusFilter{Run: "run1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || len(st[0].Models) != 1 || st[0].Models[0].CachedPromptTokens != 2*256+128 || st[0].Models[0].CacheCreationTokens != 100 {
		t.Fatalf("status models %+v", st)
	}
}
