package capstore

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jobs/jobstest"
)

// TestKVSharesAdjustments: what one worker adds, another worker's store
// (a separate connection) loads, per provider, without duplicates.
func TestKVSharesAdjustments(t *testing.T) {
	t.Parallel()
	url := jobstest.Server(t)
	_, js1 := jobstest.Connect(t, url)
	_, js2 := jobstest.Connect(t, url)
	a, b := New(js1), New(js2, WithBucket(DefaultBucket))
	ctx := t.Context()

	if got, err := b.Load(ctx, "anthropic:claude-fable-5-1"); err != nil || len(got) != 0 {
		t.Fatalf("empty bucket: %v %v", got, err)
	}
	for _, adj := range []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustToolAuto, llm.AdjustNoTemperature} {
		if err := a.Add(ctx, "anthropic:claude-fable-5-1", adj); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Add(ctx, "openai:o1-mini", llm.AdjustNoSystemRole); err != nil {
		t.Fatal(err)
	}
	if err := a.Add(ctx, "openai:gpt-4o", llm.AdjustDropKeyword("minLength")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want []llm.Adjustment
	}{
		{"anthropic:claude-fable-5-1", []llm.Adjustment{llm.AdjustNoTemperature, llm.AdjustToolAuto}},
		{"openai:o1-mini", []llm.Adjustment{llm.AdjustNoSystemRole}},
		{"openai:gpt-4o", []llm.Adjustment{llm.AdjustDropKeyword("minLength")}},
		{"openai:o1", nil},
	}
	// The value is readable as it is, for `nats kv watch`.
	kv, err := js1.KeyValue(ctx, DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, enc.EncodeToString([]byte("openai:o1-mini"))+"."+enc.EncodeToString([]byte(llm.AdjustNoSystemRole)))
	if err != nil {
		t.Fatal(err)
	}
	var f fact
	if err := json.Unmarshal(e.Value(), &f); err != nil || f.Provider != "openai:o1-mini" || f.Adjustment != llm.AdjustNoSystemRole || f.LearnedAt.IsZero() {
		t.Fatalf("value %s", e.Value())
	}
	for _, tc := range tests {
		got, err := b.Load(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Load(%s) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
